"""The group coordinator: ``__consumer_offsets``, the classic rebalance protocol, offsets."""

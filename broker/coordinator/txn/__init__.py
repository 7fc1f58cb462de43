"""The transaction coordinator: ``__transaction_state``, producer ids, markers."""

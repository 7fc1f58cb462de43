"""The test suite. A package, so that test directories such as ``tests/broker/raft``
never shadow the packages they test (``broker.raft``)."""

"""DB adapters: install, configure, start and stop a broker on a node."""

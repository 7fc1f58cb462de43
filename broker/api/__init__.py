"""One handler module per API family; see ``broker.api.registry``."""

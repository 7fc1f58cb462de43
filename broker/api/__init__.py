"""One handler module per API family; ``table`` maps API keys to handlers and
``context`` is what a handler gets."""

"""A conversation kept with its notebook: the saved file, and ``%agent resume``."""

"""The package's version, in a module of its own so any room can cite it without importing the facade."""

__version__ = "0.1.0"

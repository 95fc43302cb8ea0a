"""pipeproof's version (a leaf module: the package and its modules import it)."""

__version__ = "0.1.0"

"""transpile: C loop nests and kernel specs to verified CUDA."""

__version__ = "0.1.0"

"""turnpress's version, at the bottom of the package so that any module can read it."""

__version__ = "0.1.0"

"""The built-in functions of PTC-Lisp, one module per area, all in one registry."""

from turnpress.lisp.library import collections, numbers, output, sequences, strings
from turnpress.lisp.library.registry import CATEGORIES, CORE, QUALIFIED, resolve_qualified

__all__ = ["CATEGORIES", "CORE", "QUALIFIED", "resolve_qualified"]

_MODULES = (collections, numbers, output, sequences, strings)

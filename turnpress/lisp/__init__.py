"""PTC-Lisp: a small, sandboxed Clojure subset that the agent writes its programs in.

>>> from turnpress.lisp import run_program
>>> run_program("(def xs [1 2 3]) (reduce + xs)").value
6

A program reaches nothing of the host: there is no form that touches Python
objects, files, the network or the environment. Tools (``tool/NAME``) and input
data (``data/NAME``) are the only way out and in; steps, recursion depth, time,
value sizes and output are limited (:class:`Limits`). Every problem comes back as
``ExecutionResult.failure`` with one of :data:`FAILURE_REASONS`.
"""

from turnpress.lisp.errors import FAILURE_REASONS, LispError, LispSyntaxError
from turnpress.lisp.interpreter import ExecutionResult, run_program
from turnpress.lisp.limits import Limits
from turnpress.lisp.reader import read_program
from turnpress.lisp.reference import LANGUAGE_REFERENCE
from turnpress.lisp.values import Closure

__all__ = [
    "FAILURE_REASONS",
    "LANGUAGE_REFERENCE",
    "Closure",
    "ExecutionResult",
    "Limits",
    "LispError",
    "LispSyntaxError",
    "read_program",
    "run_program",
]

"""Resource limits for one run of a PTC-Lisp program."""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    """What one :func:`~turnpress.lisp.run_program` call may use.

    * ``max_steps`` -- evaluation steps: each call and special form is one step,
      and built-ins that walk a collection add one step per item they touch;
    * ``max_depth`` -- nesting of user-function calls (recursion depth);
    * ``timeout_s`` -- wall-clock seconds of the program's own evaluation
      (checked every few hundred steps); time spent inside tools does not count,
      so a slow tool or a child agent waiting on its LLM is not cut short;
    * ``max_collection`` -- items in a collection a built-in creates;
    * ``max_string`` -- characters in a string a built-in creates;
    * ``max_prints`` -- ``println`` calls per run;
    * ``print_chars`` -- characters kept per ``println`` call (longer output
      is cut and ends with ``...``, the total staying within the limit);
    * ``max_source`` -- characters of program text (longer programs are
      refused with ``size_limit`` before they are read);
    * ``max_memory`` -- bytes of memory the program's values may hold: the
      definitions kept from earlier turns plus what this run adds while it runs,
      and what it keeps when it ends (shared values counted once, measured the
      same way on every turn; see :mod:`turnpress.lisp.memory`); exceeding it is
      ``memory_limit``. A run that keeps no more than it started with always may.

    Reading and compiling the program count toward ``timeout_s``.
    """

    max_steps: int = 1_000_000
    max_depth: int = 200
    timeout_s: float = 5.0
    max_collection: int = 1_000_000
    max_string: int = 1_000_000
    max_prints: int = 1000
    print_chars: int = 2000
    max_source: int = 1_000_000
    max_memory: int = 256 * 2**20

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ValueError(f"Limits.{f.name} must be a positive number, got {value!r}")

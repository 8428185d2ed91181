"""What a summarizer is and gives back (the ``register_summarizers`` hook, DESIGN §3, §11).

A summarizer turns the turns a strategy folds into one text. It is a class registered
by name through ``register_summarizers``; an instance is built as ``cls(model="",
base_url="")`` (a ``NAME:ARG`` spec passes ``ARG`` as ``model``) and has

- ``name`` (the registered name) and ``options`` (a dict of plain values), which
  with its templates make the digest of the on-disk summary cache;
- ``summarize(turns, ctx, *, previous, start) -> Summary``: ``turns`` are every
  folded turn so far, oldest first; ``previous`` is the summary that replaced
  ``turns[:start]`` (None the first time), so a model is asked to summarise the
  previous summary and ``turns[start:]`` again;
- ``cache_key(turns, ctx, *, previous, start) -> str | None``: the digest of what it
  would send (summarizer, options, template, folded turns); None for a summarizer
  that is free and deterministic, so nothing is kept on disk.

:class:`Summary` is its answer: the text and the tokens the summarization call used
(input and output, 0 and 0 for a summarizer that calls no model). ``compare`` bills
them as their own rows (input at the input price, output at the output price).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Summary", "SummaryBudgetExceeded", "SummaryUnavailable"]


@dataclass(frozen=True)
class Summary:
    """A summary text and the usage of the call that made it.

    ``input_tokens`` and ``output_tokens`` are what the provider billed (0 for a
    summarizer without a model); ``cached`` is true when the text came from the
    on-disk summary cache (no request was sent this time; the usage is the one the
    original call billed, so a repeated comparison gives the same numbers).
    """

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Summary.text must be a string, got {type(self.text).__name__}")
        for name in ("input_tokens", "output_tokens"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"Summary.{name} must be a non-negative integer, "
                                f"got {value!r}")

    def to_json(self) -> dict[str, Any]:
        """``{"text", "input_tokens", "output_tokens"}`` (what the disk cache keeps)."""
        return {"text": self.text, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens}


class SummaryBudgetExceeded(RuntimeError):
    """The next summarization request would spend more than the budget; the message
    says how much was spent, what the request would cost and how to go on. It stops
    a comparison (it is not one strategy's failure)."""


class SummaryUnavailable(RuntimeError):
    """A summarizer cannot be used here (no model configured, no API key, SDK not
    installed); the message says why and how to configure one."""

"""Example traces bundled with turnpress.

Three short hand-built traces drawn from the scenarios of spec 01
(``scripts/build_example_traces.py``), and long runs of 30 to 100+ turns recorded
with the agent's real system prompt, real interpreter and Python tools
(``scripts/record_long_runs.py``). ``turnpress render`` and ``turnpress compare``
use them all when no trace is given.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXAMPLES_DIR", "SHORT_EXAMPLES", "example_trace_paths", "short_example_trace_paths"]

EXAMPLES_DIR = Path(__file__).resolve().parent

SHORT_EXAMPLES = ("inventory-audit", "phone-campaign", "product-research")
"""The short hand-built traces (4 to 13 turns): small enough to pin every strategy's
output in snapshot tests; the other bundled traces are long recorded runs."""


def example_trace_paths() -> list[Path]:
    """The bundled trace files, sorted by name."""
    return sorted([*EXAMPLES_DIR.glob("*.json"), *EXAMPLES_DIR.glob("*.jsonl")])


def short_example_trace_paths() -> list[Path]:
    """The short hand-built traces of :data:`SHORT_EXAMPLES`, sorted by name."""
    return [p for p in example_trace_paths() if p.stem in SHORT_EXAMPLES]

"""Example traces bundled with turnpress (drawn from the scenarios of spec 01).

``turnpress render`` and ``turnpress compare`` use them when no trace is given.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXAMPLES_DIR", "example_trace_paths"]

EXAMPLES_DIR = Path(__file__).resolve().parent


def example_trace_paths() -> list[Path]:
    """The bundled trace files, sorted by name."""
    return sorted([*EXAMPLES_DIR.glob("*.json"), *EXAMPLES_DIR.glob("*.jsonl")])

"""Record the long PTC-Lisp runs bundled in ``turnpress/examples/`` (30 to 100+ turns).

Each run is recorded the way ``turnpress run`` records one: an :class:`~turnpress.agent.Agent`
with the default system prompt (``agent/system_prompt.j2``) and scripted LLM replies.
The replies are the programs; the real PTC-Lisp interpreter runs them, and the tools
are Python functions over deterministic, generated data (log pages, customer records,
support tickets), so tool results, printed output, errors and memory are all real.
Nothing here writes a turn by hand.

Usage::

    python scripts/record_long_runs.py                 # all runs, into turnpress/examples/
    python scripts/record_long_runs.py --out DIR       # somewhere else
    python scripts/record_long_runs.py --only incident-triage

Each run is one ``NAME.jsonl`` file (a trace on one line: every turn stores the whole
memory in trace format version 1, and indented JSON would double the size). The same
script always writes byte-identical files. Each run checks itself while it
records: the number of turns, which turns fail (and why), and that the last turn
returns; a script edit that changes any of these stops with an error instead of
writing a different run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from turnpress import save_trace

OUT = Path(__file__).resolve().parent.parent / "turnpress" / "examples"

sys.path.insert(0, str(Path(__file__).resolve().parent))

from long_runs import LongRun, record  # noqa: E402
from long_runs.incident import incident_triage  # noqa: E402
from long_runs.migration import migration_audit  # noqa: E402
from long_runs.support import support_queue  # noqa: E402

RUNS: dict[str, Callable[[], LongRun]] = {
    "incident-triage": incident_triage,
    "migration-audit": migration_audit,
    "support-queue-cleanup": support_queue,
}


def main(argv: list[str] | None = None) -> None:
    """Record the runs named by ``--only`` (default: all) into ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="directory for the trace files")
    parser.add_argument("--only", action="append", choices=sorted(RUNS),
                        help="record only this run (repeatable)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or RUNS:
        trace = record(RUNS[name]())
        path = args.out / f"{name}.jsonl"
        save_trace(trace, path)
        print(f"wrote {path}: {len(trace.turns)} turns, "
              f"{sum(len(t.tool_calls) for t in trace.turns)} tool calls, "
              f"{sum(len(t.prints) for t in trace.turns)} println calls, "
              f"{sum(not t.success for t in trace.turns)} failed turns, "
              f"{path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()

"""The parts ``benchmarks/bench_transcripts.py`` times (issue 20 item 4: "print where
the rest of the time goes") name methods that exist: a part moved to another module
would otherwise only fail when the benchmark is run."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_transcripts import PARTS


def test_every_timed_part_is_a_method_of_compare() -> None:
    missing = []
    for category, module, cls_name, name in PARTS:
        found = importlib.import_module(f"turnpress.compare.{module}")
        cls = getattr(found, cls_name, None)
        if cls is None or not callable(getattr(cls, name, None)):
            missing.append(f"{category}: turnpress.compare.{module}.{cls_name}.{name}")
    assert not missing, "timed parts that no longer exist:\n" + "\n".join(missing)

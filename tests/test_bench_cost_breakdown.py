"""The head floor of ``benchmarks/bench_cost_breakdown.py`` (issue 18): the stable head is
measured from the default's prompts, as the longest prefix all of them share."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_cost_breakdown import common_head, head_tokens

from turnpress import load_trace
from turnpress.examples import example_trace_paths


def _m(role: str, content: str) -> dict:
    return {"role": role, "content": content}


def test_common_head_is_the_longest_shared_prefix() -> None:
    a = [_m("system", "sys"), _m("user", "mission\n\ntools\n\nuser/ x = 1")]
    b = [_m("system", "sys"), _m("user", "mission\n\ntools\n\nuser/ x = 2"), _m("user", "z")]
    shared = _m("user", "mission\n\ntools\n\nuser/ x = ")
    assert common_head([a, b]) == [_m("system", "sys"), shared]
    assert common_head([a]) == a
    assert common_head([a, [_m("system", "other")]]) == []
    assert common_head([a, [_m("system", "sys"), _m("assistant", "mission")]]) == a[:1]


def test_the_head_of_a_bundled_run_is_its_mission_and_listings() -> None:
    """On a bundled run the default's stable head is the mission with the ``tool/`` and
    ``data/`` listings: every prompt starts with it, no prompt's learnings are in it."""
    [path] = [p for p in example_trace_paths() if p.stem == "incident-triage"]
    trace = load_trace(path)
    prompts = [trace.prompt(n) for n in range(1, len(trace.turns) + 1)]
    head = common_head(prompts)
    assert len(head) == 2 and head[0] == prompts[0][0]
    text = head[1]["content"]
    assert text.startswith(trace.mission.split("\n")[0]) and ";; === data/ ===" in text
    assert ";; === user/" not in text and "Turns left" not in text
    tokens, count = head_tokens(path)
    assert count == len(trace.turns) and 300 < tokens < 600

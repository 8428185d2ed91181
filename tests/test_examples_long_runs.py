"""The long recorded runs bundled as examples (issue 11, item 1): recorded by
``scripts/record_long_runs.py`` through ``Agent.run`` with the real system prompt, the real
interpreter and Python tools; long, heavy and deterministic."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from turnpress import load_trace, save_trace
from turnpress.agent import system_prompt
from turnpress.cli import main
from turnpress.examples import SHORT_EXAMPLES, example_trace_paths

ROOT = Path(__file__).resolve().parent.parent
LONG = {p.stem: p for p in example_trace_paths() if p.stem not in SHORT_EXAMPLES}


@pytest.fixture(scope="module")
def runs():
    return {name: load_trace(path) for name, path in LONG.items()}


def test_three_long_runs_of_30_60_and_100_turns(runs):
    turns = sorted(len(t.turns) for t in runs.values())
    assert len(turns) >= 3 and min(turns) >= 30
    assert any(n >= 60 for n in turns) and max(turns) >= 100


def test_each_run_carries_the_real_system_prompt(runs):
    real = system_prompt()
    assert len(real) > 10_000
    for trace in runs.values():
        assert trace.system_prompt == real


def test_tool_results_of_thousands_of_characters(runs):
    for name, trace in runs.items():
        sizes = [len(json.dumps(c.result, default=str)) for t in trace.turns
                 for c in t.tool_calls]
        assert sum(s >= 4000 for s in sizes) >= 5, name


def test_turns_that_print_a_lot(runs):
    for name, trace in runs.items():
        assert max(len(t.prints) for t in trace.turns) >= 20, name
        assert max(sum(map(len, t.prints)) for t in trace.turns) >= 1500, name


def test_redefinitions(runs):
    for name, trace in runs.items():
        redefined = set()
        for before, turn in zip(trace.turns, trace.turns[1:], strict=False):
            for defined in re.findall(r"\((?:def|defn) ([^\s()\[\]]+)", turn.program):
                if defined in before.memory:
                    redefined.add(defined)
        fns = {d for d in redefined
               if any(f"(defn {d} " in t.program for t in trace.turns)}
        assert fns, f"{name}: no function is redefined"


def test_failures_are_real_interpreter_errors_followed_by_recoveries(runs):
    reasons = set()
    for name, trace in runs.items():
        failed = [t for t in trace.turns if not t.success]
        assert len(failed) >= 3, name
        for turn in failed:
            reasons.add(turn.result.reason)
            assert trace.turns[turn.number].success, (name, turn.number)  # the next one works
    assert {"undefined_symbol", "arity_error", "tool_error", "type_error"} <= reasons


def test_side_effect_tools_are_called(runs):
    for name, trace in runs.items():
        side_effects = {n for n, tool in trace.tools.items() if tool.returns == "nil"}
        called = {c.name for t in trace.turns for c in t.tool_calls}
        assert len(side_effects & called) >= 2, name


def test_each_run_returns_on_its_last_turn(runs):
    for name, trace in runs.items():
        last = trace.turns[-1]
        assert last.success and "(return " in last.program, name
        assert all("(return " not in t.program for t in trace.turns[:-1]), name
        assert trace.max_turns > len(trace.turns)


def test_compare_without_arguments_uses_every_bundled_run():
    result = CliRunner().invoke(main, ["compare", "-s", "full-history", "--tokenizer", "chars4",
                                       "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [t["name"] for t in doc["traces"]] == [load_trace(p).name
                                                  for p in example_trace_paths()]
    assert {t["name"] for t in doc["traces"]} >= set(LONG)


def _recorder():
    spec = importlib.util.spec_from_file_location("record_long_runs",
                                                  ROOT / "scripts" / "record_long_runs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("record_long_runs", module)
    spec.loader.exec_module(module)
    return module


def test_recording_is_deterministic(tmp_path):
    """Re-recording the shortest run gives the bundled file byte for byte."""
    name = min(LONG, key=lambda n: len(load_trace(LONG[n]).turns))
    _recorder().main(["--out", str(tmp_path), "--only", name])
    written = tmp_path / LONG[name].name
    # the bundled file as the current trace version writes it (the files may predate
    # trace format version 2; they are regenerated separately)
    expected = tmp_path / "bundled" / LONG[name].name
    expected.parent.mkdir()
    save_trace(load_trace(LONG[name]), expected)
    assert written.read_bytes() == expected.read_bytes()

"""``scripts/fuzz.py`` (issue 13 item 6): a few hundred of its cases as ordinary tests.

Each kind runs a small, seeded batch that must find nothing on the current code; then a
deliberately broken target is injected and the fuzzer must report it, with a replay
command and the failing input written to disk.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

import pytest

import turnpress.core.trace_model as trace_model
from turnpress.core.trace_parse import _Reader

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def fuzz():
    spec = importlib.util.spec_from_file_location("turnpress_fuzz", ROOT / "scripts" / "fuzz.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["turnpress_fuzz"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("turnpress_fuzz", None)


def counts(report) -> dict[str, int]:
    return {o: report.counts[o] for o in report.counts if report.counts[o]}


def test_mutated_traces_and_transcripts_find_nothing(fuzz, tmp_path) -> None:
    (report,) = fuzz.run(["traces"], 200, seed=3, out=tmp_path)
    assert report.cases == 200
    assert report.bad == 0, report.format()
    # both loading paths were exercised: files that load and files refused in one line
    assert report.counts["ok"] > 0 and report.counts["clean error"] > 0, counts(report)
    assert not any(tmp_path.iterdir())  # no failing inputs written


def test_random_programs_render_save_and_load_find_nothing(fuzz, tmp_path) -> None:
    (report,) = fuzz.run(["programs"], 40, seed=3, fixed=False, out=tmp_path)
    assert report.cases == 40
    assert report.bad == 0, report.format()
    assert report.counts["ok"] > 0 and report.counts["clean error"] > 0, counts(report)


def test_issue_13_value_repros_find_nothing(fuzz, tmp_path) -> None:
    """The fixed cases start with issue 13's values that broke the host (1,000 deep,
    shared 22 and 40 deep, maps and sets as keys, a 1,200-digit integer since the
    sandbox now caps integers at 4,096 bits, a lone surrogate, a regex): each renders
    with every strategy and round-trips."""
    cases = list(range(len(fuzz.VALUE_PROGRAMS)))
    (report,) = fuzz.run(["programs"], 0, seed=1, out=tmp_path, cases=cases)
    assert report.cases == len(cases)
    assert report.bad == 0, report.format()
    assert report.counts["ok"] == len(cases), counts(report)


def test_broken_plugins_find_nothing(fuzz, tmp_path) -> None:
    (report,) = fuzz.run(["plugins"], 80, seed=3, out=tmp_path)
    assert report.cases == 80
    assert report.bad == 0, report.format()
    assert report.counts["clean error"] > 0, counts(report)


def test_cases_are_reproducible(fuzz) -> None:
    env = fuzz.program_env(Path("."), None, fixed=False)
    assert fuzz.program_turns(env, 5, 17) == fuzz.program_turns(env, 5, 17)
    assert fuzz.program_turns(env, 5, 17) != fuzz.program_turns(env, 5, 18)


def test_reports_malformed_trace_accepted_with_a_replay(fuzz, tmp_path, monkeypatch,
                                                        capsys) -> None:
    # injected bug: unknown fields are no longer refused
    monkeypatch.setattr(_Reader, "known", lambda self, *args, **kwargs: None)
    out = tmp_path / "failures"
    (report,) = fuzz.run(["traces"], 200, seed=3, out=out, keep=2)
    assert report.counts["malformed accepted"] > 0, counts(report)
    text = report.format()
    assert "BAD traces case" in text and "loaded although: unknown field" in text
    case, _, path = report.bad_cases[0]
    assert f"replay: python scripts/fuzz.py --kinds traces --seed 3 --case {case}" in text
    assert path is not None and path.exists() and f"input: {path}" in text
    assert path.read_bytes()  # the mutated file itself
    assert len(list(out.iterdir())) == 2  # --keep 2 of that outcome
    # the replay command finds it again, alone, and exits 1
    code = fuzz.main(["--kinds", "traces", "--seed", "3", "--case", str(case),
                      "--out", str(tmp_path / "replay")])
    printed = capsys.readouterr().out
    assert code == 1
    assert "traces: 1 cases" in printed and "malformed accepted 1" in printed
    assert "total: 1 cases, 1 bad" in printed


def test_reports_a_render_traceback_with_the_program(fuzz, tmp_path, monkeypatch) -> None:
    real = trace_model.render

    def render(*args, **kwargs):  # injected bug: sets in memory break rendering
        for turn in kwargs.get("turns", ()):
            if any(isinstance(v, frozenset) for v in turn.memory.values()):
                raise KeyError("set in memory")
        return real(*args, **kwargs)

    monkeypatch.setattr(trace_model, "render", render)  # the render Trace.prompt calls
    (report,) = fuzz.run(["programs"], 40, seed=3, fixed=False, out=tmp_path)
    assert report.counts["traceback"] > 0, counts(report)
    _, outcome, path = report.bad_cases[0]
    assert "KeyError: 'set in memory'" in outcome.detail
    assert outcome.detail.startswith("render ")
    assert path.suffix == ".lisp" and "(def " in path.read_text()


def test_reports_an_unsaveable_value(fuzz, tmp_path, monkeypatch) -> None:
    real = fuzz.save_trace

    def save_trace(trace, path, *args, **kwargs):  # injected bug: memory is lost
        trace = fuzz.Trace(mission=trace.mission, max_turns=trace.max_turns, turns=tuple(
            fuzz.Turn.succeeded(t.number, t.program, t.result, memory={})
            for t in trace.turns))
        return real(trace, path, *args, **kwargs)

    monkeypatch.setattr(fuzz, "save_trace", save_trace)
    (report,) = fuzz.run(["programs"], 30, seed=3, fixed=False, out=tmp_path)
    assert report.counts["unsaveable"] > 0, counts(report)
    assert "changed by save + load" in report.format()


def test_watchdog_and_escape_sentinel(fuzz, tmp_path) -> None:
    start = time.perf_counter()
    with pytest.raises(fuzz.Hung), fuzz.watchdog(0.2):
        while True:
            time.sleep(0.01)
    # it fires (a wall-clock alarm, 0.2 s): the bound only says "it stopped", with room
    # for a loaded machine that runs this process late
    assert time.perf_counter() - start < 60
    sentinel = fuzz.Sentinel.get()
    with sentinel.watch() as events:
        (tmp_path / "x.txt").write_text("escaped")
    assert events and events[0].startswith("open ")
    with sentinel.watch() as events:
        (tmp_path / "x.txt").read_text()
    assert events == []


def test_command_line_prints_counts_by_outcome(fuzz, tmp_path, capsys) -> None:
    code = fuzz.main(["--n", "30", "--kinds", "traces,plugins", "--seed", "4",
                      "--out", str(tmp_path)])
    printed = capsys.readouterr().out.splitlines()
    assert code == 0
    assert printed[0].startswith("traces: 30 cases in ")
    assert printed[1].startswith("plugins: 30 cases in ")
    for line in printed[:2]:
        for outcome in fuzz.OUTCOMES:
            assert f"{outcome} " in line
    assert printed[-1] == "total: 60 cases, 0 bad"
    with pytest.raises(SystemExit):
        fuzz.main(["--kinds", "nope"])
    assert "unknown kind 'nope'" in capsys.readouterr().err


def test_a_malformed_tag_a_later_edit_empties_is_not_called_malformed(fuzz) -> None:
    """fuzz traces seed 27 case 4554: a malformed tag was placed in the data, a later edit
    of the same document deleted its key, and the fuzzer still expected the now valid
    empty map ``{}`` to be refused (it compared the data with the placed object itself)."""
    import random

    class Scripted(random.Random):
        """Places {"$kw": 5} at data["x"] (edit 9), then deletes its "$kw" key (edit 0)."""

        def __init__(self) -> None:
            super().__init__(0)
            self.edits = iter([9, 0])

        def randint(self, a: int, b: int) -> int:
            return 2  # two edits

        def randrange(self, *args: int) -> int:
            return next(self.edits)

        def choice(self, seq):  # type: ignore[override]
            seq = list(seq)
            if seq and isinstance(seq[0], tuple):  # the slot to edit: the placed tag's key
                return next(s for s in seq if isinstance(s[0], dict) and "$kw" in s[0])
            if {"$kw": 5} in seq:
                return {"$kw": 5}
            return "x" if "x" in seq else seq[0]

    doc = {"version": 2, "data": {"products": [1]}, "turns": []}
    doc, _edits, _bad, placed = fuzz.mutate(doc, Scripted(), native=True)
    assert placed == [("x", {"$kw": 5})] and doc["data"]["x"] == {}
    assert fuzz.must_reject(doc, "{}", [], placed, native=True) == []


def test_reports_a_turn_that_locks_out_later_turns(fuzz, tmp_path, monkeypatch) -> None:
    """issue 23: after each turn a trivial program must run. Injected bug: the memory
    kept from earlier turns is charged as 20 PB (the estimate before issue 23)."""
    import turnpress.lisp.context as context

    real_init = context.RunContext.__init__

    def init(self, limits, tools, data, definitions, docs):
        real_init(self, limits, tools, data, definitions, docs)
        if definitions:
            self.base_charge = self.last_used = 2**54

    monkeypatch.setattr(context.RunContext, "__init__", init)
    monkeypatch.setattr(context.RunContext, "check_kept", lambda self, d, p: None)
    (report,) = fuzz.run(["programs"], 20, seed=3, fixed=False, out=tmp_path)
    assert report.counts["locked out"] > 0, counts(report)
    text = report.format()
    assert f"after this turn, {fuzz.PROBE} failed: memory_limit" in text


def test_issue_23_value_program_is_a_fixed_case(fuzz, tmp_path) -> None:
    """The nested sets of fuzz seed 4242 programs case 1819 run first among the fixed
    cases: they render, save, load and compare, and the probe runs after them."""
    case = fuzz.VALUE_PROGRAMS.index(fuzz.ISSUE_23_PROGRAM)
    (report,) = fuzz.run(["programs"], 0, seed=1, out=tmp_path, cases=[case],
                         hang_s=600)
    assert report.counts["ok"] == 1, report.format()


def test_start_runs_later_cases_and_a_fuzzer_bug_is_counted(fuzz, tmp_path,
                                                            monkeypatch) -> None:
    def broken(*args, **kwargs):
        raise RuntimeError("mutate is broken")

    monkeypatch.setattr(fuzz, "mutate", broken)
    (report,) = fuzz.run(["traces"], 4, seed=3, out=tmp_path, start=100, keep=10)
    assert report.counts["fuzzer error"] == 4 == report.cases
    assert [case for case, _, _ in report.bad_cases] == [100, 101, 102, 103]
    assert "making case 100" in report.bad_cases[0][1].detail


def test_a_version_nested_too_deep_for_json_dumps_is_named_not_a_fuzzer_error(fuzz):
    """Traces case 5764 of seed 2304 counted as a "fuzzer error": an edit nested the
    version 600 deep inside an already deep document, and naming why it must be refused
    ran ``json.dumps`` out of recursion. The reason is written the way the file is."""
    depth = sys.getrecursionlimit() + 200
    doc = {"version": fuzz._nest(1, depth), "turns": []}
    (reason,) = fuzz.must_reject(doc, "{}", [], [], native=True)
    assert reason == "version " + "[" * depth + "1" + "]" * depth


def test_every_bad_case_past_keep_is_named_with_its_replay(fuzz, tmp_path, monkeypatch,
                                                            capsys) -> None:
    # issue 23: "report every bad case with its replay command" -- --keep only limits
    # which cases are printed in full and written to disk
    monkeypatch.setattr(_Reader, "known", lambda self, *args, **kwargs: None)
    (report,) = fuzz.run(["traces"], 200, seed=3, out=tmp_path / "f", keep=1, every=1000)
    bad = report.counts["malformed accepted"]
    assert bad > 1, counts(report)
    assert len(report.bad_cases) == 1 and len(report.more_bad) == bad - 1
    text = report.format()
    found = capsys.readouterr().out
    for case in [report.bad_cases[0][0]] + [c for c, _ in report.more_bad]:
        replay = f"replay: python scripts/fuzz.py --kinds traces --seed 3 --case {case}"
        assert replay in text
        assert f"[bad] traces case {case} (malformed accepted): {replay}" in found
    assert len(list((tmp_path / "f").iterdir())) == 1


def test_a_stop_signal_inside_a_case_stops_the_run_not_counted_bad(fuzz, tmp_path,
                                                                   monkeypatch) -> None:
    # SIGTERM raises Stopped wherever the case is; it used to be caught by the case's
    # own handler and counted as a "traceback" (seed 2303 case 2059), and the run went on
    import turnpress.lisp as lisp

    real = lisp.run_program

    def stopped_inside(source, **kwargs):
        if source == "(+ 1 2)":  # the fuzzer's warm-up, before any case
            return real(source, **kwargs)
        try:
            raise TypeError("unhashable type: 'dict'")
        except TypeError:
            raise fuzz.Stopped from None

    monkeypatch.setattr(lisp, "run_program", stopped_inside)
    (report,) = fuzz.run(["programs"], 5, seed=3, fixed=False, out=tmp_path)
    assert "stopped by a signal" in report.stopped
    assert report.cases == 0 and report.bad == 0, counts(report)

"""Issue 20 items 3 and 5: broken runs are skipped, per-trace results as they finish,
and an interrupted comparison resumed from them.

A run that cannot be read or has no turn is skipped (one line each, counted in the
footer and in ``--json``) unless ``--strict``; ``--per-trace`` writes one line per
trace and strategy as each trace finishes, whatever stops the comparison later; and
``--resume`` reads those traces back instead of comparing them again, giving the JSON
of a comparison that was never interrupted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from turnpress.cli import main
from turnpress.compare import compare_traces
from turnpress.compare.engine import NothingCompared
from turnpress.examples import short_example_trace_paths

STRATEGIES = ["-s", "full-history", "-s", "rolling-window:window=3", "-s",
              "single-user-coalesced"]


def run(*args: str):
    return CliRunner().invoke(main, ["compare", *args])


@pytest.fixture
def good(tmp_path) -> list[str]:
    out = []
    for p in short_example_trace_paths():
        target = tmp_path / p.name
        shutil.copy(p, target)
        out.append(str(target))
    return out


@pytest.fixture
def broken(tmp_path) -> list[str]:
    """A run that died before any reply, an unreadable file, and a run with no turn."""
    empty_run = tmp_path / "died.json"
    empty_run.write_text(json.dumps([{"role": "system", "content": "s"},
                                     {"role": "user", "content": "fix the bug"}]))
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{oops")
    no_turn = tmp_path / "no-turn.json"
    no_turn.write_text(json.dumps({"version": 1, "mission": "m", "max_turns": 3,
                                   "turns": []}))
    return [str(empty_run), str(garbled), str(no_turn)]


def test_broken_runs_are_skipped_named_and_counted(good, broken):
    result = run(good[0], *broken, good[1], *STRATEGIES, "-t", "chars4", "--json")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines == [
        f"Skipped {broken[0]}: empty run: no assistant message among its 2 message(s), so "
        f"there is no turn to replay",
        f"Skipped {broken[1]}: line 1: invalid JSON at column 2: Expecting property name enclosed "
        f"in double quotes",
        f"Skipped {broken[2]}: no turn (the run ended before its first reply)"], lines
    doc = json.loads(result.stdout)
    assert [s["file"] for s in doc["skipped"]] == broken
    assert len(doc["traces"]) == 2
    # the same traces alone give the same numbers: nothing of the good ones was lost
    alone = json.loads(run(*good[:2], *STRATEGIES, "-t", "chars4", "--json").stdout)
    assert alone["strategies"] == doc["strategies"] and alone["skipped"] == []
    table = run(good[0], *broken, *STRATEGIES, "-t", "chars4")
    assert table.exit_code == 0
    assert ("skipped: 3 runs that cannot be read or have no turn (listed on stderr and in "
            "--json; --strict stops at the first)") in table.stdout


def test_strict_stops_at_the_first_broken_run(good, broken):
    result = run(good[0], *broken, *STRATEGIES, "-t", "chars4", "--strict")
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: {broken[0]}: empty run:"), result.output
    assert result.output.count("\n") == 1


def test_nothing_to_compare_is_exit_2(broken):
    one = run(broken[1], "-s", "full-history")
    assert one.exit_code == 2
    assert one.output == (f"Error: {broken[1]}: line 1: invalid JSON at column 2: Expecting "
                          f"property name enclosed in double quotes\n")
    every = run(*broken, "-s", "full-history")
    assert every.exit_code == 2
    assert every.output.splitlines()[-1] == ("Error: none of the 3 runs could be compared "
                                             "(each is listed above)")
    assert sum(line.startswith("Skipped ") for line in every.output.splitlines()) == 3
    with pytest.raises(NothingCompared) as caught:
        compare_traces(broken, ["full-history"])
    assert [s.file for s in caught.value.skipped] == broken


def test_a_broken_jsonl_line_and_an_empty_jsonl_file_are_skipped(good, tmp_path):
    runs = tmp_path / "runs.jsonl"
    text = Path(good[0]).read_text()
    runs.write_text(json.dumps(json.loads(text)) + "\n{oops\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    result = compare_traces([runs, empty], ["full-history"], tokenizer="chars4")
    assert [(s.file, s.reason) for s in result.skipped] == [
        (str(runs), "line 2: invalid JSON at column 2: Expecting property name enclosed in "
                    "double quotes"),
        (str(empty), "no trace in this file (it is empty)")]
    assert len(result.traces) == 1


def test_per_trace_lines_add_up_to_the_totals(good, tmp_path):
    out = tmp_path / "per-trace.jsonl"
    result = run(*good, *STRATEGIES, "-t", "chars4", "--json", "--per-trace", str(out))
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(good) * 3
    assert {(x["file"], x["strategy"]) for x in lines} == {
        (f, s) for f in good for s in ("full-history", "rolling-window:window=3",
                                       "single-user-coalesced")}
    for s in doc["strategies"]:
        label = s["name"] + ("" if s["name"] != "rolling-window" else ":window=3")
        mine = [x for x in lines if x["strategy"] == label]
        assert sum(x["input_tokens"] for x in mine) == s["input_tokens"]
        assert sum(x["cost_usd"] for x in mine) == pytest.approx(s["cost_usd"], abs=1e-7)
        assert sum(x["needed_shown"] for x in mine) / sum(x["needed"] for x in mine) \
            == pytest.approx(s["needed_fact_recall"], abs=1e-6)
    first = lines[0]
    for key in ("trace", "turns", "cost_ratio", "retention", "needed_fact_recall",
                "as_run_cost_usd", "tokenizer", "cache", "price", "status"):
        assert key in first
    assert first["line"] is None and first["tokenizer"] == "chars4"


def test_resume_reads_done_traces_back_and_gives_the_same_json(good, tmp_path):
    args = [*good, *STRATEGIES, "-t", "chars4", "--json"]
    out = tmp_path / "per-trace.jsonl"
    full = run(*args, "--per-trace", str(out))
    assert full.exit_code == 0, full.output
    lines = out.read_text().splitlines(keepends=True)
    # interrupted: the first trace done, the second cut short in its last line
    part = tmp_path / "part.jsonl"
    part.write_text("".join(lines[:3]) + "".join(lines[3:5]) + lines[5][:40])
    resumed = run(*args, "--resume", str(part))
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == full.stdout
    again = part.read_text().splitlines()
    assert len(again) == len(lines)  # the cut line dropped, every trace there once more
    assert all(json.loads(line) for line in again)
    # the first trace was read back, not compared again: an edit in the file shows
    edited = json.loads(lines[1])
    edited["resume"]["rows"][0][1] += 1000
    part.write_text(lines[0] + json.dumps(edited) + "\n" + lines[2])
    bumped = json.loads(run(*args, "--resume", str(part)).stdout)
    before = json.loads(full.stdout)
    assert bumped["strategies"][1]["input_tokens"] == before["strategies"][1]["input_tokens"] \
        + 1000


def test_resume_keeps_the_lines_of_other_strategies_and_of_other_files(good, tmp_path):
    """Resuming with a strategy the file lacks compares every trace again and appends
    its lines: the lines already there all stay (they were once cut off to nothing).
    A file that is not a per-trace file is one line, exit 2, and is left as it was."""
    out = tmp_path / "per-trace.jsonl"
    assert run(*good, "-s", "full-history", "-t", "chars4", "--per-trace",
               str(out)).exit_code == 0
    before = out.read_text()
    args = [*good, *STRATEGIES, "-t", "chars4", "--json"]
    resumed = run(*args, "--resume", str(out))
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == run(*args).stdout
    after = out.read_text()
    assert after.startswith(before)
    assert len(after.splitlines()) == len(good) * (1 + 3)
    precious = tmp_path / "precious.json"
    precious.write_text('{"important": "data"}')
    result = run(*args, "--resume", str(precious))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"--resume {precious}: line 1 is not a per-trace result" in result.output
    assert precious.read_text() == '{"important": "data"}'


def test_per_trace_never_writes_over_a_file(good, tmp_path):
    """--per-trace on a file that exists (typed for --resume after Ctrl-C) is one line,
    exit 2, naming --resume; the file is left as it was."""
    out = tmp_path / "results.jsonl"
    out.write_text("results of yesterday\n")
    result = run(*good, *STRATEGIES, "-t", "chars4", "--per-trace", str(out))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"--per-trace {out}: the file exists; --resume {out} goes on" in result.output
    assert out.read_text() == "results of yesterday\n"


@pytest.mark.parametrize(("change", "problem"), [
    (lambda line: line.pop("resume"), "KeyError: 'resume'"),
    (lambda line: line["resume"].update(rows=[5]), "a prompt's row is not a list"),
    (lambda line: line["resume"].update(rows="x"), "a prompt's row is not a list"),
])
def test_a_damaged_per_trace_line_is_named(good, tmp_path, change, problem):
    """A per-trace line changed by hand is one line naming the file and the line,
    exit 2, not a traceback."""
    out = tmp_path / "per-trace.jsonl"
    assert run(*good, "-s", "full-history", "-t", "chars4", "--per-trace",
               str(out)).exit_code == 0
    lines = out.read_text().splitlines()
    damaged = json.loads(lines[1])
    change(damaged)
    lines[1] = json.dumps(damaged)
    out.write_text("\n".join(lines) + "\n")
    result = run(*good, "-s", "full-history", "-t", "chars4", "--resume", str(out))
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert f"--resume {out}: line 2 " in result.output and problem in result.output
    assert result.output.count("\n") == 1


def test_resume_into_another_file_copies_the_done_traces(good, tmp_path):
    args = [*good, *STRATEGIES, "-t", "chars4", "--json"]
    first = tmp_path / "first.jsonl"
    full = run(*args, "--per-trace", str(first))
    second = tmp_path / "second.jsonl"
    resumed = run(*args, "--resume", str(first), "--per-trace", str(second))
    assert resumed.stdout == full.stdout
    assert sorted(second.read_text().splitlines()) == sorted(first.read_text().splitlines())


def test_resume_with_other_settings_is_one_line_exit_2(good, tmp_path):
    out = tmp_path / "per-trace.jsonl"
    run(*good, "-s", "full-history", "-t", "chars4", "--per-trace", str(out))
    result = run(*good, "-s", "full-history", "-t", "chars4", "--cache", "anthropic",
                 "--resume", str(out))
    assert result.exit_code == 2
    assert result.output.startswith(f"Error: --resume {out}: line 1 was computed with other "
                                    f"settings than now: cache: openai in the file, "
                                    f"anthropic now; price: "), result.output
    assert result.output.count("\n") == 1


def test_resume_names_each_differing_setting_as_it_is_written(good, tmp_path):
    """QA-b item 16: the price was a Python dict (``{'input': 2.0, ..., 'write': None}``);
    each differing setting is now named with its value in the file and now, a price
    as --price takes it."""
    out = tmp_path / "per-trace.jsonl"
    run(good[0], "-s", "full-history", "-t", "chars4", "--per-trace", str(out))
    result = run(good[0], "-s", "full-history", "-t", "o200k_base", "--price",
                 "in=2,cached=0.5", "--resume", str(out))
    assert result.exit_code == 2
    assert result.output == (
        f"Error: --resume {out}: line 1 was computed with other settings than now: "
        f"tokenizer: chars4 in the file, o200k_base now; price: in=2,cached=0.5,out=8 in "
        f"the file, in=2,cached=0.5 now; resume with the same --tokenizer, --cache and "
        f"--price, or write to another file\n")
    preset = run(good[0], "-s", "full-history", "-t", "chars4", "--price",
                 "anthropic-sonnet-4", "--resume", str(out))
    assert "price: in=2,cached=0.5,out=8 in the file, anthropic-sonnet-4 (in=3,cached=0.3,"\
           "write=3.75,out=15) now;" in preset.output
    assert "{" not in preset.output


def test_results_done_before_a_strict_failure_are_written(good, broken, tmp_path):
    for jobs in ("1", "2"):
        out = tmp_path / f"per-trace-{jobs}.jsonl"
        result = run(*good, broken[1], *STRATEGIES, "-t", "chars4", "--strict",
                     "--jobs", jobs, "--per-trace", str(out))
        assert result.exit_code == 2
        assert "garbled.json" in result.output
        files = {json.loads(line)["file"] for line in out.read_text().splitlines()}
        assert files == set(good)


def test_each_dropped_fact_is_listed_once_with_its_count(good, tmp_path):
    """A long run drops the same facts turn after turn: the per-trace line lists each
    once (the turn first without it, how many prompts lacked it), not once a prompt;
    a file of an earlier version (an entry per prompt, no count) resumes the same."""
    args = [*good, *STRATEGIES, "-t", "chars4", "--json"]
    out = tmp_path / "per-trace.jsonl"
    full = run(*args, "--per-trace", str(out))
    assert full.exit_code == 0, full.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    entries = [e for line in lines for e in line["resume"]["dropped"]]
    assert any(e[4] > 1 for e in entries)  # dropped from several prompts, listed once
    for line in lines:
        facts = [tuple(map(str, e[1:4])) for e in line["resume"]["dropped"]]
        assert len(facts) == len(set(facts))
    doc = json.loads(full.stdout)
    window = doc["strategies"][1]
    assert sum(window["dropped"].values()) == sum(
        e[4] for line in lines if line["strategy"] == "rolling-window:window=3"
        for e in line["resume"]["dropped"])
    # the earlier format: one entry per prompt that lacked the fact
    for line in lines:
        line["resume"]["dropped"] = [e[:4] for e in line["resume"]["dropped"]
                                     for _ in range(e[4])]
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps(line) + "\n" for line in lines))
    resumed = run(*args, "--resume", str(old), "--per-trace", str(tmp_path / "new.jsonl"))
    assert resumed.exit_code == 0, resumed.output
    assert resumed.stdout == full.stdout


def test_ctrl_c_with_one_job_stops_at_once_and_keeps_what_is_done(good, tmp_path,
                                                                    fresh_registry):
    """Ctrl-C (KeyboardInterrupt) while the second trace is compared, --jobs 1: the
    comparison stops there (it first compared the queued traces too, one after the
    other), and the first trace's lines are in the --per-trace file."""
    from plugin_helpers import register_strategies

    from turnpress import Strategy

    seen: list[str] = []

    class Interrupted(Strategy):
        name = "interrupted"

        def to_messages(self, turns, memory, ctx):
            if ctx.mission not in seen:
                seen.append(ctx.mission)
            if len(seen) == 2:
                raise KeyboardInterrupt
            return [ctx.message("user", ctx.mission)]

    register_strategies("interrupting", Interrupted)
    out = tmp_path / "per-trace.jsonl"
    with pytest.raises(KeyboardInterrupt):
        compare_traces(good, ["full-history", "interrupted"], tokenizer="chars4", jobs=1,
                       per_trace=out)
    assert len(seen) == 2 and len(good) > 2  # the traces after the second never started
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert {line["file"] for line in lines} == {good[0]}


def test_resume_finds_a_trace_by_any_name_of_its_file(good, tmp_path, monkeypatch):
    """Written with relative paths, resumed with absolute ones (or the other way): the
    traces are read back, not compared again and appended twice."""
    monkeypatch.chdir(tmp_path)
    relative = [Path(g).name for g in good]
    out = tmp_path / "per-trace.jsonl"
    args = [*STRATEGIES, "-t", "chars4", "--json"]
    full = run(*relative, *args, "--per-trace", str(out))
    assert full.exit_code == 0, full.output
    before = out.read_text()
    resumed = run(*good, *args, "--resume", str(out))
    assert resumed.exit_code == 0, resumed.output
    # the same document as a comparison of these files never interrupted: each trace's
    # "file" is as named this time
    never_interrupted = run(*good, *args)
    assert resumed.stdout == never_interrupted.stdout and out.read_text() == before
    assert json.loads(full.stdout)["traces"][0]["file"] == relative[0]
    assert json.loads(resumed.stdout)["traces"][0]["file"] == str(good[0])

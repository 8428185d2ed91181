"""The Python functions behind ``compare``, ``trace show``, ``render`` and ``import`` take
what the command line takes: a directory (read recursively) or a glob pattern (``**``
crossing directories) is expanded by the same function (``core.trace_inputs.discover``),
and each file found that is not a run is reported with its reason, never dropped
silently: ``ComparisonResult.not_runs``, ``LoadedTraces.skipped``,
``ImportResult.skipped``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from turnpress import load_traces
from turnpress.cli import main
from turnpress.compare import compare_traces, count_traces
from turnpress.compare.engine import NothingCompared
from turnpress.core.inspect import describe_trace
from turnpress.core.trace import TraceError
from turnpress.core.trace_inputs import discover
from turnpress.importing import import_transcripts

SETTINGS = {"tokenizer": "chars4"}


def _chat(task: str, answer: str) -> list[dict]:
    """A small OpenAI chat run: one tool call, its result, then the answer."""
    return [
        {"role": "system", "content": "You are a shell agent."},
        {"role": "user", "content": task},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": f"<returncode>0</returncode>\n{answer}"},
        {"role": "assistant", "content": f"The answer is {answer}."},
    ]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """Runs at three depths (a .json file, a .jsonl file of two runs, a nested .json
    file), and two files found that are not runs: a .txt file and JSON no reader
    reads."""
    root = tmp_path / "logs"
    (root / "team" / "deep").mkdir(parents=True)
    (root / "a.json").write_text(json.dumps(_chat("How many files?", "3")))
    (root / "team" / "b.jsonl").write_text(
        json.dumps(_chat("How many dirs?", "2")) + "\n"
        + json.dumps(_chat("How many links?", "0")) + "\n")
    (root / "team" / "deep" / "c.json").write_text(json.dumps(_chat("Disk usage?", "9K")))
    (root / "notes.txt").write_text("not a run")
    (root / "team" / "config.json").write_text(json.dumps({"hello": "world"}))
    return root


NOT_RUNS = {"notes.txt": "not a .json, .jsonl, .ndjson file",
            "team/config.json": "not a format turnpress reads"}


def _relative(root: Path, entries) -> dict[str, str]:
    return {Path(e.file).relative_to(root).as_posix(): e.reason for e in entries}


def test_compare_traces_reads_a_directory_recursively(logs):
    """It said "cannot read trace file: Is a directory" (NothingCompared)."""
    result = compare_traces([logs], ["aggressive"], **SETTINGS)
    assert sorted(t.name for t in result.traces) == ["a", "b#1", "b#2", "c"]
    assert _relative(logs, result.not_runs) == NOT_RUNS
    assert result.skipped == []
    # one path alone, as a string, is a path (not a list of letters)
    alone = compare_traces(str(logs / "team"), ["aggressive"], **SETTINGS)
    assert [t.name for t in alone.traces] == ["b#1", "b#2", "c"]
    assert _relative(logs, alone.not_runs) == {"team/config.json": NOT_RUNS[
        "team/config.json"]}
    assert count_traces([logs]) == count_traces(discover(logs)) == 4


def test_compare_traces_expands_a_glob_pattern_with_double_star(logs):
    result = compare_traces([f"{logs}/**/*.json"], ["aggressive"], **SETTINGS)
    assert [t.name for t in result.traces] == ["a", "c"]
    assert _relative(logs, result.not_runs) == {"team/config.json": NOT_RUNS[
        "team/config.json"]}
    deep = compare_traces([f"{logs}/**/*.jsonl"], ["aggressive"], **SETTINGS)
    assert [t.name for t in deep.traces] == ["b#1", "b#2"] and deep.not_runs == []
    with pytest.raises(TraceError, match="no file matches this pattern"):
        compare_traces([f"{logs}/**/*.yaml"], ["aggressive"], **SETTINGS)


def test_a_file_found_twice_is_read_once_and_a_non_run_named_once(logs):
    """The directory named twice (or a file in it named too) is read once, as the
    command line reads it; the file that is not a run is listed once."""
    found = discover([logs / "a.json", logs, logs])
    assert len(found.files) == 3 and len(found.skipped) == 2
    result = compare_traces([logs / "a.json", logs, logs], ["aggressive"], **SETTINGS)
    assert len(result.traces) == 4 and len(result.not_runs) == 2 and not result.repeated


def test_nothing_compared_still_names_the_files_that_are_not_runs(tmp_path):
    (tmp_path / "empty.jsonl").write_text("\n")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(NothingCompared) as caught:
        compare_traces([tmp_path], ["aggressive"], **SETTINGS)
    assert [Path(s.file).name for s in caught.value.skipped] == ["empty.jsonl"]
    assert [(Path(s.file).name, s.reason) for s in caught.value.not_runs] == [
        ("notes.txt", "not a .json, .jsonl, .ndjson file")]


def test_compare_traces_gives_what_the_command_gives(logs):
    """The same inputs (a directory and a pattern) give the same --json document and the
    same files named as not runs, in the same order."""
    args = [str(logs / "team"), f"{logs}/*.json"]
    cli = CliRunner().invoke(main, ["compare", *args, "-s", "aggressive", "-t", "chars4",
                                    "--json"])
    assert cli.exit_code == 0, cli.output
    result = compare_traces(args, ["aggressive"], **SETTINGS)
    assert [t.name for t in result.traces] == ["b#1", "b#2", "c", "a"]
    assert json.loads(cli.stdout) == json.loads(result.dumps())
    named = [f"skipped {s.file}: {s.reason}" for s in result.not_runs]
    assert named == [f"skipped {logs}/team/config.json: {NOT_RUNS['team/config.json']}"]
    assert cli.stderr.splitlines() == [*named, "4 file(s) found, 1 skipped (not a run); the "
                                               "runs of the other 3: 4 compared, 0 skipped"]


def test_load_traces_is_what_trace_show_and_render_read(logs):
    loaded = load_traces(logs)
    assert [t.name for t in loaded.traces] == ["a", "b#1", "b#2", "c"]
    assert [p.relative_to(logs).as_posix() for p in loaded.files] == [
        "a.json", "team/b.jsonl", "team/deep/c.json"]
    assert {p.relative_to(logs).as_posix(): why for p, why in loaded.skipped} == NOT_RUNS
    shown = CliRunner().invoke(main, ["trace", "show", str(logs)])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == "".join(describe_trace(t) + "\n" for t in loaded.traces)
    assert shown.stderr.splitlines() == [
        *(f"skipped {p}: {why}" for p, why in loaded.skipped), "2 file(s) skipped, 3 read"]
    pattern = load_traces([f"{logs}/**/*.jsonl", "product-research"])
    assert [t.name for t in pattern.traces] == ["b#1", "b#2", "product-research"]
    rendered = CliRunner().invoke(main, ["render", f"{logs}/**/c.json", "-s", "full-history",
                                         "-t", "2", "-f", "json"])
    assert rendered.exit_code == 0, rendered.output
    assert json.loads(rendered.stdout)["messages"] == load_traces(
        f"{logs}/**/c.json").traces[0].prompt(2, "full-history")
    (logs / "team" / "broken.json").write_text("{")
    with pytest.raises(TraceError, match=r"broken.json: line 1: invalid JSON"):
        load_traces(logs)


def test_import_transcripts_takes_a_directory_alone(logs, tmp_path):
    result = import_transcripts(logs, tmp_path / "all.jsonl")
    assert result.total == 4
    assert {p.relative_to(logs).as_posix(): why for p, why in result.skipped} == NOT_RUNS


def test_the_readme_example_runs(logs, monkeypatch):
    from test_readme import BLOCKS, run_block

    (logs.parent / "more").mkdir()
    (logs / "team" / "b.jsonl").rename(logs.parent / "more" / "b.jsonl")
    monkeypatch.chdir(logs.parent)
    namespace, printed = run_block(next(b for b in BLOCKS if "load_traces(" in b))
    assert [Path(s.file).as_posix() for s in namespace["result"].not_runs] == [
        "logs/notes.txt", "logs/team/config.json"]
    assert len(namespace["loaded"].traces) == 2
    assert printed.count("notes.txt") == 3

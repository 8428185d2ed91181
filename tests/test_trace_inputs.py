"""Directories and glob patterns as input to compare, trace show and import (DESIGN §12;
issue 19 item 3): read recursively, every skipped file named with its reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from transcripts_helpers import data

from turnpress.cli import main
from turnpress.core.trace import TraceError
from turnpress.core.trace_inputs import discover, skipped_lines
from turnpress.importing import import_transcripts


@pytest.fixture
def logs(tmp_path):
    """A project folder: runs in three formats (one nested), and files no reader reads."""
    root = tmp_path / "logs"
    (root / "nested" / "deeper").mkdir(parents=True)
    shutil.copy(data("openai/request.json"), root / "a.json")
    shutil.copy(data("claude-code/stream.jsonl"), root / "nested" / "session.jsonl")
    shutil.copy(data("responses/items.jsonl"), root / "nested" / "deeper" / "items.jsonl")
    (root / "notes.txt").write_text("not a log")
    (root / "broken.json").write_text("{\"messages\": [")
    (root / "nested" / "other.json").write_text(json.dumps({"hello": "world"}))
    (root / "nested" / "empty.jsonl").write_text("\n")
    return root


def test_a_directory_is_read_recursively_and_each_skipped_file_has_a_reason(logs):
    """What is not a run is skipped with its reason; a broken run (invalid JSON, empty)
    is one of the files to read, as if it were named (README: "every command treats it
    as if it were named")."""
    found = discover([logs])
    assert [p.relative_to(logs).as_posix() for p in found.files] == [
        "a.json", "broken.json", "nested/deeper/items.jsonl", "nested/empty.jsonl",
        "nested/session.jsonl"]
    reasons = {p.relative_to(logs).as_posix(): why for p, why in found.skipped}
    assert reasons == {
        "notes.txt": "not a .json, .jsonl, .ndjson file",
        "nested/other.json": "not a format turnpress reads"}
    lines = skipped_lines(found)
    assert len(lines) == 3 and lines[-1] == "2 file(s) skipped, 5 read"


def test_a_glob_pattern_crosses_directories_with_double_star(logs):
    found = discover([f"{logs}/**/*.jsonl"])
    assert [p.name for p in found.files] == ["items.jsonl", "empty.jsonl", "session.jsonl"]
    assert found.skipped == []
    with pytest.raises(TraceError, match="no file matches this pattern"):
        discover([f"{logs}/*.yaml"])


def test_compare_and_trace_show_take_a_directory(logs):
    result = CliRunner().invoke(main, ["compare", str(logs), "-s", "full-history", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert len(doc["traces"]) == 4  # 1 + 2 lines + 1 log
    # what is not a run is skipped by the scan; a run that cannot be read (invalid JSON,
    # empty) is a broken run, skipped and counted by compare as if named, and
    # --strict stops at it
    assert "skipped " in result.stderr
    assert result.stderr.splitlines()[-1] == ("7 file(s) found, 2 skipped (not a run); the "
                                              "runs of the other 5: 4 compared, 2 skipped")
    assert [Path(s["file"]).name for s in doc["skipped"]] == ["broken.json", "empty.jsonl"]
    strict = CliRunner().invoke(main, ["compare", str(logs), "-s", "full-history", "--strict"])
    assert strict.exit_code == 2 and "broken.json: line 1: invalid JSON" in strict.output
    # trace show / render: a broken run found is an error, as when it is named
    for command in (["trace", "show"], ["render"]):
        shown = CliRunner().invoke(main, [*command, f"{logs}/**/*.jsonl"])
        assert shown.exit_code == 2, shown.output
        assert shown.stderr.splitlines() == [
            f"Error: {logs}/nested/empty.jsonl: no trace in this file (it is empty)"]
    (logs / "nested" / "empty.jsonl").unlink()
    shown = CliRunner().invoke(main, ["trace", "show", f"{logs}/**/*.jsonl"])
    assert shown.exit_code == 0 and "imported from: claude-code" in shown.stdout
    assert shown.stderr == ""


def test_compare_of_a_directory_counts_files_and_runs_that_agree(tmp_path):
    """QA-b item 16: the scan said "1 file(s) skipped, 3 read", then compare skipped 2 of
    the 3 "read" (they cannot be read); the count now comes after the comparison, of the
    files found and of the runs compared and skipped, and they add up."""
    from turnpress.examples import example_trace_paths

    root = tmp_path / "d"
    root.mkdir()
    good = next(p for p in example_trace_paths() if p.stem == "product-research")
    shutil.copy(good, root / good.name)
    (root / "garbled.json").write_text("{oops")
    (root / "empty.jsonl").write_text("\n")
    (root / "notes.txt").write_text("hi")
    result = CliRunner().invoke(main, ["compare", str(root), "-s", "aggressive", "-t",
                                       "chars4"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[0] == f"skipped {root}/notes.txt: not a .json, .jsonl, .ndjson file"
    assert [ln.split(":")[0] for ln in lines[1:3]] == [f"Skipped {root}/empty.jsonl",
                                                       f"Skipped {root}/garbled.json"]
    assert lines[3:] == ["4 file(s) found, 1 skipped (not a run); the runs of the other 3: "
                         "1 compared, 2 skipped"]
    assert not any(" read" in ln for ln in lines)
    for other in ("phone-campaign", "inventory-audit"):
        shutil.copy(next(p for p in example_trace_paths() if p.stem == other), root)
    sampled = CliRunner().invoke(main, ["compare", str(root), "-s", "aggressive", "-t",
                                        "chars4", "--sample", "2"])
    assert sampled.exit_code == 0, sampled.output
    assert sampled.stderr.splitlines()[-1] == (
        "6 file(s) found, 1 skipped (not a run); the runs of the other 5: 2 compared, "
        "2 skipped, 1 not drawn (--sample)")

def test_import_a_directory(logs, tmp_path):
    """A broken run found in a directory (invalid JSON, not UTF-8, empty) stops the
    import as if it were named: exit 2, the error names the file and line, nothing is
    written (import --help: "Nothing is written if any input is bad"); a file that is
    not a run is passed over and named."""
    out = tmp_path / "all.jsonl"
    result = CliRunner().invoke(main, ["import", str(logs), "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"Error: {logs}/broken.json: line 1: invalid JSON at column 15: "
                             f"Expecting value\n")
    assert not out.exists()
    (logs / "broken.json").write_bytes(b'[{"role": "user", "content": "caf\xe9"}]')
    with pytest.raises(TraceError, match=r"broken.json: line 1: not UTF-8 text"):
        import_transcripts([logs], out)
    (logs / "broken.json").unlink()
    with pytest.raises(TraceError, match=r"empty.jsonl: no trace in this file"):
        import_transcripts([f"{logs}/**/*.jsonl"], out)
    assert not out.exists()
    (logs / "nested" / "empty.jsonl").unlink()
    result = CliRunner().invoke(main, ["import", str(logs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("imported 4 run(s) from 3 file(s)")
    assert result.stderr.splitlines() == [
        f"skipped {logs}/nested/other.json: not a format turnpress reads",
        f"skipped {logs}/notes.txt: not a .json, .jsonl, .ndjson file",
        "2 file(s) skipped, 3 read"]
    assert import_transcripts([logs], tmp_path / "again.jsonl").total == 4


def test_a_directory_with_nothing_to_read_is_one_line(tmp_path):
    (tmp_path / "x.txt").write_text("x")
    result = CliRunner().invoke(main, ["import", str(tmp_path), "-o", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "no file turnpress reads among the 1 found" in result.output


def test_compare_checks_its_options_before_scanning_a_directory(logs):
    """A bad -s, --cache, --price or --tokenizer is the only line: it is told before the
    scan names the files it skips (it came after them all)."""
    for option in (["-s", "nope"], ["--cache", "foo"], ["--price", "foo"],
                   ["--tokenizer", "foo"]):
        result = CliRunner().invoke(main, ["compare", str(logs), *option])
        assert result.exit_code == 2, result.output
        assert result.output.count("\n") == 1 and result.output.startswith("Error: ")
        assert "skipped" not in result.output

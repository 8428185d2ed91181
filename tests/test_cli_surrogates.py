"""Lone UTF-16 surrogates in what the commands print.

A chat log holding a cut-off emoji (``"\\ud83d"``) or a trace whose ``save_trace``
file stores one as ``{"$str": [...]}`` used to make every display command fail with
``UnicodeEncodeError``. These tests run ``turnpress render`` (every ``-f`` format),
``turnpress trace show`` and ``turnpress compare --html`` on such input and check
that each exits 0 without a traceback and shows the character as its ``\\ud83d``
escape: in text as written, in JSON output as a valid escape that reads back as the
same character, and in the HTML report (valid UTF-8) inside its embedded JSON data.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from turnpress import load_trace, save_trace
from turnpress.cli import main
from turnpress.core.errors import printable
from turnpress.examples import example_trace_paths

HIGH = "\ud83d"  # the first half of a cut-off emoji
LOW = "\udc00"
ESCAPED = "\\ud83d"
PRODUCT = next(p for p in example_trace_paths() if p.stem == "product-research")


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def ok(result: Result) -> str:
    """The output of a command that must have succeeded without a traceback."""
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception))
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return result.output


@pytest.fixture
def chat_log(tmp_path: Path) -> Path:
    """An OpenAI-style chat log whose messages hold lone surrogates (JSON escapes)."""
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([
        {"role": "system", "content": "You answer briefly."},
        {"role": "user", "content": f"Hi {HIGH} there"},
        {"role": "assistant", "content": f"Hello {HIGH}"},
        {"role": "user", "content": f"and {LOW} more"},
    ]), encoding="utf-8")
    return path


@pytest.fixture
def saved_trace(tmp_path: Path) -> Path:
    """A trace written by ``save_trace`` whose mission holds a lone surrogate."""
    trace = load_trace(PRODUCT)
    trace = dataclasses.replace(trace, mission=f"{trace.mission} {HIGH}")
    path = tmp_path / "cut.json"
    save_trace(trace, path)
    assert '"$str"' in path.read_text(encoding="utf-8")  # the README's form
    return path


def test_printable_escapes_only_lone_surrogates() -> None:
    assert printable(f"a {HIGH} é 😀 \\") == f"a {ESCAPED} é 😀 \\"
    assert printable("plain") == "plain"
    assert json.loads(printable(json.dumps([HIGH], ensure_ascii=False))) == [HIGH]


def test_render_text_shows_the_escape(chat_log: Path) -> None:
    out = ok(run("render", str(chat_log), "-t", "2"))  # the next prompt: every message
    assert f"Hi {ESCAPED} there" in out and f"Hello {ESCAPED}" in out
    assert "and \\udc00 more" in out


@pytest.mark.parametrize("fmt", ["json", "openai", "anthropic", "responses"])
def test_render_json_formats_round_trip(chat_log: Path, fmt: str) -> None:
    out = ok(run("render", str(chat_log), "-f", fmt))
    assert f"Hi {ESCAPED} there" in out
    assert f"Hi {HIGH} there" in json.dumps(json.loads(out), ensure_ascii=False)


def test_render_jsonl_of_several_runs(tmp_path: Path, chat_log: Path) -> None:
    """Several runs: one JSON document a line, each valid."""
    runs = tmp_path / "runs.jsonl"
    log = json.loads(chat_log.read_text(encoding="utf-8"))
    runs.write_text(f"{json.dumps(log)}\n{json.dumps(log)}\n", encoding="utf-8")
    lines = ok(run("render", str(runs), "-f", "json")).splitlines()
    assert len(lines) == 2
    for line in lines:
        assert f"Hi {HIGH} there" in json.dumps(json.loads(line), ensure_ascii=False)


def test_render_saved_trace(saved_trace: Path) -> None:
    assert f"stock {ESCAPED}" in ok(run("render", str(saved_trace)))
    doc = json.loads(ok(run("render", str(saved_trace), "-f", "json")))
    assert f"stock {HIGH}" in json.dumps(doc, ensure_ascii=False)


@pytest.mark.parametrize("view", ["full", "compressed"])
def test_trace_show(chat_log: Path, saved_trace: Path, view: str) -> None:
    assert f"Hi {ESCAPED} there" in ok(run("trace", "show", str(chat_log), "--view", view))
    assert f"stock {ESCAPED}" in ok(run("trace", "show", str(saved_trace), "--view", view))


def test_trace_file_named_with_a_surrogate(tmp_path: Path, chat_log: Path) -> None:
    """A file name that is not UTF-8 (read as ``\\udcff``) is shown escaped too."""
    try:
        path = Path(os.fsdecode(os.fsencode(tmp_path) + b"/cut\xff.json"))
        path.write_bytes(chat_log.read_bytes())
    except (OSError, UnicodeError):
        pytest.skip("this file system takes no file name that is not UTF-8")
    assert "cut\\udcff" in ok(run("render", str(path)))


def test_compare_html(tmp_path: Path, chat_log: Path) -> None:
    html = tmp_path / "report.html"
    ok(run("compare", str(chat_log), "-s", "full-history", "--html", str(html)))
    page = html.read_bytes().decode("utf-8")  # valid UTF-8
    assert ESCAPED in page
    found = re.search(r'<script id="report-data" type="application/json">(.*?)</script>',
                      page, re.S)
    assert found is not None
    data = json.loads(found.group(1))
    assert f"Hi {HIGH} there" in data["texts"]

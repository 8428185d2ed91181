"""Issue 19's "Also fix" list: what a new user hit on hand-written OpenAI and Anthropic
transcripts (each test names its item)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from transcripts_helpers import data

from turnpress.cli import main


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_recall_with_no_needed_fact_is_na_in_the_table_and_null_in_json():
    """Recall with no needed facts: n/a, not 1.000, when recall measured nothing."""
    path = str(data("openai/request.json"))
    table = run("compare", path, "-s", "full-history", "-s", "rolling-window")
    assert table.exit_code == 0, table.output
    rows = [line for line in table.output.splitlines() if line.startswith(("full-", "rolling"))]
    assert rows and all(line.split()[-2] == "n/a" for line in rows)
    doc = json.loads(run("compare", path, "-s", "full-history", "--json").output)
    assert doc["strategies"][0]["needed_fact_recall"] is None
    assert doc["strategies"][0]["needed_facts"] == 0


def test_render_openai_keeps_the_request_tools_through_import(tmp_path):
    """`render -f openai` dropped the input's tools: a request body renders as that
    request, messages and tools, also after `import` (the schema is saved)."""
    source = data("openai/request.json")
    tools = json.loads(source.read_text())["tools"]
    out = tmp_path / "runs.jsonl"
    assert run("import", str(source), "-o", str(out)).exit_code == 0
    for path in (source, out):
        doc = json.loads(run("render", str(path), "-s", "full-history", "-f", "openai").output)
        assert doc["tools"] == tools
    anthropic = json.loads(run("render", str(data("anthropic/run.json")), "-f",
                               "anthropic").output)
    assert anthropic["tools"] == json.loads(data("anthropic/run.json").read_text())["tools"]
    # a PTC-Lisp trace defines no provider tools: no "tools" key
    assert "tools" not in json.loads(run("render", "product-research", "-f", "openai").output)


def test_trace_show_of_a_transcript_uses_the_transcripts_own_terms():
    """`trace show` on a transcript said program:/output: and {:city "Paris"}: it shows
    the assistant's text, JSON arguments, results and the user's messages by role."""
    shown = run("trace", "show", str(data("anthropic/run.json"))).output
    assert "program:" not in shown and "output:" not in shown and "{:" not in shown
    assert 'query({"sql": "select count(*) from orders"}) -> "1042"' in shown
    assert "assistant:\nI will query both tables at once." in shown
    assert "user:\nHint: the table is called shipping." in shown
    # a PTC-Lisp run is unchanged
    lisp = run("trace", "show", "product-research").output
    assert "program:" in lisp and "(def electronics" in lisp

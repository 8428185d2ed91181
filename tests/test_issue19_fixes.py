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

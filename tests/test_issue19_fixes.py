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

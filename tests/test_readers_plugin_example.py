"""The example plugin's third-party trace reader (``example-events``), installed for real."""

from __future__ import annotations

import json

from click.testing import CliRunner
from transcripts_helpers import data

from turnpress import Failure, load_trace
from turnpress.cli import main
from turnpress.core.trace import trace_formats


def test_event_log_is_read_by_load_trace(example_on_path):
    assert "example-events" in trace_formats()
    trace = load_trace(data("events/run.json"))
    assert trace.source == "example-events" and trace.mission == "Count the files."
    assert len(trace.turns) == 3
    first = trace.turns[0]
    assert first.program == "Listing them." and [c.args for c in first.tool_calls] == [
        ({"command": "ls"},)]
    assert first.result == Failure("tool_error", "ls: cannot open directory")
    assert trace.turns[1].success and trace.turns[1].program == ""
    assert trace.turns[2].program == "There are 3 files."
    assert [m["role"] for m in trace.preamble] == ["system", "user"]


def test_event_log_in_every_command(example_on_path):
    path = str(data("events/run.json"))
    shown = CliRunner().invoke(main, ["trace", "show", path])
    assert shown.exit_code == 0 and "imported from: example-events" in shown.output
    rendered = CliRunner().invoke(main, ["render", path, "-s", "full-history", "-f", "openai"])
    assert rendered.exit_code == 0, rendered.output
    assert [m["role"] for m in json.loads(rendered.output)["messages"]] == [
        "system", "user", "assistant", "tool", "assistant", "tool"]


def test_without_the_plugin_the_format_is_unknown(fresh_registry):
    result = CliRunner().invoke(main, ["trace", "show", str(data("events/run.json"))])
    assert result.exit_code == 2 and "not a format turnpress reads" in result.output
    assert "example-events" not in result.output

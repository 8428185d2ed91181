"""What every built-in strategy must do the same way: check its options, take them
from the command line, and show up in ``turnpress plugins``."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from turnpress import get_strategy, normalize
from turnpress.cli import main

BUILTIN_STRATEGIES = ["aggressive", "checkpoint-coalesced", "clear-tool-uses", "full-history",
                      "observation-masking", "per-turn-summary", "progressive-batch",
                      "rolling-window", "single-user-coalesced"]

BAD_OPTION_VALUES = [
    ("aggressive", {"output_chars": 3}, ["'output_chars'", ">= 4", "3"]),
    ("aggressive", {"println_limit": -1}, ["'println_limit'", ">= 0"]),
    ("aggressive", {"tool_call_limit": None}, ["'tool_call_limit'", "integer", "None"]),
    ("checkpoint-coalesced", {"every": 0}, ["'every'", ">= 1", "0"]),
    ("checkpoint-coalesced", {"delta_chars": -1}, ["'delta_chars'", ">= 0"]),
    ("checkpoint-coalesced", {"errors": "all"}, ["'errors'", "'last'", "'pairs'"]),
    ("clear-tool-uses", {"trigger": -5}, ["'trigger'", ">= 0", "-5"]),
    ("clear-tool-uses", {"clear_at_least": 1.5}, ["'clear_at_least'", "integer"]),
    ("observation-masking", {"window": -1}, ["'window'", ">= 0", "-1"]),
    ("observation-masking", {"step": 0}, ["'step'", ">= 1", "0"]),
    ("observation-masking", {"window": 2.0}, ["'window'", "integer", "2.0"]),
    ("per-turn-summary", {"println_limit": -1}, ["'println_limit'", ">= 0", "-1"]),
    ("per-turn-summary", {"tool_call_limit": 1.5}, ["'tool_call_limit'", "integer", "1.5"]),
    ("progressive-batch", {"min_preserved": -1}, ["'min_preserved'", ">= 0", "-1"]),
    ("progressive-batch", {"batch_size": 0}, ["'batch_size'", ">= 1", "0"]),
    ("progressive-batch", {"batch_size": "4"}, ["'batch_size'", "integer", "'4'"]),
    ("rolling-window", {"window": -1}, ["'window'", ">= 0", "-1"]),
    ("rolling-window", {"step": 0}, ["'step'", ">= 1", "0"]),
    ("rolling-window", {"window": True}, ["'window'", "integer"]),
    ("rolling-window", {"println_limit": -2}, ["'println_limit'", ">= 0"]),
    ("rolling-window", {"tool_call_limit": "many"}, ["'tool_call_limit'", "integer"]),
    ("rolling-window", {"errors": "all"}, ["'errors'", "'last'", "'pairs'"]),
    ("single-user-coalesced", {"tool_call_limit": -3}, ["'tool_call_limit'", ">= 0"]),
]


@pytest.mark.parametrize(("name", "options", "words"), BAD_OPTION_VALUES)
def test_bad_option_values(name: str, options: dict[str, Any], words: list[str]) -> None:
    """A bad option value raises ValueError naming the strategy, option and range."""
    with pytest.raises(ValueError) as exc:
        get_strategy((name, options))
    for word in [f"'{name}'", *words]:
        assert word in str(exc.value)


@pytest.mark.parametrize(("spec", "message"), [
    ("aggressive:errors=pairs", r"has no option 'errors'.*output_chars"),
    ("observation-masking:keep=2", "has no option 'keep'; valid options: window, step"),
    ("checkpoint-coalesced:window=2", r"has no option 'window'.*every, delta_chars"),
    ("clear-tool-uses:keep_last=2", r"has no option 'keep_last'.*trigger, keep"),
    ("per-turn-summary:window=2", r"has no option 'window'.*println_limit, tool_call_limit"),
    ("progressive-batch:enabled=true", r"has no option 'enabled'.*min_preserved, batch_size"),
    ("rolling-window:size=3", r"'rolling-window' has no option 'size'.*window, step"),
    ("rolling-window:window=two", "'window' expects an integer"),
    ("full-history:window=1", "'full-history' has no option 'window'; valid options: "
                              r"\(none\)"),
])
def test_unknown_option(spec: str, message: str) -> None:
    """API-006: an unknown option or an unparsable value names the valid ones."""
    with pytest.raises(ValueError, match=message):
        normalize(spec)


@pytest.mark.parametrize(("spec", "expected"), [
    ("aggressive:output_chars=40", "Turns left"),
    ("observation-masking:window=1", "omitted:"),
    ("observation-masking:window=1,step=2", "omitted:"),
    ("checkpoint-coalesced:every=5", "ran (code omitted)"),
    ("clear-tool-uses:trigger=100,keep=1", "[cleared]"),
    ("per-turn-summary:println_limit=5", "```clojure"),
    ("progressive-batch:min_preserved=1,batch_size=2", "recap - turn 1"),
    ("rolling-window:window=1,step=2", "===== [4] user ====="),
    ("single-user-coalesced:errors=pairs", ";; Tool calls made:"),
    ("full-history", "===== [3] assistant ====="),
])
def test_cli_render_with_options(spec: str, expected: str) -> None:
    """``turnpress render --strategy NAME:k=v`` works for every strategy (over every
    bundled trace: ``render`` without a TRACE shows product-research only, ux-a item 18)."""
    from turnpress.examples import example_trace_paths

    output = ""
    for path in example_trace_paths():
        result = CliRunner().invoke(main, ["render", str(path), "--strategy", spec])
        assert result.exit_code == 0, result.output
        assert f"strategy {spec.partition(':')[0]}" in result.output
        output += result.output
    assert expected in output


@pytest.mark.parametrize(("spec", "message"), [
    ("aggressive:output_chars=2", "'output_chars' must be an integer >= 4"),
    ("rolling-window:step=0", "'step' must be an integer >= 1"),
])
def test_cli_rejects_bad_options(spec: str, message: str) -> None:
    result = CliRunner().invoke(main, ["render", "--strategy", spec])
    assert result.exit_code == 2 and message in result.output


def test_aggressive_cli_output_has_no_samples() -> None:
    result = CliRunner().invoke(main, ["render", "--strategy", "aggressive:output_chars=40"])
    assert "sample:" not in result.output


@pytest.mark.parametrize("name", BUILTIN_STRATEGIES)
def test_listed_by_turnpress_plugins(name: str) -> None:
    """``turnpress plugins`` lists each strategy once, as a built-in."""
    result = CliRunner().invoke(main, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = [row for row in json.loads(result.output)["plugins"]
            if name in row["registers"].get("strategy", [])]
    assert len(rows) == 1 and rows[0]["builtin"]

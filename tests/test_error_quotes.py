"""Bad input echoes at most 80 characters of the bad value (issue 19, "Bad input"):
an unknown role of 100k characters used to be printed whole."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from turnpress.cli import main
from turnpress.core.errors import QUOTE_LIMIT, quote

HUGE = "r" * 100_000
USER = {"role": "user", "content": "m"}

CASES = {
    "openai role": [{"role": "system", "content": "s"}, USER, {"role": HUGE, "content": "x"}],
    "openai call id": [USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": HUGE, "content": "x"}],
    "openai usage": [USER, {"role": "assistant", "content": "a",
                            "usage": {"prompt_tokens": HUGE}}],
    "anthropic role": {"system": "s", "messages": [USER, {"role": HUGE, "content": "x"}]},
    "anthropic block": {"system": "s", "messages": [USER, {"role": "assistant", "content": [
        {"type": HUGE}]}]},
    "responses role": {"input": [USER, {"type": "message", "role": HUGE, "content": "x"}]},
    "native field": {"version": 2, "mission": "m", "max_turns": 1, "turns": [], HUGE: 1},
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_huge_bad_value_is_quoted_short(name, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(CASES[name]))
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output[:300]
    assert len(result.output) < len(str(path)) + 400, result.output[:500]
    assert "rrr..." in result.output


def test_quote():
    assert quote("abc") == "'abc'"
    assert len(quote(HUGE)) <= QUOTE_LIMIT and quote(HUGE).endswith("...'")
    assert len(quote([HUGE])) == QUOTE_LIMIT and quote([HUGE]).endswith("...")

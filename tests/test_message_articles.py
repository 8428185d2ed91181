"""Error messages put "a" or "an" before a word by its sound (QA item 17: "an user
message"), through one helper, :func:`turnpress.core.errors.a_or_an`, wherever a message
puts an article before a word it does not know in advance."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from turnpress import compress, render
from turnpress.cli import main
from turnpress.core.errors import a_or_an


@pytest.mark.parametrize(("word", "expected"), [
    ("user", "a user"), ("usage", "a usage"), ("unit", "a unit"), ("euro", "a euro"),
    ("one", "a one"), ("str", "a str"), ("list", "a list"), ("NoneType", "a NoneType"),
    ("assistant", "an assistant"), ("int", "an int"), ("object", "an object"),
    ("unknown", "an unknown"), ("upper", "an upper"), ("input_text", "an input_text"),
    ("", "a ")])
def test_a_or_an(word: str, expected: str) -> None:
    assert a_or_an(word) == expected


def test_a_user_message_needs_content() -> None:
    with pytest.raises(ValueError) as info:
        compress([{"role": "user", "content": None}, {"role": "assistant", "content": "x"}])
    assert "message 0: a user message needs \"content\"" in str(info.value)


def test_render_names_a_turn_that_is_not_one() -> None:
    with pytest.raises(TypeError, match=r"turns\[0\] is an int, not a Turn"):
        render([1], mission="m", turns_left=1)


def test_claude_code_line_without_a_message(tmp_path) -> None:
    path = tmp_path / "session.jsonl"
    lines = [{"type": "system", "subtype": "init", "session_id": "s", "uuid": "i"},
             {"type": "assistant", "session_id": "s", "uuid": "a"}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert "line 2: an assistant line needs a \"message\" object" in result.output

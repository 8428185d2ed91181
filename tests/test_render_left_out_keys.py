"""``turnpress render -f text|openai|anthropic|responses`` leaves out no message key of the
trace silently: a key the format has no place for is named on stderr, one warning line a
key, with the formats that keep it (``-f json`` keeps every key); a key the format
carries or re-encodes (``tool_calls`` as ``tool_use`` blocks, a tool message's ``name``
as its call's) is no warning, and the printed prompt is what it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from turnpress.cli import main
from turnpress.core.message_keys import FORMATS, LeftOut, carries, left_out_keys
from turnpress.core.providers import (
    format_text,
    prompt_with_breakpoints,
    to_anthropic,
    to_openai,
)
from turnpress.core.responses import to_responses
from turnpress.core.trace import load_trace, save_traces
from turnpress.examples import example_trace_paths


def _call(call_id: str, name: str = "bash") -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps({"command": "ls"})}}


#: an OpenAI-style transcript whose messages carry keys beyond the chat fields
MESSAGES = [
    {"role": "system", "content": "You are a shell agent."},
    {"role": "user", "content": "How many files?", "name": "alice", "x_custom": {"a": 1}},
    {"role": "assistant", "content": "Let me look.", "reasoning_content": "ls counts them",
     "tool_calls": [_call("c1")], "function_call": None, "x_custom": "z"},
    {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": "a b c"},
    {"role": "assistant", "content": "3 files."},
]

WHY = {"text": "the text view shows a message's role, content and tool calls only",
       "openai": "it is no field of an OpenAI chat message",
       "anthropic": "an Anthropic Messages request has no place for it",
       "responses": "an OpenAI Responses request has no place for it"}


def _warning(fmt: str, key: str, count: int, kept: str) -> str:
    return (f"warning: -f {fmt} leaves out the message key '{key}' ({count} "
            f"message{'' if count == 1 else 's'}): {WHY[fmt]}; {kept}")


EXPECTED = {
    "json": [],
    "openai": [_warning("openai", "x_custom", 2, "-f json keeps it")],
    **{fmt: [_warning(fmt, "name", 1, "-f openai and -f json keep it"),
             _warning(fmt, "x_custom", 2, "-f json keeps it"),
             _warning(fmt, "reasoning_content", 1, "-f openai and -f json keep it")]
       for fmt in ("text", "anthropic", "responses")},
}


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(MESSAGES))
    return path


def render(*args: str):
    return CliRunner().invoke(main, ["render", *args])


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_key_a_format_leaves_out_is_one_warning_naming_who_keeps_it(run_file, fmt):
    result = render(str(run_file), "-s", "full-history", "-t", "3", "-f", fmt)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == EXPECTED[fmt]
    # what is printed is what it was: the warning is all that is new
    messages = load_trace(run_file).prompt(3, "full-history")
    assert left_out_keys(messages, fmt) == {
        line.split("'")[1]: int(line.split("(")[1].split(" ")[0]) for line in EXPECTED[fmt]}
    if fmt == "openai":
        assert json.loads(result.stdout)["messages"] == to_openai(messages)
        assert json.loads(result.stdout)["messages"][1]["name"] == "alice"
        assert json.loads(result.stdout)["messages"][2]["reasoning_content"] == \
            "ls counts them"
    elif fmt == "anthropic":
        system, shaped = to_anthropic(*prompt_with_breakpoints(load_trace(run_file), 3,
                                                               "full-history"))
        assert json.loads(result.stdout) == {"system": system, "messages": shaped}
    elif fmt == "responses":
        assert json.loads(result.stdout)["input"] == to_responses(messages)[1]
    elif fmt == "text":
        assert format_text(messages) in result.stdout
    else:
        assert json.loads(result.stdout)["messages"] == messages == MESSAGES


def test_a_tool_message_name_is_left_out_only_when_it_is_not_its_calls(tmp_path):
    """A tool message's ``name`` is its call's (the tool_use block / function_call item
    carries it): no warning. A name that is not its call's is lost: a warning."""
    messages = [dict(m) for m in MESSAGES[:3]] + [
        {"role": "tool", "tool_call_id": "c1", "name": "grep", "content": "a b c"},
        {"role": "assistant", "content": "3 files."}]
    for m in messages:
        for key in ("name", "x_custom", "reasoning_content"):
            if m["role"] != "tool":
                m.pop(key, None)
    path = tmp_path / "renamed.json"
    path.write_text(json.dumps(messages))
    result = render(str(path), "-s", "full-history", "-t", "3", "-f", "anthropic")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [_warning("anthropic", "name", 1,
                                                   "-f openai and -f json keep it")]
    tool = {"role": "tool", "tool_call_id": "c1", "name": "bash", "content": ""}
    assert carries("anthropic", tool, "name", {"c1": "bash"})
    assert not carries("anthropic", tool, "name", {"c1": "grep"})
    assert not carries("anthropic", tool, "name")


def test_several_runs_give_one_line_a_key(tmp_path, run_file):
    runs = tmp_path / "runs.jsonl"
    trace = load_trace(run_file)
    save_traces([trace, trace], runs)
    result = render(str(runs), "-s", "full-history", "-t", "3", "-f", "openai")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [_warning("openai", "x_custom", 4,
                                                   "-f json keeps it")]
    gathered = LeftOut("anthropic")
    for _ in range(2):
        gathered.add(trace.prompt(3, "full-history"))
    assert gathered.counts == {"name": 2, "x_custom": 4, "reasoning_content": 2}
    assert gathered.kept_by == {"name": ["openai", "json"], "x_custom": ["json"],
                                "reasoning_content": ["openai", "json"]}


def test_no_warning_when_nothing_is_left_out():
    """The bundled runs (PTC-Lisp) under every strategy, and a key holding None (a
    logger's ``function_call: null``): nothing to tell."""
    path = next(p for p in example_trace_paths() if p.stem == "product-research")
    for strategy in ("full-history", "price-scheduled", "rolling-window"):
        for fmt in FORMATS:
            result = render(str(path), "-s", strategy, "-f", fmt)
            assert result.exit_code == 0, result.output
            assert result.stderr == "", (strategy, fmt)
    assert left_out_keys([{"role": "assistant", "content": "x", "function_call": None,
                           "provider_specific_fields": None}], "anthropic") == {}
    with pytest.raises(ValueError, match="unknown format 'yaml'"):
        LeftOut("yaml")

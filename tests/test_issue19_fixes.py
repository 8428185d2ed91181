"""Issue 19's "Also fix" list: what a new user hit on hand-written OpenAI and Anthropic
transcripts (each test names its item)."""

from __future__ import annotations

import json

import pytest
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
    lines = table.output.splitlines()
    recall = next(line for line in lines if line.startswith("strategy")).split().index("recall")
    rows = [[cell for cell in line.split() if cell != "*"] for line in lines
            if line.startswith(("full-history ", "rolling-window "))]
    assert rows and all(row[recall] == "n/a" for row in rows)
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


_CALL = {"type": "function", "function": {"name": "ls", "arguments": "{}"}}


def test_a_call_left_unanswered_mid_run_is_refused_with_its_index(tmp_path):
    """Shapes a provider refuses: an unanswered call in the middle of a run was accepted
    and rendered into a list the OpenAI API refuses."""
    import pytest

    from turnpress import Compressor, compress
    from turnpress.core.trace import TraceError

    messages = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": None,
                 "tool_calls": [{**_CALL, "id": "a"}, {**_CALL, "id": "b"}]},
                {"role": "tool", "tool_call_id": "a", "content": "x"},
                {"role": "assistant", "content": "done"}]
    problem = "message 1: tool_calls[1] (id 'b') is never answered"
    with pytest.raises(TraceError, match=r"message 1: tool_calls\[1\] \(id 'b'\) is never"):
        compress(messages)
    compressor = Compressor()
    compressor.extend(messages[:3])
    with pytest.raises(ValueError, match=r"tool_calls\[1\]"):
        compressor.add(messages[3])
    assert len(compressor) == 3  # left as it was
    path = tmp_path / "run.json"
    path.write_text(json.dumps(messages))
    result = run("render", str(path), "-f", "openai")
    assert result.exit_code == 2 and problem in result.output
    # the last turn may still wait for its answers: the run ended there
    assert compress(messages[:3], strategy="full-history") == messages[:3]


def test_duplicate_answers_say_duplicate():
    import pytest

    from turnpress import compress

    with pytest.raises(ValueError, match="duplicate answer"):
        compress([{"role": "user", "content": "go"},
                  {"role": "assistant", "content": None, "tool_calls": [{**_CALL, "id": "a"}]},
                  {"role": "tool", "tool_call_id": "a", "content": "x"},
                  {"role": "tool", "tool_call_id": "a", "content": "y"}])


def test_openai_shape_sends_only_message_fields_and_string_arguments(tmp_path):
    """arguments given as an object become a JSON string in -f openai; keys that are no
    field of an OpenAI message (extra, provider_specific_fields) are not sent by
    compress() or render -f openai, and the trace keeps them."""
    from turnpress import compress
    from turnpress.core.trace import load_trace

    messages = [{"role": "user", "content": "go", "extra": {"ts": 1}},
                {"role": "assistant", "content": None, "provider_specific_fields": {"x": 1},
                 "tool_calls": [{"id": "a", "type": "function",
                                 "function": {"name": "ls", "arguments": {"path": "."}}}]},
                {"role": "tool", "tool_call_id": "a", "content": "f.txt", "extra": {}}]
    out = compress(messages, strategy="full-history")
    assert out == [{"role": "user", "content": "go"},
                   {"role": "assistant", "content": None, "tool_calls": [
                       {"id": "a", "type": "function",
                        "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}]},
                   {"role": "tool", "tool_call_id": "a", "content": "f.txt"}]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(messages))
    rendered = run("render", str(path), "-s", "full-history", "-f", "openai", "-t", "2")
    assert json.loads(rendered.stdout)["messages"] == out
    # left out, but not silently: one line a key, naming the format that keeps it
    why = "it is no field of an OpenAI chat message; -f json keeps it"
    assert rendered.stderr.splitlines() == [
        f"warning: -f openai leaves out the message key 'extra' (2 messages): {why}",
        f"warning: -f openai leaves out the message key 'provider_specific_fields' "
        f"(1 message): {why}"]
    assert load_trace(path).turns[0].messages[0]["provider_specific_fields"] == {"x": 1}



def test_full_history_keeps_what_openai_compatible_apis_take_back() -> None:
    """A reasoning model's ``reasoning_content`` (DeepSeek, vLLM: required back with its
    tool calls) or ``reasoning`` (OpenRouter), and a tool message's ``name`` (Mistral,
    Gemini), are sent as given: full-history gives the input back (it dropped them)."""
    from turnpress import compress

    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "reasoning_content": "I think...",
                 "tool_calls": [{"id": "a", "type": "function",
                                 "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "name": "f", "content": "r"},
                {"role": "assistant", "content": "done", "reasoning": "short"},
                {"role": "user", "content": "next"}]
    assert compress(messages, strategy="full-history") == messages


def test_importing_the_same_run_twice_warns_naming_it(tmp_path):
    out = tmp_path / "runs.jsonl"
    source = str(data("openai/request.json"))
    first = run("import", source, "-o", str(out))
    assert first.exit_code == 0 and first.stderr == ""
    again = run("import", source, "-o", str(out))
    assert again.exit_code == 0
    assert again.stderr == (f"warning: run 'request' was imported again: the same run is "
                            f"already at {out}: line 1\n")
    copy = tmp_path / "copy.json"
    copy.write_text(data("openai/request.json").read_text())
    twice = run("import", source, str(copy), "-o", str(tmp_path / "two.jsonl"))
    assert twice.stderr == ("warning: run 'copy' was imported again: the same run is "
                            f"already at run 1 of this import ({source})\n")


def test_import_a_directory_is_one_line_not_a_usage_error(tmp_path):
    (tmp_path / "logs").mkdir()
    result = run("import", str(tmp_path / "logs"), "-o", str(tmp_path / "o.jsonl"))
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith(f"Error: {tmp_path / 'logs'}: ")


def test_a_utf8_bom_is_accepted(tmp_path):
    for rel, name in (("openai/request.json", "bom.json"), ("openai/runs.jsonl", "bom.jsonl"),
                      ("claude-code/stream.jsonl", "cc.jsonl")):
        path = tmp_path / name
        path.write_bytes(b"\xef\xbb\xbf" + data(rel).read_bytes())
        for command in (["trace", "show"], ["compare", "-s", "full-history"]):
            result = run(*command, str(path))
            assert result.exit_code == 0, (name, command, result.output)


def test_dash_reads_standard_input_in_every_command(tmp_path):
    text = data("openai/request.json").read_text()
    for command in (["trace", "show", "-"], ["render", "-", "-f", "openai"],
                    ["compare", "-", "-s", "full-history"],
                    ["import", "-", "-o", str(tmp_path / "in.jsonl")]):
        result = CliRunner().invoke(main, command, input=text)
        assert result.exit_code == 0, (command, result.output)
    shown = CliRunner().invoke(main, ["trace", "show", "-"],
                               input=data("claude-code/stream.jsonl").read_text())
    assert shown.exit_code == 0 and "trace stdin: 3 of 3 turns" in shown.output
    empty = CliRunner().invoke(main, ["trace", "show", "-"], input="")
    assert empty.exit_code == 2 and "standard input is empty" in empty.output


def test_a_template_override_adds_text_with_include_as_documented(tmp_path):
    """Docs: `{% extends "default:..." %}` cannot add text (the built-in templates define
    no blocks); the README's `{% include "default:..." %}` does."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    [example] = re.findall(r"```jinja\n\{# my-templates/history/turns_left.j2 #\}\n(.*?)```",
                           readme, flags=re.S)
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "turns_left.j2").write_text(example)
    result = run("render", "product-research", "-t", "2", "--templates", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "Turns left: 5\nHurry up." in result.output


def test_compare_help_shows_none_and_strategies_lists_options():
    """Help: `compare -s` shows |none as render does; `turnpress strategies` lists each
    strategy's options with defaults and a line each."""
    assert "NAME[:k=v,...]|none" in run("compare", "--help").output
    listed = run("strategies", "rolling-window")
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0].startswith("rolling-window: ")
    # the default once, beside the name; the range kept with the name in the text
    assert lines[1].split() == ["window=2", "window", "(>=", "0)", "turns", "kept", "in",
                                "full"]
    assert [line.split()[0] for line in lines[1:]] == [
        "window=2", "step=10", "println_limit=15", "tool_call_limit=20", "errors=last"]
    everything = run("strategies").output
    assert "full-history: " in everything and "  (no options)" in everything
    bad = run("strategies", "nope")
    assert bad.exit_code == 2 and bad.output.count("\n") == 1


@pytest.mark.parametrize(("name", "sdk", "key", "url", "kind"), [
    ("openai_loop", "openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OpenAI"),
    ("anthropic_loop", "anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "Anthropic"),
    ("langchain_loop", "langchain_core", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OpenAI"),
])
def test_a_loop_example_without_a_key_prints_one_line(name, sdk, key, url, kind):
    import os
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip(sdk)
    example = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
    env = {k: v for k, v in os.environ.items() if k != key}
    result = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                            env=env, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (f"examples/{name}.py: set {key} (and {url} for another "
                             f"{kind}-compatible server) to run it\n")

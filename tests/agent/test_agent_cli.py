"""``turnpress run``: offline examples, saved traces, real-LLM flags, and clean input errors."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner
from fake_openai import FakeLLMServer

from turnpress import load_trace
from turnpress.agent.tasks import bundled_task_names, load_task
from turnpress.cli import main
from turnpress.core.model import Usage


def invoke(*args: str):
    return CliRunner().invoke(main, ["run", *args])


def test_run_without_arguments_runs_the_default_example_offline():
    result = invoke()
    assert result.exit_code == 0, result.output
    out = result.stdout
    task = load_task()
    assert "turnpress run product-research (bundled task)" in out
    assert "LLM: scripted (4 replies)" in out and "strategy: price-scheduled" in out
    for n in range(1, 5):
        assert f"Turn {n} of 5" in out
    assert "Turn 5 of 5" not in out
    # each turn shows its prompt, the reply and what ran
    # the default (price-scheduled): the view, then one compact delta pair per turn since
    # the last rebuild, the latest turn's followed by the rest of what it showed when
    # there is more, else its delta (turn 1's); turn 3's prompt is a rebuild (the view
    # would show turns 1-2 by their key lines only: a small write), turn 4's appends
    assert re.findall(r"> prompt \((\d+) messages\)", out) == ["2", "4", "2", "4"]
    assert "[1] system: (static system prompt," in out
    assert "Turns left: 5" in out and "Turns left: 2" in out
    assert "Electronics products (rating 4.0 or more)" in out  # the expanded mission
    for reply in task.replies:
        assert reply.strip() in out
    assert "> ran: FAILED (undefined_symbol)" in out
    assert 'tool call: search-reviews("Electronics")' in out
    assert "succeeded after 4 turns" in out
    assert 'result: ["Laptop" "Monitor" "Keyboard"]' in out


@pytest.mark.parametrize("name", bundled_task_names())
def test_every_bundled_example_succeeds(name):
    result = invoke(name)
    assert result.exit_code == 0, result.output
    assert "succeeded after" in result.stdout


def test_save_trace_writes_a_loadable_trace(tmp_path):
    path = tmp_path / "run.json"
    result = invoke("phone-campaign", "--save-trace", str(path))
    assert result.exit_code == 0, result.output
    assert f"trace saved to {path}" in result.stdout
    trace = load_trace(path)
    assert trace.name == "phone-campaign" and len(trace.turns) == 3
    assert trace.mission.startswith("Tell every contact that the meeting moved to 3pm")
    calls = [c.name for t in trace.turns for c in t.tool_calls]
    assert calls == ["make-call"] * 4 + ["send-email"]
    assert set(trace.tools) == {"make-call", "send-email"}


def test_task_file_and_overrides(tmp_path):
    path = tmp_path / "count.toml"
    path.write_text('mission = "Count the items"\n'
                    'replies = ["```clojure\\n(def n (count data/items))\\n```",'
                    ' "```clojure\\n(return n)\\n```"]\n'
                    "[data]\nitems = [1, 2, 3]\n")
    result = invoke(str(path))
    assert result.exit_code == 0, result.output
    # no compression in the file: the one default, the default strategy (as render())
    assert "strategy: price-scheduled" in result.stdout and "result: 3" in result.stdout
    cut = invoke(str(path), "--max-turns", "1", "--strategy", "single-user-coalesced")
    assert cut.exit_code == 1
    assert "did not succeed after 1 turn: max_turns" in cut.stdout
    # max_turns=1 never compresses; the header names the strategy chosen and says so
    assert ("strategy: single-user-coalesced (not used: a one-turn run is never "
            "compressed") in cut.stdout


def test_list_shows_the_bundled_tasks():
    result = invoke("--list")
    assert result.exit_code == 0
    for name in bundled_task_names():
        assert name in result.stdout
    assert "product-research (default)" in result.stdout


def test_show_system_prints_the_system_prompt():
    from turnpress.agent import system_prompt

    result = invoke("order-summary", "--show-system")
    assert result.exit_code == 0
    assert system_prompt() in result.stdout


def test_openai_compatible_llm_via_base_url(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    task = load_task("order-summary")
    with FakeLLMServer([r if isinstance(r, str) else r.text for r in task.replies],
                       prompt_tokens=500, completion_tokens=40) as server:
        result = invoke("order-summary", "--llm", "openai:fake-model",
                        "--base-url", server.base_url + "/v1")
        requests = server.requests
    assert result.exit_code == 0, result.output
    assert "LLM: openai:fake-model at http://127.0.0.1:" in result.stdout
    assert "usage: 1,000 input, 80 output tokens" in result.stdout
    assert len(requests) == 2
    assert requests[0].body["model"] == "fake-model"
    assert "For customer C-17" in requests[0].body["messages"][1]["content"]


@pytest.mark.parametrize(("args", "message"), [
    (["no-such-example"], "unknown task 'no-such-example'; bundled tasks:"),
    (["--llm", "gemini:pro"], "unknown LLM provider 'gemini'"),
    (["--llm", "openai"], "'openai' names no model"),
    (["--strategy", "nope"], "unknown strategy 'nope'"),
    (["--max-turns", "0"], "--max-turns"),
    (["--max-turns", "many"], "--max-turns"),
    (["--bogus"], "--bogus"),
])
def test_bad_input_is_one_line_and_exit_code_2(args, message):
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and message in lines[0]
    assert "Traceback" not in result.output


def test_malformed_task_files_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('mission = "unterminated\n')
    result = invoke(str(bad))
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        f"Error: {bad}: invalid TOML: " + result.stderr.split("invalid TOML: ", 1)[1].strip()]
    missing = invoke(str(tmp_path / "missing.toml"))
    assert missing.exit_code == 2 and "no such task file" in missing.stderr
    placeholder = tmp_path / "p.toml"
    placeholder.write_text('mission = "About {{topic}}"\nreplies = ["(return 1)"]\n')
    result = invoke(str(placeholder))
    assert result.exit_code == 2 and "{{topic}} has no value" in result.stderr
    # the error names the TASK file and the field, and says where the value goes
    assert result.stderr.startswith(f"Error: {placeholder}: mission: mission placeholder")
    assert "add the value under [data] in this file" in result.stderr


def test_missing_sdk_is_one_line(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "anthropic", None)
    result = invoke("--llm", "anthropic:claude-x")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: the Anthropic adapter needs the 'anthropic' package: "
        "pip install 'turnpress[anthropic]'")


# -- --save-trace: append to JSONL, refuse to clobber JSON, check before the run ---------


def test_save_trace_appends_runs_to_a_jsonl_file(tmp_path):
    from turnpress.core.trace import iter_traces

    path = tmp_path / "runs.jsonl"
    first = invoke("product-research", "--save-trace", str(path))
    second = invoke("order-summary", "--save-trace", str(path))
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    assert f"trace appended to {path}" in second.stdout
    assert [t.name for t in iter_traces(path)] == ["product-research", "order-summary"]


def test_save_trace_appends_after_a_last_line_without_newline(tmp_path):
    from turnpress.core.trace import iter_traces

    path = tmp_path / "runs.jsonl"
    assert invoke("product-research", "--save-trace", str(path)).exit_code == 0
    path.write_text(path.read_text().rstrip("\n"))
    assert invoke("product-research", "--save-trace", str(path)).exit_code == 0
    assert len(list(iter_traces(path))) == 2


def test_save_trace_refuses_an_existing_json_before_the_run(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("keep me")
    result = invoke("product-research", "--save-trace", str(path))
    assert result.exit_code == 2 and result.stdout == ""  # the run never started
    assert result.stderr.strip() == (f"Error: --save-trace {path}: the file already exists; "
                                     f"add --force to overwrite it, or save to a .jsonl file "
                                     f"to append runs")
    assert path.read_text() == "keep me"
    forced = invoke("product-research", "--save-trace", str(path), "--force")
    assert forced.exit_code == 0 and load_trace(path).name == "product-research"


@pytest.mark.parametrize(("name", "problem"), [
    ("missing/run.json", "does not exist; create it first"),
    (".", "is a directory"),
])
def test_a_bad_save_trace_path_is_reported_before_the_run(tmp_path, name, problem):
    target = tmp_path / name if name != "." else tmp_path
    result = invoke("product-research", "--save-trace", str(target))
    assert result.exit_code == 2 and result.stdout == ""
    assert problem in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_compression_is_a_deprecated_alias_of_strategy():
    result = invoke("product-research", "--compression", "aggressive")
    assert result.exit_code == 0, result.output
    assert "strategy: aggressive" in result.stdout
    assert "--compression is deprecated; use -s/--strategy" in result.stderr
    short = invoke("product-research", "-s", "aggressive")
    assert "strategy: aggressive" in short.stdout and "deprecated" not in short.stderr
    assert "--compression" not in invoke("--help").output


def test_save_trace_keeps_each_turns_billed_usage(tmp_path, monkeypatch):
    """ux-a item 1: a run saved with --save-trace keeps what the provider billed per turn
    (Turn.usage), so `turnpress compare` on it shows the as-run row."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    task = load_task("product-research")
    path = tmp_path / "live.jsonl"
    with FakeLLMServer([r if isinstance(r, str) else r.text for r in task.replies],
                       prompt_tokens=1500, cached_tokens=1024) as server:
        result = invoke("product-research", "--llm", "openai:m",
                        "--base-url", server.base_url + "/v1", "--save-trace", str(path))
    assert result.exit_code == 0, result.output
    trace = load_trace(path)
    assert [t.usage for t in trace.turns] == [Usage(1500, 1024)] * len(task.replies)
    compared = CliRunner().invoke(main, ["compare", str(path), "-s", "full-history"])
    assert compared.exit_code == 0, compared.output
    assert "as-run" in compared.stdout


def test_task_file_usage_is_saved_and_checked(tmp_path):
    """ux-a item 1: TASK.toml `usage =` reaches the saved trace; counts that cannot be
    billed usage (cached > input) are refused when the task is loaded."""
    task = tmp_path / "t.toml"
    task.write_text('mission = "m"\n[[replies]]\ntext = "```clojure\\n(return 1)\\n```"\n'
                    'usage = { input_tokens = 300, cached_input_tokens = 200, '
                    'cache_write_input_tokens = 50, output_tokens = 7 }\n')
    path = tmp_path / "run.json"
    assert invoke(str(task), "--save-trace", str(path)).exit_code == 0
    assert load_trace(path).turns[0].usage == Usage(300, 200, 50)
    task.write_text(task.read_text().replace("300", "100"))
    result = invoke(str(task))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        f"Error: {task}: replies[0].usage: usage cached_input_tokens=200 + "
        f"cache_write_input_tokens=50 > input_tokens=100; input_tokens counts the whole "
        f"prompt, cached tokens included")


@pytest.mark.parametrize(("replies", "max_turns", "reason"), [
    (['```clojure\n(def a 1)\n```'], 3, "llm_error"),  # the scripted replies run out
    (['```clojure\n(fail "no data")\n```'], 3, "fail"),
    (['```clojure\n(def a 1)\n```'], 1, "max_turns"),
])
def test_a_failed_run_exits_1_whatever_the_reason(tmp_path, replies, max_turns, reason):
    """ux-a item 16: every run that ends failed exits 1 (llm_error included), the trace is
    still saved, and --help documents the exit codes."""
    import json

    task = tmp_path / "t.toml"
    task.write_text(f"mission = \"m\"\nmax_turns = {max_turns}\n"
                    f"replies = {json.dumps(replies)}\n")
    path = tmp_path / "runs.jsonl"
    result = invoke(str(task), "--save-trace", str(path))
    assert result.exit_code == 1, result.output
    assert f"did not succeed after 1 turn: {reason}" in result.stdout
    assert len(load_trace(path).turns) == 1
    help_text = invoke("--help").stdout
    assert "Exit status:" in help_text
    assert "1  the run ended failed, whatever the reason" in help_text

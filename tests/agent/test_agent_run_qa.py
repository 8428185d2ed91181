"""``turnpress run`` after the qa-b pass: what goes wrong partway through a run is one
line, ends the run failed and keeps the turns that ran; bad input is refused early."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner
from plugin_helpers import make_plugin

from turnpress import load_trace
from turnpress.agent import Agent, ScriptedLLM
from turnpress.cli import main
from turnpress.core.registry import reset_registry

TWO_TURNS = '''mission = "Count the items"
max_turns = 3
replies = ["```clojure\\n(def n (count data/items))\\n(println n)\\n```",
           "```clojure\\n(return n)\\n```"]
[data]
items = [1, 2, 3]
'''

RAISES_FROM_TURN_2 = """
    from turnpress import Strategy, hookimpl

    class Late(Strategy):
        name = "late-boom"

        def to_messages(self, turns, memory, ctx):
            if turns:
                raise RuntimeError(f"boom at turn {len(turns) + 1}")
            return [ctx.message("system", ctx.system_prompt),
                    ctx.message("user", ctx.mission)]

    @hookimpl
    def register_strategies(register):
        register(Late)
"""


def invoke(*args: str):
    result = CliRunner().invoke(main, ["run", *args])
    assert "Traceback" not in result.output, result.output
    return result


@pytest.fixture
def task_file(tmp_path):
    path = tmp_path / "count.toml"
    path.write_text(TWO_TURNS)
    return path


def test_a_plugin_strategy_failing_midway_ends_the_run_failed_and_saves_it(site, task_file):
    """qa-b item 1: one `Error: strategy ... of plugin ... failed` line, exit 1, trace kept."""
    dist, _ = make_plugin(site, "late", RAISES_FROM_TURN_2)
    reset_registry(None)
    saved = site / "run.jsonl"
    result = invoke(str(task_file), "-s", "late-boom", "--save-trace", str(saved))
    assert result.exit_code == 1, result.output
    assert result.stderr.strip() == (
        f"Error: strategy 'late-boom' of plugin 'late' (distribution {dist} 1.0, entry "
        f"point late = tpf_late) failed: RuntimeError: boom at turn 2")
    assert "did not succeed after 1 turn: render_error" in result.stdout
    trace = load_trace(saved)
    assert len(trace.turns) == 1 and trace.turns[0].prints == ("3",)


def test_a_failing_plugin_strategy_in_python_returns_a_failed_step(site):
    make_plugin(site, "late", RAISES_FROM_TURN_2)
    reset_registry(None)
    step = Agent("m", data={"items": [1]}, compression="late-boom", llm=ScriptedLLM(
        ["```clojure\n(def n 1)\n```", "```clojure\n(return n)\n```"])).run()
    assert not step.success and len(step.turns) == 1
    assert step.failure.reason == "render_error"
    assert step.failure.message.startswith("strategy 'late-boom' of plugin 'late' (")
    assert step.failure.message.endswith("failed: RuntimeError: boom at turn 2")


def test_a_template_error_midway_ends_the_run_failed_and_saves_it(tmp_path, task_file):
    """qa-b item 2: the error appears only on the final turn's prompt: exit 1 (not 2, as
    turns ran), the run ends failed, the trace is saved."""
    templates = tmp_path / "t" / "history"
    templates.mkdir(parents=True)
    (templates / "turns_left.j2").write_text(
        "{% if turns_left == 1 %}{{ oops }}{% else %}Turns left: {{ turns_left }}{% endif %}")
    saved = tmp_path / "mid.jsonl"
    result = invoke(str(task_file), "--templates", str(tmp_path / "t"), "--max-turns", "2",
                    "-s", "none", "--save-trace", str(saved))
    assert result.exit_code == 1, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: template ") and "'oops' is undefined" in line
    assert "did not succeed after 1 turn: render_error" in result.stdout
    assert len(load_trace(saved).turns) == 1


def test_a_template_syntax_error_is_found_before_the_run(tmp_path, task_file):
    """qa-b item 2: a template that does not compile is bad input, even one the first
    prompt does not use (the failed-attempt section): exit 2, nothing run."""
    templates = tmp_path / "t" / "history"
    templates.mkdir(parents=True)
    (templates / "failed_attempt.j2").write_text("{% if %}")
    saved = tmp_path / "never.jsonl"
    result = invoke(str(task_file), "--templates", str(tmp_path / "t"),
                    "--save-trace", str(saved))
    assert result.exit_code == 2, result.output
    assert result.stdout == "" and not saved.exists()
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: template ") and "failed_attempt.j2" in line
    assert "syntax error" in line


@pytest.mark.parametrize("content", ["garbage line\n", '{"not": "a trace"}\n'])
def test_save_trace_does_not_append_to_a_file_that_is_no_trace_file(tmp_path, content):
    """qa-b item 3: the check `turnpress import -o` makes, before the run starts."""
    path = tmp_path / "other.jsonl"
    path.write_text(content)
    result = invoke("product-research", "--save-trace", str(path))
    assert result.exit_code == 2 and result.stdout == ""  # the run never started
    assert result.stderr.strip() == (
        f"Error: --save-trace {path}: the file exists and is not a turnpress trace file, "
        f"so the run would not be appended to it; choose another file, or add --force to "
        f"replace it")
    assert path.read_text() == content
    forced = invoke("product-research", "--save-trace", str(path), "--force")
    assert forced.exit_code == 0, forced.output
    assert f"trace saved to {path}" in forced.stdout
    assert load_trace(path).name == "product-research"


def test_save_trace_appends_to_an_empty_or_trace_file(tmp_path):
    from turnpress.core.trace import iter_traces

    path = tmp_path / "runs.jsonl"
    path.write_text("")
    assert invoke("order-summary", "--save-trace", str(path)).exit_code == 0
    assert invoke("order-summary", "--save-trace", str(path), "--force").exit_code == 0
    assert len(list(iter_traces(path))) == 2  # --force never replaces a trace file's runs


def _run_against_a_slow_server(replies: list, retries: str) -> tuple[Any, float]:
    """``turnpress run`` against a fake server that sends ``replies`` (a ``Raw(delay=6)``
    one takes 6 s), with ``--timeout 0.5`` and ``--retries``; the result and the seconds
    it took."""
    import time

    from fake_openai import FakeLLMServer

    with FakeLLMServer(replies) as server:
        start = time.monotonic()
        result = invoke("order-summary", "--llm", "openai:m", "--base-url",
                        server.base_url + "/v1", "--timeout", "0.5", "--retries", retries)
        return result, time.monotonic() - start


def test_timeout_and_retries_are_options_and_a_retry_is_shown(monkeypatch):
    """qa-b item 5: --timeout / --retries reach the adapter, the header says them, and a
    retry is a line of the run, not minutes of silence."""
    from fake_openai import Raw

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result, elapsed = _run_against_a_slow_server(
        [Raw(delay=6), "```clojure\n(return 1)\n```"], "1")
    assert result.exit_code == 0, result.output
    assert elapsed < 5  # not the 6 s the server takes
    assert "(timeout 0.5 s, 1 retry)" in result.stdout
    assert "retrying the LLM call in " in result.stdout


def test_a_server_that_never_answers_fails_within_the_timeout(monkeypatch):
    from fake_openai import Raw

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result, elapsed = _run_against_a_slow_server([Raw(delay=6)], "0")
    assert result.exit_code == 1, result.output
    assert elapsed < 5  # not the 6 s the server takes
    assert "did not succeed after 0 turns: llm_error" in result.stdout
    assert "timed out" in result.stdout.lower()


@pytest.mark.parametrize(("args", "message"), [
    (["--timeout", "0"], "--timeout"),
    (["--retries", "-1"], "--retries"),
])
def test_bad_timeout_or_retries_is_one_line(args, message):
    result = invoke("order-summary", "--llm", "openai:m", "--base-url",
                    "http://127.0.0.1:9/v1", *args)
    assert result.exit_code == 2 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: ") and message in line



@pytest.mark.parametrize(("args", "named"), [
    (["--base-url", "http://127.0.0.1:9/v1"], "--base-url is for a real model"),
    (["--timeout", "5"], "--timeout is for a real model"),
    (["--timeout", "5", "--retries", "1"], "--timeout and --retries are for a real model"),
])
def test_real_model_options_with_the_scripted_llm_are_refused(args, named):
    """--base-url, --timeout and --retries mean nothing to the scripted LLM (the default
    --llm): each is refused in one line, none is ignored without a word (--base-url was)."""
    result = invoke("order-summary", *args)
    assert result.exit_code == 2 and result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {named}") and "--llm openai:MODEL" in line, line


def test_a_one_turn_run_shows_the_strategy_chosen_and_why_it_is_not_used():
    """qa-b item 7: not "strategy: none (full history)" when -s aggressive was given."""
    result = invoke("product-research", "-s", "aggressive", "--max-turns", "1")
    header = result.stdout.splitlines()[1]
    assert ("strategy: aggressive (not used: a one-turn run is never compressed, its one "
            "prompt is the full history)") in header
    default = invoke("product-research", "--max-turns", "1").stdout.splitlines()[1]
    assert "strategy: price-scheduled (not used: a one-turn run" in default
    off = invoke("product-research", "-s", "none", "--max-turns", "1").stdout.splitlines()[1]
    assert "strategy: none (full history)  max turns: 1" in off


def test_the_llm_error_lists_scripted_too():
    """qa-b item 16: every form --llm takes is listed."""
    result = invoke("--llm", "bogus")
    assert result.exit_code == 2
    assert result.stderr.strip() == ("Error: unknown LLM provider 'bogus' in 'bogus'; use "
                                     "scripted, openai:MODEL, anthropic:MODEL")


def test_a_missing_api_key_names_what_a_cli_user_can_set(monkeypatch):
    """qa-b item 16: not "pass api_key=", which the command line cannot do."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = invoke("--llm", "openai:gpt-4o")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "Error: no API key: set the OPENAI_API_KEY environment variable, or give --base-url "
        "for a server that needs none")


TWO_BLOCKS = "```clojure\n(println 1)\n```\nand then\n```clojure\n(println 2)\n```"


def test_find_program_counts_the_blocks_it_did_not_run():
    """qa-b item 15: only the first ```clojure block runs; the others are counted."""
    from turnpress.agent.program import find_program

    found = find_program(TWO_BLOCKS + "\n```clj\n(println 3)\n```\n```python\nx\n```")
    assert found.program == "(println 1)" and found.ignored == 2
    assert found.ignored_note() == ("the reply has 3 ```clojure blocks; only the first "
                                    "ran: put the whole program in one block")
    assert find_program("```clojure\n(println 1)\n```").ignored == 0
    assert find_program("```\n(a)\n```\n```\n(b)\n```").ignored == 1
    assert find_program("(println 1)").ignored_note() is None


def test_the_user_is_told_when_blocks_did_not_run(tmp_path):
    task = tmp_path / "two.toml"
    task.write_text("mission = \"m\"\nmax_turns = 1\nreplies = ['''" + TWO_BLOCKS + "''']\n")
    result = invoke(str(task))
    assert "note: the reply has 2 ```clojure blocks; only the first ran" in result.stdout
    assert "printed:\n1\n" in result.stdout and "printed:\n1\n2" not in result.stdout


def test_the_agent_is_told_when_a_failed_turn_had_blocks_that_did_not_run():
    """The failure the agent sees says the other blocks were not run (a successful turn
    has no field for it: the display tells the user)."""
    llm = ScriptedLLM(["```clojure\n(def a 1)\n(undefined-x)\n```\n```clojure\n(def b 2)\n```",
                       "```clojure\n(return a)\n```"])
    step = Agent("m", llm=llm, max_turns=2).run()
    assert step.turns[0].result.message == (
        "undefined symbol 'undefined-x' (the reply has 2 ```clojure blocks; only the first "
        "ran: put the whole program in one block)")
    assert "only the first ran" in llm.calls[1][-1]["content"]

"""The agent loop end to end, with scripted LLMs and the real PTC-Lisp interpreter."""

from __future__ import annotations

import dataclasses
import re

import pytest
from click.testing import CliRunner

from turnpress import Failure, Turn, load_trace, render, save_trace
from turnpress.agent import (
    INHERIT,
    Agent,
    LLMReply,
    ScriptedLLM,
    Step,
    system_prompt,
)
from turnpress.cli import main
from turnpress.core.compression import strategy_names
from turnpress.core.model import Usage

MISSION = "Find the products cheaper than {{limit}} and return their names"
DATA = {"limit": 100, "products": [
    {"name": "Mouse", "price": 25}, {"name": "Laptop", "price": 1200},
    {"name": "Keyboard", "price": 75}]}


def fence(program: str) -> str:
    return f"Here is my program.\n\n```clojure\n{program}\n```\n"


TURN_1 = ('(def cheap "Products under the limit"\n'
          "  (filter (fn [p] (< (:price p) data/limit)) data/products))\n"
          '(tool/log-event "scanned")')
TURN_2 = "(def names (map :name cheep))"  # fails: undefined symbol
TURN_3 = '(def names "Names of the cheap products" (map :name cheap))\n(println "found" names)'
TURN_4 = "(return names)"
REPLIES = [fence(TURN_1), fence(TURN_2), fence(TURN_3), fence(TURN_4)]


def log_event(event: str) -> None:
    """Record an event (a side-effect tool returning nil)."""


def make_agent(replies=REPLIES, **options) -> Agent:
    options.setdefault("max_turns", 5)
    return Agent(MISSION, tools={"log-event": log_event}, data=DATA,
                 llm=ScriptedLLM(replies), **options)


def text_of(messages) -> str:
    return "\n".join(m["content"] for m in messages)


def last_turns_left(messages) -> int:
    """The last 'Turns left: N' in a prompt (1 for the FINAL TURN line)."""
    content = text_of(messages)
    found = [(m.start(), int(m.group(1))) for m in re.finditer(r"Turns left: (\d+)", content)]
    final = content.rfind("FINAL TURN")
    if final >= 0 and (not found or final > found[-1][0]):
        return 1
    return found[-1][1]


# -- end to end, under every registered strategy ----------------------------------------


@pytest.mark.parametrize("strategy", strategy_names())
def test_scripted_four_turn_run_under_every_strategy(strategy):
    """A failing turn, a recovery, then (return ...), under each registered strategy;
    checks what the LLM received on each turn (DBG-004, ARC-006)."""
    agent = make_agent(compression=strategy)
    step = agent.run()
    llm = agent.llm

    assert step.success and step.failure is None
    assert step.result == ["Mouse", "Keyboard"]
    assert [t.success for t in step.turns] == [True, False, True, True]
    assert step.compression == strategy

    # the LLM got exactly what the Step records, one prompt per turn
    assert llm.calls == step.messages
    assert len(step.messages) == len(step.turns) == 4
    mission = "Find the products cheaper than 100 and return their names"
    for i, prompt in enumerate(step.messages):
        assert prompt[0] == {"role": "system", "content": step.system_prompt}, i
        assert prompt[-1]["role"] == "user", i
        assert mission in text_of(prompt), i
        assert "{{limit}}" not in text_of(prompt), i
        assert last_turns_left(prompt) == 5 - i, i  # from len(turns), not from messages

    # the failed turn's error is visible on the next turn, and gone after recovery
    error = step.turns[1].result.message
    assert "cheep" in error
    assert error in text_of(step.messages[2])
    # what turn 3 printed is visible on turn 4
    assert "found" in text_of(step.messages[3])
    # each prompt is the strategy's rendering of the turns so far (DBG-004)
    for i, prompt in enumerate(step.messages):
        assert prompt == render(step.turns[:i], mission=mission,
                                system_prompt=step.system_prompt, tools=step.tools,
                                data=DATA, turns_left=5 - i, compression=strategy)


def test_turn_records_and_repl_memory():
    """DBG-001/DBG-002: every Turn keeps number, raw response, full program, result,
    prints, tool calls, memory and success; memory carries over (REPL semantics)."""
    step = make_agent(compression=True).run()
    t1, t2, t3, t4 = step.turns
    assert [t.number for t in step.turns] == [1, 2, 3, 4]
    assert [t.program for t in step.turns] == [TURN_1, TURN_2, TURN_3, TURN_4]
    assert [t.raw_response for t in step.turns] == REPLIES
    assert t1.tool_calls[0].name == "log-event" and t1.tool_calls[0].args == ("scanned",)
    assert t1.tool_calls[0].result is None
    assert [p["name"] for p in t1.memory["cheap"]] == ["Mouse", "Keyboard"]
    assert t1.memory.docs["cheap"] == "Products under the limit"
    assert not t2.success and isinstance(t2.result, Failure)
    assert "cheap" in t2.memory  # the earlier definition survives the failed turn
    assert t3.prints == ('found ["Mouse" "Keyboard"]',)
    assert list(t3.memory["names"]) == ["Mouse", "Keyboard"]
    assert t4.success and list(t4.result) == ["Mouse", "Keyboard"]


def test_compressed_prompt_drops_code_but_turns_keep_it():
    """DBG-001 and DBG-004: the LLM prompt is compressed, Step.turns keep every program."""
    step = make_agent(compression="single-user-coalesced").run()
    last_prompt = text_of(step.messages[-1])
    assert "(filter (fn [p]" not in last_prompt  # turn 1's code is not re-sent
    assert ";; === user/ (your prelude) ===" in last_prompt
    assert "log-event(\"scanned\")" in last_prompt
    assert step.turns[0].program == TURN_1


def test_turns_are_append_only():
    """ARC-002: the Turn objects of earlier turns are the very same objects later."""
    seen: list[Turn] = []
    step = make_agent(on_turn=lambda turn, messages: seen.append(turn)).run()
    assert len(seen) == 4
    assert all(a is b for a, b in zip(seen, step.turns, strict=True))
    assert isinstance(step.turns, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.turns[0].program = "changed"  # type: ignore[misc]


def test_step_has_turns_not_a_raw_trace():
    """ARC-007: Step.turns holds Turn records; there is no Step.trace of raw strings."""
    step = make_agent().run()
    assert isinstance(step, Step)
    assert all(isinstance(t, Turn) for t in step.turns)
    assert not hasattr(step, "trace")


def test_turns_left_comes_from_the_turn_count():
    """ARC-006: with full history the message count grows by two a turn, yet each
    prompt says max_turns - len(turns)."""
    step = make_agent(compression=False, max_turns=6).run()
    assert [len(p) for p in step.messages] == [2, 4, 6, 8]
    assert [last_turns_left(p) for p in step.messages] == [6, 5, 4, 3]


# -- single shot, defaults, endings ------------------------------------------------------


def test_single_shot_never_compresses():
    """SS-001: with max_turns=1 the prompt is the uncompressed one, whatever compression says."""
    agent = Agent("Return 42", llm=ScriptedLLM([fence("(return 42)")]), max_turns=1,
                  compression="single-user-coalesced", data={"xs": [1, 2, 3]})
    step = agent.run()
    assert step.success and step.result == 42
    assert step.compression is None
    (prompt,) = step.messages
    assert prompt == render([], mission="Return 42", system_prompt=step.system_prompt,
                            data={"xs": [1, 2, 3]}, turns_left=1, compression=False)
    assert "FINAL TURN" in text_of(prompt)


def test_max_turns_defaults_to_five():
    """SS-002: without max_turns the agent gets 5 turns, then fails clearly."""
    agent = Agent("Never finishes", llm=lambda messages: "```clojure\n(+ 1 2)\n```")
    assert agent.max_turns is INHERIT and agent.settings().max_turns == 5
    step = agent.run()
    assert len(step.turns) == 5 and not step.success
    assert step.failure == Failure("max_turns", "no (return ...) after 5 turns")
    assert last_turns_left(step.messages[0]) == 5
    assert "FINAL TURN" in text_of(step.messages[-1])


def test_fail_ends_the_run():
    step = Agent("Give up", llm=ScriptedLLM([fence('(fail "no data")')])).run()
    assert not step.success and step.result is None
    assert step.failure.reason == "fail" and "no data" in step.failure.message
    assert len(step.turns) == 1 and not step.turns[0].success


def test_llm_error_ends_the_run_with_the_prompt_recorded():
    llm = ScriptedLLM([fence("(def x 1)")])
    step = Agent("Needs two turns", llm=llm, max_turns=3).run()
    assert step.failure.reason == "llm_error"
    assert "no reply left for call 2" in step.failure.message
    assert len(step.turns) == 1 and len(step.messages) == 2


def test_usage_is_summed_when_reported():
    llm = ScriptedLLM([LLMReply(fence("(def x 1)"), {"input_tokens": 100, "output_tokens": 9}),
                       LLMReply(fence("(return x)"), {"input_tokens": 150, "output_tokens": 4,
                                                      "cached_input_tokens": 90})])
    step = Agent("Sum", llm=llm).run()
    assert step.usage == {"input_tokens": 250, "output_tokens": 13, "cached_input_tokens": 90}
    assert step.turn_usage[0] == {"input_tokens": 100, "output_tokens": 9}
    assert make_agent().run().usage is None


def test_each_turn_and_the_trace_keep_the_billed_usage(tmp_path):
    """ux-a item 1: Step.to_trace keeps each turn's billed input usage (Turn.usage)."""
    llm = ScriptedLLM([LLMReply(fence("(def x 1)"), {"input_tokens": 100, "output_tokens": 9}),
                       fence("(def y 2)"),
                       LLMReply(fence("(return x)"), {"input_tokens": 150, "output_tokens": 4,
                                                      "cached_input_tokens": 90,
                                                      "cache_write_input_tokens": 10})])
    step = Agent("Sum", llm=llm).run()
    usages = [Usage(100), None, Usage(150, 90, 10)]
    assert [t.usage for t in step.turns] == usages
    path = tmp_path / "run.json"
    save_trace(step.to_trace(), path)
    assert [t.usage for t in load_trace(path).turns] == usages


def test_usage_that_is_not_token_counts_fails_the_run_clearly():
    """ux-a item 1: usage that cannot be billed usage ends the run with llm_error."""
    llm = ScriptedLLM([LLMReply(fence("(return 1)"), {"input_tokens": 10,
                                                      "cached_input_tokens": 20})])
    step = Agent("Bad usage", llm=llm).run()
    assert step.failure.reason == "llm_error"
    assert "cached_input_tokens=20 + cache_write_input_tokens=0 > input_tokens=10" in \
        step.failure.message
    step = Agent("Bad usage", llm=ScriptedLLM([LLMReply("x", {"input_tokens": -1})])).run()
    assert "usage input_tokens=-1; token counts must be non-negative integers" in \
        step.failure.message


# -- configuration errors before any LLM call --------------------------------------------


def test_missing_placeholder_fails_before_the_llm_is_called():
    llm = ScriptedLLM([fence("(return 1)")])
    with pytest.raises(ValueError, match=r"\{\{limt\}\}.*data keys: limit, products"):
        Agent("Cheaper than {{limt}}", data=DATA, llm=llm).run()
    assert llm.calls == []


def test_configuration_errors():
    with pytest.raises(ValueError, match="has no LLM"):
        Agent("x").run()
    with pytest.raises(ValueError, match="max_turns must be an integer >= 1"):
        Agent("x", max_turns=0)
    with pytest.raises(ValueError, match="unknown strategy 'nope'"):
        Agent("x", compression="nope")
    with pytest.raises(TypeError, match="unknown option 'max_turn'"):
        Agent("x", llm=lambda m: "").run(max_turn=3)


def test_run_overrides_apply_to_one_run():
    agent = Agent("Return {{n}}", data={"n": 1}, llm=lambda m: fence("(return data/n)"))
    assert agent.run(data={"n": 2}).result == 2
    assert agent.run().result == 1


# -- the system prompt -------------------------------------------------------------------


def test_default_system_prompt_is_static():
    """Spec 03 SystemPrompt: language reference + output format, no tools, no data."""
    from turnpress.lisp import LANGUAGE_REFERENCE

    text = system_prompt()
    assert LANGUAGE_REFERENCE.strip() in text
    assert "```clojure" in text and "(return result)" in text and "(fail" in text
    assert "println" in text and "docstring" in text
    step = make_agent().run()
    assert step.system_prompt == text
    assert "log-event" not in text and "Keyboard" not in text


def test_custom_system_prompt_replaces_the_default():
    step = make_agent(system_prompt="Be brief.").run()
    assert all(p[0]["content"] == "Be brief." for p in step.messages)


def test_system_prompt_template_can_be_overridden(tmp_path):
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "system_prompt.j2").write_text(
        "CUSTOM\n{% include 'default:agent/system_prompt.j2' %}\n")
    text = system_prompt([tmp_path])
    assert text.startswith("CUSTOM\n") and text.endswith(system_prompt())
    step = make_agent(template_dirs=(tmp_path,)).run()
    assert step.system_prompt == text


# -- agents as tools -------------------------------------------------------------------


def test_agent_as_tool_inherits_settings():
    """API-007: a child agent inherits llm, compression and max_turns from its parent."""
    replies = [
        fence("(return (tool/summarizer {:topic \"cats\"}))"),  # parent turn 1
        fence("(return (str \"about \" data/topic))"),          # child turn 1
    ]
    llm = ScriptedLLM(replies)
    child = Agent("Summarize {{topic}}", description="Summarize a topic")
    parent = Agent("Use the summarizer", tools={"summarizer": child}, llm=llm,
                   max_turns=3, compression="single-user-coalesced")
    step = parent.run()
    assert step.success and step.result == "about cats"
    child_prompt = llm.calls[1]
    assert "Summarize cats" in text_of(child_prompt)
    assert last_turns_left(child_prompt) == 3  # the parent's max_turns
    assert len(child_prompt) == 2  # [SYSTEM, USER]: the parent's strategy
    tool_line = next(line for line in text_of(llm.calls[0]).splitlines()
                     if "tool/summarizer" in line)
    assert "data:map" in tool_line and "Summarize a topic" in tool_line


def test_child_settings_win_over_the_parent():
    """API-007: what the child sets itself is not inherited."""
    child_llm = ScriptedLLM([fence("(return 7)")])
    child = Agent("Seven", llm=child_llm, max_turns=2, compression=False)
    parent_llm = ScriptedLLM([fence("(return (tool/seven))")])
    step = Agent("Ask", tools={"seven": child}, llm=parent_llm,
                 compression="single-user-coalesced").run()
    assert step.result == 7
    assert len(child_llm.calls) == 1 and last_turns_left(child_llm.calls[0]) == 2


def test_child_failure_fails_the_parent_turn():
    replies = [fence("(return (tool/helper))"), fence('(fail "cannot")'),
               fence("(return :gave-up)")]
    step = Agent("Ask", tools={"helper": Agent("Help")}, llm=ScriptedLLM(replies)).run()
    first = step.turns[0]
    assert not first.success and first.result.reason == "tool_error"
    assert "helper" in first.result.message and "cannot" in first.result.message
    assert step.success and step.turns[-1].success


# -- traces ---------------------------------------------------------------------------


def test_step_to_trace_round_trips(tmp_path):
    """DBG-003: the saved run stores the turns; loading gives them back, and each
    recorded prompt is re-rendered from the trace."""
    step = make_agent(compression="single-user-coalesced").run()
    path = tmp_path / "run.json"
    save_trace(step.to_trace(name="cheap"), path)
    trace = load_trace(path)
    assert trace.name == "cheap" and trace.mission == step.mission
    assert trace.turns == step.turns
    assert trace.max_turns == 5 and trace.system_prompt == step.system_prompt
    for n in range(1, len(step.turns) + 1):
        assert trace.prompt(n, "single-user-coalesced") == step.messages[n - 1]


def test_trace_show_lists_every_program(tmp_path):
    """DBG-005: debug inspection (`turnpress trace show`) uses the full turns."""
    step = make_agent(compression=True).run()
    path = tmp_path / "run.json"
    save_trace(step.to_trace(), path)
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert result.exit_code == 0, result.output
    for turn in step.turns:
        assert turn.program in result.output


def test_limits_reach_the_interpreter():
    from turnpress.lisp import Limits

    replies = [fence("(reduce + (range 100000))"), fence("(return 1)")]
    step = Agent("Sum", llm=ScriptedLLM(replies), limits=Limits(max_steps=1000)).run()
    assert step.turns[0].result.reason == "step_limit"
    assert step.success and step.result == 1


def test_a_reply_without_a_code_block_says_so_in_its_error():
    """ux-a item 19: a reply with no ```clojure block runs as a whole (a bare program still
    works), but when it fails the error the agent sees says the block was missing; a
    reply with no program at all is a failed turn (no_program), not a silent nil."""
    llm = ScriptedLLM(["no code here", "```python\nx = 1\n```", "```clojure\n```", "",
                       "(return 7)"])
    step = Agent("Reply badly, then well", llm=llm, max_turns=5).run()
    assert step.success and step.result == 7
    failures = [t.result for t in step.turns[:4]]
    assert failures[0] == Failure("undefined_symbol", (
        "the reply has no ```clojure code block, so the whole reply ran as the program: "
        "undefined symbol 'no'. Reply with exactly one ```clojure block"))
    assert failures[1].message.startswith(
        "the reply has no ```clojure code block (only ```python), so the whole reply ran")
    assert failures[2] == Failure("no_program", "the reply's ```clojure block is empty: "
                                                "write the program inside it")
    assert failures[3] == Failure("no_program", "the reply is empty: reply with exactly one "
                                                "```clojure block holding the program")
    # the agent sees it: the next prompt carries the error
    assert "the reply has no ```clojure code block" in llm.calls[1][-1]["content"]


def test_a_fenced_programs_error_and_fail_are_unchanged():
    """ux-a item 19: a fenced program's error, and a bare (fail ...), keep their words."""
    step = Agent("x", llm=ScriptedLLM([fence("(undefined-thing)"), '(fail "stop")']),
                 max_turns=3).run()
    assert step.turns[0].result == Failure("undefined_symbol",
                                           "undefined symbol 'undefined-thing'")
    assert step.failure == Failure("fail", "stop")

"""Every built-in strategy on an imported tool-calling transcript (issue 9 item 6,
DESIGN §10): it renders one (a valid conversation: every assistant tool call
answered by a tool message with its id) or raises ``StrategyNotApplicable``."""

from __future__ import annotations

import json

import pytest

from turnpress import StrategyNotApplicable, ToolCall, Turn, render
from turnpress.core.compression import strategy_names
from turnpress.core.model import Usage
from turnpress.core.trace import Trace
from turnpress.plugins._imported_messages import answered

SYSTEM = {"role": "system", "content": "You are a coding agent with a bash tool."}
MISSION = {"role": "user", "content": "Fix the failing test in tests/test_parse.py"}
BIG = "\n".join(f"line {i}: src/module_{i}.py ok" for i in range(1, 301))


def _call(call_id: str, command: str) -> dict:
    return {"id": call_id, "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}


def _turn(number: int, calls: list[tuple[str, str, str]], *, text: str | None = None,
          failed: bool = False) -> Turn:
    """A turn: one assistant message calling ``calls`` ``(id, command, output)`` in
    parallel, then one tool message per call."""
    messages = [{"role": "assistant", "content": text,
                 "tool_calls": [_call(i, c) for i, c, _ in calls]}]
    messages += [{"role": "tool", "tool_call_id": i, "content": out} for i, _, out in calls]
    tool_calls = [ToolCall("bash", ({"command": c},), out) for _, c, out in calls]
    kwargs = {"memory": {}, "tool_calls": tool_calls, "messages": messages,
              "usage": Usage(1000 * number, 800 * number), "raw_response": text or ""}
    if failed:
        from turnpress import Failure
        return Turn.failed(number, "", Failure("returncode", calls[-1][2]), **kwargs)
    return Turn.succeeded(number, "", None, **kwargs)


def transcript(n_extra: int = 0) -> Trace:
    """Four turns: parallel calls, a long output, an error, a recovery (+ ``n_extra``)."""
    turns = [
        _turn(1, [("c1", "ls", "src\ntests\nsetup.py"),
                  ("c2", "cat tests/test_parse.py",
                   "def test_parse():\n    assert parse('1') == 1")],
              text="Let me look around."),
        _turn(2, [("c3", "grep -rn parse src", BIG)]),
        _turn(3, [("c4", "python -m pytest tests/test_parse.py",
                   "<returncode>1</returncode>\nAssertionError: parse('1') returned '1'")],
              failed=True),
        _turn(4, [("c5", "sed -i 's/return s/return int(s)/' src/parse.py", "")],
              text="Convert to int."),
    ]
    for k in range(n_extra):
        number = len(turns) + 1
        turns.append(_turn(number, [(f"x{number}", f"cat src/module_{k}.py",
                                     f"# module {k}\n" + "x = 1\n" * 40)]))
    return Trace(MISSION["content"], turns, SYSTEM["content"], len(turns) + 2,
                 source="openai-chat", preamble=[SYSTEM, MISSION])


def prompt(trace: Trace, n: int, strategy: str) -> list[dict]:
    """The prompt of turn ``n`` (``len(turns) + 1``: the next one)."""
    return render(trace.turns[: n - 1], mission=trace.mission, system_prompt=trace.system_prompt,
                  turns_left=trace.max_turns - (n - 1), preamble=trace.preamble,
                  compression=strategy)


@pytest.mark.parametrize("strategy", strategy_names())
@pytest.mark.parametrize("extra", [0, 12])
def test_every_strategy_renders_a_valid_conversation(strategy: str, extra: int) -> None:
    """Each prompt keeps the system message first, ends with a non-assistant message,
    and answers every tool call it shows."""
    trace = transcript(extra)
    for n in range(1, len(trace.turns) + 2):
        try:
            messages = prompt(trace, n, strategy)
        except StrategyNotApplicable as exc:  # allowed, with a one-line reason
            assert str(exc) and "\n" not in str(exc)
            continue
        assert messages[0] == SYSTEM
        assert messages[-1]["role"] in ("user", "tool")
        assert answered(messages), (strategy, n)


@pytest.mark.parametrize("strategy", ["single-user-coalesced", "aggressive"])
def test_coalesced_view_of_a_transcript(strategy: str) -> None:
    """single-user-coalesced and aggressive: the mission, the tool calls made, the last
    outputs (cut), in one USER message after the system message."""
    trace = transcript()
    messages = prompt(trace, 5, strategy)
    assert [m["role"] for m in messages] == ["system", "user"]
    content = messages[1]["content"]
    assert content.startswith(MISSION["content"])
    # the transcript's own JSON arguments, not PTC-Lisp's {:command "ls"} (issue 19)
    assert ';   bash({"command": "ls"})' in content
    assert "returned '1'" in content  # the latest output is shown
    assert "lines elided ...]" in content or strategy == "aggressive"
    assert "line 150: " not in content  # the middle of the long output is cut


def test_long_outputs_are_cut_to_head_and_tail() -> None:
    """DESIGN §11: head plus tail, with a count of what was elided."""
    trace = transcript()
    content = prompt(trace, 5, "single-user-coalesced")[1]["content"]
    assert "line 1: src/module_1.py ok" in content and "line 300: src/module_300.py ok" in content
    assert "[... 260 lines elided ...]" in content


def test_observation_masking_keeps_tool_call_ids() -> None:
    """Masked tool results keep their tool_call_id; the assistant calls stay as sent."""
    trace = transcript()
    messages = prompt(trace, 5, "observation-masking:window=1,step=1")
    full = prompt(trace, 5, "full-history")
    assert len(messages) == len(full)
    for masked, original in zip(messages, full, strict=True):
        assert masked["role"] == original["role"]
        assert masked.get("tool_call_id") == original.get("tool_call_id")
        assert masked.get("tool_calls") == original.get("tool_calls")
    grep = next(m for m in messages if m.get("tool_call_id") == "c3")
    assert grep["content"] == "[output of turn 2 omitted: 300 lines]"
    short = next(m for m in messages if m.get("tool_call_id") == "c1")
    assert short["content"] == "src\ntests\nsetup.py"  # never larger than the original


def test_rolling_window_keeps_the_recent_turns_as_sent() -> None:
    trace = transcript()
    messages = prompt(trace, 5, "rolling-window:window=1,step=1")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert messages[2:] == list(trace.turns[3].messages)


def test_progressive_batch_recaps_whole_turns() -> None:
    trace = transcript()
    messages = prompt(trace, 5, "progressive-batch:min_preserved=1,batch_size=2")
    recaps = [m["content"] for m in messages if m["role"] == "assistant"
              and not m.get("tool_calls")]
    assert recaps[:2] == ["recap - turn 1: called bash() x2; printed 5 lines",
                          "recap - turn 2: called bash(); printed 300 lines"]


def test_clear_tool_uses_clears_old_results_past_the_trigger() -> None:
    """Past ``trigger`` tokens every tool result but the ``keep`` most recent becomes the
    placeholder; the calls stay, and with clear_tool_inputs their arguments go too."""
    trace = transcript()
    assert prompt(trace, 5, "clear-tool-uses") == prompt(trace, 5, "full-history")
    messages = prompt(trace, 5, "clear-tool-uses:trigger=100,keep=2")
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert results["c1"] == "[cleared]" and results["c3"] == "[cleared]"
    assert results["c2"] == "[cleared]"
    assert results["c4"].startswith("<returncode>1") and results["c5"] == ""
    inputs = prompt(trace, 5, "clear-tool-uses:trigger=100,keep=2,clear_tool_inputs=true")
    args = [c["function"]["arguments"] for m in inputs for c in m.get("tool_calls") or ()]
    assert args[:3] == ["{}", "{}", "{}"] and "pytest" in args[3]
    kept = prompt(trace, 5, "clear-tool-uses:trigger=100,keep=2,exclude_tools=bash")
    assert kept == prompt(trace, 5, "full-history")
    never = prompt(trace, 5, "clear-tool-uses:trigger=100,keep=2,clear_at_least=100000")
    assert never == prompt(trace, 5, "full-history")


def test_checkpoint_coalesced_on_a_transcript() -> None:
    """The coalesced view at the checkpoint, then each later turn as sent (results cut)."""
    trace = transcript()
    messages = prompt(trace, 4, "checkpoint-coalesced:every=2")
    assert [m["role"] for m in messages[:2]] == ["system", "user"]
    assert "bash(" in messages[1]["content"] and "returned '1'" not in messages[1]["content"]
    assert messages[2:] == list(trace.turns[2].messages)
    assert prompt(trace, 5, "checkpoint-coalesced:every=2,turn_lines=0,println_limit=15") == \
        prompt(trace, 5, "single-user-coalesced")  # a checkpoint right after turn 4
    view = prompt(trace, 5, "checkpoint-coalesced:every=2,println_limit=2")[1]["content"]
    assert ";; Output by turn:\n;; turn 1\n" in view and ";; turn 3\n" in view


@pytest.mark.parametrize("strategy", ["checkpoint-coalesced:every=4", "clear-tool-uses:trigger=50",
                                      "observation-masking:window=1,step=3",
                                      "single-user-coalesced", "per-turn-summary"])
def test_transcript_snapshot(strategy: str, snapshot) -> None:
    """The last prompt of the small transcript (parallel calls, an error), as JSON."""
    trace = transcript(2)
    messages = prompt(trace, len(trace.turns) + 1, strategy)
    assert readable(messages) == snapshot


def readable(messages: list[dict]) -> str:
    """Provider-shaped messages as text: a header per message (role, tool_call_id), its
    tool calls one a line, then its content."""
    blocks = []
    for i, m in enumerate(messages, 1):
        head = f"===== [{i}] {m['role']}" + (f" {m['tool_call_id']}" if "tool_call_id" in m
                                            else "") + " ====="
        calls = [f"-> {c['id']} {c['function']['name']}({c['function']['arguments']})"
                 for c in m.get("tool_calls") or ()]
        blocks.append("\n".join([head, *calls, m["content"] or ""]))
    return "\n\n".join(blocks) + "\n"


@pytest.mark.parametrize("strategy", strategy_names())
def test_cache_breakpoints_point_at_messages_of_the_prompt(strategy: str) -> None:
    """Every breakpoint names a message of the prompt (index in range), on a transcript."""
    from turnpress.core.compression import render_with_breakpoints

    trace = transcript(12)
    for n in range(1, len(trace.turns) + 2):
        messages, points = render_with_breakpoints(
            trace.turns[: n - 1], mission=trace.mission, system_prompt=trace.system_prompt,
            turns_left=trace.max_turns - (n - 1), preamble=trace.preamble,
            compression=strategy)
        assert all(0 <= index < len(messages) for index, _ in points), (strategy, n, points)


@pytest.mark.parametrize("strategy", strategy_names())
def test_a_transcript_with_only_its_system_message(strategy):
    """The first prompt of a run that has only its system message (no turn, no user
    message yet) renders, and its cache breakpoints point into it (rolling-window
    raised StopIteration looking for the first USER message)."""
    from turnpress.core.compression import render_with_breakpoints

    messages, points = render_with_breakpoints(
        [], mission="", system_prompt=SYSTEM["content"], turns_left=5,
        compression=strategy, preamble=(SYSTEM,))
    assert messages[0] == SYSTEM
    assert points and all(0 <= i < len(messages) for i, _ in points)


def test_full_history_marks_the_end_of_the_leading_system_and_developer_messages():
    """A transcript that starts with a system and a developer message: full-history's
    first breakpoint is the end of both (the stable head), as the coalesced views' is;
    it marked the end of the system message alone."""
    from turnpress.core.compression import render_with_breakpoints

    preamble = (SYSTEM, {"role": "developer", "content": "Answer in French."},
                {"role": "user", "content": "List the files."})
    messages, points = render_with_breakpoints(
        [], mission="List the files.", system_prompt=SYSTEM["content"], turns_left=5,
        compression="full-history", preamble=preamble)
    assert messages == list(preamble)
    assert points[0] == (1, None)

"""Behaviour of ``progressive-batch``: spec 05's batch compaction over full history,
with the spec's flaws fixed."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from turn_strategies import History, breakpoints_hold, histories, is_prefix, size

from turnpress import Failure, Fn, ToolCall, Turn, load_trace, normalize, render
from turnpress.examples import EXAMPLES_DIR
from turnpress.plugins.progressive_batch import ProgressiveBatch, recap_line

NAME = "progressive-batch"


def _turns(n: int, *, failed: tuple[int, ...] = (), recap: tuple[int, ...] = ()) -> list[Turn]:
    turns = []
    for i in range(1, n + 1):
        response = f"Step {i}: thinking out loud.\n```clojure\n(def v{i} {i})\n```"
        if i in recap:
            response += f"\nrecap - stored v{i}"
        memory = {f"v{j}": j for j in range(1, i + 1)}
        if i in failed:
            turns.append(Turn.failed(i, f"(def v{i} {i})", Failure("err", f"failure {i}"),
                                     memory=memory, raw_response=response))
        else:
            turns.append(Turn.succeeded(i, f"(def v{i} {i})", i, memory=memory,
                                        prints=[f"out {i}"], raw_response=response))
    return turns


def _render(turns, spec: str = NAME, turns_left: int = 3):
    return render(turns, mission="The mission", system_prompt="sys", turns_left=turns_left,
                  compression=spec)


# -- options ---------------------------------------------------------------------------


def test_defaults() -> None:
    """Spec 05's defaults: keep 3, compact in blocks of 4."""
    assert ProgressiveBatch.option_defaults() == {"min_preserved": 3, "batch_size": 4}
    assert normalize("progressive-batch:min_preserved=0") == (NAME, {"min_preserved": 0})


# -- the rules ---------------------------------------------------------------------------


def test_compacted_count_in_whole_blocks() -> None:
    """Nothing below min_preserved + batch_size turns, then whole blocks of batch_size."""
    pb = ProgressiveBatch()
    assert [pb.compacted_count(n) for n in range(16)] == [0] * 7 + [4] * 4 + [8] * 4 + [12]
    zero = ProgressiveBatch(min_preserved=0, batch_size=2)
    assert [zero.compacted_count(n) for n in range(6)] == [0, 0, 2, 2, 4, 4]


def test_below_threshold_is_full_history() -> None:
    """Fewer than min_preserved + batch_size turns: exactly full-history."""
    turns = _turns(6)
    assert _render(turns) == _render(turns, "full-history")


def test_oldest_block_compacted_newest_kept() -> None:
    """At 7 turns the oldest 4 become recap lines (their feedback removed) and the newest
    3 stay full; the first USER message (mission) is kept (MSG-007)."""
    turns = _turns(7, recap=(2,))
    messages = _render(turns)
    full = _render(turns, "full-history")
    assert messages[:2] == full[:2]
    assert [m["content"] for m in messages[2:6]] == [
        "recap - turn 1: defined v1; printed 1 line",
        "recap - stored v2",
        "recap - turn 3: defined v3; printed 1 line",
        "recap - turn 4: defined v4; printed 1 line",
    ]
    assert all(m["role"] == "assistant" for m in messages[2:6])
    assert messages[6:] == full[-6:]


def test_min_preserved_zero_keeps_none() -> None:
    """min_preserved=0 compacts every turn once a block is full (spec 05 kept all); the
    prompt still ends with a USER message carrying the current turns left (MSG-005)."""
    turns = _turns(4)
    messages = _render(turns, f"{NAME}:min_preserved=0,batch_size=2")
    assert [m["role"] for m in messages] == ["system", "user"] + ["assistant"] * 4 + ["user"]
    assert messages[-1]["content"] == "Turns left: 3"
    messages = _render(turns[:3], f"{NAME}:min_preserved=0,batch_size=2")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "assistant",
                                             "assistant", "user"]


def test_response_without_recap_never_leaks() -> None:
    """A response without a ``recap -`` line is replaced by a generated recap, never by
    its whole content (spec 05 returned the content)."""
    messages = _render(_turns(7))
    for m in messages[2:6]:
        assert m["content"].startswith("recap - turn ")
        assert "thinking out loud" not in m["content"] and "```" not in m["content"]


def test_failed_turns_recapped_as_failures() -> None:
    """A failed turn is recapped as a failure, even when its response has a recap line;
    its tool calls (side effects) are kept."""
    turns = _turns(7, failed=(2, 3), recap=(3,))
    turns[2] = Turn.failed(3, "(x)", Failure("err", "first line\n  second line"),
                           memory=turns[2].memory,
                           raw_response="recap - all good\n" + "thinking " * 10,
                           tool_calls=[ToolCall("send-email", ({"to": "a"},)),
                                       ToolCall("send-email", ({"to": "b"},))])
    messages = _render(turns)
    assert messages[3]["content"] == "recap - turn 2 failed: failure 2"
    assert messages[4]["content"] == (
        "recap - turn 3 failed: first line second line; called send-email() x2")


def test_generated_recap_format() -> None:
    """``recap - turn N: called a(), b(); defined x, y; printed K lines``."""
    t1 = Turn.succeeded(
        1, "...", None, memory={"x": 1, "f": Fn(("a",))}, raw_response="thinking " * 10,
        prints=["one", "two\nthree"],
        tool_calls=[ToolCall("a"), ToolCall("b"), ToolCall("a")])
    t2 = Turn.succeeded(2, "(f 1)", None, memory={"x": 1, "f": Fn(("a",), None, "integer")},
                        raw_response="thinking " * 10)
    pb = ProgressiveBatch(min_preserved=0, batch_size=2)
    messages = render([t1, t2], mission="m", turns_left=3, compression=pb)
    assert messages[2]["content"] == (
        "recap - turn 1: called a() x2, b(); defined x, f; printed 3 lines")
    assert messages[3]["content"] == "recap - turn 2: called no tools, defined and printed nothing"


def test_recap_line_lookup() -> None:
    """The first line starting with ``recap -`` (leading whitespace ignored)."""
    assert recap_line("text\n  recap - one\nrecap - two") == "recap - one"
    assert recap_line("no recap here\n;; recap - in a comment") is None
    assert recap_line("recap -   \nrecap - the real one") == "recap - the real one"


def test_logs_size_ratio(caplog: pytest.LogCaptureFixture) -> None:
    """The size before and after is logged at INFO, as a ratio."""
    with caplog.at_level(logging.INFO, logger="turnpress.plugins.progressive_batch"):
        _render(_turns(7))
    record = caplog.records[-1]
    assert record.levelno == logging.INFO
    assert "7 turns, 4 compacted" in record.getMessage()
    assert "->" in record.getMessage() and "%" in record.getMessage()


def test_bundled_long_trace() -> None:
    """On the long bundled trace the last prompt compacts 8 of 12 turns."""
    trace = load_trace(EXAMPLES_DIR / "inventory-audit.json")
    messages = trace.prompt(len(trace.turns), NAME)
    recaps = [m for m in messages if m["content"].startswith("recap - ")]
    assert len(recaps) == 8
    assert recaps[6]["content"].startswith("recap - turn 7 failed: undefined symbol 'ledger'")


# -- properties ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(0, 4), st.integers(1, 4))
def test_properties(history: History, min_preserved: int, batch_size: int) -> None:
    """Deterministic (ARC-004); the mission is kept (MSG-007); recaps are single lines
    that never leak a response; the newest turns stay full; append-only between blocks;
    the prompt ends with a USER message."""
    spec = (NAME, {"min_preserved": min_preserved, "batch_size": batch_size})
    pb = ProgressiveBatch(min_preserved=min_preserved, batch_size=batch_size)
    prompts = [history.prompt(n, spec) for n in range(1, len(history.turns) + 2)]
    for n_turns, messages in enumerate(prompts):
        assert messages == history.prompt(n_turns + 1, spec)
        assert messages[1] == history.prompt(n_turns + 1, "full-history")[1]
        assert messages[-1]["role"] == "user"
        c = pb.compacted_count(n_turns)
        full = history.prompt(n_turns + 1, "full-history")
        i = 2
        for pos, turn in enumerate(history.turns[:c], 1):
            recap = messages[i]
            if recap["content"] == turn.raw_response and messages[i + 1] == full[2 * pos + 1]:
                i += 2  # never larger: the recap would not be shorter than the turn
                continue
            i += 1
            assert recap["role"] == "assistant"
            assert recap["content"].startswith("recap -") and "\n" not in recap["content"]
            assert len(recap["content"]) < size(full[2 * pos:2 * pos + 2])
            if not turn.success:
                assert recap["content"].startswith(f"recap - turn {turn.number} failed: ")
        assert size(messages) <= size(full) + len(messages[-1]["content"])
        full = history.prompt(n_turns + 1, "full-history")
        kept = n_turns - c
        if kept:
            assert messages[-2 * kept:] == full[-2 * kept:]
        if n_turns + 1 < len(prompts) and pb.compacted_count(n_turns + 1) == c and kept:
            assert is_prefix(messages, prompts[n_turns + 1])


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1), st.integers(0, 4), st.integers(1, 4))
def test_cache_breakpoints_are_repeated(history: History, min_preserved: int,
                                        batch_size: int) -> None:
    """Each reported cache breakpoint is repeated byte for byte by the next prompt."""
    spec = (NAME, {"min_preserved": min_preserved, "batch_size": batch_size})
    for n in range(len(history.turns)):
        assert breakpoints_hold(history, n, spec, end_may_move=True)

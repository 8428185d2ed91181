"""Behaviour of ``rolling-window``: the last ``window`` turns in full, older turns
coalesced into the first USER message, the boundary moving ``step`` turns at a time."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scenarios import SCENARIOS
from turn_strategies import History, breakpoints_hold, histories, is_prefix

from turnpress import normalize, render
from turnpress.plugins.rolling_window import RollingWindow

NAME = "rolling-window"


def _render(sc, spec: str = NAME):
    return render(sc.turns, compression=spec, **sc.render_kwargs())


# -- options ---------------------------------------------------------------------------


def test_defaults() -> None:
    """API-002: options with defaults, the single-user-coalesced ones included."""
    assert RollingWindow.option_defaults() == {
        "window": 2, "step": 10, "println_limit": 15, "tool_call_limit": 20, "errors": "last"}
    assert normalize("rolling-window:window=3,step=2") == (NAME, {"window": 3, "step": 2})


# -- the rules ---------------------------------------------------------------------------


def test_coalesced_count_moves_in_steps() -> None:
    """The boundary is the largest multiple of ``step`` leaving ``window`` turns in full."""
    rw = RollingWindow(window=2, step=3)
    assert [rw.coalesced_count(n) for n in range(12)] == [0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9]
    assert [RollingWindow(step=1).coalesced_count(n) for n in range(5)] == [0, 0, 0, 1, 2]
    assert [RollingWindow().coalesced_count(n) for n in range(14)] == [0] * 12 + [10] * 2
    assert [RollingWindow(window=0, step=1).coalesced_count(n) for n in range(3)] == [0, 1, 2]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_few_turns_render_full_history(scenario: str) -> None:
    """With no more than ``window`` turns it renders what full-history renders."""
    sc = SCENARIOS[scenario]()
    window = max(len(sc.turns), 1)
    assert _render(sc, f"{NAME}:window={window},step=1") == _render(sc, "full-history")


def test_window_turns_in_full_older_coalesced() -> None:
    """The last ``window`` turns are full pairs; older ones only in the first USER message,
    with memory, tool calls and output as of the last coalesced turn (MSG-001)."""
    sc = SCENARIOS["many_prints"]()  # 5 turns printing "line 1".."line 25"
    messages = _render(sc, f"{NAME}:step=1")  # window=2: turns 1-3 coalesced
    full = _render(sc, "full-history")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user",
                                             "assistant", "user"]
    assert messages[2:] == full[-4:]
    head = messages[1]["content"]
    assert head.startswith(sc.mission + "\n\n")
    assert "batch                         ; = integer" in head  # memory of turn 3
    assert "line 15" in head and "line 16" not in head
    assert "(doseq" not in head  # code of coalesced turns is dropped
    assert head.endswith("Turns left: 7")  # as of just after turn 3 (MSG-005)


def test_step_keeps_the_prefix_for_step_turns() -> None:
    """With ``step=2`` the coalesced message changes every other turn, so the prompt
    for turn n is a prefix of the prompt for turn n+1 whenever the boundary holds."""
    sc = SCENARIOS["many_prints"]()
    spec = f"{NAME}:window=1,step=2"
    prompts = [render(sc.turns[:n], compression=spec,
                      **{**sc.render_kwargs(), "turns_left": 10 - n}) for n in range(6)]
    rw = RollingWindow(window=1, step=2)
    for n in range(5):
        holds = rw.coalesced_count(n) == rw.coalesced_count(n + 1)
        assert is_prefix(prompts[n], prompts[n + 1]) == holds, n


def test_no_code_or_summary_twice() -> None:
    """A turn is either coalesced or in full, never both."""
    sc = SCENARIOS["many_prints"]()
    text = "\n".join(m["content"] for m in _render(sc, f"{NAME}:step=1"))
    for n in range(1, 26):
        if n != 22:
            assert len(re.findall(rf"line {n}(?!\d)", text)) == 1, n
    for turn in sc.turns:
        assert text.count(turn.raw_response) == (1 if turn.number > 3 else 0)


def test_coalesced_part_is_single_user_coalesced_after_its_last_turn() -> None:
    """errors="last" (ERR-003): the coalesced message is what single-user-coalesced showed
    just after the last coalesced turn, so it ends with that turn's failed attempt when it
    failed; earlier failures leave only their tool calls (ERR-001)."""
    sc = SCENARIOS["failed_in_a_row"]()  # ok, failed, failed
    messages = _render(sc, f"{NAME}:window=1,step=1")
    expected = render(sc.turns[:2], compression="single-user-coalesced",
                      **{**sc.render_kwargs(), "turns_left": 3})
    assert messages[:2] == expected
    assert "Your previous attempt:\n```clojure\n(def x (broken-code))\n```" in (
        messages[1]["content"])
    assert messages[2]["content"] == sc.turns[2].raw_response
    assert messages[3]["content"].startswith("Error: tool 'fetch-data' failed")
    sc = SCENARIOS["failed_then_recovered"]()  # ok, failed, ok
    messages = _render(sc, f"{NAME}:window=0,step=3")
    assert "broken-code" not in messages[1]["content"]


def test_old_failures_as_pairs_with_errors_pairs() -> None:
    """errors="pairs" (ERR-002, CMP-003): coalesced failed turns keep their full pair,
    in order, before the window."""
    sc = SCENARIOS["failed_in_a_row"]()
    messages = _render(sc, f"{NAME}:window=1,step=1,errors=pairs")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user",
                                             "assistant", "user"]
    assert messages[2]["content"] == sc.turns[1].raw_response
    assert messages[3]["content"] == "Error: undefined symbol 'broken-code'\n\nTurns left: 3"
    assert messages[4]["content"] == sc.turns[2].raw_response
    assert messages[1]["content"].endswith("Turns left: 4")  # just before the failure


def test_window_zero_is_single_user_coalesced_for_scenarios() -> None:
    """``window=0, step=1`` coalesces everything: single-user-coalesced."""
    for make in SCENARIOS.values():
        sc = make()
        for errors in ("last", "pairs"):
            assert (_render(sc, f"{NAME}:window=0,step=1,errors={errors}")
                    == _render(sc, f"single-user-coalesced:errors={errors}"))


# -- properties ------------------------------------------------------------------------


windows = st.integers(0, 4)
steps = st.integers(1, 4)


@settings(max_examples=60, deadline=None)
@given(histories(), windows, steps, st.sampled_from(["last", "pairs"]))
def test_properties(history: History, window: int, step: int, errors: str) -> None:
    """MSG-007 (the mission is never removed), ARC-004 (pure and deterministic), the last
    ``window`` turns as full-history pairs, and prefix stability while the boundary holds."""
    spec = (NAME, {"window": window, "step": step, "errors": errors})
    rw = RollingWindow(window=window, step=step, errors=errors)
    turns = history.turns
    prompts = [history.prompt(n, spec) for n in range(1, len(turns) + 2)]
    for n_turns, messages in enumerate(prompts):
        assert messages == history.prompt(n_turns + 1, spec)
        assert messages[1]["role"] == "user"
        assert messages[1]["content"].startswith(history.mission.rstrip("\n"))
        full = history.prompt(n_turns + 1, "full-history")
        kept = min(window, n_turns)
        if rw.coalesced_count(n_turns) < n_turns and kept:
            assert messages[-2 * kept:] == full[-2 * kept:]
        if rw.coalesced_count(n_turns) == 0:
            assert messages == full
        if n_turns < len(turns) and rw.coalesced_count(n_turns) == rw.coalesced_count(
                n_turns + 1):
            assert is_prefix(messages, prompts[n_turns + 1])


@settings(max_examples=40, deadline=None)
@given(histories(), st.sampled_from(["last", "pairs"]))
def test_window_zero_step_one_is_single_user_coalesced(history: History, errors: str) -> None:
    """``window=0, step=1`` renders exactly single-user-coalesced."""
    for n in range(1, len(history.turns) + 2):
        assert (history.prompt(n, (NAME, {"window": 0, "step": 1, "errors": errors}))
                == history.prompt(n, ("single-user-coalesced", {"errors": errors})))


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1), windows, steps)
def test_cache_breakpoints_are_repeated(history: History, window: int, step: int) -> None:
    """Each reported cache breakpoint is repeated byte for byte by the next prompt (NS-012)."""
    for n in range(len(history.turns)):
        assert breakpoints_hold(history, n, (NAME, {"window": window, "step": step}),
                                end_may_move=True)

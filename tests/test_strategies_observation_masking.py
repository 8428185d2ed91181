"""Behaviour of ``observation-masking``: full history whose old USER feedback is
replaced by one line, except the latest error."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scenarios import SCENARIOS
from turn_strategies import History, breakpoints_hold, histories

from turnpress import Failure, Trace, Turn, normalize, render
from turnpress.compare import compare_traces
from turnpress.core.compression import RenderContext
from turnpress.plugins.observation_masking import ObservationMasking

NAME = "observation-masking"


def _render(sc, spec: str = NAME):
    return render(sc.turns, compression=spec, **sc.render_kwargs())


def _ok(n: int, prints=()) -> Turn:
    return Turn.succeeded(n, f"(step {n})", n, memory={}, prints=prints,
                          raw_response=f"Turn {n} reasoning\n```clojure\n(step {n})\n```")


def _failed(n: int, message: str = "boom") -> Turn:
    return Turn.failed(n, f"(step {n})", Failure("err", f"{message} {n}"), memory={})


# -- options ---------------------------------------------------------------------------


def test_defaults() -> None:
    """``window=3``, ``step=10`` (a boundary that pays under prompt caching)."""
    assert ObservationMasking.option_defaults() == {"window": 3, "step": 10}
    assert normalize("observation-masking:window=1") == (NAME, {"window": 1})


# -- the rules ---------------------------------------------------------------------------


def test_old_feedback_masked_window_kept() -> None:
    """Feedback of turns older than the last ``window`` becomes one line; every ASSISTANT
    message and the first USER message (mission, MSG-007) stay as in full history."""
    turns = [_ok(1, ["a" * 30, "b\n" + "c" * 30]), _ok(2, ["only" * 10]), _ok(3), _ok(4),
             _ok(5)]
    messages = render(turns, mission="m", turns_left=2, compression=f"{NAME}:step=1")
    full = render(turns, mission="m", turns_left=2, compression="full-history")
    assert len(messages) == len(full)
    assert messages[:3] == full[:3]
    assert messages[3]["content"] == "[output of turn 1 omitted: 3 lines]"
    assert messages[5]["content"] == "[output of turn 2 omitted: 1 line]"
    assert messages[6:] == full[6:]
    assert [m["content"] for m in messages[2::2]] == [t.raw_response for t in turns]


def test_latest_error_never_masked() -> None:
    """The most recent failed turn keeps its error even outside the window (ERR-003);
    older failures are masked like any feedback."""
    long = "a long explanation of what went wrong"
    turns = [_failed(1, long), _failed(2, "worse"), _ok(3, ["printed " * 5]), _ok(4)]
    messages = render(turns, mission="m", turns_left=2, compression=f"{NAME}:window=1,step=1")
    assert messages[3]["content"] == "[output of turn 1 omitted: 1 line]"
    assert messages[5]["content"] == "Error: worse 2\n\nTurns left: 4"
    assert messages[7]["content"] == "[output of turn 3 omitted: 1 line]"
    assert messages[9]["content"] == "Result: 4\n\nTurns left: 2"
    zero = render([*turns[:3], _ok(4, ["printed " * 5])], mission="m", turns_left=2,
                  compression=f"{NAME}:window=0,step=1")
    assert zero[5]["content"] == "Error: worse 2\n\nTurns left: 4"
    assert zero[9]["content"] == "[output of turn 4 omitted: 1 line]"


def test_multi_line_error_counted() -> None:
    """K counts the lines the feedback showed."""
    turns = [_failed(1, "line one of the error\nline two of the error"), _failed(2)]
    messages = render(turns, mission="m", turns_left=2, compression=f"{NAME}:window=0,step=1")
    assert messages[3]["content"] == "[output of turn 1 omitted: 2 lines]"


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_wide_window_is_full_history(scenario: str) -> None:
    """With no more turns than ``window`` nothing is masked."""
    sc = SCENARIOS[scenario]()
    window = len(sc.turns)
    assert _render(sc, f"{NAME}:window={window},step=1") == _render(sc, "full-history")


def test_final_turn_line_survives() -> None:
    """MSG-005: the newest feedback (in the window) keeps the final-turn warning."""
    sc = SCENARIOS["final_turn"]()
    messages = _render(sc, f"{NAME}:window=1,step=1")
    assert messages[-1]["content"].endswith(
        "FINAL TURN - you must call (return result) or (fail reason) now.")
    assert messages[3]["content"] in ("[output of turn 1 omitted: 1 line]",
                                      render(sc.turns, compression="full-history",
                                             **sc.render_kwargs())[3]["content"])


# -- properties ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(histories(), st.integers(0, 4))
def test_properties(history: History, window: int) -> None:
    """Same messages as full history except masked feedback; exactly the old feedback is
    masked, never the latest error; deterministic (ARC-004)."""
    spec = (NAME, {"window": window, "step": 1})
    for n in range(1, len(history.turns) + 2):
        messages = history.prompt(n, spec)
        assert messages == history.prompt(n, spec)
        full = history.prompt(n, "full-history")
        assert len(messages) == len(full) and messages[:2] == full[:2]
        turns = history.turns[: n - 1]
        failed = [t.number for t in turns if not t.success]
        for pos, turn in enumerate(turns, 1):
            assert messages[2 * pos] == full[2 * pos]
            feedback = messages[2 * pos + 1]["content"]
            if pos <= len(turns) - window and (not failed or turn.number != failed[-1]):
                placeholder = feedback.startswith(f"[output of turn {turn.number} omitted: ")
                # never larger: a placeholder longer than the feedback keeps the feedback
                assert (placeholder and "\n" not in feedback
                        and len(feedback) < len(full[2 * pos + 1]["content"])) or (
                    feedback == full[2 * pos + 1]["content"])
            else:
                assert feedback == full[2 * pos + 1]["content"]


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1), st.integers(0, 4))
def test_cache_breakpoints_are_repeated(history: History, window: int) -> None:
    """Each reported cache breakpoint is repeated byte for byte by the next prompt."""
    for n in range(len(history.turns)):
        assert breakpoints_hold(history, n, (NAME, {"window": window, "step": 1}),
                                end_may_move=True)


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1), st.integers(0, 4), st.integers(1, 5))
def test_stepped_cache_breakpoints_are_repeated(history: History, window: int,
                                                step: int) -> None:
    """With ``step``, each reported cache breakpoint is repeated by the next prompt."""
    for n in range(len(history.turns)):
        assert breakpoints_hold(history, n, (NAME, {"window": window, "step": step}),
                                end_may_move=True)


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1), st.integers(0, 4), st.integers(2, 5))
def test_stepped_prompt_is_append_only_between_steps(history: History, window: int,
                                                     step: int) -> None:
    """DESIGN §11: the prompt of turn n+1 starts with the prompt of turn n, message for
    message, unless the masking boundary moved between them."""
    strategy = ObservationMasking(window=window, step=step)
    for n in range(1, len(history.turns) + 1):
        now, later = history.prompt(n, strategy), history.prompt(n + 1, strategy)
        if strategy.boundary(n - 1) == strategy.boundary(n):
            assert later[: len(now)] == now


def test_step_moves_the_boundary_in_blocks() -> None:
    """``window=1, step=3``: masking starts once 3 turns lie outside the window."""
    turns = [_ok(n, [f"line {n}" * 10]) for n in range(1, 8)]
    masked = [sum("omitted" in m["content"] for m in render(
        turns[:k], mission="m", turns_left=2, compression=f"{NAME}:window=1,step=3"))
        for k in range(1, 8)]
    assert masked == [0, 0, 0, 3, 3, 3, 6]


def test_placeholder_longer_than_feedback_keeps_it() -> None:
    """Never larger (DESIGN §11): short feedback is not replaced by a longer line."""
    turns = [Turn.succeeded(1, "(f)", 1, memory={}, raw_response="(f)"), _ok(2)]
    messages = render(turns, mission="m", turns_left=5, compression=f"{NAME}:window=0,step=1")
    full = render(turns, mission="m", turns_left=5, compression="full-history")
    assert messages == full


# -- the prompt after a boundary move under Anthropic's lookback ----------------------------


def _long_run(turns: int) -> Trace:
    """A run whose prompts are well past Anthropic's smallest cached prefix: a long system
    prompt, and each turn prints a few distinct lines."""
    system = " ".join(f"rule{i}" for i in range(1500))
    return Trace(mission="m", system_prompt=system, max_turns=turns + 5, name="long",
                 turns=tuple(_ok(n, [f"turn {n} line {k} " + "x" * 60 for k in range(5)])
                             for n in range(1, turns + 1)))


def _context(args: dict) -> RenderContext:
    return RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                         tools=args["tools"], data=args["data"],
                         turns_left=args["turns_left"], preamble=args["preamble"])


def test_the_prompt_after_a_move_marks_again_the_prefix_the_one_before_marked() -> None:
    """The prefix the last prompt before a move marks (for the next one) lies
    ``window + step`` turns, far more than 20 content blocks, before the next prompt's
    end: that prompt marks it again, at the same message, so the API reads it (DESIGN
    §11)."""
    strategy = ObservationMasking(window=3, step=10)
    trace = _long_run(30)
    for n in range(1, 31):
        if strategy.boundary(n) == strategy.boundary(n - 1) or n < 2:
            continue
        before, after = trace.prompt_arguments(n), trace.prompt_arguments(n + 1)
        marked = {i for i, _ in strategy.cache_breakpoints(
            before["turns"], {}, _context(before))}
        again = {i for i, _ in strategy.cache_breakpoints(after["turns"], {}, _context(after))}
        moving = max(marked - {0, len(strategy.to_messages(before["turns"], {},
                                                           _context(before))) - 1})
        assert moving in again, (n, marked, again)


def test_under_anthropic_the_prompt_after_a_move_reads_the_masked_prefix() -> None:
    """compare's Anthropic cache model (with the API's 20-block lookback): the prompt
    right after the second boundary move reads the system prompt and the ten masked
    turns before it (before the mark was repeated: the system prompt only, and the
    strategy cost more than full-history on the corpus runs under Anthropic)."""
    strategy = ObservationMasking(window=3, step=10)
    result = compare_traces([_long_run(30)], [NAME], cache="anthropic", tokenizer="chars4",
                            price="in=1,cached=0.1,write=1.25,min=256")
    stats = {s.turn: s for s in next(r for r in result.compared if r.label == NAME).per_turn()}
    system = stats[1].input_tokens - 20  # the first prompt: the head, little more
    moved = [n for n in range(2, 31) if strategy.boundary(n - 1) != strategy.boundary(n - 2)]
    assert len(moved) == 2, moved
    second = stats[moved[1]]
    assert second.cached_tokens > system + 200, (second, system)

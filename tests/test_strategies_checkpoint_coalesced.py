"""Behaviour of ``checkpoint-coalesced``: the coalesced view of single-user-coalesced,
rebuilt only at checkpoints, with compact per-turn deltas appended in between
(DESIGN §11, issue 11 item 3)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from scenarios import SCENARIOS
from turn_strategies import History, breakpoints_hold, histories, is_prefix

from turnpress import Failure, ToolCall, Turn, normalize, render
from turnpress.core.compression import RenderContext
from turnpress.plugins.checkpoint_coalesced import CheckpointCoalesced

NAME = "checkpoint-coalesced"


def _ok(n: int, prints=(), calls=()) -> Turn:
    return Turn.succeeded(n, f"(def v{n} (step {n}))", n, memory={f"v{n}": n},
                          prints=prints, tool_calls=calls,
                          raw_response=f"Reasoning {n}\n```clojure\n(def v{n} (step {n}))\n```")


def _ctx(turns_left: int = 5) -> RenderContext:
    return RenderContext(mission="m", system_prompt="sys", tools={}, data={},
                         turns_left=turns_left)


def test_defaults() -> None:
    assert CheckpointCoalesced.option_defaults() == {
        "every": 20, "delta_chars": 24000, "output_lines": 20, "println_limit": 15,
        "tool_call_limit": 20, "errors": "last"}
    assert normalize(f"{NAME}:every=4") == (NAME, {"every": 4})


def test_checkpoints_every_k_turns() -> None:
    """``every=3``: the view covers 0, 0, 3, 3, 3, 6... turns; right after a checkpoint
    the prompt is single-user-coalesced's."""
    turns = [_ok(n, [f"out {n}"]) for n in range(1, 8)]
    strategy = CheckpointCoalesced(every=3)
    assert [strategy.checkpoints(turns[:k], _ctx())[0] for k in range(8)] == [
        0, 0, 0, 3, 3, 3, 6, 6]
    kwargs = {"mission": "m", "system_prompt": "sys", "turns_left": 4}
    assert render(turns[:3], compression=strategy, **kwargs) == render(
        turns[:3], compression="single-user-coalesced", **kwargs)


def test_deltas_say_what_a_turn_did_never_its_code() -> None:
    """A delta: the tool calls (ASSISTANT), then what was defined, printed or the error,
    and that point's turns left (USER)."""
    t1 = _ok(1, ["first"])
    t2 = _ok(2, ["a", "b"], [ToolCall("search", ("laptops", 3))])
    t3 = Turn.failed(3, "(boom)", Failure("undefined_symbol", "undefined symbol 'boom'"),
                     memory=t2.memory, raw_response="```clojure\n(boom)\n```")
    messages = render([t1, t2, t3], mission="m", turns_left=2, compression=f"{NAME}:every=9")
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user",
                                             "assistant", "user", "assistant", "user"]
    assert messages[1]["content"] == "m\n\nTurns left: 5"
    assert messages[4]["content"] == (
        ';; Turn 2 ran (code omitted)\n;; Tool calls made:\n;   search("laptops" 3)')
    assert messages[5]["content"] == ";; Defined: v2 (integer)\n\n;; Output:\na\nb\n\nTurns left: 3"
    assert messages[6]["content"] == ";; Turn 3 ran (code omitted)\n;; No tool calls made"
    assert messages[7]["content"] == "Error: undefined symbol 'boom'\n\nTurns left: 2"
    assert not any("(def v" in m["content"] or "(boom)" in m["content"] for m in messages[2:])


def test_delta_budget_makes_an_early_checkpoint() -> None:
    """Once the deltas since the last checkpoint reach ``delta_chars``, the next turn
    makes a checkpoint."""
    turns = [_ok(n, ["x" * 200]) for n in range(1, 7)]
    strategy = CheckpointCoalesced(every=100, delta_chars=500)
    marks = [strategy.checkpoints(turns[:k], _ctx())[0] for k in range(7)]
    assert marks == [0, 0, 0, 3, 3, 3, 6]


def test_long_delta_output_is_cut() -> None:
    turn = _ok(1, ["\n".join(f"row {i}" for i in range(100))])
    messages = render([turn], mission="m", turns_left=3, compression=f"{NAME}:every=5")
    assert "[... 60 lines elided ...]" in messages[3]["content"]
    assert "row 0\n" in messages[3]["content"] and "row 99" in messages[3]["content"]


def test_scenarios_render_and_first_turn_is_single_user_coalesced() -> None:
    for make in SCENARIOS.values():
        sc = make()
        messages = render(sc.turns, compression=NAME, **sc.render_kwargs())
        assert messages[-1]["role"] == "user"
    sc = SCENARIOS["first_turn"]()
    assert render(sc.turns, compression=NAME, **sc.render_kwargs()) == render(
        sc.turns, compression="single-user-coalesced", **sc.render_kwargs())


# -- properties ------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(histories(), st.integers(1, 5), st.sampled_from([0, 40, 400]))
def test_append_only_between_checkpoints(history: History, every: int,
                                         delta_chars: int) -> None:
    """DESIGN §11: the prompt of turn n+1 starts with the prompt of turn n, message for
    message, unless turn n made a checkpoint; the mission is never removed."""
    strategy = CheckpointCoalesced(every=every, delta_chars=delta_chars)
    prompts = [history.prompt(n, strategy) for n in range(1, len(history.turns) + 2)]
    for n in range(1, len(prompts)):
        turns = history.turns[: n - 1]
        kw = history.kwargs(n - 1)
        ctx = RenderContext(mission=kw["mission"], system_prompt=kw["system_prompt"],
                            tools={}, data={}, turns_left=kw["turns_left"])
        _, moves = strategy.checkpoints(turns, ctx)
        if not moves:
            assert is_prefix(prompts[n - 1], prompts[n])
        assert prompts[n - 1][1]["content"].startswith(history.mission.rstrip("\n"))
        assert prompts[n - 1][-1]["role"] == "user"


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1), st.integers(1, 5), st.sampled_from([0, 40, 400]))
def test_cache_breakpoints_are_repeated(history: History, every: int,
                                        delta_chars: int) -> None:
    """Each breakpoint (stable head, last checkpoint, end) is repeated byte for byte."""
    spec = (NAME, {"every": every, "delta_chars": delta_chars})
    for n in range(len(history.turns)):
        assert breakpoints_hold(history, n, spec, end_may_move=True)

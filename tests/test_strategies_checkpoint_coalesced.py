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
        "every": 20, "delta_chars": 24000, "output_lines": 20, "println_limit": 6,
        "tool_call_limit": 20, "errors": "last", "turn_lines": 1, "line_chars": 100,
        "key_lines": 3}
    assert normalize(f"{NAME}:every=4") == (NAME, {"every": 4})


def test_checkpoints_every_k_turns() -> None:
    """``every=3``: the view covers 0, 0, 3, 3, 3, 6... turns; right after a checkpoint
    with ``turn_lines=0`` the prompt is single-user-coalesced's."""
    turns = [_ok(n, [f"out {n}"]) for n in range(1, 8)]
    strategy = CheckpointCoalesced(every=3, turn_lines=0)
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


def test_checkpoint_view_keeps_every_turns_output_head_and_tail() -> None:
    """An early turn's printed ids survive later prints at a checkpoint (needed-fact
    recall, DESIGN §11): each turn's output, cut to its first and last lines, each line
    cut to ``line_chars``; single-user-coalesced keeps only the last println calls."""
    listing = ["3 tickets", "T-4101 charged twice", "T-4102 login loop", "T-4107 export"]
    turns = [_ok(1, listing), *(_ok(n, [f"row {n}"] * 20) for n in range(2, 4)),
             _ok(4, ["x" * 9] * 45)]
    kwargs = {"mission": "m", "system_prompt": "sys", "turns_left": 4}
    view = render(turns, compression=f"{NAME}:every=4,line_chars=13", **kwargs)[1]["content"]
    assert view.endswith(";; Output by turn:\n;; turn 1\n3 tickets\n[... 2 lines elided ...]\n"
                         "T-4107 export\n;; turn 2\nrow 2\n[... 18 lines elided ...]\nrow 2\n"
                         ";; turn 3\nrow 3\n[... 18 lines elided ...]\nrow 3\n;; turn 4\n"
                         + "xxxxxxxxx\n" * 20 + "[... 5 lines elided ...]\n"
                         + "xxxxxxxxx\n" * 20
                         + "\nTurns left: 4")
    wide = render(turns, compression=f"{NAME}:every=4,turn_lines=2,line_chars=8", **kwargs)
    assert ";; turn 1\n3 tic...\nT-410...\nT-410...\nT-410...\n;; turn 2\nrow 2\nrow 2\n" \
        "[... 16 lines elided ...]" in wide[1]["content"]
    plain = render(turns, compression="single-user-coalesced", **kwargs)[1]["content"]
    assert "T-4107" not in plain and "T-4107" in view


def test_older_turns_keep_only_lines_that_first_show_a_name() -> None:
    """Age tiers: turns before the checkpoint before last keep only their key lines (the
    first line to show a field or config name), up to ``key_lines``; a turn with none is
    left out; the turns since that checkpoint keep head and tail plus key lines."""
    turns = [_ok(1, ["pages: 3", "{:cust_no 1 :balance_cents 0}",
                     "{:cust_no 2 :balance_cents 5}",
                     "pool.max_connections=5 pool.timeout_ms=30000", "done"]),
             _ok(2, ["page 1 done"]),
             _ok(3, ["page 2 done", "x" * 20, "y" * 20, "retry_after=3", "page 2 end"]),
             _ok(4, ["page 3 done"])]
    kwargs = {"mission": "m", "system_prompt": "sys", "turns_left": 4}
    view = render(turns, compression=f"{NAME}:every=2,key_lines=1", **kwargs)[1]["content"]
    assert view.endswith(";; Output by turn:\n;; turn 1\n[... 1 line elided ...]\n"
                         "{:cust_no 1 :balance_cents 0}\n[... 3 lines elided ...]\n"
                         ";; turn 3\npage 2 done\n[... 2 lines elided ...]\nretry_after=3\n"
                         "page 2 end\n;; turn 4\npage 3 done\n\nTurns left: 4")
    both = render(turns, compression=f"{NAME}:every=2,key_lines=2", **kwargs)[1]["content"]
    assert "pool.max_connections=5 pool.timeout_ms=30000" in both
    assert ";; turn 2" not in both  # nothing new, before the last two checkpoints


def test_delta_keeps_key_lines_between_head_and_tail() -> None:
    """A delta shows the first line in the middle of a long output that shows a new name;
    names an earlier output showed are not new."""
    rows = [f"row {i}" for i in range(30)]
    rows[9] = "seen.name here"
    rows[15] = "config latency_ms=30000"
    turns = [_ok(1, ["seen.name"]), _ok(2, ["\n".join(rows)])]
    messages = render(turns, mission="m", turns_left=3,
                      compression=f"{NAME}:every=5,output_lines=2")
    assert (
        ";; Output:\nrow 0\nrow 1\n[... 13 lines elided ...]\nconfig latency_ms=30000\n"
        "[... 12 lines elided ...]\nrow 28\nrow 29\n") in messages[-1]["content"]


def test_turn_output_is_never_larger() -> None:
    """A short output is shown whole, never replaced by a longer cut."""
    turns = [_ok(1, ["a", "b", "c"]), _ok(2, ["d"])]
    view = render(turns, compression=f"{NAME}:every=2", mission="m",
                  turns_left=3)[1]["content"]
    assert ";; turn 1\na\nb\nc\n;; turn 2\nd" in view


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

"""Behaviour of ``per-turn-summary``: one ASSISTANT(program)/USER(summary of that turn)
pair per turn, append-only."""

from __future__ import annotations

from hypothesis import given, settings
from scenarios import SCENARIOS
from turn_strategies import History, breakpoints_hold, histories, is_prefix, size

from turnpress import Failure, Fn, Turn, normalize, render
from turnpress.core.compression import RenderContext
from turnpress.core.model import coerce_tools
from turnpress.plugins.per_turn_summary import PerTurnSummary

NAME = "per-turn-summary"


def _render(sc, spec: str = NAME):
    return render(sc.turns, compression=spec, **sc.render_kwargs())


def _summaries(sc, **options) -> list[str]:
    """Each turn's summary as the strategy writes it (before the never-larger choice)."""
    kw = sc.render_kwargs()
    ctx = RenderContext(mission=kw["mission"], system_prompt=kw["system_prompt"],
                        tools=coerce_tools(kw["tools"]), data=kw["data"],
                        turns_left=kw["turns_left"])
    strategy = PerTurnSummary(**options)
    return [strategy.summary(ctx, sc.turns, pos) for pos in range(1, len(sc.turns) + 1)]


# -- options ---------------------------------------------------------------------------


def test_defaults() -> None:
    """Per-turn limits default to single-user-coalesced's (API-004, API-005)."""
    assert PerTurnSummary.option_defaults() == {"println_limit": 15, "tool_call_limit": 20}
    assert normalize(NAME) == (NAME, {})


# -- the format ----------------------------------------------------------------------------


def test_layout_and_program_only_assistant() -> None:
    """[SYSTEM, USER(mission + tool/ + data/ + Turns left)], then per turn the program in
    a clojure fence (no prose) and a summary ending with that point's Turns left."""
    sc = SCENARIOS["exploration"]()
    messages = _render(sc)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1] == _render(sc, "full-history")[1]
    assert messages[2]["content"] == f"```clojure\n{sc.turns[0].program}\n```"
    assert "Let me look at the data first" not in messages[2]["content"]
    assert _summaries(sc)[0] == (
        ';; Tool calls made:\n;   search-reviews("Electronics")\n;   get-inventory()\n\n'
        ";; Defined:\n"
        ';   electronics = list[4], sample: [{:name "Laptop" :price 1200 :category '
        '"Electronic..."} {:name "Mouse" :price 25 :category "Electronic..."} '
        '{:name "Monitor" :price 300 :category "Electronic..."} ...] '
        "(4 items, showing first 3)\n"
        ';   reviews = string, sample: "Customer Review Summary for Electronics:\\n- Laptop: '
        'Average rating 4.5/5\\n- Mouse:..."\n'
        ';   inventory = string, sample: "Warehouse Inventory Report (as of Monday):\\n'
        'Laptop - 23 units in stock\\nMouse - OU..."\n\n'
        "Turns left: 4")


def test_summary_covers_only_its_turn() -> None:
    """Each summary lists only that turn's tool calls (TC-001 per turn)."""
    sc = SCENARIOS["many_tool_calls"]()
    summaries = _summaries(sc)
    for t, summary in enumerate(summaries, 1):
        shown = {int(w.split("-")[1].rstrip('"')) for w in summary.split() if "item-" in w}
        assert shown == set(range((t - 1) * 10 + 1, t * 10 + 1))


def test_printed_turn_shows_output_and_no_samples() -> None:
    """SAM-002 per turn: a turn that printed shows its output and types only."""
    sc = SCENARIOS["println_mode"]()
    summary = _summaries(sc)[0]
    assert ";   reviews = string\n" in summary and "sample" not in summary
    assert ";; Output:\nReviews: Customer Review Summary" in summary


def test_failed_turn_shows_error_not_output() -> None:
    """ERR-003: a failed turn's summary ends with its error, then Turns left."""
    sc = SCENARIOS["failed_in_a_row"]()
    messages = _render(sc)
    assert messages[4]["content"] == "```clojure\n(def x (broken-code))\n```"
    assert _summaries(sc)[1] == (
        ";; No tool calls made\n\nError: undefined symbol 'broken-code'\n\nTurns left: 3")
    last = _summaries(sc)[2]
    assert last.startswith(';; Tool calls made:\n;   fetch-data("orders" [1 2 3 ...]')
    assert ";   ids = list[5]" in last
    assert last.endswith("Error: tool 'fetch-data' failed: takes 1 argument, got 2\n\n"
                         "Turns left: 2")


def test_defined_lists_new_and_redefined_names_only() -> None:
    """DEF-002: a redefinition is listed again; calling a function (which records its
    return type) is not a redefinition; unchanged names are not repeated."""
    sc = SCENARIOS["redefinition_across_turns"]()
    second = _summaries(sc)[1]
    assert ";   threshold = integer, sample: 250" in second
    assert ";   picked = integer, sample: 6" in second
    assert "label" not in second and "double" not in second


def test_final_turn_line() -> None:
    """MSG-005: with one turn left the last summary ends with the final-turn warning."""
    messages = _render(SCENARIOS["final_turn"]())
    assert messages[-1]["content"].endswith(
        "FINAL TURN - you must call (return result) or (fail reason) now.")


def test_limits_apply_per_turn() -> None:
    """``println_limit``/``tool_call_limit`` keep the latest entries of each turn."""
    sc = SCENARIOS["many_prints"]()
    summary = _summaries(sc, println_limit=2)[0]
    assert ";; Output:\nline 4\nline 5\n" in summary
    sc = SCENARIOS["many_tool_calls"]()
    summary = _summaries(sc, tool_call_limit=1)[0]
    assert summary.startswith(';; Tool calls made:\n;   lookup("item-10" 10)\n\n')


def test_function_definition_shows_label_without_sample() -> None:
    """Functions are listed with their type label."""
    t = Turn.succeeded(1, "(defn f [x] x)", None, memory={"f": Fn(("x",), "doc")})
    t2 = Turn.failed(2, "(f)", Failure("arity", "wrong number of args"),
                     memory={"f": Fn(("x",), "doc", "nil")})
    ctx = RenderContext(mission="m", system_prompt="", tools={}, data={}, turns_left=3)
    assert ";; Defined:\n;   f = #fn[...]\n" in PerTurnSummary().summary(ctx, [t, t2], 1)
    assert "Defined" not in PerTurnSummary().summary(ctx, [t, t2], 2)


# -- properties ------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(histories())
def test_prompt_for_turn_n_is_a_prefix_of_turn_n_plus_1(history: History) -> None:
    """Append-only: the prompt for turn n is an exact prefix of the prompt for turn n+1;
    the mission is never removed (MSG-007); rendering is deterministic (ARC-004)."""
    prompts = [history.prompt(n, NAME) for n in range(1, len(history.turns) + 2)]
    for n in range(len(prompts) - 1):
        assert is_prefix(prompts[n], prompts[n + 1])
        assert len(prompts[n + 1]) == len(prompts[n]) + 2
    for n, messages in enumerate(prompts, 1):
        assert messages == history.prompt(n, NAME)
        assert messages[1]["content"].startswith(history.mission.rstrip("\n"))
        full = history.prompt(n, "full-history")
        assert size(messages) <= size(full)  # never larger (DESIGN §11)
        for assistant, turn in zip(messages[2::2], history.turns, strict=False):
            program = f"```clojure\n{turn.program.strip(chr(10))}\n```"
            assert assistant["content"] in (program, turn.raw_response)
            assert len(assistant["content"]) <= len(turn.raw_response)


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1))
def test_cache_breakpoints_are_repeated(history: History) -> None:
    """The whole previous conversation is a cacheable prefix."""
    for n in range(len(history.turns)):
        assert breakpoints_hold(history, n, NAME)


def test_never_larger_than_full_history_on_a_printing_turn() -> None:
    """A summary longer than the feedback it stands for keeps the feedback; a shorter
    one replaces it."""
    sc = SCENARIOS["exploration"]()
    messages, full = _render(sc), _render(sc, "full-history")
    assert messages[3] == full[3]  # the summary (samples) is longer than "Result: ..."
    turn = Turn.succeeded(1, "(println big)", None, memory={},
                          prints=["row " * 40 for _ in range(30)])
    messages = render([turn], mission="m", turns_left=3, compression=NAME)
    assert messages[3]["content"].startswith(";; No tool calls made\n\n;; Output:")
    assert len(messages[3]["content"]) < len(render([turn], mission="m", turns_left=3,
                                                    compression=False)[3]["content"]) + 1

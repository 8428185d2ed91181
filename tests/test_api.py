"""The public API: normalize(), render(), get_strategy() and the Strategy contract."""

from __future__ import annotations

import inspect

import pytest
from scenarios import exploration, failed_once

import turnpress
from turnpress import Strategy, Turn, get_strategy, normalize, render
from turnpress.core.compression import RenderContext


def test_public_names() -> None:
    for name in ("Turn", "ToolCall", "Failure", "Keyword", "Fn", "Tool", "to_clojure",
                 "type_label", "normalize", "render", "get_strategy", "hookimpl", "Strategy",
                 "load_trace", "save_trace", "Trace"):
        assert hasattr(turnpress, name), name


def test_api_001_true_means_the_default_strategy() -> None:
    """API-001 / ARC-005: compression=True enables the default strategy: since issue 18
    ``price-scheduled`` (DESIGN §11); ``single-user-coalesced`` by name."""
    assert normalize(True) == ("price-scheduled", {})
    sc = exploration()
    messages = render(sc.turns, compression=True, **sc.render_kwargs())
    assert messages == render(sc.turns, compression="price-scheduled", **sc.render_kwargs())
    messages = render(sc.turns, compression="single-user-coalesced", **sc.render_kwargs())
    assert [m["role"] for m in messages] == ["system", "user"]


def test_api_002_strategy_with_options() -> None:
    """API-002: (Strategy, opts) enables a strategy with custom options."""
    cls = type(get_strategy("single-user-coalesced"))
    assert normalize((cls, {"println_limit": 10})) == (
        "single-user-coalesced", {"println_limit": 10})
    assert normalize(("single-user-coalesced", {"println_limit": 10})) == (
        "single-user-coalesced", {"println_limit": 10})
    assert normalize("single-user-coalesced:println_limit=10,errors=pairs") == (
        "single-user-coalesced", {"println_limit": 10, "errors": "pairs"})
    assert get_strategy(("single-user-coalesced", {"println_limit": 10})).println_limit == 10


def test_api_003_false_or_none_disables() -> None:
    """API-003: compression=False or None disables compression: the full-history baseline."""
    assert normalize(False) == (None, {}) and normalize(None) == (None, {})
    sc = exploration()
    assert render(sc.turns, compression=False, **sc.render_kwargs()) == render(
        sc.turns, compression="full-history", **sc.render_kwargs())
    assert get_strategy(False).name == "full-history"


@pytest.mark.parametrize("word", ["none", "off", "FALSE", " none"])
def test_api_003_none_names_no_compression_everywhere(word: str) -> None:
    """API-003: the words ``-s`` takes for "no compression" mean it wherever a
    ``compression=`` is given: ``render``, ``compress``, ``get_strategy``,
    ``normalize`` and a TASK.toml (they were unknown strategies outside the CLI)."""
    from turnpress import compress
    from turnpress.agent.tasks import parse_task

    assert normalize(word) == (None, {}) == normalize(f"{word}:")
    assert get_strategy(word).name == "full-history"
    sc = exploration()
    assert render(sc.turns, compression=word, **sc.render_kwargs()) == render(
        sc.turns, compression=False, **sc.render_kwargs())
    chat = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"}]
    assert compress(chat, strategy=word) == chat
    task = parse_task(f'mission = "m"\ncompression = "{word}"\n')
    assert task.compression == word
    with pytest.raises(ValueError, match=r"\(or none/off/false for no compression\)"):
        normalize("nope")


def test_api_004_and_api_005_default_limits() -> None:
    """API-004 / API-005: println_limit defaults to 15, tool_call_limit to 20 (the
    seed's strategy, by name; the default strategy is price-scheduled since issue 18)."""
    strategy = get_strategy("single-user-coalesced")
    assert strategy.println_limit == 15 and strategy.tool_call_limit == 20
    assert strategy.option_defaults() == {"println_limit": 15, "tool_call_limit": 20,
                                          "errors": "last"}


def test_api_006_normalize_accepts_all_forms() -> None:
    """API-006: normalize() returns a (strategy, opts) tuple for true, false, a strategy
    (name or class) and (strategy, opts)."""
    assert normalize(True) == (type(get_strategy(True)).name, {})
    cls = type(get_strategy("single-user-coalesced"))
    assert normalize(cls) == ("single-user-coalesced", {})
    assert normalize("full-history") == ("full-history", {})
    assert normalize(cls(tool_call_limit=5)) == (
        "single-user-coalesced", {"println_limit": 15, "tool_call_limit": 5, "errors": "last"})


@pytest.mark.parametrize(("bad", "message"), [
    ("nope", "unknown strategy 'nope'; registered strategies: .*single-user-coalesced"),
    (("single-user-coalesced", {"bogus": 1}), "has no option 'bogus'; valid options: "
                                              "println_limit, tool_call_limit, errors"),
    (("single-user-coalesced", {"println_limit": -1}), "'println_limit' must be an integer"),
    (("single-user-coalesced", {"errors": "all"}), "'errors' must be one of 'last', 'pairs'"),
    ("single-user-coalesced:println_limit=many", "expects an integer, got 'many'"),
    ("rolling-window:window=3,window=4", "gives option 'window' twice; give each option once"),
    ("single-user-coalesced:println_limit=1.5", "expects an integer, got '1.5'"),
    ("single-user-coalesced:oops", "'oops' is not option=value"),
    (42, r"compression=42 is not understood"),
    (("single-user-coalesced",), "must be \\(name_or_class, \\{options\\}\\)"),
])
def test_api_006_bad_values_name_the_problem(bad: object, message: str) -> None:
    """API-006: unknown names, options and values raise ValueError naming them."""
    with pytest.raises(ValueError, match=message):
        normalize(bad)


def test_arc_003_strategy_contract() -> None:
    """ARC-003: a strategy has a name and to_messages(turns, memory, ctx); options are
    keyword-only constructor arguments with defaults."""
    for name in turnpress.core.compression.strategy_names():
        cls = type(get_strategy(name))
        assert isinstance(cls.name, str) and cls.name == name
        params = list(inspect.signature(cls).parameters.values())
        assert all(p.kind is p.KEYWORD_ONLY and p.default is not p.empty for p in params), name


def test_a_plain_class_works_as_a_strategy() -> None:
    """Any class with the same shape is a strategy (the base class is optional)."""

    class Echo:
        name = "echo"

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("user", f"{ctx.mission} after {len(turns)} turns")]

    assert render([], mission="m", turns_left=2, compression=Echo) == [
        {"role": "user", "content": "m after 0 turns"}]
    assert normalize(Echo) == ("echo", {})


def test_bad_strategy_output_is_reported() -> None:
    class Broken(Strategy):
        name = "broken"

        def to_messages(self, turns, memory, ctx):
            return [{"role": "robot", "content": "x"}]

    with pytest.raises(TypeError, match="strategy 'broken' returned a bad message at index 0"):
        render([], mission="m", turns_left=1, compression=Broken)


def test_arc_004_render_is_pure() -> None:
    """ARC-004: same input, same output, and the input is not changed."""
    sc = failed_once()
    before = [t for t in sc.turns]
    for strategy in turnpress.core.compression.strategy_names():
        a = render(sc.turns, compression=strategy, **sc.render_kwargs())
        b = render(sc.turns, compression=strategy, **sc.render_kwargs())
        assert a == b
    assert list(sc.turns) == before


def test_memory_defaults_to_last_turn() -> None:
    sc = exploration()
    explicit = render(sc.turns, sc.turns[-1].memory, compression=True, **sc.render_kwargs())
    assert render(sc.turns, compression=True, **sc.render_kwargs()) == explicit
    empty = render([], {"x": 1}, mission="m", turns_left=3,
                   compression="single-user-coalesced")[1]["content"]
    assert "x                         ; = integer, sample: 1" in empty


def test_render_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="turns\\[0\\] is a str"):
        render(["not a turn"], mission="m", turns_left=1)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="turns_left"):
        render([], mission="m", turns_left="3")  # type: ignore[arg-type]


def test_render_context_helpers_are_reusable() -> None:
    ctx = RenderContext("mission", "sys", {}, {"n": [1, 2]}, 2)
    assert ctx.turns_left_line(2) == "Turns left: 2"
    assert ctx.turns_left_line(1).startswith("FINAL TURN")
    assert ctx.namespaces({}) == ["\n".join([
        ";; === data/ ===", "data/n                    ; list[2], sample: [1 2]"])]
    turn = Turn.succeeded(1, "p", [1], memory={})
    assert ctx.feedback(turn, 1) == (
        "Result: [1]\n\nFINAL TURN - you must call (return result) or (fail reason) now.")


def test_arc_006_turns_left_comes_from_the_turn_count() -> None:
    """ARC-006: the turn count is len(turns), never the message count, which varies by
    strategy: every strategy shows the same turns left for the same trace and turn."""
    from turnpress import load_trace
    from turnpress.examples import example_trace_paths

    trace = load_trace(next(p for p in example_trace_paths() if p.stem == "product-research"))
    for n in range(1, len(trace.turns) + 1):
        expected = f"Turns left: {trace.max_turns - (n - 1)}"
        for name in turnpress.core.compression.strategy_names():
            messages = trace.prompt(n, name)
            assert messages[-1]["content"].endswith(expected), (name, n)


from hypothesis import HealthCheck, given, settings  # noqa: E402
from turn_strategies import histories  # noqa: E402


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_rendering_is_deterministic_for_every_strategy(history) -> None:
    """Property (ARC-004): for random histories, every strategy renders the same messages
    twice, and keeps the mission (MSG-007)."""
    n = len(history.turns) + 1
    for name in turnpress.core.compression.strategy_names():
        first = history.prompt(n, name)
        assert first == history.prompt(n, name), name
        assert any(history.mission in m["content"] for m in first), name


def test_rendering_does_not_depend_on_the_hash_seed(tmp_path) -> None:
    """Sets of strings render in a fixed order, so two processes agree byte for byte."""
    import os
    import subprocess
    import sys

    from turnpress import Trace, save_trace

    turn = Turn.succeeded(1, "p", None, memory={"tags": frozenset({"red", "green", "blue",
                                                                   "cyan", "pink"})})
    later = Turn.succeeded(2, "q", None, memory=turn.memory)
    save_trace(Trace(mission="m", turns=(turn, later), max_turns=3), tmp_path / "t.json")
    outputs = set()
    for seed in ("1", "2", "3"):
        out = subprocess.run([sys.executable, "-m", "turnpress", "render", "-f", "json", "-s",
                              "single-user-coalesced",
                              str(tmp_path / "t.json")], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}, check=True)
        outputs.add(out.stdout)
    assert len(outputs) == 1
    assert '#{\\"blue\\" \\"cyan\\" \\"green\\" ...}' in outputs.pop()


def test_set_items_alike_in_their_first_60_characters_render_alike_under_every_seed():
    """Sets are shown sorted by a short key; items whose keys tie (long vectors alike at
    the start, sets of sets) kept their iteration order, which follows the hash seed,
    so one value rendered differently in two processes (and missed the prompt cache)."""
    import os
    import subprocess
    import sys

    program = (
        "from turnpress import to_clojure\n"
        "items = [('p' * 20, 'q' * 20, 'r' * 20, 's' * 20, c) for c in 'abcdefgh']\n"
        "nested = frozenset(frozenset({frozenset({c, 'x' * 70})}) for c in 'abcdefgh')\n"
        "print(to_clojure(frozenset(items), 8, 10_000)[0])\n"
        "print(to_clojure(nested, 8, 10_000)[0])\n")
    outputs = {subprocess.run([sys.executable, "-c", program], capture_output=True,
                              text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout
               for seed in ("1", "2", "3", "4")}
    assert len(outputs) == 1
    text = outputs.pop()
    assert all(f'"{c}"]' in text for c in "abcdefgh")


def test_tie_breaking_digests_stay_within_their_budget(monkeypatch):
    """Digests that order tied set items visit at most _TIE_DIGEST_BUDGET items per
    to_clojure call: past it, ties keep iteration order, so a sample of a huge value
    (1,500 nested sets holding 1.1 million items) stays the work of the sample."""
    from turnpress.core import clojure, codec

    digest = codec.value_digester(budget=10)
    assert digest([1, 2, 3]) == codec.value_digester()([1, 2, 3])
    with pytest.raises(codec.DigestBudgetExceeded):
        digest([list(range(5)), list(range(6))])
    visited = []
    real = codec.value_digester

    def counting(budget=None):
        assert budget == clojure._TIE_DIGEST_BUDGET
        inner = real(budget)
        return lambda v: visited.append(v) or inner(v)

    monkeypatch.setattr(clojure, "value_digester", counting)
    monkeypatch.setattr(clojure, "_TIE_DIGEST_BUDGET", 30)
    items = frozenset(tuple(["p" * 20, "q" * 20, "r" * 20, "s" * 20, c]) for c in "abcdefgh")
    text = turnpress.to_clojure(frozenset({items, frozenset({items})}), 8, 10_000)[0]
    assert all(f'"{c}"]' in text for c in "abcdefgh")
    assert 0 < len(visited) <= 8  # the budget ran out: no digest asked for after that


def test_an_option_without_a_default_is_named_as_such() -> None:
    """A strategy whose constructor takes a keyword with no default: giving it is not
    "no option 'k'; valid options: (none)" but what is wrong and how to mend it."""
    from turnpress import Strategy

    class Needy(Strategy):
        name = "needy"

        def __init__(self, *, k: int) -> None:
            self.k = k

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("user", ctx.mission)]

    with pytest.raises(ValueError, match=r"^strategy 'needy': option 'k' has no default in "
                                         r"Needy.__init__; a strategy's options are "
                                         r"keyword-only arguments with defaults"):
        normalize((Needy, {"k": 2}))

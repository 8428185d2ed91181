"""Behaviour of ``aggressive``: one minimal USER message, never larger than
``single-user-coalesced``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from scenarios import SCENARIOS
from turn_strategies import History, breakpoints_hold, histories, size

from turnpress import Failure, Turn, normalize, render
from turnpress.plugins.aggressive import Aggressive

NAME = "aggressive"


def _render(sc, spec: str = NAME):
    return render(sc.turns, compression=spec, **sc.render_kwargs())


# -- options ---------------------------------------------------------------------------


def test_defaults() -> None:
    """Small limits by default."""
    assert Aggressive.option_defaults() == {"println_limit": 3, "tool_call_limit": 5,
                                           "output_chars": 200}
    assert normalize("aggressive:output_chars=50") == (NAME, {"output_chars": 50})


# -- the format ----------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_single_user_message_without_samples_or_docstrings(scenario: str) -> None:
    """MSG-002 layout; no samples anywhere, no docstrings; mission first (MSG-003) and
    turns left last (MSG-005)."""
    sc = SCENARIOS[scenario]()
    messages = _render(sc)
    assert [m["role"] for m in messages] == ["system", "user"]
    content = messages[1]["content"]
    assert content.startswith(sc.mission + "\n\n")
    assert "sample:" not in content
    assert content.splitlines()[-1] in (f"Turns left: {sc.turns_left}",
                                        "FINAL TURN - you must call (return result) or "
                                        "(fail reason) now.")


def test_names_and_types_only() -> None:
    """data/ and user/ give names and types; functions keep params and return type."""
    content = _render(SCENARIOS["docstrings"]())[1]["content"]
    assert "(fetch-users [category])           ; -> list[5]" in content
    assert "(helper [x])\n" in content
    assert "users                         ; = list[5]\n" in content
    assert "Fetches" not in content and "Active users" not in content
    content = _render(SCENARIOS["exploration"]())[1]["content"]
    assert "data/products                    ; list[7]\n" in content


def test_limits() -> None:
    """The last 3 println calls and the last 5 tool calls, oldest first (TRN-010, TC-007)."""
    content = _render(SCENARIOS["many_prints"]())[1]["content"]
    assert ";; Output:\nline 23\nline 24\nline 25\n" in content
    content = _render(SCENARIOS["many_tool_calls"]())[1]["content"]
    calls = [line for line in content.splitlines() if line.startswith(";   lookup(")]
    assert calls == [f';   lookup("item-{i}" {i})' for i in range(26, 31)]


def test_output_entries_cut_to_output_chars() -> None:
    """Each output entry is at most ``output_chars`` characters, ``...`` included."""
    prints = ["a" * 10, "b" * 11, "c" * 30, "d\n" * 3]
    t = Turn.succeeded(1, "(println ...)", None, memory={}, prints=prints)
    content = render([t], mission="m", turns_left=2,
                     compression="aggressive:output_chars=10,println_limit=4")[1]["content"]
    assert ";; Output:\naaaaaaaaaa\nbbbbbbb...\nccccccc...\nd\nd\nd\n\n" in content


def test_failed_program_cut_to_20_lines() -> None:
    """The failed attempt shows the first 20 lines of a longer program and says how
    many were cut; a short program is shown whole (ERR-003)."""
    program = "\n".join(f"(step {i})" for i in range(1, 31))
    t = Turn.failed(1, program, Failure("boom", "step 25 failed"), memory={})
    content = render([t], mission="m", turns_left=2, compression=NAME)[1]["content"]
    assert "(step 20)\n;; ... 10 more lines not shown\n```\n\nError: step 25 failed" in content
    assert "(step 21)" not in content and "(step 1)\n" in content
    short = Turn.failed(1, "(a)\n(b)", Failure("boom", "no"), memory={})
    content = render([short], mission="m", turns_left=2, compression=NAME)[1]["content"]
    assert "```clojure\n(a)\n(b)\n```\n\nError: no" in content


def test_failed_attempt_only_while_last_turn_failed() -> None:
    """ERR-001 / CMP-002 as in single-user-coalesced: once recovered, the error is gone."""
    assert "Your previous attempt" not in _render(
        SCENARIOS["failed_then_recovered"]())[1]["content"]
    assert "Error: undefined symbol 'broken-code'" in _render(
        SCENARIOS["failed_once"]())[1]["content"]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_never_larger_than_single_user_coalesced_on_scenarios(scenario: str) -> None:
    """Smaller than (or as small as) the default strategy on every spec-01 scenario."""
    sc = SCENARIOS[scenario]()
    assert size(_render(sc)) <= size(_render(sc, "single-user-coalesced"))


# -- properties ------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(histories())
def test_never_larger_than_single_user_coalesced(history: History) -> None:
    """On the same input, aggressive is never larger than single-user-coalesced; it is
    deterministic (ARC-004) and keeps the mission (MSG-007)."""
    for n in range(1, len(history.turns) + 2):
        messages = history.prompt(n, NAME)
        assert size(messages) <= size(history.prompt(n, "single-user-coalesced"))
        assert messages == history.prompt(n, NAME)
        assert messages[1]["content"].startswith(history.mission.rstrip("\n"))


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1))
def test_cache_breakpoints_are_repeated(history: History) -> None:
    """The mission + tool/ + data/ head is repeated byte for byte (NS-012)."""
    for n in range(len(history.turns)):
        assert breakpoints_hold(history, n, NAME)

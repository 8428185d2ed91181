"""The exact indexes of retention and recall (issue 20 item 4) against plain searches:
FactIndex's grouped C-level passes against ``fact_present`` on each text, and
NeededFacts' word index against a search of the run's texts joined by NUL."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from retention_helpers import joined_first

from turnpress.compare import fact_index, needed_facts
from turnpress.compare.fact_index import FactIndex
from turnpress.compare.needed_facts import NeededFacts
from turnpress.compare.retention import Fact, fact_present

# word and non-word characters, 2- and 4-byte ones, JSON escapes and the NUL of the joins
ALPHABET = "ab_1 .-/\"'()\n\\é😀\x00"
TEXTS = st.text(alphabet=ALPHABET, max_size=12)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.lists(st.tuples(TEXTS, TEXTS), max_size=5),
       st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=5), min_size=1, max_size=8))
def test_needed_facts_word_index_finds_what_the_joined_search_finds(head, turns, idents):
    """With the word index built from the first search on, every identifier's first
    part is the one the joined text gives (incl. identifiers of several words, of none,
    of non-ASCII characters, and spanning a NUL)."""
    parts, kinds = [head], ["head"]
    for k, (assistant, feedback) in enumerate(turns, 1):
        parts += [assistant, feedback]
        kinds += [("assistant", k), ("feedback", k)]
    saved = needed_facts.FIRST_SEEN_SCAN
    needed_facts.FIRST_SEEN_SCAN = -1  # index at once
    try:
        needed = NeededFacts(head, turns)
        for ident in idents:
            assert needed._first_seen(ident) == joined_first(parts, kinds, ident), ident
        assert needed._words is not None or all("\x00" in i for i in idents)
    finally:
        needed_facts.FIRST_SEEN_SCAN = saved


def test_needed_facts_word_index_is_built_only_past_its_threshold():
    """A short run is scanned plainly; one scanned past FIRST_SEEN_SCAN times its text
    gets the index, and answers the same afterwards."""
    turns = [(f"cat file_{k}.py", f"out {k} file_{k}.py") for k in range(1, 60)]
    needed = NeededFacts("head", turns)
    first = needed._first_seen("file_1.py")
    assert needed._words is None and first == ("assistant", 1)
    for k in range(needed_facts.FIRST_SEEN_SCAN + 1):
        needed._first_seen(f"missing_{k}")  # in no part: scans the whole run
    assert needed._words is not None
    assert needed._find("file_1.py") == ("assistant", 1)
    assert needed._find("out 7") == ("feedback", 7)
    assert needed._find("file_59") == ("assistant", 59)
    assert needed._find("nowhere") == "-"


FACTS = st.one_of(
    st.builds(Fact, st.sampled_from(["printed line", "last error", "mission"]),
              st.text(alphabet=ALPHABET, min_size=1, max_size=4)),
    st.builds(Fact, st.just("name"), st.text(alphabet=ALPHABET, min_size=1, max_size=3)),
    st.builds(Fact, st.just("tool call"), st.text(alphabet="ab_", min_size=1, max_size=2),
              st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=3), max_size=2)
              .map(tuple)),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=12), st.data())
def test_fact_index_answers_as_a_search_of_each_text(texts, data):
    """Facts are added turn by turn, and prompts of many texts (the older ones needing
    the new facts: one pass per fact) or few (a new text needing every fact: one pass
    per text) are scored: ``shown`` is every eager fact that ``fact_present`` finds in
    one of the prompt's texts, ``shown_tracked`` agrees on every tracked fact, and
    ``shows`` on the facts asked."""
    # the C-level passes from the first text and the first fact on, or as configured
    # the texts joined a few characters at a time, or all at once (JOIN_CHARS)
    saved = fact_index._MANY, fact_index._GROUPED, fact_index._LARGE, fact_index.JOIN_CHARS
    fact_index._MANY, fact_index._GROUPED, fact_index._LARGE, fact_index.JOIN_CHARS = \
        data.draw(st.sampled_from([(1, 1, 1, 5), (1, 1, 1, 10**6), (1, 1, 10**6, 1), saved]))
    try:
        _check_fact_index(texts, data)
    finally:
        (fact_index._MANY, fact_index._GROUPED, fact_index._LARGE,
         fact_index.JOIN_CHARS) = saved


def _check_fact_index(texts: list[str], data: st.DataObject) -> None:
    index = FactIndex(exclude=["é😀"])
    for _turn in range(data.draw(st.integers(1, 4))):
        new = data.draw(st.lists(FACTS, max_size=6))
        lazy = data.draw(st.lists(FACTS, max_size=2))
        ids = index.ids(new)
        lazy_ids = index.ids(lazy, lazy=True)
        eager = set(index._eager)
        for _prompt in range(data.draw(st.integers(1, 3))):
            prompt = data.draw(st.lists(st.sampled_from(texts), max_size=len(texts) + 2))
            searched = [t.replace("é😀", "\x00") for t in prompt]

            def plain(i: int, searched: list[str] = searched) -> bool:
                return any(fact_present(index.facts[i], t) for t in searched)

            assert index.shown(prompt) == {i for i in eager if plain(i)}
            index.track(ids)
            tracked = index.shown_tracked(prompt)
            assert {i for i in index._tracked if i in tracked} == \
                {i for i in index._tracked if plain(i)}
            # a strategy's prompt: texts the reference never had, or not searched yet
            other = data.draw(st.lists(st.sampled_from([*texts, "x"]), max_size=12))
            in_other = [t.replace("é😀", "\x00") for t in other]
            tracked = index.shown_tracked(other)
            assert {i for i in index._tracked if i in tracked} == \
                {i for i in index._tracked if plain(i, in_other)}
            asked = [*lazy_ids, *ids]
            assert index.shows(prompt, asked) == {i for i in asked if plain(i)}


def test_fact_index_keeps_a_turn_longer_than_a_generation(monkeypatch):
    """A turn's texts longer than TEXT_CHARS are still known on the next turn: each
    (text, fact) is searched once (a generation started within a turn had made a long
    run's every text searched again on every turn), and the answers stay the same."""
    monkeypatch.setattr(fact_index, "TEXT_CHARS", 10)
    searched: list[str] = []
    real = fact_index.fact_present

    def counting(fact, text, *args, **kwargs):
        searched.append(text)
        return real(fact, text, *args, **kwargs)

    monkeypatch.setattr(fact_index, "fact_present", counting)
    index = FactIndex()
    ids = index.ids([Fact("name", "alpha"), Fact("name", "beta")])
    texts = [f"alpha text {k}" for k in range(4)]  # 4 x 12 chars: past the generation
    answers = []
    for turn in range(3):
        index.next_turn()
        answers.append(index.shown(texts[: turn + 2]))
    assert answers == [{ids[0]}] * 3
    assert sorted(searched) == sorted(texts)  # each text once, for the fact it shows



# the identifiers' patterns as first written (a lookbehind first: tried everywhere)
_NAME_AS_WRITTEN = re.compile(r"(?<![\w\-])[A-Za-z_][\w]*(?:[\-.][A-Za-z_][\w]*)*[?!]?")
_NUMBER_AS_WRITTEN = re.compile(r"(?<![\w.])\d{3,}(?![\w])")


@pytest.mark.parametrize(("sizes", "limit", "spans"), [
    ([], 10, []), ([3], 1, [(0, 1)]), ([3, 3, 3], 8, [(0, 2), (2, 3)]),
    ([20, 1, 1], 5, [(0, 1), (1, 3)]), ([1, 1, 1], 100, [(0, 3)])])
def test_texts_are_joined_a_bounded_number_of_characters_at_a_time(sizes, limit, spans):
    """_scan_texts joins a prompt's texts JOIN_CHARS at a time (with the NUL between
    them): a long run's prompt joined whole was a copy of all its text at once."""
    assert fact_index._spans(["x" * n for n in sizes], limit) == spans


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="aZ_19-.?! é٣\n", max_size=16))
def test_identifier_patterns_match_as_first_written(text):
    """The name and number patterns start with a character class (the lookbehind after
    it), so the regex engine skips to where a match can start: the same matches."""
    assert needed_facts._NAME.findall(text) == _NAME_AS_WRITTEN.findall(text)
    assert needed_facts._NUMBER.findall(text) == _NUMBER_AS_WRITTEN.findall(text)

"""Work ``compare`` no longer repeats (issue 20 item 4: at most 8x the floor), each
checked to give exactly what the repeated work gives: a prompt with the baseline's
texts is counted and searched as the baseline's, a text already searched for every
fact is not filtered again for the tracked ones, and a needed fact's first occurrence
is found by one search of the run's text."""

from __future__ import annotations

import random

import pytest
from retention_helpers import joined_first

from turnpress.compare import compare_traces
from turnpress.compare.fact_index import FactIndex
from turnpress.compare.needed_facts import NeededFacts
from turnpress.compare.retention import Fact
from turnpress.examples import example_trace_paths


class _CountingDict(dict):
    """A dict that counts its ``get`` calls."""

    calls = 0

    def get(self, *args):
        type(self).calls += 1
        return super().get(*args)


def test_texts_searched_for_every_fact_are_not_filtered_again_for_the_tracked_ones():
    facts = [Fact("tool call", "bash", ("ls src",)), Fact("name", "parser_utils.py"),
             Fact("printed line", "42"), Fact("tool call", "grep", ("x",))]
    texts = ["bash ls src", "parser_utils.py 42", "grep(x)", "nothing here"]
    index = FactIndex()
    ids = index.ids(facts)
    shown = index.shown(texts)  # the reference prompt: every text searched for every fact
    index.track(ids)
    index._eager_at = _CountingDict(index._eager_at)
    _CountingDict.calls = 0
    assert index.shown_tracked(texts) == shown
    assert _CountingDict.calls == 0
    # a text the reference did not show is still searched for the tracked facts
    assert index.shown_tracked(["grep(x) and 42"]) == {ids[2], ids[3]}


def _copying_history():
    from turnpress.plugins.full_history import FullHistory

    class CopyingHistory(FullHistory):
        """full-history under another name, handing out new dicts (the same texts)."""

        name = "copying-history"

        def to_messages(self, turns, memory, ctx):
            return [dict(m) for m in super().to_messages(turns, memory, ctx)]

    return CopyingHistory


@pytest.mark.parametrize("cache", ["openai", "anthropic"])
def test_a_prompt_with_the_baselines_texts_is_counted_and_searched_as_the_baselines(
        fresh_registry, monkeypatch, cache):
    from turnpress import hookimpl
    from turnpress.compare.fact_index import FactIndex as Index
    from turnpress.core.registry import get_registry
    from turnpress.core.tokens import TokenCounter

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(_copying_history())

    get_registry().register(Plugin(), "copying-plugin")
    path = next(p for p in example_trace_paths() if p.stem == "phone-campaign")
    searched, counted = [], []
    real_search, real_count = Index.shown_tracked, TokenCounter.tokenize
    monkeypatch.setattr(Index, "shown_tracked",
                        lambda self, bodies: searched.append(1) or real_search(self, bodies))
    monkeypatch.setattr(TokenCounter, "tokenize",
                        lambda self, *a, **k: counted.append(1) or real_count(self, *a, **k))
    result = compare_traces(path, ["copying-history", "full-history"], cache=cache)
    copying, full = result.strategy("copying-history"), result.strategy("full-history")
    assert list(copying.rows()) == list(full.rows())
    assert [s[1:] for s in copying.per_turn()] == [s[1:] for s in full.per_turn()]
    assert copying.prompts == full.prompts > 2
    assert searched == []  # the baseline's answers, not a search of the same texts
    assert len(counted) == full.prompts  # the baseline's prompts only


def test_needed_facts_find_the_part_of_the_first_occurrence():
    rng = random.Random(7)
    words = ["src/app.py", "parse_line", "404", "x", "\x00", "'quoted text'", "\n", "abc"]
    for _ in range(30):
        head = "".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
        turns = [("".join(rng.choice(words) for _ in range(rng.randint(0, 5))),
                  "".join(rng.choice(words) for _ in range(rng.randint(0, 5))))
                 for _ in range(rng.randint(0, 6))]
        facts = NeededFacts(head, turns)
        parts = [head, *(p for pair in turns for p in pair)]
        kinds = ["head", *(k for n in range(1, len(turns) + 1)
                           for k in (("assistant", n), ("feedback", n)))]
        for ident in [*words, "app.py\x00", "\x00parse", "404\x00x", "abcabc", "nowhere"]:
            assert facts._find(ident) == joined_first(parts, kinds, ident), (ident, parts)


def test_paths_are_found_as_by_the_pattern_tried_at_every_position():
    """The path pattern is tried only where a run of path characters starts: the same
    identifiers as the pattern tried everywhere (which retries every position of a
    long word), on texts made to tell them apart."""
    import re

    from turnpress.compare import needed_facts

    rest = needed_facts._PATH.pattern.split("|", 1)[1]
    everywhere = re.compile(r"(?:[\w.\-]*/)+[\w.\-]+|" + rest)
    assert everywhere.pattern != needed_facts._PATH.pattern
    rng = random.Random(3)
    pieces = ["a", "/", ".py", "-", "_", " ", ".", "x.json", "\u00e9", "//", "1", "src",
              "\n", "'", "setup.cfg.bak", "./", "-/"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 20)))
        assert needed_facts._PATH.findall(text) == everywhere.findall(text), text
        assert needed_facts.identifiers(text) == list(dict.fromkeys(
            f for f in _identifiers_with(everywhere, text) if len(f) >= 3))


def _identifiers_with(path, text):
    from turnpress.compare import needed_facts

    found = [p.strip(".") for p in path.findall(text)]
    found.extend([w for w in needed_facts._NAME.findall(text) if len(w) >= 4 and not (
        w.isalpha() and (w.islower() or w.isupper())) and needed_facts._is_name(w)])
    found.extend(needed_facts._NUMBER.findall(text))
    found.extend([(a or b).strip() for a, b in needed_facts._QUOTED.findall(text)])
    return found

"""Mission placeholders (spec 03 MissionExpander) and program extraction."""

from __future__ import annotations

import pytest

from turnpress.agent import expand_mission, extract_program
from turnpress.agent.mission import placeholders
from turnpress.core.model import Keyword


def test_placeholders_are_filled_from_data():
    mission = "Find {{ category }} products under {{max_price}} for {{user.name}}"
    data = {"category": "Electronics", "max_price": 500, "user": {"name": "Ann"}}
    assert expand_mission(mission, data) == "Find Electronics products under 500 for Ann"


def test_non_string_values_are_rendered_as_clojure():
    data = {"ids": [1, 2], "opts": {"fast": True}, "none": None, "kw": Keyword("a")}
    assert expand_mission("{{ids}} {{opts}} {{none}} {{kw}}", data) == (
        "[1 2] {:fast true} nil :a")


def test_keyword_keys_are_found_by_name():
    assert expand_mission("{{who.name}}", {"who": {Keyword("name"): "Bo"}}) == "Bo"


def test_mission_without_placeholders_is_unchanged():
    text = "Sum {the} numbers {x} and {{ }} stay"
    assert expand_mission(text, {}) == text


def test_missing_placeholder_names_it_and_the_data_keys():
    with pytest.raises(ValueError) as err:
        expand_mission("Find {{categry}} products", {"category": "x", "limit": 3})
    message = str(err.value)
    assert "{{categry}}" in message
    assert "data keys: category, limit" in message


def test_missing_placeholder_with_no_data():
    with pytest.raises(ValueError, match=r"\{\{topic\}\}.*data keys: \(none\)"):
        expand_mission("About {{topic}}", None)


def test_missing_nested_placeholder():
    with pytest.raises(ValueError, match=r"\{\{user\.email\}\}"):
        expand_mission("Mail {{user.email}}", {"user": {"name": "Ann"}})


def test_placeholders_in_order_without_repeats():
    assert placeholders("{{b}} {{a}} {{ b }} {{c.d}}") == ["b", "a", "c.d"]


@pytest.mark.parametrize(("reply", "program"), [
    ("Sure:\n```clojure\n(+ 1 2)\n```\nDone.", "(+ 1 2)"),
    ("```lisp\n(a)\n```", "(a)"),
    ("```clj\n(a)\n```", "(a)"),
    ("```\n(plain)\n```", "(plain)"),
    ("(just code)\n", "(just code)"),
    ("```python\nx = 1\n```\n```clojure\n(y)\n```", "(y)"),
    ("```\n(untagged)\n```\n```clojure\n(tagged)\n```", "(tagged)"),
    ("```clojure\n(first)\n```\n```clojure\n(second)\n```", "(first)"),
    ("I will:\n```clojure\n(cut off", "(cut off"),
    ('```clojure\n(def s "```")\n(x)\n```', '(def s "```")\n(x)'),
])
def test_extract_program(reply, program):
    assert extract_program(reply) == program

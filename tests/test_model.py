"""The core model: immutable turns, tool calls, failures, keywords, functions, tools."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from turnpress import Failure, Fn, Keyword, Memory, Tool, ToolCall, Turn
from turnpress.core.model import coerce_tools


def test_arc_001_turn_fields() -> None:
    """ARC-001 / DBG-002: a Turn records number, program, result, prints, tool_calls,
    memory, success (and raw_response)."""
    turn = Turn.succeeded(1, "(def x 1)", 1, memory={"x": 1}, prints=["hi"],
                          tool_calls=[ToolCall("t", (1,), None)], raw_response="```x```")
    assert [f.name for f in dataclasses.fields(Turn)] == [
        "number", "program", "result", "prints", "tool_calls", "memory", "success",
        "raw_response", "messages", "usage"]
    assert (turn.number, turn.program, turn.result, turn.success) == (1, "(def x 1)", 1, True)
    assert turn.prints == ("hi",) and turn.tool_calls == (ToolCall("t", (1,)),)
    assert turn.raw_response == "```x```"
    assert turn.messages == () and turn.usage is None  # a PTC-Lisp turn: nothing imported


def test_arc_002_turns_are_immutable_and_lists_become_tuples() -> None:
    """ARC-002: a turn never changes once made; lists passed in are stored as tuples and
    memory is a read-only copy."""
    memory = {"x": [1, 2]}
    prints = ["a"]
    turn = Turn.succeeded(1, "p", None, memory=memory, prints=prints)
    memory["y"] = 2
    prints.append("b")
    assert dict(turn.memory) == {"x": [1, 2]}
    assert turn.prints == ("a",)
    with pytest.raises(dataclasses.FrozenInstanceError):
        turn.number = 2  # type: ignore[misc]
    with pytest.raises(TypeError):
        turn.memory["z"] = 1  # type: ignore[index]
    assert isinstance(ToolCall("t", [1, 2]).args, tuple)


def test_raw_response_defaults_to_program() -> None:
    assert Turn.succeeded(1, "(+ 1 2)", 3, memory={}).raw_response == "(+ 1 2)"
    failed = Turn.failed(1, "(x)", Failure("undefined_symbol", "undefined symbol 'x'"),
                         memory={})
    assert failed.raw_response == "(x)" and failed.error.message == "undefined symbol 'x'"
    assert not failed.success and failed.result == failed.error


def test_failed_turn_needs_a_failure() -> None:
    with pytest.raises(TypeError, match="Failure"):
        Turn.failed(1, "p", "boom", memory={})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Turn\.failed"):
        Turn(1, "p", "boom", (), (), {}, False, "p")


def test_turns_pickle_and_compare_equal() -> None:
    memory = Memory({"f": Fn(("x",), "doc", "integer"), "k": Keyword("a")},
                    docs={"k": "a keyword"})
    turn = Turn.succeeded(1, "p", {Keyword("a"): 1}, memory=memory)
    clone = pickle.loads(pickle.dumps(turn))
    assert clone == turn
    assert clone.memory.docs == {"k": "a keyword"}


def test_keyword_equality_and_text() -> None:
    assert Keyword("a") == Keyword("a") and hash(Keyword("a")) == hash(Keyword("a"))
    assert Keyword("a") != "a" and Keyword(":a") == Keyword("a")
    assert str(Keyword("active")) == ":active"
    assert len({Keyword("a"), Keyword("a"), Keyword("b")}) == 2


def test_fn_params_are_a_tuple() -> None:
    fn = Fn(["a", "b"], doc="Adds", return_type="integer")
    assert fn.params == ("a", "b") and fn.doc == "Adds" and fn.return_type == "integer"
    assert Fn(("x",)) == Fn(("x",), None, None)


def test_tool_from_function_reads_hints_and_docstring() -> None:
    def search_products(query: str, limit: int = 10, *, exact: bool = False) -> list[dict]:
        """Search products.

        Longer text that is not part of the description.
        """
        return []

    tool = Tool.from_function(search_products)
    assert tool.name == "search-products"
    assert dict(tool.params) == {"query": "string", "limit": "integer", "exact": "boolean"}
    assert tool.returns == "list" and tool.description == "Search products."
    assert tool.fn is search_products


def test_tool_from_function_without_hints() -> None:
    def get_inventory():
        return "x"

    tool = Tool.from_function(get_inventory)
    assert (tool.name, dict(tool.params), tool.returns, tool.description) == (
        "get-inventory", {}, "any", "")


def test_coerce_tools_accepts_tools_callables_and_schemas() -> None:
    def lookup(key: str) -> Any:
        """Look up."""

    schema = {"description": "Search", "parameters": {"properties": {
        "query": {"type": "string"}, "limit": {"type": "integer"},
        "tags": {"type": "array"}, "score": {"type": ["number", "null"]}}}}
    tools = coerce_tools({"lookup": lookup, "search": schema,
                          "inv": Tool("other-name", {}, "string", "Inventory")})
    assert tools["lookup"].name == "lookup" and dict(tools["lookup"].params) == {
        "key": "string"}
    assert dict(tools["search"].params) == {"query": "string", "limit": "integer",
                                            "tags": "list", "score": "float"}
    assert tools["inv"].name == "inv"
    with pytest.raises(TypeError, match="tool 'bad'"):
        coerce_tools({"bad": 42})


def test_coerce_tools_uses_as_tool() -> None:
    class Child:
        def as_tool(self, name: str) -> Tool:
            return Tool(name, {"task": "string"}, "any", "A child agent")

    assert coerce_tools({"helper": Child()})["helper"].description == "A child agent"

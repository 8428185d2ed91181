"""Hypothesis strategies for random turn histories (for property tests of strategies).

``histories()`` draws a whole run: mission, tools, data, ``max_turns`` and a list
of turns whose memory evolves from turn to turn the way an agent's REPL does
(names are added or redefined, never removed). Turns fail now and then, print
single- and multi-line text, call tools, and answer with raw responses that may or
may not carry prose, a code fence or a ``recap -`` line.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from turnpress import Failure, Fn, Keyword, Memory, Tool, ToolCall, Turn, render
from turnpress.core.model import Message

NAMES = ("x", "users", "total", "ids", "report", "helper", "fetch-all", "rows", "flag")
TOOL_NAMES = ("search", "get-inventory", "send-email", "lookup")
LABELS = ("string", "integer", "list", "map", "nil", "boolean")

short_text = st.text(alphabet=string.ascii_letters + string.digits + " ;:\"'-_.,()[]{}",
                     max_size=40)
line_text = st.text(alphabet=string.ascii_letters + string.digits + " \n;:\"-.", max_size=60)
keywords = st.builds(Keyword, st.sampled_from(("a", "name", "id", "price", "status")))

scalars = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
           | st.floats(allow_nan=False, allow_infinity=False, width=32)
           | short_text | keywords)

values = st.recursive(
    scalars,
    lambda children: (st.lists(children, max_size=5)
                      | st.dictionaries(st.sampled_from(("a", "b", "name")) | keywords,
                                        children, max_size=4)
                      | st.frozensets(st.integers(0, 50) | keywords, max_size=4)),
    max_leaves=12,
)

functions = st.builds(
    Fn,
    params=st.lists(st.sampled_from(("x", "y", "items", "n")), max_size=3,
                    unique=True).map(tuple),
    doc=st.none() | short_text,
    return_type=st.none() | st.sampled_from(LABELS),
)

tool_calls = st.builds(ToolCall, name=st.sampled_from(TOOL_NAMES),
                       args=st.lists(values, max_size=3).map(tuple), result=values)

programs = st.lists(st.sampled_from(("(def x 1)", "(println x)", ")", "(tool/search \"q\")",
                                     "(defn helper [x] (* 2 x))", "", "  (map inc xs)")),
                    min_size=1, max_size=30).map("\n".join)

tools = st.dictionaries(
    st.sampled_from(TOOL_NAMES),
    st.builds(lambda params, returns, desc: (params, returns, desc),
              st.dictionaries(st.sampled_from(("query", "limit", "to")),
                              st.sampled_from(LABELS), max_size=2),
              st.sampled_from(LABELS), short_text),
    max_size=3,
).map(lambda d: {name: Tool(name, p, r, desc) for name, (p, r, desc) in d.items()})


@st.composite
def raw_responses(draw: st.DrawFn, program: str) -> str:
    """What the LLM answered for ``program``: bare code, or prose + a fence, maybe with
    a ``recap -`` line."""
    shape = draw(st.sampled_from(("bare", "fenced", "recap", "recap-indented")))
    if shape == "bare":
        return program
    prose = draw(short_text)
    fenced = f"{prose}\n\n```clojure\n{program}\n```"
    if shape == "fenced":
        return fenced
    recap = "recap - " + draw(short_text)
    if shape == "recap-indented":
        recap = "   " + recap
    return f"{fenced}\n{recap}\n"


@dataclass(frozen=True)
class History:
    """A random run: what ``render`` needs, and the turns so far."""

    turns: tuple[Turn, ...]
    mission: str
    tools: dict[str, Tool]
    data: dict[str, Any]
    max_turns: int
    system_prompt: str = "You are a PTC-Lisp agent."

    def kwargs(self, n_turns: int) -> dict[str, Any]:
        """``render`` keyword arguments for the prompt after ``n_turns`` turns."""
        return {"mission": self.mission, "system_prompt": self.system_prompt,
                "tools": self.tools, "data": self.data,
                "turns_left": self.max_turns - n_turns}

    def prompt(self, n: int, compression: Any) -> list[Message]:
        """The prompt for turn ``n`` (1-based): rendered from the first n-1 turns."""
        return render(self.turns[: n - 1], compression=compression, **self.kwargs(n - 1))


@st.composite
def turn_lists(draw: st.DrawFn, min_turns: int = 0, max_turns: int = 8) -> tuple[Turn, ...]:
    """Turns 1..n with an evolving memory (names added or redefined, docstrings on some)."""
    n = draw(st.integers(min_turns, max_turns))
    memory: dict[str, Any] = {}
    docs: dict[str, str] = {}
    turns = []
    for number in range(1, n + 1):
        for name in draw(st.lists(st.sampled_from(NAMES), max_size=3)):
            memory[name] = draw(functions if name in ("helper", "fetch-all") else values)
            if draw(st.booleans()):
                docs[name] = draw(short_text)
        program = draw(programs)
        kwargs = {
            "memory": Memory(dict(memory), docs=dict(docs)),
            "prints": draw(st.lists(line_text, max_size=5)),
            "tool_calls": draw(st.lists(tool_calls, max_size=6)),
            "raw_response": draw(raw_responses(program)),
        }
        if draw(st.integers(0, 3)) == 0:
            failure = Failure(draw(st.sampled_from(("undefined_symbol", "tool_error"))),
                              draw(line_text.filter(str.strip)))
            turns.append(Turn.failed(number, program, failure, **kwargs))
        else:
            turns.append(Turn.succeeded(number, program, draw(values), **kwargs))
    return tuple(turns)


@st.composite
def histories(draw: st.DrawFn, min_turns: int = 0, max_turns: int = 8) -> History:
    """A random run of ``min_turns``..``max_turns`` turns (see the module docstring)."""
    turns = draw(turn_lists(min_turns, max_turns))
    return History(
        turns=turns,
        mission=draw(short_text.filter(str.strip)),
        tools=draw(tools),
        data=draw(st.dictionaries(st.sampled_from(("products", "config", "limit")), values,
                                  max_size=3)),
        max_turns=len(turns) + draw(st.integers(1, 5)),
    )


# -- helpers for the property tests ---------------------------------------------------


def size(messages: list[Message]) -> int:
    """The characters of all message contents."""
    return sum(len(m["content"]) for m in messages)


def is_prefix(shorter: list[Message], longer: list[Message]) -> bool:
    """Whether ``shorter`` is an exact prefix of ``longer``, message for message."""
    return len(shorter) <= len(longer) and longer[: len(shorter)] == shorter


def breakpoints_hold(history: History, n_turns: int, compression: Any, *,
                     end_may_move: bool = False) -> bool:
    """Whether every cache breakpoint the strategy reports for the prompt after
    ``n_turns`` turns is repeated byte for byte by the prompt after ``n_turns + 1``.

    ``end_may_move``: a stepped strategy also marks the end of every prompt (where a
    client puts its last ``cache_control``, to read what the previous prompt cached);
    on the turn before its boundary moves the next prompt does not repeat that one
    marker, which is allowed (the strategy's append-only test covers the steps)."""
    from turnpress.core.compression import RenderContext, get_strategy
    from turnpress.core.model import coerce_tools

    strategy = get_strategy(compression)
    turns = history.turns[:n_turns]
    kwargs = history.kwargs(n_turns)
    ctx = RenderContext(mission=kwargs["mission"], system_prompt=kwargs["system_prompt"],
                        tools=coerce_tools(kwargs["tools"]), data=kwargs["data"],
                        turns_left=kwargs["turns_left"])
    memory = turns[-1].memory if turns else {}
    now = render(turns, compression=compression, **kwargs)
    later = render(history.turns[: n_turns + 1], compression=compression,
                   **history.kwargs(n_turns + 1))
    for index, offset in strategy.cache_breakpoints(turns, memory, ctx):
        if end_may_move and (index, offset) == (len(now) - 1, None):
            continue
        if now[:index] != later[:index] or index >= len(now):
            return False
        head = now[index]["content"] if offset is None else now[index]["content"][:offset]
        if later[index]["role"] != now[index]["role"] or not later[index]["content"].startswith(
                head):
            return False
        if offset is None and later[index] != now[index]:
            return False
    return True

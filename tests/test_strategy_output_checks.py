"""A (plugin) strategy's output is checked the same way on every path (ARC-003: the
strategy interface, ``to_messages`` and its optional ``cache_breakpoints``, is a contract
turnpress checks, docs/plugins.md; DESIGN §7, §10 and §11).

- Messages (``check_messages``): list content is a list of content parts the provider
  shapes convert (each a dict with a ``type`` string; a ``text`` part has a string
  ``text``, an ``image_url`` part ``{"url": str}``; no Anthropic blocks), a ``tool``
  message has a string ``tool_call_id``, and only an assistant message with
  ``tool_calls`` has no content. Anything else is one ``TypeError`` naming the strategy,
  its plugin, the message's index and what is wrong: from ``render()`` and
  ``compress()`` in every format, one ``Error:`` line from ``turnpress render`` in every
  format, and a ``failed`` strategy in ``turnpress compare``, which compares the rest.
- Cache breakpoints: an index out of the prompt's range is the same ``BreakpointError``
  in ``render -f anthropic``, ``compress(format="anthropic")``, ``anthropic_breakpoints``
  / ``to_anthropic`` and ``compare --cache anthropic`` (which dropped it silently and
  counted the strategy as never cached).

Every bad output comes from a strategy that a plugin registers in a fresh registry.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from turnpress import Compressor, Strategy, compress, hookimpl, render
from turnpress.cli import main
from turnpress.compare import compare_traces
from turnpress.core.breakpoints import BreakpointError
from turnpress.core.compression import check_messages, render_with_breakpoints, strategy_names
from turnpress.core.providers import anthropic_breakpoints, to_anthropic, to_openai
from turnpress.core.registry import get_registry
from turnpress.core.responses import to_responses
from turnpress.examples import example_trace_paths

PHONE = next(p for p in example_trace_paths() if p.stem == "phone-campaign")

CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}

#: name -> (the messages after the system message, the bad one's index, what is wrong)
BAD_OUTPUTS: dict[str, tuple[list[dict[str, Any]], int, str]] = {
    "int-parts": ([{"role": "user", "content": [1, 2]}], 1,
                  "content part 0 1 is not a dict but int"),
    "textless-part": ([{"role": "user", "content": [{"type": "text"}]}], 1,
                      "content part 0 {'type': 'text'} is a 'text' part without a string "
                      "'text'"),
    "untyped-part": ([{"role": "user", "content": [{"text": "hi"}]}], 1,
                     "has no 'type' string"),
    "string-image": ([{"role": "user", "content": [
        {"type": "image_url", "image_url": "https://example.com/a.png"}]}], 1,
        "is an 'image_url' part without 'image_url': {'url': str}"),
    "anthropic-block": ([{"role": "user", "content": "go"}, {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]}], 2,
        "is an Anthropic 'tool_use' block; messages are in the OpenAI chat shape"),
    "bare-tool": ([{"role": "user", "content": "go"},
                   {"role": "assistant", "content": None, "tool_calls": [CALL]},
                   {"role": "tool", "content": "a.txt"}], 3,
                  "a 'tool' message needs a string 'tool_call_id'"),
    "user-calls": ([{"role": "user", "content": None, "tool_calls": [CALL]}], 1,
                   "'content' is None, which only an assistant message with 'tool_calls'"),
}


def _bad_strategy(name: str, tail: list[dict[str, Any]]) -> type:
    class Bad(Strategy):
        def to_messages(self, turns, memory, ctx):
            return [ctx.message("system", "You are an agent."), *[dict(m) for m in tail]]

    Bad.name = name
    return Bad


class FarBreakpoints(Strategy):
    """Two messages, and a cache breakpoint at message ``index`` (option)."""

    name = "far-breakpoints"

    def __init__(self, *, index: int = 0):
        self.index = self.check_int("index", index, minimum=-10)

    def to_messages(self, turns, memory, ctx):
        return [ctx.message("system", "You are an agent."), ctx.message("user", ctx.mission)]

    def cache_breakpoints(self, turns, memory, ctx):
        return [(self.index, None)]


def _plugin(cls: type, plugin: str) -> None:
    class Plugin:
        @hookimpl
        def register_strategies(self, register: Callable[[type], None]) -> None:
            register(cls)

    get_registry().register(Plugin(), plugin)


def _named(name: str) -> str:
    """How the errors name a strategy of this module's plugins."""
    return f"strategy '{name}' of plugin '{name}-plugin'"


CHAT = [{"role": "user", "content": "List the files."},
        {"role": "assistant", "content": "Sure."},
        {"role": "user", "content": "And now?"}]


def _compress(name: str, fmt: str) -> Any:
    source: Any = {"system": "S", "messages": CHAT} if fmt == "anthropic" else CHAT
    return compress(source, strategy=name, format=fmt)


def run(*args: str):
    return CliRunner().invoke(main, list(args))


# -- bad messages -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BAD_OUTPUTS))
def test_render_and_compress_name_the_strategy_its_plugin_and_the_problem(
        fresh_registry, name: str) -> None:
    """ARC-003: render() and compress() in every format raise one TypeError naming the
    strategy, its plugin, the bad message's index and what is wrong with it (compress
    with format="anthropic" raised a ValueError or KeyError naming neither, and the
    openai and responses formats passed the content on)."""
    tail, index, problem = BAD_OUTPUTS[name]
    _plugin(_bad_strategy(name, tail), f"{name}-plugin")
    expected = (f"{_named(name)} (distribution (registered in code)) returned a bad "
                f"message at index {index}: ")
    with pytest.raises(TypeError) as info:
        render([], mission="m", turns_left=2, compression=name)
    assert str(info.value).startswith(expected) and problem in str(info.value)
    assert "\n" not in str(info.value)
    for fmt in ("openai", "anthropic", "responses"):
        with pytest.raises(TypeError) as info:
            _compress(name, fmt)
        assert str(info.value).startswith(expected), fmt
        assert problem in str(info.value), fmt


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "responses", "json", "text"])
@pytest.mark.parametrize("name", sorted(BAD_OUTPUTS))
def test_turnpress_render_prints_one_error_line(fresh_registry, name: str, fmt: str) -> None:
    """`turnpress render -f FMT` with such a strategy: one `Error:` line naming it and its
    plugin (was a bare traceback for anthropic, the bad content printed for the others)."""
    tail, index, problem = BAD_OUTPUTS[name]
    _plugin(_bad_strategy(name, tail), f"{name}-plugin")
    out = run("render", str(PHONE), "-s", name, "-f", fmt, "--turn", "2")
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output and out.output.count("\n") == 1, out.output
    assert out.output.startswith(f"Error: {_named(name)}"), out.output
    assert f"bad message at index {index}: " in out.output and problem in out.output
    # the strategy and its plugin are named once ("failed: TypeError: strategy ... of
    # plugin ..." named them twice)
    assert out.output.count(f"{name}-plugin") == 1, out.output


def test_compare_lists_each_bad_strategy_as_failed_and_compares_the_rest(fresh_registry):
    """`turnpress compare` (every strategy, a bundled trace): each plugin strategy with a
    bad output is listed as failed with the reason, every built-in is compared, exit 0
    (they were compared, their bad content counted as if it were text)."""
    for name, (tail, _, _) in BAD_OUTPUTS.items():
        _plugin(_bad_strategy(name, tail), f"{name}-plugin")
    out = run("compare", str(PHONE), "--cache", "anthropic", "--tokenizer", "chars4")
    assert out.exit_code == 0 and "Traceback" not in out.output, out.output
    for name, (_, index, problem) in BAD_OUTPUTS.items():
        [line] = [ln for ln in out.output.splitlines() if ln.startswith(f"{name}: failed: ")]
        assert f"{_named(name)} (distribution (registered in code)) failed on trace " \
               f"phone-campaign, turn 1: TypeError: " in line
        assert f"bad message at index {index}: " in line and problem in line
        assert line.count(f"{name}-plugin") == 1, line
    doc = json.loads(run("compare", str(PHONE), "--tokenizer", "chars4", "--json").output)
    assert {s["name"] for s in doc["strategies"]} == set(strategy_names()) - set(BAD_OUTPUTS)
    assert sorted((s["strategy"], s["status"]) for s in doc["not_compared"]) == [
        (name, "failed") for name in sorted(BAD_OUTPUTS)]


# -- what is accepted: exactly what the provider shapes convert -------------------------------


IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
AUDIO = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
FILE = {"type": "file", "file": {"file_id": "file-1"}}

#: messages of imported transcripts (DESIGN §10), as the readers give them to strategies
GOOD = [
    {"role": "developer", "content": "Be terse."},
    {"role": "user", "content": [{"type": "text", "text": "What is this?"}, IMAGE]},
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b",
                                                                  "cache_control": {}}]},
    {"role": "user", "content": []},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "assistant", "tool_calls": [CALL]},  # no content at all, as OpenAI allows
    {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "ok"}],
     "_anthropic": {"is_error": False}},
]
#: parts an OpenAI chat / Responses transcript carries, which the Anthropic shape has not
OPENAI_ONLY = [
    {"role": "user", "content": [AUDIO]},
    {"role": "user", "content": [FILE]},
    {"role": "user", "content": [{"type": "input_file", "file_id": "file-1"}]},
]
BAD = [m for tail, index, _ in BAD_OUTPUTS.values() for m in tail[index - 1:index]] + [
    {"role": "tool", "tool_call_id": 7, "content": "x"},
    {"role": "tool", "tool_call_id": "c1", "content": None},
    {"role": "assistant", "content": None, "tool_calls": []},
    {"role": "assistant", "content": [{"type": ""}]},
    {"role": "user", "content": [{"type": ["text"], "text": "x"}]},
    {"role": "user", "content": [{"type": "image_url", "image_url": {"uri": "x"}}]},
    {"role": "user", "content": [{"type": "text", "text": "x"}, "y"]},
    {"role": "user", "content": ({"type": "text", "text": "x"},)},
    {"role": "function", "content": "x"},
]


def _verdict(messages: list[Any]) -> bool:
    strategy = type("S", (), {"name": "s"})()
    try:
        check_messages(messages, strategy)
    except TypeError:
        return False
    return True


def test_check_messages_accepts_exactly_what_the_provider_shapes_convert() -> None:
    """ARC-003: what check_messages accepts, the OpenAI, Responses and Anthropic shapes
    convert (a part only OpenAI has, like audio, is refused by to_anthropic by name);
    the rest is refused, by the fast path (dicts) as by the message-by-message one."""
    head = {"role": "system", "content": "S"}
    for m in GOOD + OPENAI_ONLY:
        assert _verdict([head, m]) and _verdict([MappingProxyType(m)]), m
    prompt = [head, {"role": "user", "content": "go"}, *GOOD[2:]]
    assert check_messages(prompt, type("S", (), {"name": "s"})()) is prompt
    assert to_openai(prompt) and to_responses(prompt)
    system, out = to_anthropic([head, *GOOD[1:]], [(1, None), (7, None)])
    assert system == "S" and out[-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    for m in OPENAI_ONLY:
        assert to_openai([m]) == [m] and to_responses([m])
        with pytest.raises(ValueError, match=r"^message 0: content part type '\w+' has no "
                                             r"Anthropic block"):
            to_anthropic([m])
    # to_anthropic, given such a part directly (an integration's own messages), says so
    with pytest.raises(ValueError, match=r"^message 0: content part 1 \{'type': 'text'\} is "
                                         r"a 'text' part without a string 'text'$"):
        to_anthropic([{"role": "user", "content": [{"type": "text", "text": "a"},
                                                   {"type": "text"}]}])
    for m in BAD:
        assert not _verdict([head, m]), m
        assert not _verdict([head, MappingProxyType(m)]), m
        with pytest.raises(TypeError, match=r"bad message at index 1: .*: (content part \d+ "
                                            r"|'content' |role |a 'tool' |it has no)"):
            check_messages([head, m], type("S", (), {"name": "s"})())


_PART = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.sampled_from(["x", 1, None])}),
    st.fixed_dictionaries({"type": st.just("image_url"),
                           "image_url": st.sampled_from([{"url": "u"}, {"url": 2}, "u", {}])}),
    st.fixed_dictionaries({"type": st.sampled_from(["input_audio", "tool_use", "", 3])}),
    st.fixed_dictionaries({}, optional={"text": st.just("x")}),
    st.sampled_from([1, "text", None]),
)
_MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "developer", "user", "assistant", "tool", "robot"])},
    optional={"content": st.one_of(st.sampled_from(["text", None, 3]), st.lists(_PART,
                                                                                max_size=3)),
              "tool_calls": st.sampled_from([[CALL], []]),
              "tool_call_id": st.sampled_from(["c1", None])})


def _spec(m: dict[str, Any]) -> bool:
    """The rule of docs/plugins.md and check_messages, written out on its own."""
    role, content = m["role"], m.get("content")
    if role not in ("system", "developer", "user", "assistant", "tool"):
        return False
    if role == "tool" and not isinstance(m.get("tool_call_id"), str):
        return False
    if content is None:
        return role == "assistant" and bool(m.get("tool_calls"))
    if isinstance(content, str):
        return True
    if not isinstance(content, list):
        return False
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if not isinstance(kind, str) or not kind or kind == "tool_use":
            return False
        if kind == "text" and not isinstance(part.get("text"), str):
            return False
        if kind == "image_url" and not (isinstance(part.get("image_url"), dict)
                                        and isinstance(part["image_url"].get("url"), str)):
            return False
    return True


@given(st.lists(_MESSAGE, min_size=1, max_size=4))
def test_check_messages_follows_the_rule_on_any_message_list(messages) -> None:
    """ARC-003: the C-speed pass over a list of dicts and the message-by-message check
    (any other mapping) both accept a list exactly when each of its messages follows
    the rule."""
    expected = all(map(_spec, messages))
    assert _verdict(messages) == expected
    assert _verdict([MappingProxyType(m) for m in messages]) == expected


# -- cache breakpoints out of range -----------------------------------------------------------


@pytest.mark.parametrize("index", [5, 2, -1])
def test_out_of_range_breakpoints_are_the_same_error_everywhere(fresh_registry, index):
    """ARC-003: a cache breakpoint at a message the prompt does not have (2 messages) is
    one BreakpointError naming the strategy and its plugin in render_with_breakpoints,
    compress(format="anthropic") and `render -f anthropic`, and makes the strategy
    `failed` with that reason in `compare --cache anthropic`, which compares the rest
    (it dropped the breakpoint silently and reported the strategy as 0% cached)."""
    _plugin(FarBreakpoints, "far-breakpoints-plugin")
    spec = f"far-breakpoints:index={index}"
    problem = (f"item 0 ({index}, None): message index {index} is out of range (the prompt "
               f"has 2 messages, 0..1)")
    named = f"{_named('far-breakpoints')} (distribution (registered in code))"
    with pytest.raises(BreakpointError) as info:
        render_with_breakpoints([], mission="m", turns_left=2, compression=spec)
    assert str(info.value) == f"{named}: cache_breakpoints() returned a bad result: {problem}"
    with pytest.raises(BreakpointError, match=r"^strategy 'far-breakpoints' of plugin .*"
                                              + r"out of range"):
        _compress(spec, "anthropic")
    two = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    for convert in (anthropic_breakpoints, to_anthropic):
        with pytest.raises(BreakpointError) as info:
            convert(two, [(0, None), (index, None)])
        assert str(info.value) == f"cache breakpoints: {problem.replace('item 0', 'item 1')}"
    out = run("render", str(PHONE), "-s", spec, "-f", "anthropic")
    assert out.exit_code == 2 and out.output.count("\n") == 1, out.output
    assert out.output.startswith(f"Error: {named}: cache_breakpoints() returned a bad result")

    result = compare_traces(PHONE, [spec, "full-history", "aggressive"], cache="anthropic",
                            tokenizer="chars4")
    assert [s.label for s in result.compared] == ["full-history", "aggressive"]
    [(label, status, reason)] = result.not_compared
    assert (label, status) == (spec, "failed")
    assert reason == (f"{named}: cache_breakpoints() failed on trace phone-campaign, turn 1: "
                      f"BreakpointError: cache breakpoints: {problem}")
    out = run("compare", str(PHONE), "--cache", "anthropic", "--tokenizer", "chars4",
              "-s", spec, "-s", "full-history", "-s", "aggressive")
    assert out.exit_code == 0 and "Traceback" not in out.output, out.output
    assert f"{spec}: failed: {named}: cache_breakpoints() failed" in out.output
    assert f"{spec}: its prompts never reach a cached prefix" not in out.output
    assert any(ln.startswith("aggressive ") for ln in out.output.splitlines())


# -- a strategy that returns no message ------------------------------------------------------


class NoMessage(Strategy):
    """No message at all (and, with breakpoints=True, a cache breakpoint at message 0)."""

    name = "no-message"

    def __init__(self, *, breakpoints: bool = False):
        self.breakpoints = breakpoints

    def to_messages(self, turns, memory, ctx):
        return []

    def cache_breakpoints(self, turns, memory, ctx):
        return [(0, None)] if self.breakpoints else []


@pytest.mark.parametrize("spec", ["no-message", "no-message:breakpoints=true"])
def test_a_strategy_returning_no_message_is_the_same_error_everywhere(fresh_registry, spec):
    """A plugin strategy whose to_messages returns []: compare said "returned no message";
    `turnpress render` printed an empty prompt (exit 0), compress() returned [] (an empty
    request), and with a breakpoint at message 0 blamed cache_breakpoints. Now each path
    raises (or prints as one Error: line) the same error, checked before the breakpoints
    (Compressor at creation, from its probe render); compress() of no input message at
    all still returns []."""
    _plugin(NoMessage, "no-message-plugin")
    expected = (f"{_named('no-message')} (distribution (registered in code)) returned no "
                f"message; a prompt needs at least one")
    for fmt in ("anthropic", "openai", "responses", "json", "text"):
        out = run("render", str(PHONE), "-s", spec, "-f", fmt, "--turn", "2")
        assert out.exit_code == 2, (fmt, out.output)
        assert out.output == f"Error: {expected}\n", (fmt, out.output)
    for call in (lambda: render([], mission="m", turns_left=2, compression=spec),
                 lambda: render_with_breakpoints([], mission="m", turns_left=2,
                                                 compression=spec),
                 *[lambda fmt=fmt: _compress(spec, fmt)
                   for fmt in ("openai", "anthropic", "responses")]):
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value) == expected
    with pytest.raises(TypeError) as info:  # its probe render, as for a bad message
        Compressor(spec)
    assert str(info.value) == expected
    assert compress([], strategy=spec) == []  # no input message: nothing to render
    result = compare_traces(PHONE, [spec, "full-history"], cache="anthropic",
                            tokenizer="chars4")
    [(_, status, reason)] = result.not_compared
    assert status == "failed" and reason.endswith(
        "failed on trace phone-campaign, turn 1: TypeError: returned no message; a prompt "
        "needs at least one"), reason


# -- a message value JSON cannot hold ---------------------------------------------------------


class OddValue(Strategy):
    """A message with an extra key whose value is no JSON value."""

    name = "odd-value"

    def to_messages(self, turns, memory, ctx):
        return [ctx.message("system", "S"), {"role": "user", "content": "x", "foo": object()}]


WHY = {"text": "the text view shows a message's role, content and tool calls only",
       "openai": "it is no field of an OpenAI chat message",
       "anthropic": "an Anthropic Messages request has no place for it",
       "responses": "an OpenAI Responses request has no place for it"}


def test_a_message_value_json_cannot_hold_is_one_error_line(fresh_registry) -> None:
    """`turnpress render -f json` with a message holding an object(): one Error: line naming
    the strategy, its plugin, the message's index and the key (was a 16-frame traceback,
    "TypeError: Object of type object is not JSON serializable"); the other formats carry
    only the provider's fields, so they render."""
    _plugin(OddValue, "odd-value-plugin")
    out = run("render", str(PHONE), "-s", "odd-value", "-f", "json", "--turn", "2")
    assert out.exit_code == 2, out.output
    assert out.output == (
        f"Error: trace phone-campaign, turn 2, -f json: {_named('odd-value')} (distribution "
        f"(registered in code)) returned a message at index 1 whose key 'foo' holds an "
        f"object (Object of type object is not JSON serializable); a message's values must "
        f"be JSON values: str, int, float, bool, None, and lists and dicts of them\n")
    for fmt in ("openai", "anthropic", "responses", "text"):
        out = run("render", str(PHONE), "-s", "odd-value", "-f", fmt, "--turn", "2")
        assert out.exit_code == 0 and "foo" not in out.stdout, (fmt, out.output)
        # left out, with one warning line (no format keeps an object())
        assert out.stderr == (f"warning: -f {fmt} leaves out the message key 'foo' (1 "
                              f"message): {WHY[fmt]}; no format keeps it (its value is no "
                              f"JSON value)\n")

"""Strategies know the price (issue 18 item 1, DESIGN §11): ``compare --cache``,
``compress(cache=, price=)``, ``Compressor`` and ``Agent`` (from its LLM adapter) each
hand the strategy the right ``ctx.cache`` and ``ctx.price``, checked with a recording
strategy registered as a plugin; a strategy that says nothing about caching gets the
default breakpoints; the documented example of docs/plugins.md works."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "agent"))
from fake_openai import FakeLLMServer
from transcripts_helpers import data

from turnpress import Compressor, Strategy, compress, hookimpl, render
from turnpress.agent import Agent, Anthropic, OpenAICompatible, ScriptedLLM
from turnpress.compare import compare_traces
from turnpress.core.compression import render_with_breakpoints
from turnpress.core.pricing import PRICE_PRESETS, Price
from turnpress.core.registry import Registry, reset_registry
from turnpress.core.strategy import default_breakpoints

SEEN: list[tuple[str, Price]] = []


class Recording(Strategy):
    """Full history's messages, recording what each render was told it costs."""

    name = "recording"

    def to_messages(self, turns, memory, ctx):
        SEEN.append((ctx.cache.name, ctx.price))
        messages = [ctx.message("system", ctx.system_prompt), ctx.message("user", ctx.mission)]
        for pos, turn in enumerate(turns, 1):
            messages.append(ctx.message("assistant", turn.raw_response))
            messages.append(ctx.message("user", ctx.feedback(
                turn, ctx.turns_left_after(turns, pos))))
        return messages


@hookimpl
def register_strategies(register):
    register(Recording)


@pytest.fixture
def recording():
    """A registry with the recording strategy registered as a plugin."""
    registry = Registry(entry_points=False)
    registry.register(sys.modules[__name__], name="recording-plugin")
    previous = reset_registry(registry)
    SEEN.clear()
    yield SEEN
    reset_registry(previous)


OPENAI_CHAT = [{"role": "system", "content": "You fix bugs."},
               {"role": "user", "content": "Fix the typo."},
               {"role": "assistant", "content": "Looking.", "tool_calls": [
                   {"id": "c1", "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"}]


@pytest.mark.parametrize(("cache", "preset"), [("openai", "openai-gpt-4.1"),
                                               ("anthropic", "anthropic-sonnet-4")])
def test_compare_hands_its_cache_and_price(recording, cache, preset) -> None:
    compare_traces(data("mini/fix-typo.traj.json"), ["recording"], cache=cache,
                   tokenizer="chars4")
    assert recording and set(recording) == {(cache, PRICE_PRESETS[preset])}
    recording.clear()
    compare_traces(data("mini/fix-typo.traj.json"), ["recording"], cache=cache,
                   price="in=1,cached=0.1,write=2", tokenizer="chars4")
    assert set(recording) == {(cache, Price(1.0, 0.1, 2.0))}


def test_compress_and_compressor_hand_their_cache_and_price(recording) -> None:
    compress(OPENAI_CHAT, strategy="recording")
    assert recording[-1] == ("openai", PRICE_PRESETS["openai-gpt-4.1"])
    compress(OPENAI_CHAT, strategy="recording", cache="anthropic")
    assert recording[-1] == ("anthropic", PRICE_PRESETS["anthropic-sonnet-4"])
    compress(OPENAI_CHAT, strategy="recording", cache="none", price="anthropic-haiku-3.5")
    assert recording[-1] == ("none", PRICE_PRESETS["anthropic-haiku-3.5"])
    system, body = OPENAI_CHAT[0]["content"], [
        {"role": "user", "content": "Fix the typo."},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}]},
        {"role": "user", "content": "ok"}]
    compress({"system": system, "messages": body}, strategy="recording", format="anthropic")
    assert recording[-1] == ("anthropic", PRICE_PRESETS["anthropic-sonnet-4"])  # the format's
    compressor = Compressor("recording", cache="anthropic", price="in=2,cached=0.2")
    compressor.extend(OPENAI_CHAT)
    compressor.messages()
    assert recording[-1] == ("anthropic", Price(2.0, 0.2))


def test_bad_cache_or_price_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown cache model 'claude'; valid: openai, "
                                         "anthropic, none"):
        compress(OPENAI_CHAT, cache="claude")
    with pytest.raises(ValueError, match="unknown price preset 'cheap'"):
        Compressor(price="cheap")
    with pytest.raises(ValueError, match="price must be a preset name"):
        render([], mission="m", turns_left=1, price=3)


FENCED = "```clojure\n(return 1)\n```"


@pytest.mark.parametrize(("adapter", "cache", "preset"), [
    (OpenAICompatible, "openai", "openai-gpt-4.1"),
    (Anthropic, "anthropic", "anthropic-sonnet-4")])
def test_agent_tells_the_strategy_its_adapters_cache(recording, adapter, cache,
                                                     preset) -> None:
    with FakeLLMServer([FENCED, FENCED]) as server:
        base = server.base_url + ("/v1" if adapter is OpenAICompatible else "")
        llm = adapter("fake-model", base_url=base, api_key="k", max_retries=0)
        step = Agent("Return 1", llm=llm, max_turns=3, compression="recording").run()
        assert step.success
        assert recording == [(cache, PRICE_PRESETS[preset])]
        recording.clear()
        priced = adapter("fake-model", base_url=base, api_key="k", max_retries=0,
                         price="in=1,cached=0.5")
        Agent("Return 1", llm=priced, max_turns=3, compression="recording").run()
        assert recording == [(cache, Price(1.0, 0.5))]


def test_agent_with_a_plain_callable_gets_the_default(recording) -> None:
    Agent("Return 1", llm=ScriptedLLM([FENCED]), max_turns=3, compression="recording").run()
    assert recording == [("openai", PRICE_PRESETS["openai-gpt-4.1"])]


def test_a_strategy_silent_on_caching_gets_head_and_end_breakpoints(recording) -> None:
    """Without its own cache_breakpoints: the end of the leading system messages and the
    end of the prompt, so each call reads what the previous one wrote."""
    assert default_breakpoints([{"role": "system", "content": "s"},
                                {"role": "user", "content": "u"},
                                {"role": "assistant", "content": "a"}]) == [(0, None), (2, None)]
    assert default_breakpoints([{"role": "user", "content": "u"}]) == [(0, None)]
    assert default_breakpoints([]) == []
    # OpenAI's developer role is a system message: the head ends after it too
    assert default_breakpoints([{"role": "system", "content": "s"},
                                {"role": "developer", "content": "d"},
                                {"role": "user", "content": "u"}]) == [(1, None), (2, None)]
    _, points = render_with_breakpoints([], mission="m", system_prompt="s",
                                        turns_left=2, compression="recording")
    assert points == [(0, None), (1, None)] == Recording().cache_breakpoints([], {}, _ctx())
    from turnpress.examples import short_example_trace_paths

    result = compare_traces(short_example_trace_paths()[0], ["full-history", "recording"],
                            cache="anthropic", tokenizer="chars4")
    assert result.strategy("recording").cached_tokens > 0


def _ctx():
    from turnpress.core.compression import RenderContext

    return RenderContext(mission="m", system_prompt="s", tools={}, data={}, turns_left=2)


def test_plugins_md_caching_example_reads_the_price(tmp_path) -> None:
    """The example of docs/plugins.md's prompt-caching section is a working plugin that
    keeps one more turn under Anthropic's price."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text()
    section = doc[doc.index("## Prompt caching"):]
    [source] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    module = types.ModuleType("doc_example_caching")
    exec(compile(source, "docs/plugins.md", "exec"), module.__dict__)
    registry = Registry(entry_points=False)
    registry.register(module, name="doc-example")
    previous = reset_registry(registry)
    try:
        chat = [*OPENAI_CHAT, {"role": "assistant", "content": "Fixed."},
                {"role": "user", "content": "Thanks."},
                {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Bye"}]
        openai = compress(chat, strategy="head-and-last")
        anthropic = compress(chat, strategy="head-and-last", cache="anthropic")
        assert len(anthropic) == len(openai) + 2
        _, points = render_with_breakpoints([], mission="m", system_prompt="s", turns_left=1,
                                            compression="head-and-last")
        assert points == [(0, None), (1, None)]
    finally:
        reset_registry(previous)


# -- compare: the floor, and a strategy that never reaches the cache ----------------------


class Restless(Strategy):
    """Rewrites its first message on every turn: nothing is ever read from the cache."""

    name = "restless"

    def to_messages(self, turns, memory, ctx):
        return [ctx.message("user", f"Turns left: {ctx.turns_left}\n{ctx.system_prompt}")]


def test_floor_and_never_cached_footer() -> None:
    from turnpress.compare.table import notes
    from turnpress.core.tokens import get_tokenizer
    from turnpress.examples import short_example_trace_paths

    path = short_example_trace_paths()[0]
    result = compare_traces(path, ["full-history", Restless], cache="openai",
                            tokenizer="chars4")
    full = result.strategy("full-history")
    system = get_tokenizer("chars4").count(
        f"<|system|>\n{result_system(path)}\n")  # as a prompt counts a message
    expected, seen = 0.0, system
    for t in full.per_turn():
        expected += (max(0, t.input_tokens - seen) * 2.0 + system * 0.5) / 1e6
        seen = t.input_tokens
    assert result.floor_usd == pytest.approx(expected)
    assert result.traces[0].floor_usd == pytest.approx(expected)
    assert full.floor_ratio == pytest.approx(full.cost_usd / expected)
    doc = result.to_json()
    assert doc["floor"] == round(expected, 8)
    lines = notes(result)
    assert any(line.startswith("floor: ") and "x full-history" in line for line in lines)
    assert any(line.startswith("restless: its prompts never reach a cached prefix")
               for line in lines)
    assert not any(line.startswith("full-history: its prompts never") for line in lines)
    [floor] = [line for line in lines if line.startswith("floor: ")]
    assert floor.endswith("the system prompt read from the cache")
    uncached = compare_traces(path, ["full-history"], cache="none", tokenizer="chars4")
    [floor] = [line for line in notes(uncached) if line.startswith("floor: ")]
    assert floor.endswith("the system prompt sent each call (no cache)")


def result_system(path) -> str:
    from turnpress import load_trace

    return load_trace(path).system_prompt


def test_min_trace_recall_is_the_worst_run() -> None:
    from turnpress.examples import short_example_trace_paths

    result = compare_traces(short_example_trace_paths(), ["single-user-coalesced"],
                            tokenizer="chars4")
    s = result.strategy("single-user-coalesced")
    per: dict[str, list[int]] = {}
    for t in s.per_turn():
        got = per.setdefault(t.trace, [0, 0])
        got[0] += t.needed
        got[1] += t.needed_shown
    worst = min((k / n for n, k in per.values() if n), default=1.0)
    assert s.min_trace_recall == pytest.approx(worst)
    assert s.min_trace_recall <= s.needed_fact_recall


MIN_SEEN: list[int] = []


class RecordingMinimum(Recording):
    """Records the smallest cached prefix its render context's cache rules say."""

    name = "recording-minimum"

    def to_messages(self, turns, memory, ctx):
        MIN_SEEN.append(ctx.cache.min_tokens)
        return super().to_messages(turns, memory, ctx)


def _long_run() -> list[dict]:
    """A chat run whose prompts pass 1,024 tokens (chars4) but stay under 2,048."""
    return [{"role": "system", "content": "x" * 5000},
            {"role": "user", "content": "Fix the typo."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function",
                 "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "a.py\n" * 40},
            {"role": "assistant", "content": "Done."}]


def test_a_model_with_a_larger_cache_minimum_caches_nothing_under_it(tmp_path) -> None:
    """Haiku 3.5 caches no prefix under 2,048 tokens (Anthropic's docs): priced as
    anthropic-haiku-3.5 (or min= in a custom price), compare's cache model writes and
    reads nothing under it, where Sonnet 4's 1,024 caches the system prompt; strategies
    see the same minimum (ctx.cache.min_tokens), by compare and by compress()."""
    import json

    path = tmp_path / "run.json"
    path.write_text(json.dumps(_long_run()))

    def totals(price: str) -> tuple[int, int]:
        full = compare_traces([str(path)], ["full-history"], cache="anthropic",
                              price=price, tokenizer="chars4").strategies[0]
        return full.cached_tokens, full.written_tokens

    assert totals("anthropic-sonnet-4") > (0, 0)
    assert totals("anthropic-haiku-3.5") == (0, 0)
    assert totals("in=0.8,cached=0.08,write=1,min=2048") == (0, 0)
    assert totals("in=0.8,cached=0.08,write=1,min=1024") == totals("anthropic-sonnet-4")
    registry = Registry(entry_points=False)
    registry.register(types.SimpleNamespace(register_strategies=hookimpl(
        lambda register: register(RecordingMinimum))), name="recording-minimum-plugin")
    previous = reset_registry(registry)
    try:
        compare_traces([str(path)], ["recording-minimum"], cache="anthropic",
                       price="anthropic-haiku-3.5", tokenizer="chars4")
        compress(_long_run(), strategy="recording-minimum", cache="anthropic",
                 price="anthropic-haiku-3.5")
        compress(_long_run(), strategy="recording-minimum", cache="anthropic")
    finally:
        reset_registry(previous)
    assert set(MIN_SEEN[:-1]) == {2048} and MIN_SEEN[-1] == 1024


@pytest.mark.parametrize(("text", "problem"), [
    ("in=1,cached=0.1,min=0", "min= is a number of tokens"),
    ("in=1,cached=0.1,min=1.5", "min= is a number of tokens"),
    ("in=1,cached=0.1,minimum=2", "is not in=, cached=, write=, out= or min="),
])
def test_a_bad_min_is_one_clear_error(text, problem) -> None:
    from turnpress.core.pricing import parse_price

    with pytest.raises(ValueError, match=problem):
        parse_price(text)
    assert str(parse_price("in=1,cached=0.1,min=4096")) == "in=1,cached=0.1,min=4096"

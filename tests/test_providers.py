"""Provider shapes: OpenAI chat messages and Anthropic (system, messages) with cache_control."""

from __future__ import annotations

import itertools
import json

import pytest
from click.testing import CliRunner

from turnpress import load_trace, render
from turnpress.cli import main
from turnpress.core.breakpoints import BreakpointError
from turnpress.core.compression import strategy_names
from turnpress.core.providers import (
    MAX_ANTHROPIC_BREAKPOINTS,
    anthropic_breakpoints,
    prompt_with_breakpoints,
    render_with_breakpoints,
    to_anthropic,
    to_openai,
)
from turnpress.core.tokens import prompt_text
from turnpress.examples import example_trace_paths, short_example_trace_paths

EPHEMERAL = {"type": "ephemeral"}


def bundled(name: str):
    return load_trace(next(p for p in example_trace_paths() if p.stem == name))


def markers(system, messages) -> int:
    blocks = [b for b in (system if isinstance(system, list) else [])]
    for m in messages:
        if isinstance(m["content"], list):
            blocks.extend(m["content"])
    return sum("cache_control" in b for b in blocks)


def text_of(content) -> str:
    return content if isinstance(content, str) else "".join(b["text"] for b in content)


def test_to_openai_is_unchanged():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert to_openai(messages) == messages
    assert to_openai(messages) is not messages


def test_to_anthropic_without_breakpoints():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
                {"role": "assistant", "content": "A"}]
    assert to_anthropic(messages) == ("S", [{"role": "user", "content": "U"},
                                           {"role": "assistant", "content": "A"}])
    assert to_anthropic([{"role": "user", "content": "U"}]) == (
        "", [{"role": "user", "content": "U"}])


def test_system_and_mid_message_breakpoints():
    messages = [{"role": "system", "content": "SYS"},
                {"role": "user", "content": "HEAD\n\nTAIL"}]
    system, out = to_anthropic(messages, [(0, None), (1, 4)])
    assert system == [{"type": "text", "text": "SYS", "cache_control": EPHEMERAL}]
    assert out == [{"role": "user", "content": [
        {"type": "text", "text": "HEAD", "cache_control": EPHEMERAL},
        {"type": "text", "text": "\n\nTAIL"}]}]


def test_whole_message_breakpoint_marks_its_last_block():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U1"},
                {"role": "assistant", "content": "A1"}, {"role": "user", "content": "U2"}]
    _, out = to_anthropic(messages, [(3, None)])
    assert out[2]["content"] == [{"type": "text", "text": "U2", "cache_control": EPHEMERAL}]
    assert out[0]["content"] == "U1"


def test_breakpoint_normalization():
    messages = [{"role": "system", "content": ""}, {"role": "user", "content": "abcdef"},
                {"role": "assistant", "content": "xyz"}]
    assert anthropic_breakpoints(messages, [(0, None)]) == []  # empty system: nothing to mark
    assert anthropic_breakpoints(messages, [(1, 6)]) == [(1, None)]  # offset at the end
    assert anthropic_breakpoints(messages, [(2, 0)]) == [(1, None)]  # offset 0: message before
    assert anthropic_breakpoints(messages, [(1, 99)]) == [(1, None)]  # past the end: all
    for outside in (7, -1):  # an index outside the prompt is the strategy's error, as in
        # render and compress (it was dropped, so compare cached nothing, silently)
        with pytest.raises(BreakpointError, match="out of range"):
            anthropic_breakpoints(messages, [(outside, None), (1, 99)])
    assert anthropic_breakpoints(messages, [(2, None), (1, 3), (1, 3), (1, None)]) == [
        (1, 3), (1, None), (2, None)]


def test_at_most_four_breakpoints_the_longest_prefixes():
    messages = [{"role": "system", "content": "S"}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(8)]
    points = anthropic_breakpoints(messages, [(i, None) for i in range(9)])
    assert points == [(5, None), (6, None), (7, None), (8, None)]
    system, out = to_anthropic(messages, [(i, None) for i in range(9)])
    assert markers(system, out) == MAX_ANTHROPIC_BREAKPOINTS


def test_system_message_inside_the_conversation_is_refused():
    messages = [{"role": "user", "content": "U"}, {"role": "system", "content": "late"}]
    with pytest.raises(ValueError, match="message 1 is a system message"):
        to_anthropic(messages)


@pytest.mark.parametrize("strategy", strategy_names())
@pytest.mark.parametrize("path", short_example_trace_paths(), ids=lambda p: p.stem)
def test_every_strategy_every_turn(path, strategy):
    """render_with_breakpoints gives render()'s messages; the Anthropic shape keeps the
    text; each breakpoint's prefix is repeated byte for byte by the next turn's prompt."""
    trace = load_trace(path)
    for n in range(1, len(trace.turns) + 1):
        messages, breakpoints = prompt_with_breakpoints(trace, n, strategy)
        assert messages == trace.prompt(n, strategy)
        system, out = to_anthropic(messages, breakpoints)
        assert markers(system, out) <= MAX_ANTHROPIC_BREAKPOINTS
        assert markers(system, out) >= 1 or not any(m["content"] for m in messages)
        lead = sum(1 for m in messages if m["role"] == "system")
        assert text_of(system) == "\n\n".join(m["content"] for m in messages[:lead]
                                              if m["content"])
        # consecutive messages of one role share one Anthropic message (ux-b item 6)
        runs: list[tuple[str, list[str]]] = []
        for m in messages[lead:]:
            if runs and runs[-1][0] == m["role"]:
                runs[-1][1].append(m["content"])
            else:
                runs.append((m["role"], [m["content"]]))
        assert [(m["role"], text_of(m["content"])) for m in out] == [
            (role, "".join(texts)) for role, texts in runs]
        assert all(a["role"] != b["role"] for a, b in itertools.pairwise(out))
        if n < len(trace.turns):
            later = prompt_text(trace.prompt(n + 1, strategy))
            earlier = prompt_text(trace.prompt(n - 1, strategy)) if n > 1 else ""
            for index, offset in breakpoints:
                if (index, offset) == (len(messages) - 1, None):
                    # the end of the prompt may be marked only to read what the previous
                    # prompt cached (a stepped strategy on the turn before its boundary
                    # moves); every other marker must be repeated
                    continue
                head = prompt_text(messages[:index])
                m = messages[index]
                head += (f"<|{m['role']}|>\n" + m["content"] + "\n" if offset is None
                         else f"<|{m['role']}|>\n" + m["content"][:offset])
                # ... or end where the previous prompt did, to read what it cached
                # (price-scheduled before a rebuild: nothing after it is written)
                assert later.startswith(head) or (
                    offset is None and earlier.startswith(head)), (strategy, n, (index, offset))


def test_render_with_breakpoints_takes_renders_arguments():
    trace = bundled("product-research")
    kwargs = dict(mission=trace.mission, system_prompt=trace.system_prompt, tools=trace.tools,
                  data=trace.data, turns_left=3, compression="single-user-coalesced")
    messages, breakpoints = render_with_breakpoints(trace.turns[:2], **kwargs)
    assert messages == render(trace.turns[:2], **kwargs)
    assert breakpoints[0] == (0, None)
    index, offset = breakpoints[1]
    assert index == 1 and messages[1]["content"][:offset].startswith(trace.mission)
    assert ";; === data/ ===" in messages[1]["content"][:offset]
    assert ";; === user/" not in messages[1]["content"][:offset]


def test_anthropic_shape_snapshot(snapshot):
    trace = bundled("product-research")
    messages, breakpoints = prompt_with_breakpoints(trace, 3, "single-user-coalesced")
    system, out = to_anthropic(messages, breakpoints)
    assert json.dumps({"system": system, "messages": out}, indent=2,
                      ensure_ascii=False) + "\n" == snapshot


def test_render_command_anthropic_format():
    path = str(next(p for p in example_trace_paths() if p.stem == "phone-campaign"))
    result = CliRunner().invoke(main, ["render", path, "--turn", "2", "--format", "anthropic"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert set(doc) == {"system", "messages"}
    assert doc["system"][0]["cache_control"] == EPHEMERAL
    trace = load_trace(path)
    messages, breakpoints = prompt_with_breakpoints(trace, 2)
    assert (doc["system"], doc["messages"]) == to_anthropic(messages, breakpoints)

"""Provider cache models: OpenAI's automatic prefix cache, Anthropic's breakpoints, none."""

from __future__ import annotations

from array import array

import pytest

from turnpress import Tool, ToolCall, Trace, Turn
from turnpress.compare.cache import (
    AnthropicCache,
    CacheUsage,
    NoCache,
    OpenAICache,
    cache_model_names,
    new_cache_model,
)
from turnpress.core.providers import anthropic_breakpoints, prompt_with_breakpoints
from turnpress.core.tokens import TokenCounter


def words(n: int, tag: str = "w") -> str:
    """A text of about ``n`` o200k tokens (`` w0 w1 ...`` are 2 tokens each)."""
    return "".join(f" {tag}{i}" for i in range(n // 2))


def msgs(*contents: str) -> list[dict[str, str]]:
    roles = ["system", "user", "assistant"]
    return [{"role": roles[0] if i == 0 else roles[1 + (i + 1) % 2], "content": c}
            for i, c in enumerate(contents)]


@pytest.fixture
def counter() -> TokenCounter:
    return TokenCounter("o200k_base")


def test_names_and_errors():
    assert cache_model_names() == ["openai", "anthropic", "none"]
    assert isinstance(new_cache_model("openai"), OpenAICache)
    with pytest.raises(ValueError, match="unknown cache model 'azure'; valid: openai, "
                                         "anthropic, none"):
        new_cache_model("azure")


def test_none_caches_nothing(counter):
    model = NoCache()
    prompt = counter.tokenize(msgs(words(3000), "hi"))
    assert model.account(prompt) == CacheUsage(0, 0)
    assert model.account(prompt) == CacheUsage(0, 0)


def test_openai_first_prompt_is_never_cached(counter):
    assert OpenAICache().account(counter.tokenize(msgs(words(3000), "hi"))) == CacheUsage()


def test_openai_rounds_down_to_128_and_needs_1024(counter):
    system = words(1500)
    first = counter.tokenize(msgs(system, "question one"))
    second = counter.tokenize(msgs(system, "question two, longer"))
    shared = second.common_prefix(first)
    assert shared > 1500
    model = OpenAICache()
    model.account(first)
    usage = model.account(second)
    assert usage.cached == shared // 128 * 128
    assert usage.cached % 128 == 0 and usage.cached >= 1024
    assert usage.written == 0


def test_openai_short_prompts_and_short_prefixes_get_nothing(counter):
    model = OpenAICache()
    model.account(counter.tokenize(msgs(words(600), "a")))
    assert model.account(counter.tokenize(msgs(words(600), "b"))).cached == 0  # < 1024 tokens
    model = OpenAICache()
    model.account(counter.tokenize(msgs(words(700), words(1000, "x"))))
    # a 2000-token prompt that shares only ~700 tokens: below the first 1024-token block
    assert model.account(counter.tokenize(msgs(words(700), words(1300, "y")))).cached == 0


def test_openai_uses_any_earlier_prompt(counter):
    base = words(2000)
    model = OpenAICache()
    model.account(counter.tokenize(msgs(base, "first")))
    model.account(counter.tokenize(msgs(words(2000, "other"), "unrelated")))
    assert model.account(counter.tokenize(msgs(base, "third"))).cached >= 1920


def test_openai_identical_prompt_is_cached_up_to_its_last_block(counter):
    prompt = counter.tokenize(msgs(words(2100), "same"))
    model = OpenAICache()
    model.account(prompt)
    assert model.account(prompt).cached == prompt.total // 128 * 128


def test_anthropic_writes_then_reads_at_the_breakpoint(counter):
    system = words(1500)
    bps = [(0, None)]
    first = counter.tokenize(msgs(system, "one"), bps)
    second = counter.tokenize(msgs(system, "two"), bps)
    model = AnthropicCache()
    usage1 = model.account(first)
    assert usage1 == CacheUsage(cached=0, written=first.breakpoints[0].tokens)
    usage2 = model.account(second)
    assert usage2 == CacheUsage(cached=first.breakpoints[0].tokens, written=0)


def test_anthropic_ignores_prefixes_below_1024_tokens(counter):
    model = AnthropicCache()
    for text in ("a", "b"):
        assert model.account(counter.tokenize(msgs(words(800), text), [(0, None)])) == \
            CacheUsage()


def test_anthropic_mid_message_breakpoint(counter):
    """single-user-coalesced style: the system prompt and the stable head of the USER
    message; the rest of the USER message changes every turn."""
    head = words(1200, "head")
    user1, user2 = head + "\n\nturn 1 stuff", head + "\n\nturn 2 other stuff"
    bps1 = [(0, None), (1, len(head))]
    model = AnthropicCache()
    p1 = counter.tokenize(msgs("short system", user1), bps1)
    u1 = model.account(p1)
    assert u1.cached == 0 and u1.written == p1.breakpoints[-1].tokens
    p2 = counter.tokenize(msgs("short system", user2), bps1)
    u2 = model.account(p2)
    assert u2.cached == p1.breakpoints[-1].tokens
    assert u2.written == 0


def test_anthropic_reads_an_earlier_message_boundary(counter):
    """full-history style: the breakpoint moves to the end of the conversation; the
    previous end is a message boundary of the new prompt, so it is read back."""
    convo = [words(1200), "task", "reply one", "feedback one"]
    p1 = counter.tokenize(msgs(*convo), [(0, None), (3, None)])
    convo2 = [*convo, "reply two", "feedback two"]
    p2 = counter.tokenize(msgs(*convo2), [(0, None), (5, None)])
    model = AnthropicCache()
    model.account(p1)
    u2 = model.account(p2)
    assert u2.cached == p1.breakpoints[-1].tokens
    assert u2.written == p2.breakpoints[-1].tokens - u2.cached


def test_anthropic_changed_prefix_is_written_again(counter):
    model = AnthropicCache()
    model.account(counter.tokenize(msgs(words(1500), "q"), [(0, None)]))
    p = counter.tokenize(msgs(words(1500, "v"), "q"), [(0, None)])
    assert model.account(p) == CacheUsage(0, p.breakpoints[0].tokens)


def long_system_trace() -> Trace:
    tools = {"search": Tool("search", {"query": "string"}, "list", "Search things")}
    t1 = Turn.succeeded(1, '(def hits (tool/search "a"))', None, memory={"hits": [1, 2]},
                        tool_calls=[ToolCall("search", ("a",), [1, 2])])
    t2 = Turn.succeeded(2, "(println (count hits))", None, memory={"hits": [1, 2]},
                        prints=["2"])
    t3 = Turn.succeeded(3, "(return hits)", [1, 2], memory={"hits": [1, 2]})
    return Trace(mission="Find things", turns=(t1, t2, t3), system_prompt=words(2400),
                 max_turns=5, tools=tools, data={"xs": [1, 2, 3]}, name="long-system")


@pytest.mark.parametrize("strategy", ["single-user-coalesced", "full-history"])
def test_strategies_breakpoints_drive_the_anthropic_cache(counter, strategy):
    trace = long_system_trace()
    model = AnthropicCache()
    usages = []
    for n in (1, 2, 3):
        messages, bps = prompt_with_breakpoints(trace, n, strategy)
        usages.append(model.account(counter.tokenize(
            messages, anthropic_breakpoints(messages, bps))))
    assert usages[0].cached == 0 and usages[0].written >= 1024
    system_tokens = counter.count([{"role": "system", "content": trace.system_prompt}])
    assert all(u.cached >= system_tokens for u in usages[1:])


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@pytest.mark.parametrize("states", [4096, 0])
@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["alpha beta", "alpha gamma delta", "x" * 40,
                                          "alpha beta gamma", "tool output 1234"]),
                         min_size=0, max_size=6), min_size=1, max_size=8),
       st.sampled_from([1, 3, 128]))
def test_openai_shared_prefix_is_the_longest_over_all_earlier_prompts(states, prompts, step):
    """The block-digest search equals the brute force over every earlier prompt, rounded
    down to the block size: OpenAI caches a prompt in blocks (128 tokens, from 1024
    on), so only whole blocks of the shared prefix count (``step=1``: exact).

    Issue 20 item 6: the message-prefix states are a memo bounded by ``STATES``
    (beyond it only the latest prompt's are kept); with none kept beyond that
    (``states=0``), every answer is the same, and the states held stay within twice
    the longest prompt's messages."""
    from unittest import mock

    from turnpress.compare import cache
    from turnpress.core.tokens import TokenCounter

    counter = TokenCounter("o200k_base")
    model = OpenAICache(min_prompt=0, step=step, min_cached=1)
    seen, longest = [], 0
    with mock.patch.object(cache, "STATES", states):
        for contents in prompts:
            prompt = counter.tokenize([{"role": "user", "content": c} for c in contents])
            expected = max((prompt.common_prefix(q) for q in seen), default=0) // step * step
            assert model.shared_prefix(prompt) == expected
            assert model.account(prompt).cached == expected
            longest = max(longest, len(prompt.chain))
            assert len(model.states) <= 1 + states + 2 * longest
            seen.append(prompt)


def _held(root: object) -> list[object]:
    """Every object reachable from ``root`` (not types, modules or functions)."""
    import gc
    import types

    seen, out, todo = set(), [], [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue
        seen.add(id(obj))
        out.append(obj)
        todo.extend(gc.get_referents(obj))
    return out


def test_openai_model_keeps_block_digests_not_the_tokens(counter):
    """Issue 20 item 6: the exact model keeps a digest per 128-token block prefix and,
    per message prefix, less than a block of tokens, not the tokens of every distinct
    message (a strategy rewriting one long message every turn made those the largest
    part of a long run's memory)."""
    from turnpress.core.tokens import Segment

    model, sent = OpenAICache(), 0
    system = words(1500)
    for i in range(12):  # one system prompt, then one rewritten long message per turn
        prompt = counter.tokenize(msgs(system, words(4000, f"turn{i}x")))
        model.account(prompt)
        sent += sum(len(s.tokens) for s in prompt.segments)
    held = _held(model)
    assert not any(isinstance(o, Segment) for o in held)
    kept = sum(len(o) if isinstance(o, bytes) else o.itemsize * len(o)
               for o in held if isinstance(o, (bytes, array)))
    assert kept < sent / 20
    # and the answers are those of the rule: a prompt repeating the system prompt and
    # the start of turn 3's message reads the blocks they share
    again = counter.tokenize(msgs(system, words(4000, "turn3x")[:3000] + " different"))
    expected = again.common_prefix(counter.tokenize(msgs(system, words(4000, "turn3x"))))
    assert model.account(again).cached == expected // 128 * 128 > 1500


def test_openai_count_only_tokenizer_measures_the_exact_prefix():
    """With a count-only tokenizer (no token ids), the texts are compared: the longest
    prefix over every earlier prompt, then rounded to the block."""
    counter = TokenCounter("chars4")
    model = OpenAICache(min_prompt=0, step=1, min_cached=1)
    prompts = [msgs("system " * 50, "alpha " * 30), msgs("system " * 50, "beta " * 40),
               msgs("system " * 50, "alpha " * 20 + "gamma"), msgs("other", "alpha")]
    seen = []
    for contents in prompts:
        prompt = counter.tokenize(contents)
        expected = max((prompt.common_prefix(q) for q in seen), default=0)
        assert model.shared_prefix(prompt) == expected
        assert model.account(prompt).cached == expected
        seen.append(prompt)
    assert seen[2].common_prefix(seen[0]) > seen[2].common_prefix(seen[1])


def test_digest_set_is_a_set_after_merges():
    import random

    from turnpress.compare.cache import DigestSet

    rng = random.Random(5)
    digests = DigestSet()
    plain: set[int] = set()
    first = [rng.getrandbits(64) - 2 ** 63 for _ in range(50)]
    for _ in range(30_000):
        d = rng.getrandbits(64) - 2 ** 63
        if rng.random() < 0.2:
            d = rng.choice(first)  # some repeats
        digests.add(d)
        plain.add(d)
    assert len(digests) == len(plain)
    assert all(d in digests for d in plain)
    assert not any(rng.getrandbits(64) - 2 ** 63 in digests for _ in range(2000))
    assert len(digests.merged) > 20_000 and list(digests.merged) == sorted(digests.merged)

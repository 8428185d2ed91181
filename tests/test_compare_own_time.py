"""compare's own time (issue 20 item 4): the work past the floor is done once where once
is enough, with the same answers: the lines of long texts are encoded once across the
runs of a worker, the cache model decides once per run whether it compares token ids or
texts, a text is scanned for a tool's name once, a track's light copy of a prompt shares
its totals and digests."""

from __future__ import annotations

import random
from array import array

from turnpress.compare import cache as cache_module
from turnpress.compare import retention
from turnpress.compare.cache import OpenAICache
from turnpress.compare.fact_index import FactIndex
from turnpress.compare.retention import Fact, fact_present
from turnpress.compare.reuse import without_tokens
from turnpress.core import tokens as tokens_module
from turnpress.core.tokens import TokenCounter, Tokenizer, get_tokenizer
from turnpress.core.tokens import common_prefix_length as items_prefix


def sliced_prefix(a, b):
    """The longest common prefix by slice equality, the plain way (the reference)."""
    return max(k for k in range(min(len(a), len(b)) + 1) if a[:k] == b[:k])


class _Spy:
    """o200k_base, recording every text it encodes."""

    splits_lines = True

    def __init__(self) -> None:
        self.inner = get_tokenizer("o200k_base").count_fn
        self.texts: list[str] = []

    def encode(self, text: str) -> list[int]:
        self.texts.append(text)
        return self.inner.encode(text)

    def __call__(self, text: str) -> int:
        return len(self.encode(text))


def _long(*lines: str) -> str:
    return "".join(f"{line}\n" for line in lines) + "x" * 600


def test_the_lines_of_long_texts_are_encoded_once_across_runs():
    spy = _Spy()
    counter = TokenCounter(Tokenizer("spy", spy), shared_chars=0)
    fresh = TokenCounter("o200k_base", shared_chars=0)
    first = _long("You are a helpful assistant.", "THOUGHT: list the files", "run 1")
    second = _long("You are a helpful assistant.", "THOUGHT: list the files", "run 2")
    counter.start_run()
    counter.count([{"role": "user", "content": first}])
    counter.start_run()  # the next run: its messages are new, most of their lines are not
    spy.texts.clear()
    a = counter.segment("user", second)
    assert "THOUGHT: list the files\n" not in spy.texts
    assert "run 2\n" in spy.texts
    b = fresh.segment("user", second)
    assert (a.count, a.tokens, a.digest) == (b.count, b.tokens, b.digest)


def test_the_openai_cache_model_decides_ids_or_texts_once(monkeypatch):
    calls = []
    real = cache_module._count_only

    def count_only(prompt):
        calls.append(prompt)
        return real(prompt)

    monkeypatch.setattr(cache_module, "_count_only", count_only)
    counter = TokenCounter("o200k_base")
    model, fresh = OpenAICache(), OpenAICache()
    messages = [{"role": "system", "content": "word " * 900}]
    for n in range(6):
        messages = [*messages, {"role": "user", "content": f"turn {n} " + "more " * 300}]
        prompt = counter.tokenize(messages)
        assert model.account(prompt) == fresh.account(counter.tokenize(messages))
    assert len(calls) == 2  # one decision per model, not one per prompt
    texts, chars = OpenAICache(), TokenCounter("chars4")
    usage = [texts.account(chars.tokenize(messages[:n])) for n in range(2, 5)]
    assert texts._texts is not None and usage[-1].cached > 0


def test_a_text_is_scanned_for_a_tool_name_once(monkeypatch):
    scans = []
    real = retention._symbol_shown

    def symbol_shown(kind, name, text):
        scans.append((kind, name))
        return real(kind, name, text)

    monkeypatch.setattr(retention, "_symbol_shown", symbol_shown)
    facts = [Fact("tool call", "bash", (f"ls dir_{k}",)) for k in range(20)]
    text = "\n".join(f"```bash\nls dir_{k}\n```" for k in range(0, 20, 2))
    index = FactIndex()
    ids = index.ids(facts)
    shown = index.shown([text])
    monkeypatch.setattr(retention, "_symbol_shown", real)
    assert shown == {ids[k] for k in range(0, 20, 2)}
    assert shown == {i for i, f in zip(ids, facts, strict=True) if fact_present(f, text)}
    assert scans == [("tool call", "bash")]


def test_fact_present_with_known_symbols_gives_the_same_answers():
    texts = ["run bash(ls)", "tool/bash and ls", "(bash ls)", "bashful ls", "ls"]
    facts = [Fact("tool call", "bash", ("ls",)), Fact("tool call", "bash"),
             Fact("name", "bash")]
    for text in texts:
        symbols: dict[tuple[str, str], bool] = {}
        for fact in [*facts, *facts]:
            assert fact_present(fact, text, symbols) == fact_present(fact, text), (fact, text)


def test_a_light_prompt_shares_its_totals_and_digests(monkeypatch):
    counter = TokenCounter("o200k_base")
    messages = [{"role": "user", "content": "word " * 400}, {"role": "user", "content": "hi"}]
    prompt = counter.tokenize(messages)
    monkeypatch.setattr(tokens_module, "_digest", None)  # nothing is hashed again
    light = without_tokens(prompt)
    assert prompt.with_segments(light.segments).segments is light.segments
    assert light.segments[0].tokens is None and light.segments[1].tokens is not None
    assert (light.total, light.chain, light.cumulative, light.breakpoints) == (
        prompt.total, prompt.chain, prompt.cumulative, prompt.breakpoints)
    assert [s.count for s in light.segments] == [s.count for s in prompt.segments]
    assert light.tokens_before(1) == prompt.tokens_before(1)


class _Counted(str):
    """A text that counts the searches made with its ``find``."""

    finds = 0

    def find(self, *args):  # type: ignore[override]
        _Counted.finds += 1
        return super().find(*args)


def test_a_probe_found_where_it_was_found_is_not_searched_again():
    texts = ["ls -la x\nitem-16 ran", "run ls -la there", "item-1 and item-16",
             '{"cmd": "echo \\"hi\\""}', "echo \"hi\"", "nothing"]
    facts = [Fact("tool call", "bash", ("ls -la",)), Fact("printed line", "item-1"),
             Fact("tool call", "bash", ('echo "hi"',)), Fact("needed", "item-16"),
             Fact("name", "item"), Fact("tool call", "ls")]
    for text in texts:
        for fact in facts:
            probe = fact.leaves[0] if fact.leaves else fact.value
            at = text.find(probe)
            assert fact_present(fact, text, {}, at) == fact_present(fact, text), (fact, text)
    _Counted.finds = 0
    text = _Counted("see item-16 and item-1 here")
    assert fact_present(Fact("printed line", "item-1"), text, None, text.find("item-1"))
    assert _Counted.finds == 2  # the caller's search, and the next occurrence's



def test_the_common_prefix_of_two_lists_is_found_in_one_pass():
    rng = random.Random(5)
    for _ in range(300):
        a = [{"role": rng.choice("ua"), "content": str(rng.randrange(3))}
             for _ in range(rng.randrange(12))]
        b = [dict(m) for m in a[:rng.randrange(len(a) + 1)]]
        b += [{"role": "u", "content": str(rng.randrange(3))} for _ in range(rng.randrange(4))]
        assert items_prefix(a, b) == sliced_prefix(a, b) == items_prefix(b, a)
    compared = []

    class Item:
        def __ne__(self, other):
            compared.append(self)
            return self is not other

    items = [Item() for _ in range(64)]
    assert items_prefix(items, [*items[:40], Item()]) == 40
    assert len(compared) == 41  # each pair once, up to the first that differs


def test_blocks_after_the_first_unseen_one_are_added_without_a_lookup(monkeypatch):
    counter = TokenCounter("o200k_base")
    first = [{"role": "system", "content": "word " * 3000}]
    second = [*first, {"role": "user", "content": "other " * 3000}]
    model, fresh = OpenAICache(), OpenAICache()
    assert model.account(counter.tokenize(first)) == fresh.account(counter.tokenize(first))
    lookups = []
    real = cache_module.DigestSet.__contains__

    def contains(self, digest):
        lookups.append(digest)
        return real(self, digest)

    monkeypatch.setattr(cache_module.DigestSet, "__contains__", contains)
    prompt = counter.tokenize(second)
    usage = model.account(prompt)
    assert usage.cached == prompt.tokens_before(1) // 128 * 128
    assert len(lookups) <= 2  # the first block not seen; none for the ~24 after it
    monkeypatch.setattr(cache_module.DigestSet, "__contains__", real)
    assert fresh.account(counter.tokenize(second)) == usage
    assert len(model.blocks) == len(fresh.blocks)


def test_digests_added_directly_are_kept_once_by_the_merge():
    digests = cache_module.DigestSet()
    values = list(range(-5000, 5000, 2))
    for v in values:
        digests.add(v)
    assert len(digests.merged) > 4000  # merged once
    digests.newest.update(values[:100])  # already merged: a collision's duplicates
    digests.newest.update(range(10**6, 10**6 + 5000))
    digests.settle()
    assert not digests.newest and len(digests) == len(values) + 5000
    assert list(digests.merged) == sorted({*values, *range(10**6, 10**6 + 5000)})


def test_lines_known_as_cut_or_as_last_are_told_apart_across_generations():
    """A line is kept under its text without the cut line break, the last line of a text
    under a 1-tuple: the same string as a cut line and as a last line gives each its own
    tokens, also once the lines have moved to the older generation and back."""
    pad = "z" * 600
    texts = [f"<|user|>\nfoo\n\nBar\n{pad}\n", f"<|user|>\nBar\nfoo\n\n{pad}\nfoo\n",
             f"<|user|>\n{pad}\nfoo\n", f"<|user|>\nfoo\n\n{pad}\nBar"]
    encode = get_tokenizer("o200k_base").count_fn.encode
    for limit in (10, 10_000):
        counter = TokenCounter("o200k_base", piece_chars=limit)
        for _ in range(3):
            for text in texts:
                segment = counter.text(text)
                assert segment.tokens == array("I", encode(text)).tobytes()
                assert segment.count == len(encode(text))
            counter.start_run()


def test_a_known_line_is_not_encoded_again():
    spy = _Spy()
    counter = TokenCounter(Tokenizer("spy", spy))
    counter.text(_long("first line", "second line"))
    spy.texts.clear()
    counter.text(_long("first line", "second line") + "!")
    assert spy.texts == ["x" * 600 + "!"]


def test_the_seen_prefix_is_the_same_from_any_seen_hint():
    chain = tuple(bytes([i]) for i in range(12))
    for seen_count in range(len(chain) + 1):
        seen = {c: None for c in chain[:seen_count]}
        for hint in range(len(chain) + 2):
            assert cache_module._seen_prefix(chain, seen, hint) == seen_count


def test_the_openai_model_from_its_last_prompt_gives_the_same_usage():
    counter = TokenCounter("o200k_base")
    rng = random.Random(3)
    texts = [" ".join(str(rng.randrange(1000)) for _ in range(rng.randrange(50, 900)))
             for _ in range(8)]
    prompts, messages = [], []
    for step in range(30):  # grows, is cut back, branches: as strategies' prompts do
        if step % 7 == 6:
            del messages[rng.randrange(len(messages) + 1):]
        messages.append({"role": rng.choice(["user", "assistant"]),
                         "content": rng.choice(texts)})
        prompts.append(counter.tokenize(messages))
    hinted, searched = OpenAICache(), OpenAICache()
    usages = []
    for prompt in prompts:
        usages.append(hinted.account(prompt))
        searched._last = 0  # searches the whole prompt
        assert searched.account(prompt) == usages[-1]
    assert any(u.cached for u in usages) and hinted.states == searched.states

"""Token counting: the built-in tokenizers, exactness, the per-run content cache."""

from __future__ import annotations

import itertools
import subprocess
import sys
import warnings

import pytest

from turnpress import hookimpl, load_trace
from turnpress.core.compression import strategy_names
from turnpress.core.registry import Registry, get_registry
from turnpress.core.tokens import (
    DEFAULT_TOKENIZER,
    TokenCounter,
    common_prefix_length,
    count_prompt_tokens,
    get_tokenizer,
    message_text,
    prompt_text,
    tokenizer_names,
)
from turnpress.examples import example_trace_paths


def encoding(name: str):
    """bpe_openai's encoding, used directly (it warns about its importlib.resources use)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai

        return bpe_openai.get_encoding(name)


def all_bundled_prompts():
    """(trace, turn, strategy, messages) for every prompt of every bundled trace."""
    for path in example_trace_paths():
        trace = load_trace(path)
        for strategy in strategy_names():
            for n in range(1, len(trace.turns) + 1):
                yield trace, n, strategy, trace.prompt(n, strategy)


def test_builtins_are_registered_through_the_hook():
    assert {"o200k_base", "cl100k_base", "chars4"} <= set(tokenizer_names())
    info = get_registry().plugins["tokenizers"]
    assert info.builtin
    assert sorted(info.registers["tokenizer"]) == ["chars4", "cl100k_base", "o200k_base"]
    assert DEFAULT_TOKENIZER == "o200k_base"


def test_unknown_tokenizer_names_the_valid_ones():
    with pytest.raises(ValueError, match=r"unknown tokenizer 'gpt-9'; registered tokenizers: "
                                         r"chars4, cl100k_base, o200k_base"):
        get_tokenizer("gpt-9")


def test_message_and_prompt_text():
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "U\n"}]
    assert message_text("user", "hi") == "<|user|>\nhi\n"
    assert prompt_text(messages) == "<|system|>\nS\n<|user|>\nU\n\n"


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_exact_count_is_the_count_of_the_concatenation(name):
    """Counting message by message equals encoding the whole prompt, on every bundled
    prompt under every strategy (the pre-tokenizer splits at message boundaries)."""
    enc = encoding(name)
    counter = TokenCounter(name)
    checked = 0
    for _trace, _n, _strategy, messages in all_bundled_prompts():
        assert counter.count(messages) == len(enc.encode_ordinary(prompt_text(messages)))
        checked += 1
    assert checked > 20


def test_shared_prefix_is_the_exact_token_prefix():
    """The prefix two prompts share, measured segment by segment, equals the longest
    common prefix of their full token sequences."""
    enc = encoding("o200k_base")
    counter = TokenCounter("o200k_base")
    for path in example_trace_paths():
        trace = load_trace(path)
        for strategy in strategy_names():
            prompts = [trace.prompt(n, strategy) for n in range(1, len(trace.turns) + 1)]
            for a, b in itertools.pairwise(prompts):
                ta, tb = (enc.encode_ordinary(prompt_text(p)) for p in (a, b))
                expected = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=False))
                                 if x != y), min(len(ta), len(tb)))
                got = counter.tokenize(b).common_prefix(counter.tokenize(a))
                assert got == expected, (path.stem, strategy)


def test_special_token_text_is_ordinary_text():
    messages = [{"role": "user", "content": "before <|endoftext|> after"}]
    assert count_prompt_tokens(messages) > 3


@pytest.mark.parametrize("text", ["before <|endoftext|> after", "lone \ud800 surrogate",
                                  "emoji 🧪 and CJK 漢字", "", "  \n\n\t x"])
@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_same_ids_as_the_public_bpe_openai_api(name, text):
    assert get_tokenizer(name).encode(text) == encoding(name).encode_ordinary(text)


def test_chars4_is_a_quarter_of_each_message():
    messages = [{"role": "system", "content": "x" * 40}, {"role": "user", "content": "y" * 7}]
    expected = len(message_text("system", "x" * 40)) // 4 + len(message_text("user", "y" * 7)) // 4
    assert count_prompt_tokens(messages, "chars4") == expected
    assert get_tokenizer("chars4").exact is False
    assert get_tokenizer("o200k_base").exact is True


def test_each_distinct_message_is_encoded_once_per_run():
    seen: list[str] = []

    def spy(text: str) -> int:
        seen.append(text)
        return len(text)

    registry = Registry(entry_points=False)

    class Plugin:
        @hookimpl
        def register_tokenizers(self, register):
            register("spy", spy)

    registry.register(Plugin(), "spy-plugin")
    counter = TokenCounter("spy", registry=registry)
    distinct = set()
    trace = load_trace(example_trace_paths()[0])
    for strategy in strategy_names():
        for n in range(1, len(trace.turns) + 1):
            messages = trace.prompt(n, strategy)
            counter.count(messages)
            distinct.update((m["role"], m["content"]) for m in messages)
    assert len(seen) == len(distinct) == counter.encoded
    assert counter.lookups > 3 * counter.encoded  # the cache does the work
    counter.start_run()
    counter.count(trace.prompt(1, "full-history"))  # still in the cross-run cache
    assert len(seen) == len(distinct)


def test_cross_run_cache_is_bounded():
    counter = TokenCounter("chars4", shared_chars=4000)
    for i in range(200):
        counter.start_run()
        counter.count([{"role": "user", "content": f"{i} " + "z" * 900}])
    assert counter._shared_chars <= 4000
    assert len(counter._shared) <= 5


def test_a_huge_run_keeps_a_bounded_number_of_its_texts():
    """Issue 20 item 6: within a run, the texts a counter keeps are bounded (two
    generations of ``run_chars`` / ``piece_chars``), and so are the counted segments
    kept by digest (with the prompt-cache model keeping no tokens, they were the run's
    largest part); a text met again after it was dropped is encoded again, to the same
    tokens."""
    lines = [f"line {i}: " + "word " * (i % 7) for i in range(4000)]
    texts = ["\n".join(lines[k:k + 60]) for k in range(0, 3000, 20)]  # shared lines
    bounded = TokenCounter("o200k_base", run_chars=5000, piece_chars=3000, shared_chars=0)
    free = TokenCounter("o200k_base")
    for counter in (bounded, free):
        counter.start_run()
    for _ in range(2):  # the second pass meets every text again
        for k, text in enumerate(texts):
            for counter in (bounded, free):
                counter.count([{"role": "user", "content": text}])
            a, b = bounded.segment("user", text), free.segment("user", text)
            assert (a.count, a.digest, a.tokens) == (b.count, b.digest, b.tokens), k
    assert free.encoded == len(texts) < bounded.encoded  # dropped: encoded again
    assert len(free._by_digest) == len(texts)
    held = [*bounded._by_digest.values(), *bounded._old_digest.values()]
    assert sum(len(s.tokens) for s in held) <= 2 * (5000 + max(map(len, texts)))
    kept = sum(len(c) for _, c in [*bounded._run, *bounded._old_run])
    assert kept <= 2 * (5000 + max(map(len, texts)))
    assert sum(map(len, [*bounded._pieces, *bounded._old_pieces])) <= 2 * (3000 + 100)
    assert sum(map(len, [*free._pieces, *free._old_pieces])) > 50_000


def test_a_plugin_tokenizer_is_used_like_a_builtin():
    registry = Registry(entry_points=False)

    class Words:
        @hookimpl
        def register_tokenizers(self, register):
            register("words", lambda text: len(text.split()))

    registry.register(Words(), "words-plugin")
    tok = get_tokenizer("words", registry)
    assert tok.count("a b c") == 3
    assert "words" in tokenizer_names(registry)
    assert TokenCounter(tok).count([{"role": "user", "content": "one two"}]) == 3


def test_a_bad_count_is_reported():
    registry = Registry(entry_points=False)

    class Broken:
        @hookimpl
        def register_tokenizers(self, register):
            register("broken", lambda text: -1)

    registry.register(Broken(), "broken-plugin")
    with pytest.raises(ValueError, match="tokenizer 'broken' returned -1"):
        TokenCounter("broken", registry=registry).count([{"role": "user", "content": "x"}])


def test_common_prefix_length():
    assert common_prefix_length("abcdef", "abcxyz") == 3
    assert common_prefix_length("abc", "abc") == 3
    assert common_prefix_length("", "abc") == 0
    assert common_prefix_length(b"\x01\x02", b"\x01\x03") == 1
    assert common_prefix_length("abc", "abcd") == 3


def test_importing_turnpress_does_not_load_the_tokenizer():
    code = "import sys, turnpress; print('bpe_openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_tokenizer_pickles_without_its_loaded_encoding():
    import pickle

    tok = get_tokenizer("o200k_base")
    tok.count("warm up")
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.count("hello world") == tok.count("hello world")


# -- provider-shaped messages (replayed transcripts) --------------------------------------


def _call(cid: str, name: str, arguments: str) -> dict:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_message_body_of_provider_messages():
    from turnpress.core.tokens import message_body

    call = _call("c1", "bash", '{"command": "ls"}')
    assert message_body({"role": "user", "content": "hi"}) == "hi"
    assert message_body({"role": "assistant", "content": None, "tool_calls": [call]}) == \
        '{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}'
    assert message_body({"role": "assistant", "content": "Let me look.",
                         "tool_calls": [call, call]}).splitlines()[0] == "Let me look."
    assert message_body({"role": "tool", "tool_call_id": "c1", "content": "a.py"}) == "a.py"
    parts = [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]
    assert message_body({"role": "user", "content": parts}) == "one\ntwo"


def test_tool_calls_and_tool_messages_are_counted():
    counter = TokenCounter("o200k_base")
    plain = [{"role": "assistant", "content": None}]
    called = [{"role": "assistant", "content": None,
               "tool_calls": [_call("c1", "bash", '{"command": "grep -rn parse_header src"}')]}]
    answered = [*called, {"role": "tool", "tool_call_id": "c1", "content": "src/a.py:1: x"}]
    assert counter.count(plain) < counter.count(called) < counter.count(answered)
    # the same as counting the text the message stands for
    from turnpress.core.tokens import prompt_text

    assert counter.count(answered) == len(get_tokenizer("o200k_base").encode(
        prompt_text(answered)))
    # cached per run: a replayed message is encoded once however often it is counted
    before = counter.encoded
    counter.count(answered)
    counter.count([dict(m) for m in answered])
    assert counter.encoded == before

"""The caches that make ``compare`` fast (issue 9 item 9) give exactly what the uncached
computation gives: token counts and ids, template texts, value texts, cache-model
usage, fact searches, and so every figure of a comparison."""

from __future__ import annotations

import json
import random

import pytest

from turnpress import ToolCall, Trace, Turn
from turnpress.compare import compare_traces
from turnpress.compare.cache import OpenAICache
from turnpress.compare.fact_index import FactIndex
from turnpress.compare.retention import Fact, fact_present
from turnpress.core import render_context, run_cache
from turnpress.core.clojure import to_clojure
from turnpress.core.templates import get_environment
from turnpress.core.tokens import TokenCounter, Tokenizer, get_tokenizer, message_text
from turnpress.examples import example_trace_paths

# texts where a careless cut would change the tokens: a punctuation run that takes the
# line break and a following "/", whitespace runs across lines, indented code, digits,
# apostrophes, non-ASCII letters and marks, CRLF
TRICKY = [
    "def parse(line):\n    return line.split(':')\n\n\n# done\n",
    "ls /tmp)\n/usr/lib/python3/dist-packages\n./setup.py\n/\n",
    "Traceback (most recent call last):\n  File \"x.py\", line 12, in <module>\n"
    "ValueError: bad\n",
    "   123\timport os\n   124\t\n   125\tdef f():\n  \n\t\nx = 1\r\ny = 2\r\n",
    "'s and 'LL\n'quoted'\n\"double\"\n`tick`\n~tilde\n|pipe\n\\back\n{brace}\n[x]\n",
    "caf\u00e9\n\u00e9t\u00e9\nna\u0308ive\n\u65e5\u672c\u8a9e\n\U0001f642 ok\n\u00a0nbsp\n",
    "<returncode>1</returncode>\n<output>\nFAILED tests/test_a.py::test_b - Error\n"
    "</output>\n",
]


def long_text(seed: int) -> str:
    """A multi-line text over the length at which texts are encoded line by line."""
    rng = random.Random(seed)
    return "".join(rng.choice(TRICKY) for _ in range(12))


class _Whole:
    """The same encoding, encoded whole (no ``splits_lines``): the uncached reference."""

    def __init__(self, name: str) -> None:
        self.inner = get_tokenizer(name).count_fn
        self.chars = 0

    def encode(self, text: str) -> list[int]:
        self.chars += len(text)
        return self.inner.encode(text)

    def __call__(self, text: str) -> int:
        return len(self.encode(text))


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_line_by_line_encoding_gives_the_ids_of_the_whole_text(name):
    tokenizer = get_tokenizer(name)
    assert tokenizer.splits_lines
    whole = Tokenizer(name, _Whole(name))
    assert not whole.splits_lines
    pieces, reference = TokenCounter(tokenizer), TokenCounter(whole)
    for seed in range(40):
        text = long_text(seed)
        assert len(text) > 512
        a, b = pieces.segment("tool", text), reference.segment("tool", text)
        assert a.tokens == b.tokens and a.count == b.count == len(
            tokenizer.encode(message_text("tool", text)))


def test_the_cut_rule_is_needed():
    """Cutting before "/" would be wrong (``)\\n/`` is one pre-token): the tokens of the
    pieces differ from the whole text's, so the test above can fail."""
    encode = get_tokenizer("o200k_base").encode
    assert encode(")\n") + encode("/usr") != encode(")\n/usr")


def test_repeated_lines_are_encoded_once_per_run():
    whole = _Whole("o200k_base")
    counter = TokenCounter(Tokenizer("o200k_base", whole))
    counter._chunked = True  # the reference encoder, line by line
    head = "\n".join(f"line {i}: some output" for i in range(100))
    counter.segment("user", head + "\nfirst tail")
    before = whole.chars
    seg = counter.segment("user", head + "\nsecond tail")
    assert whole.chars - before < 40  # only the new line was encoded
    assert seg.count == len(whole.inner.encode(message_text("user", head + "\nsecond tail")))


def transcript_trace() -> Trace:
    """A small transcript with long, multi-line tool outputs that repeat between turns."""
    system = {"role": "system", "content": "You are a coding agent.\n" * 60}
    mission = {"role": "user", "content": "Fix tests/test_parser.py::test_parse_header."}
    turns = []
    for n in range(1, 9):
        cmd = f"cat src/module_{n % 3}.py" if n % 4 else "python -m pytest -x"
        output = long_text(n % 3) + f"\nrun {n}: /tmp/out_{n}.log 4821{n}\n"
        call = {"id": f"c{n}", "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": cmd})}}
        messages = ({"role": "assistant", "content": f"Step {n}: look at module_{n % 3}"
                     f" and /tmp/out_{n - 1}.log 4821{n - 1}", "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": f"c{n}", "content": output})
        turns.append(Turn.succeeded(n, "", None, memory={},
                                    tool_calls=[ToolCall("bash", ({"command": cmd},), output)],
                                    raw_response=cmd, messages=messages))
    return Trace(mission=mission["content"], turns=tuple(turns),
                 system_prompt=system["content"], max_turns=12, name="speed",
                 source="openai-chat", preamble=(system, mission))


@pytest.mark.parametrize("cache", ["openai", "anthropic"])
def test_compare_gives_the_same_figures_with_and_without_line_by_line_encoding(cache):
    traces = [transcript_trace(), *example_trace_paths()[:2]]
    fast = compare_traces(traces, None, cache=cache)
    slow = compare_traces(traces, None, cache=cache,
                          tokenizer=Tokenizer("o200k_base", _Whole("o200k_base")))
    assert fast.dumps() == slow.dumps()
    assert fast.strategy("full-history").input_tokens > 5000


def test_compare_gives_the_same_figures_without_the_template_text_cache(monkeypatch):
    traces = [transcript_trace(), *example_trace_paths()[:2]]
    cached = compare_traces(traces, None).dumps()
    monkeypatch.setattr(render_context, "_text_key", lambda name, variables: None)
    run_cache._RUNS.clear()
    assert compare_traces(traces, None).dumps() == cached


# -- templates and values --------------------------------------------------------------------


def test_text_cache_keys_tell_apart_values_that_render_differently():
    def key(**variables):
        found = render_context._text_key("t.j2", variables)
        assert found is not None
        return found

    distinct = [key(x=1), key(x=True), key(x=1.0), key(x=-0.0), key(x=0.0), key(x="1"),
                key(x=None), key(x=[1]), key(x=(1,)), key(x=["1"]), key(x=[True]),
                key(x={"a": 1}), key(x={"a": "1"}), key(x={"a": 1.0}), key(x=[{"a": 1}]),
                key(x=[{"a": [1]}]), key(y=1)]
    assert len(set(distinct)) == len(distinct)
    assert key(x=[{"a": 1, "b": "c"}]) == key(x=[{"a": 1, "b": "c"}])
    assert render_context._text_key("t.j2", {"x": object()}) is None
    assert render_context._text_key("t.j2", {"x": [[[[["deep"]]]]]}) is None


def test_a_cached_template_text_is_the_rendered_text():
    ctx = render_context.RenderContext(mission="m", system_prompt="", tools={}, data={},
                                    turns_left=3)
    env = get_environment()
    cases = [("progressive_batch/recap.j2",
              {"number": 3, "failed": False, "message": None,
               "calls": [{"name": "bash", "count": 2}], "defined": ["x"], "printed": 1}),
             ("progressive_batch/recap.j2",
              {"number": 3, "failed": True, "message": "boom",
               "calls": [{"name": "bash", "count": 1}], "defined": [], "printed": 0}),
             ("history/tool_calls.j2", {"calls": [{"name": "a", "args": "1"}]}),
             ("history/tool_calls.j2", {"calls": [{"name": "a", "args": "2"}]}),
             ("observation_masking/masked.j2", {"number": 1, "lines": 1}),
             ("observation_masking/masked.j2", {"number": 1, "lines": 2})]
    for _ in range(2):  # the second round comes from the cache
        for name, variables in cases:
            expected = env.get_template(name).render(**variables).rstrip("\n")
            assert ctx.template(name, **variables) == expected


def test_remembered_value_texts_are_to_clojures():
    ctx = render_context.RenderContext(mission="m", system_prompt="", tools={}, data={},
                                    turns_left=3)
    text = "grep -rn 'def parse' src/ | head -50 && echo \"done\" " * 5
    values = [text, {"command": text}, {"a": 1}, {"a": True}, {"a": 1.0}, {"a": -0.0},
              {"a": 0.0}, [1, 2, 3, 4, 5], (1, "x"), {1: "x"}, [[1, [2, [3, [4, [5]]]]]]]
    for _ in range(2):  # the second round comes from the cache
        for value in values:
            for limits in ((3, 300), (3, 60), (None, None)):
                assert ctx.to_clojure(value, *limits) == to_clojure(value, *limits)[0]
    assert ctx.call_args(["abc", 5]) == '"abc" 5'


# -- cache model and facts -------------------------------------------------------------------


def _reference_openai(prompts) -> list[int]:
    """OpenAI's rule by brute force: the longest token prefix shared with any earlier
    prompt, in 128-token steps, at least 1024, for prompts of at least 1024 tokens."""
    out, seen = [], []
    for p in prompts:
        ids = b"".join(s.tokens for s in p.segments)
        shared = max((_common(ids, other) for other in seen), default=0) // 4
        cached = shared // 128 * 128
        out.append(cached if p.total >= 1024 and cached >= 1024 else 0)
        seen.append(ids)
    return out


def _common(a: bytes, b: bytes) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n - n % 4


def test_openai_cache_model_matches_brute_force():
    rng = random.Random(7)
    pool = [" ".join(f"w{i}x{j}" for j in range(rng.randint(100, 700))) for i in range(6)]
    counter = TokenCounter("o200k_base")
    prompts = []
    for _ in range(40):
        parts = [pool[0], *(rng.choice(pool) for _ in range(rng.randint(0, 4)))]
        if rng.random() < 0.3:
            parts[-1] = parts[-1][: rng.randint(1, len(parts[-1]))]
        prompts.append(counter.tokenize([{"role": "user", "content": p} for p in parts]))
    model = OpenAICache()
    assert [model.account(p).cached for p in prompts] == _reference_openai(prompts)


def test_fact_index_lazy_facts_are_searched_on_demand_and_agree():
    bodies = ["ran pytest: FAILED tests/test_a.py 48213", "edited src/parser_utils.py",
              "SYSTEM says 48213", 'json {"cmd": "sed -i \\"s/a/b/\\" f.py"}', "nothing"]
    facts = [Fact("needed", "48213"), Fact("needed", "src/parser_utils.py"),
             Fact("needed", "missing_name"), Fact("needed", 'sed -i "s/a/b/" f.py'),
             Fact("tool call", "bash", ("ls src",))]
    index = FactIndex(exclude=["SYSTEM says 48213"])
    lazy = index.ids(facts[:4], lazy=True)
    eager = index.ids(facts[4:])
    assert index.shown(bodies) == set()  # lazy facts are not searched by shown()
    for chosen in ([0], [1, 2], [0, 3], [2, 4]):
        texts = [bodies[i] for i in chosen]
        expected = {i for i, f in zip([*lazy, *eager], facts, strict=True)
                    if any(fact_present(f, t.replace("SYSTEM says 48213", "\x00"))
                           for t in texts)}
        assert index.shows(texts, [*lazy, *eager]) == expected
    assert index.shows(["ls src; bash"], eager) == set()
    assert index.ids([facts[0]]) == [lazy[0]]  # asked for eagerly: now searched by shown()
    assert lazy[0] in index.shown(bodies[:1])

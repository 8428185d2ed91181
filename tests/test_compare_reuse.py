"""What compare reuses from one prompt to the next (issue 9 item 9) gives exactly what
a fresh computation gives: facts and their ids turn by turn, the tracked-fact search,
a prompt counted from the prompt before, and the cache model's shared prefix."""

from __future__ import annotations

import random

from turnpress import ToolCall, Turn
from turnpress.compare.cache import OpenAICache
from turnpress.compare.fact_index import FactIndex, RunFacts
from turnpress.compare.retention import Fact, history_facts, name_only
from turnpress.compare.reuse import PromptTrack, roles
from turnpress.core.model import Failure
from turnpress.core.tokens import TokenCounter, message_body


def _turns() -> list[Turn]:
    out = []
    for n in range(1, 9):
        calls = [ToolCall("bash", ({"command": f"ls dir_{n % 3}"},), "ok"),
                 ToolCall("grep", ({"pattern": "x", "path": f"f{n}.py"},), "hit")]
        prints = [f"line {n % 4}\n  shared line\n"] if n % 2 else []
        memory = {f"v{k}": k for k in range(n % 3)}
        if n % 3 == 0:
            out.append(Turn.failed(n, "", Failure("tool_error", f"Error {n}: bad"), memory=memory,
                                   tool_calls=calls, prints=prints))
        else:
            out.append(Turn.succeeded(n, "", None, memory=memory, tool_calls=calls,
                                      prints=prints))
    return out


def test_run_facts_are_history_facts_in_any_order_of_prompts():
    turns = _turns()
    index = FactIndex()
    run = RunFacts(index, "Fix the parser.")
    order = [*range(len(turns) + 1), *reversed(range(len(turns) + 1))]
    random.Random(3).shuffle(order)
    for n in [*range(len(turns) + 1), *order]:
        facts = history_facts(turns[:n], "Fix the parser.")
        expected = [(index.facts.index(f), index.facts.index(name_only(f) or f))
                    for f in facts] if all(f in index.facts for f in facts) else None
        got = run.pairs(turns[:n])
        assert [(index.facts[i], index.facts[j]) for i, j in got] == \
            [(f, name_only(f) or f) for f in facts]
        if expected is not None:
            assert got == expected
    assert any(f.kind == "last error" for f in history_facts(turns[:3], "m"))


def test_run_facts_make_each_turns_facts_once(monkeypatch):
    from turnpress.compare import fact_index

    made = []
    real = fact_index.tool_call_fact
    monkeypatch.setattr(fact_index, "tool_call_fact",
                        lambda name, args: made.append(name) or real(name, args))
    turns = _turns()
    run = RunFacts(FactIndex(), "m")
    for n in range(len(turns) + 1):
        run.pairs(turns[:n])
    assert len(made) == sum(len(t.tool_calls) for t in turns)  # not once per prompt


def test_shown_tracked_finds_what_shown_finds_for_the_tracked_facts():
    rng = random.Random(5)
    words = ["ls src", "bash", "grep(x)", '"bash"', "tool/bash", "parser_utils.py", "42 ",
             "nothing", "(bash ls src)", "SYSTEM"]
    facts = [Fact("tool call", "bash", ("ls src",)), Fact("tool call", "bash"),
             Fact("name", "parser_utils.py"), Fact("printed line", "42"),
             Fact("tool call", "grep", ("x",))]
    texts = ["".join(rng.choice(words) for _ in range(rng.randint(1, 6))) for _ in range(30)]
    reference = FactIndex(exclude=["SYSTEM"])
    ids = reference.ids(facts)
    index = FactIndex(exclude=["SYSTEM"])
    assert index.ids(facts) == ids
    for step in range(len(facts)):
        index.track([ids[step]])
        tracked = set(ids[: step + 1])
        for _ in range(10):
            chosen = rng.sample(texts, rng.randint(1, 6))
            assert index.shown_tracked(chosen) & tracked == reference.shown(chosen) & tracked
            assert index.shown_tracked(chosen) <= reference.shown(chosen)


def _messages(rng: random.Random, pool: list[str]) -> list[dict]:
    return [{"role": rng.choice(["user", "assistant", "tool"]), "content": rng.choice(pool)}
            for _ in range(rng.randint(0, 8))]


def test_a_prompt_counted_from_the_one_before_is_counted_as_from_scratch():
    rng = random.Random(11)
    pool = [f"message {i}\n" + "word " * rng.randint(1, 300) for i in range(6)]
    counter, fresh = TokenCounter("o200k_base"), TokenCounter("o200k_base")
    track = PromptTrack()
    messages = _messages(rng, pool)
    reused = 0
    for _ in range(60):
        if rng.random() < 0.7:  # mostly: keep a prefix, change or add the rest
            messages = messages[: rng.randint(0, len(messages))] + _messages(rng, pool)
        else:
            messages = _messages(rng, pool)
        messages = [dict(m) for m in messages]  # equal messages, new dicts
        bodies = counter.bodies(messages)
        points = [(i, None) for i in range(0, len(messages), 3)]
        prefix = track.prefix(roles(messages), bodies)
        if prefix is not None:
            assert [m["role"] for m in messages[: prefix[1]]] == track.roles[: prefix[1]]
            assert bodies[: prefix[1]] == track.bodies[: prefix[1]]
            reused += prefix[1]
        prompt = counter.tokenize(messages, points, bodies, prefix)
        track.update(roles(messages), bodies, prompt)
        expected = fresh.tokenize(messages, points)
        assert prompt.total == expected.total
        assert prompt.chain == expected.chain
        assert prompt.breakpoints == expected.breakpoints
        assert [s.digest for s in prompt.segments] == [s.digest for s in expected.segments]
        assert prompt.cumulative == expected.cumulative
        for i in range(len(messages) + 2):
            assert prompt.tokens_before(i) == sum(s.count for s in expected.segments[:i])
    assert reused > 50


def test_a_reused_prefix_is_not_looked_up_again(monkeypatch):
    counter = TokenCounter("o200k_base")
    messages = [{"role": "user", "content": f"text {i}"} for i in range(20)]
    first = counter.tokenize(messages)
    calls = []
    real = counter._lookup
    monkeypatch.setattr(counter, "_lookup", lambda role, body: calls.append(body)
                        or real(role, body))
    monkeypatch.setattr(counter, "_run", {})  # every lookup would miss the run cache
    longer = [*messages, {"role": "assistant", "content": "new"}]
    second = counter.tokenize(longer, (), counter.bodies(longer), (first, 20))
    assert calls == ["new"]
    assert second.segments[:20] == first.segments


def test_shared_prefix_by_sorted_neighbours_matches_brute_force():
    rng = random.Random(2)
    pool = [" ".join(f"w{rng.randint(0, 3)}" for _ in range(rng.randint(50, 400)))
            for _ in range(12)]
    counter = TokenCounter("o200k_base")
    model = OpenAICache(min_prompt=0, step=1, min_cached=1)
    seen: list[bytes] = []
    for _ in range(60):
        parts = [rng.choice(pool[:2]), *(rng.choice(pool) for _ in range(rng.randint(0, 3)))]
        if rng.random() < 0.5:
            parts[-1] = parts[-1][: rng.randint(1, len(parts[-1]))]
        prompt = counter.tokenize([{"role": "user", "content": p} for p in parts])
        ids = b"".join(s.tokens for s in prompt.segments)
        best = 0
        for other in seen:
            n = 0
            while n < min(len(ids), len(other)) and ids[n] == other[n]:
                n += 1
            best = max(best, n // 4)
        assert model.shared_prefix(prompt) == best
        assert model.account(prompt).cached == best
        seen.append(ids)


def test_shows_searches_from_the_newest_text_and_stops_at_a_hit(monkeypatch):
    """FactIndex.shows searches a prompt's texts newest first, stops at the first that
    shows the fact, and never searches a (text, fact) twice: a prompt whose texts are all
    answered takes no search at all (counted as calls of fact_present)."""
    from turnpress.compare import fact_index

    searched: list[str] = []
    real = fact_index.fact_present
    monkeypatch.setattr(fact_index, "fact_present",
                        lambda fact, text, *a: searched.append(text) or real(fact, text, *a))
    index = FactIndex()
    ids = index.ids([Fact("needed", "parser_utils.py"), Fact("needed", "absent_name")],
                    lazy=True)
    bodies = [f"old text {i} parser_utils.py" for i in range(50)] + ["new parser_utils.py"]
    assert index.shows(bodies, ids[:1]) == {ids[0]}
    assert searched == ["new parser_utils.py"]  # the newest, a hit: the rest not searched
    searched.clear()
    assert index.shows(bodies, ids) == {ids[0]}  # the absent one is looked for everywhere
    assert searched == []  # ... by str.find: no text holds its probe
    assert index.shows(bodies, ids) == {ids[0]}
    assert searched == []  # asked again: every answer known
    # a new text holding it is the only one searched; an older prompt, whose texts were
    # not all searched for the first fact, searches its newest first again
    assert index.shows([*bodies, "absent_name at last"], ids) == set(ids)
    assert searched == ["absent_name at last"]
    searched.clear()
    assert index.shows(bodies[:10], ids) == {ids[0]}
    assert searched == [bodies[9]]


def test_bodies_are_the_bodies_of_each_message():
    calls = [{"id": "c1", "type": "function",
              "function": {"name": "bash", "arguments": '{"command": "ls"}'}}]
    messages = [{"role": "user", "content": "plain"},
                {"role": "assistant", "content": None, "tool_calls": calls},
                {"role": "assistant", "content": "thinking", "tool_calls": calls},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"x": 1}]},
                {"role": "assistant", "content": "no calls", "tool_calls": []}]
    counter = TokenCounter("o200k_base")
    for _ in range(2):  # the second time from the per-run memo
        assert counter.bodies(messages) == [message_body(m) for m in messages]


def test_same_counts_the_leading_messages_equal_to_the_previous_prompts():
    track = PromptTrack()
    first = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    assert track.same(first) == 0  # no previous prompt yet
    counter = TokenCounter("chars4")
    track.update(roles(first), counter.bodies(first), counter.tokenize(first), first)
    assert track.same([*first, {"role": "user", "content": "new"}]) == 5
    assert track.same([first[0], dict(first[1]), {"role": "user", "content": "x"}]) == 2
    assert track.same([{"role": "assistant", "content": "m0"}, *first[1:]]) == 0
    assert track.same(first[:3]) == 3
    assert track.same([]) == 0


def _reusing_strategy(name: str, copy: bool, bad_at: int | None = None):
    """A strategy keeping one message dict per turn for the run (as the built-in ones
    do), or handing out fresh copies of every message each time (``copy``)."""
    from turnpress import Strategy

    class Reusing(Strategy):
        def __init__(self):
            self.made = {}

        def to_messages(self, turns, memory, ctx):
            out = [ctx.message("system", ctx.system_prompt or "sys"),
                   ctx.message("user", ctx.mission)]
            for t in turns:
                key = (id(ctx.mission), t.number)
                if key not in self.made:
                    self.made[key] = {"role": "assistant",
                                      "content": f"turn {t.number}: {t.program}\n" * 3}
                out.append(self.made[key])
            if bad_at is not None and len(turns) >= bad_at:
                out.append({"role": "user", "content": 42})
            return [dict(m) for m in out] if copy else out

    Reusing.name = name
    return Reusing


def test_messages_shared_with_the_previous_prompt_count_as_fresh_copies(fresh_registry,
                                                                        monkeypatch):
    from turnpress import hookimpl
    from turnpress.compare import compare_traces
    from turnpress.core.registry import get_registry
    from turnpress.examples import example_trace_paths

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(_reusing_strategy("reusing", copy=False))
            register(_reusing_strategy("copying", copy=True))

    get_registry().register(Plugin(), "reuse-plugin")
    path = next(p for p in example_trace_paths() if p.stem == "phone-campaign")
    results = {cache: compare_traces(path, ["reusing", "copying", "full-history"], cache=cache)
               for cache in ("openai", "anthropic")}
    for result in results.values():
        reusing, copying = result.strategy("reusing"), result.strategy("copying")
        assert list(reusing.per_turn()) == list(copying.per_turn())
        assert reusing.input_tokens > 0 and reusing.prompts == copying.prompts > 2
    # the dicts a strategy hands out again are not made into bodies again (equal copies
    # are recognised too, by comparing them: fewer bodies, but not as few)
    made: list[int] = []
    real = TokenCounter.bodies
    monkeypatch.setattr(TokenCounter, "bodies",
                        lambda self, ms: made.append(len(ms)) or real(self, ms))
    for name in ("reusing", "copying"):
        made.clear()
        kept = compare_traces(path, [name, "full-history"], keep_prompts=1).kept_prompts[0]
        counted = sum(len(ms) for prompt in kept.prompts for ms in prompt)
        assert 0 < sum(made) < counted / 2  # the new messages of each prompt, about


def test_a_bad_message_after_a_reused_prefix_is_named_by_its_index(fresh_registry):
    from turnpress import hookimpl
    from turnpress.compare import compare_traces
    from turnpress.core.registry import get_registry
    from turnpress.examples import example_trace_paths

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(_reusing_strategy("late-bad", copy=False, bad_at=3))

    get_registry().register(Plugin(), "bad-plugin")
    path = next(p for p in example_trace_paths() if p.stem == "phone-campaign")
    result = compare_traces(path, ["late-bad", "full-history"], tokenizer="chars4")
    [(label, status, reason)] = result.not_compared
    assert (label, status) == ("late-bad", "failed")
    assert "turn 4" in reason and "bad message at index 5" in reason, reason


def test_a_strategy_changing_a_message_it_handed_out_is_counted_as_changed(fresh_registry):
    """The strategy contract says a returned message is not changed later, but a plugin
    that rewrites its kept dicts in place must still be counted right: the track
    compares with copies taken when each prompt was counted, not with the dicts."""
    from turnpress import Strategy, hookimpl
    from turnpress.compare import compare_traces
    from turnpress.core.registry import get_registry
    from turnpress.examples import example_trace_paths

    def strategy(name, in_place):
        class Rewriting(Strategy):
            def __init__(self):
                self.kept = {}

            def to_messages(self, turns, memory, ctx):
                out = [ctx.message("user", ctx.mission)]
                for t in turns:
                    text = f"turn {t.number}: {t.program}" + " again" * len(turns)
                    if in_place:
                        kept = self.kept.setdefault(t.number, {"role": "assistant"})
                        kept["content"] = text  # the same dict, changed each prompt
                        out.append(kept)
                    else:
                        out.append({"role": "assistant", "content": text})
                return out

        Rewriting.name = name
        return Rewriting

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(strategy("in-place", True))
            register(strategy("fresh", False))

    get_registry().register(Plugin(), "rewrite-plugin")
    path = next(p for p in example_trace_paths() if p.stem == "phone-campaign")
    for cache in ("openai", "anthropic"):
        result = compare_traces(path, ["in-place", "fresh", "full-history"], cache=cache)
        in_place, fresh = result.strategy("in-place"), result.strategy("fresh")
        assert list(in_place.per_turn()) == list(fresh.per_turn())
        assert in_place.input_tokens == fresh.input_tokens > 0


def test_a_track_keeps_its_prompt_without_token_ids_and_the_cache_model_agrees():
    """Issue 20 item 6: a track keeps the previous prompt's long segments without their
    token ids (an append-only strategy's track held the tokens of the whole run); the
    prompts counted from it give the cache model the same answers as prompts counted
    afresh, for an append-only strategy and for a sliding window."""
    counter = TokenCounter("o200k_base")
    counter.start_run()

    def text(tag: object) -> str:
        return " ".join(f"w{j}x{tag}" for j in range(300))

    for window in (None, 3):
        tracks = PromptTrack()
        fresh = OpenAICache(min_prompt=0, step=1, min_cached=1)
        reused = OpenAICache(min_prompt=0, step=1, min_cached=1)
        users: list[dict[str, str]] = []
        for i in range(10):
            users.append({"role": "user" if i % 2 else "assistant", "content": text(i)})
            kept = users if window is None else users[-window:]
            messages = [{"role": "system", "content": text("s")}, *kept]
            kinds, bodies = roles(messages), counter.bodies(messages)
            prompt = counter.tokenize(messages, (), bodies, tracks.prefix(kinds, bodies))
            tracks.update(kinds, bodies, prompt, messages)
            assert all(s.tokens is None for s in tracks.prompt.segments)
            assert tracks.prompt.total == prompt.total
            assert reused.account(prompt) == fresh.account(counter.tokenize(messages))


def test_a_prompt_that_is_the_references_keeps_the_references_light_copy():
    """A strategy whose prompt is the baseline's (same roles, bodies, breakpoints) takes
    the baseline's counted prompt and the light copy its track keeps, not a new one; its
    next prompt, counted from that copy, is counted as from scratch."""
    from turnpress.compare.counting import PromptCounter
    from turnpress.core.tokens import get_tokenizer

    counting = PromptCounter(get_tokenizer("o200k_base"), "openai")
    counting.counter.start_run()
    base_track, track = PromptTrack(), PromptTrack()
    long = " ".join(f"w{j}" for j in range(400))
    base = [{"role": "system", "content": long}, {"role": "user", "content": "hi"}]
    mine = [dict(m) for m in base]
    base_prompt, _ = counting.tokenize(base, (), base_track)
    prompt, _ = counting.tokenize(mine, (), track, 0, (base_track, base_prompt))
    assert prompt is base_prompt
    assert track.prompt is base_track.prompt
    assert all(s.tokens is None for s in track.prompt.segments if s.count > 128)
    after = [*mine, {"role": "assistant", "content": long + " more"}]
    nxt, _ = counting.tokenize(after, (), track, track.same(after), (base_track, base_prompt))
    fresh = TokenCounter("o200k_base").tokenize(after)
    assert (nxt.total, nxt.chain) == (fresh.total, fresh.chain)
    assert [s.count for s in nxt.segments] == [s.count for s in fresh.segments]


def test_a_track_keeps_fresh_copies_after_cutting_its_list_in_place():
    track = PromptTrack()
    counter = TokenCounter("chars4")
    first = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    prompt = counter.tokenize(first)
    track.update(roles(first), counter.bodies(first), prompt, first)
    second = [first[0], {"role": "assistant", "content": "c"}]
    track.update(roles(second), counter.bodies(second), counter.tokenize(second), second,
                 track.same(second))
    assert track.messages == second
    assert all(a is not b for a, b in zip(track.messages, second, strict=True))
    second[0]["content"] = "changed"
    assert track.same(second) == 0


def test_common_prefix_from_a_known_start_is_the_common_prefix():
    from turnpress.core.tokens import common_prefix_length

    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("ab") for _ in range(rng.randint(0, 8))]
        b = a[:rng.randint(0, len(a))] + [rng.choice("abc") for _ in range(rng.randint(0, 4))]
        k = common_prefix_length(a, b)
        for start in range(k + 1):  # lists, and the same items as a string
            assert common_prefix_length(a, b, start) == k
            assert common_prefix_length("".join(a), "".join(b), start) == k

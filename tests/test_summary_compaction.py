"""summary-compaction (issue 22): the oldest turns replaced by one summary, the
summarizers (``register_summarizers``), and what compare bills for them.

The ``llm`` summarizer is tested against a local fake OpenAI-compatible server
(127.0.0.1, tests/agent/fake_openai.py); nothing here needs a key or the network.
"""

from __future__ import annotations

import json
import types
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from agent.fake_openai import FakeLLMServer
from click.testing import CliRunner

from turnpress import PluginError, get_strategy, load_trace, render, save_trace
from turnpress.agent import Agent, ScriptedLLM
from turnpress.cli import main
from turnpress.compare.engine import compare_traces
from turnpress.compare.pricing import PRICE_PRESETS, Price, parse_price
from turnpress.compress import compress
from turnpress.core.compression import RenderContext, model_calls
from turnpress.core.hookspecs import hookimpl
from turnpress.core.message_text import message_body, message_text
from turnpress.core.providers import format_text, to_anthropic
from turnpress.core.registry import Registry, reset_registry
from turnpress.core.summaries import Summary, SummaryBudgetExceeded
from turnpress.examples import example_trace_paths
from turnpress.plugins._imported_messages import answered
from turnpress.plugins.summarizers import SummaryCache, SummaryRuntime
from turnpress.plugins.summary_compaction import SummaryCompaction

SYSTEM = "You are a careful coding agent. Use the tools."
MISSION = "Find the file that defines parse_config and fix its off-by-one bug."


def chat_run(turns: int = 12, pad: int = 40) -> list[dict[str, Any]]:
    """An OpenAI chat transcript: each turn one tool call and its result."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM},
                                      {"role": "user", "content": MISSION}]
    for i in range(1, turns + 1):
        call_id = f"call_{i}"
        messages.append({"role": "assistant", "content": f"Step {i}: look at part {i}.",
                         "tool_calls": [{"id": call_id, "type": "function", "function": {
                             "name": "bash", "arguments": json.dumps({"cmd": f"cat f{i}.py"})}}]})
        body = "\n".join(f"line{i}_{k}" for k in range(pad))
        messages.append({"role": "tool", "tool_call_id": call_id,
                         "content": f"src/module_{i}.py: {body}"})
    messages.append({"role": "assistant", "content": "Done."})
    return messages


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(chat_run()), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def no_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Summaries go to a temporary cache, never to the user's."""
    cache = tmp_path / "user-cache"
    monkeypatch.setenv("TURNPRESS_SUMMARY_CACHE", str(cache))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return cache


SPEC = "summary-compaction:trigger=1100,keep=2"


def _prompts(path: Path, spec: str) -> list[list[dict[str, Any]]]:
    trace = load_trace(path)
    strategy = get_strategy(spec)
    return [render(**trace.prompt_arguments(n), compression=strategy)
            for n in range(1, len(trace.turns) + 1)]


# -- the schedule -------------------------------------------------------------------------


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="'trigger' must be an integer >= 1"):
        get_strategy("summary-compaction:trigger=0")
    with pytest.raises(ValueError, match="unknown summarizer 'nope'; registered "
                                         "summarizers: extractive, llm"):
        get_strategy("summary-compaction:summarizer=nope")
    with pytest.raises(ValueError, match="use llm:openai:MODEL, llm:anthropic:MODEL"):
        get_strategy("summary-compaction:summarizer=llm:gpt-4.1")


def test_without_a_model_it_falls_back_to_extractive_and_says_why() -> None:
    strategy = get_strategy("summary-compaction")
    assert strategy.summarizer_name == "extractive"
    assert "no summarizer model configured" in strategy.note
    keyless = get_strategy("summary-compaction:summarizer=llm:openai:gpt-4.1-mini")
    assert keyless.summarizer_name == "extractive"
    assert "no API key (set OPENAI_API_KEY or give --base-url)" in keyless.note
    assert get_strategy("summary-compaction:summarizer=extractive").note is None


def test_below_the_trigger_it_is_full_history(run_file: Path) -> None:
    trace = load_trace(run_file)
    args = trace.prompt_arguments(len(trace.turns) + 1)
    last = render(**args, compression="summary-compaction:summarizer=extractive")
    assert last == render(**args, compression="full-history")  # the default trigger: 150k


def test_summary_replaces_exactly_the_folded_turns(run_file: Path) -> None:
    """Each prompt is the preamble, at most one summary message, then the kept turns'
    original messages; the summary covers turns 1..folded; the trigger and keep hold."""
    trace = load_trace(run_file)
    strategy = get_strategy(SPEC + ",summarizer=extractive")
    compactions = []
    for n in range(1, len(trace.turns) + 1):
        args = trace.prompt_arguments(n)
        messages = render(**args, compression=strategy)
        full = render(**args, compression="full-history")
        turns = args["turns"]
        folded = strategy.folded_count(turns, _ctx(args))
        calls = model_calls(**args, compression=strategy)
        compactions += [n] * len(calls)
        if folded == 0:
            assert messages == full
            continue
        assert folded <= len(turns) - 2  # keep=2: the last two turns stay as sent
        kept = [m for t in turns[folded:] for m in t.messages]
        assert messages[:2] == full[:2]  # system prompt and mission
        summary = messages[2]
        assert summary["role"] == "user"
        assert summary["content"].startswith(f"[Summary of turns 1-{folded}:")
        assert messages[3:] == kept
        assert calls == () or folded == len(turns) - 2  # a new summary keeps exactly 2
    assert compactions[0] == 6  # 5 turns pass 1100 tokens (36 + 5 x 246)


def _ctx(args: dict[str, Any]) -> RenderContext:
    return RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                         tools=args["tools"], data=args["data"],
                         turns_left=args["turns_left"], preamble=args["preamble"])


def test_tool_call_pairing_stays_valid_in_openai_and_anthropic_shapes(run_file: Path) -> None:
    for messages in _prompts(run_file, SPEC + ",summarizer=extractive"):
        openai = compress([*messages, {"role": "assistant", "content": "next"}],
                          strategy=SPEC + ",summarizer=extractive")
        assert answered(openai)
        system, conversation = to_anthropic(messages)
        assert system == SYSTEM
        roles = [m["role"] for m in conversation]
        assert all(a != b for a, b in pairwise(roles))  # alternating
        for i, message in enumerate(conversation):
            blocks = message["content"] if isinstance(message["content"], list) else []
            uses = [b["id"] for b in blocks if b.get("type") == "tool_use"]
            if uses:
                after = conversation[i + 1]["content"]
                results = [b["tool_use_id"] for b in after if b.get("type") == "tool_result"]
                assert results == uses


# -- snapshots: just before and just after a compaction (extractive) ---------------------------


def _around_first_compaction(path: Path, spec: str) -> tuple[str, str]:
    trace = load_trace(path)
    strategy = get_strategy(spec)
    before = None
    for n in range(1, len(trace.turns) + 1):
        args = trace.prompt_arguments(n)
        messages = render(**args, compression=strategy)
        if model_calls(**args, compression=strategy):
            assert before is not None
            return format_text(before), format_text(messages)
        before = messages
    raise AssertionError("no compaction")


def test_snapshot_transcript_before_and_after(run_file: Path, snapshot) -> None:
    before, after = _around_first_compaction(run_file, SPEC + ",summarizer=extractive")
    assert "===== before =====\n" + before + "\n===== after =====\n" + after == snapshot


def test_snapshot_ptc_lisp_before_and_after(snapshot) -> None:
    [path] = [p for p in example_trace_paths() if p.stem == "inventory-audit"]
    before, after = _around_first_compaction(
        path, "summary-compaction:trigger=1200,keep=1,summarizer=extractive")
    assert "===== before =====\n" + before + "\n===== after =====\n" + after == snapshot


# -- the llm summarizer against a fake OpenAI-compatible server ------------------------------


def _llm_compare(run_file: Path, server: FakeLLMServer, cache: Path, **kw: Any) -> Any:
    return compare_traces([str(run_file)], [SPEC], summarizer="llm:openai:fake-mini",
                          base_url=server.base_url + "/v1", summary_cache=cache,
                          price="openai-gpt-4.1", keep_prompts=1, **kw)


def test_request_carries_the_folded_history_and_the_template(run_file: Path,
                                                             tmp_path: Path) -> None:
    with FakeLLMServer(["SUMMARY ONE", "SUMMARY TWO", "SUMMARY THREE"]) as server:
        result = _llm_compare(run_file, server, tmp_path / "c")
    assert len(server.requests) == 3
    first = server.requests[0].body
    assert first["model"] == "fake-mini"
    system, user = first["messages"]
    template = (Path(__file__).resolve().parent.parent / "turnpress" / "templates"
                / "summary" / "system.j2").read_text()
    assert system["content"] == template.split("-#}\n", 1)[1].rstrip("\n")
    assert MISSION in user["content"]
    folded = int(user["content"].rsplit("Write the summary of turns 1-", 1)[1].rstrip("."))
    for i in range(1, folded + 1):  # every folded turn's call and result, and no other
        assert f"src/module_{i}.py" in user["content"]
    assert f"src/module_{folded + 1}.py" not in user["content"]
    second = server.requests[1].body["messages"][1]["content"]
    assert "SUMMARY ONE" in second  # the previous summary is summarised again
    sr = result.strategies[0]
    assert (sr.summary_calls, sr.summary_input_tokens, sr.summary_output_tokens) == (3, 300, 30)
    assert result.notes == []
    # recall is measured on the prompts as sent: the last one starts with the summary
    last = result.kept_prompts[0].prompts[-1][0]
    assert last[2]["content"].endswith("SUMMARY THREE")


def test_the_anthropic_adapter_sends_the_same_request(run_file: Path, tmp_path: Path) -> None:
    with FakeLLMServer(["S1", "S2", "S3"]) as server:
        result = compare_traces([str(run_file)], [SPEC], summarizer="llm:anthropic:fake-haiku",
                                base_url=server.base_url, summary_cache=tmp_path / "c",
                                price="anthropic-haiku-3.5", cache="anthropic")
    assert [r.path for r in server.requests] == ["/v1/messages"] * 3
    body = server.requests[0].body
    assert body["model"] == "fake-haiku" and body["max_tokens"] == 2048
    assert body["system"].startswith("You compact the history of a code-writing agent.")
    assert "src/module_1.py" in body["messages"][0]["content"]
    sr = result.strategies[0]
    # haiku-3.5: 3 calls of 100 input (at 0.80) and 10 output tokens (at 4.00)
    assert sr.summary_cost_usd == pytest.approx(3 * (100 * 0.8 + 10 * 4.0) / 1e6, abs=1e-15)


def test_the_summary_is_in_the_prompt_as_sent(run_file: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    with FakeLLMServer(["SUMMARY ONE", "SUMMARY TWO", "SUMMARY THREE"]) as server:
        _llm_compare(run_file, server, cache)
        strategy = get_strategy(SPEC + ",summarizer=llm:openai:fake-mini,base_url="
                                + server.base_url + "/v1")
        strategy = strategy.configured(runtime=SummaryRuntime(cache))
        trace = load_trace(run_file)
        last = render(**trace.prompt_arguments(len(trace.turns)), compression=strategy)
        assert len(server.requests) == 3  # every summary came from the cache
    assert last[2]["content"].endswith("SUMMARY THREE")


def test_the_cache_makes_a_second_run_send_no_request(run_file: Path, tmp_path: Path) -> None:
    cache = tmp_path / "c"
    with FakeLLMServer(["S1", "S2", "S3"]) as server:
        first = _llm_compare(run_file, server, cache)
        sent = len(server.requests)
        second = _llm_compare(run_file, server, cache)
        assert len(server.requests) == sent == 3
    assert first.dumps() == second.dumps()  # the same numbers, summary usage included
    assert len(list(cache.rglob("*.json"))) == 3


def test_the_budget_stops_a_run(run_file: Path, tmp_path: Path) -> None:
    """gpt-4.1 prices (2 in, 8 out per million): each request is estimated as its input
    tokens plus 2048 output tokens (~$0.0185). The first one bills 100 input and 2000
    output tokens ($0.0162), so with $0.03 the second could go past the budget."""
    with FakeLLMServer(["S1", "S2", "S3"], completion_tokens=2000) as server:
        with pytest.raises(SummaryBudgetExceeded, match=r"1 summarization request spent "
                                                        r"\$0\.0162 of \$0\.0300"):
            _llm_compare(run_file, server, tmp_path / "c", summary_budget=0.03)
        assert len(server.requests) == 1
        with pytest.raises(ValueError, match="with --jobs 1"):
            _llm_compare(run_file, server, tmp_path / "c", summary_budget=1.0, jobs=2)


def test_cli_budget_and_summarizer_options(run_file: Path, tmp_path: Path) -> None:
    with FakeLLMServer(["S1", "S2", "S3"]) as server:
        args = ["compare", str(run_file), "-s", SPEC, "--summarizer",
                "llm:openai:fake-mini", "--base-url", server.base_url + "/v1",
                "--summary-cache", str(tmp_path / "c")]
        stopped = CliRunner().invoke(main, [*args, "--summary-budget", "0.001"])
        assert stopped.exit_code == 1
        assert "summary budget reached: 0 summarization requests spent $0.0000" \
            in stopped.output
        assert "Raise --summary-budget" in stopped.output
        done = CliRunner().invoke(main, [*args, "--json"])
        assert done.exit_code == 0, done.output
    doc = json.loads(done.output)
    entry = doc["strategies"][0]
    assert (entry["summary_calls"], entry["summary_input_tokens"],
            entry["summary_output_tokens"]) == (3, 300, 30)
    assert doc["notes"] == []


def test_cli_footer_says_when_it_fell_back(run_file: Path) -> None:
    out = CliRunner().invoke(main, ["compare", str(run_file), "-s", SPEC])
    assert out.exit_code == 0, out.output
    assert ("note: summary-compaction:trigger=1100,keep=2: no summarizer model configured "
            "(--summarizer llm:openai:MODEL); used the extractive summarizer") \
        in " ".join(out.output.split())
    for option in (["--summarizer", "extractive"], ["--base-url", "http://127.0.0.1:9"]):
        # --base-url alone was ignored without a word
        lonely = CliRunner().invoke(main, ["compare", str(run_file), "-s", "full-history",
                                           *option])
        assert lonely.exit_code == 2
        assert "add -s summary-compaction" in lonely.output


# -- cost accounting on a hand-computed example -------------------------------------------------


class FixedUsage:
    """A summarizer whose k-th call bills k*1000 input and k*100 output tokens."""

    name = "fixed-usage"

    def __init__(self, model: str = "", base_url: str = "") -> None:
        self.calls = 0
        self.options: dict[str, Any] = {}

    def cache_key(self, turns: Any, ctx: Any, *, previous: Any = None, start: int = 0) -> str:
        return f"fixed-{len(turns)}"

    def summarize(self, turns: Any, ctx: Any, *, previous: Any = None,
                  start: int = 0) -> Summary:
        self.calls += 1
        return Summary(f"summary {self.calls}", 1000 * self.calls, 100 * self.calls)


class TooLong(FixedUsage):
    """A summarizer whose summary is longer than any history it would replace."""

    name = "too-long"

    def summarize(self, turns: Any, ctx: Any, *, previous: Any = None,
                  start: int = 0) -> Summary:
        return Summary("blah " * 5000, 10, 10)


def _register_test_summarizers(register: Any) -> None:
    register("fixed-usage", FixedUsage)
    register("too-long", TooLong)


@pytest.fixture
def fixed_usage_registry():
    plugin = types.SimpleNamespace(
        register_summarizers=hookimpl(_register_test_summarizers))
    registry = Registry(entry_points=False)
    registry.register(plugin, name="fixed")
    previous = reset_registry(registry)
    yield registry
    reset_registry(previous)


def test_cost_accounting_three_compactions_exact_usd(run_file: Path, tmp_path: Path,
                                                     fixed_usage_registry) -> None:
    """3 compactions billing 1000/100, 2000/200 and 3000/300 tokens at in=2, out=8 USD per
    million: (6000 * 2 + 600 * 8) / 1e6 = 0.0168 USD, on top of the prompts' own cost
    (cache model none: every prompt token at the input price)."""
    price = parse_price("in=2,cached=0.5,out=8")
    result = compare_traces([str(run_file)], [SPEC + ",summarizer=fixed-usage"],
                            cache="none", price=price, summary_cache=tmp_path / "c")
    sr = result.strategies[0]
    assert sr.summary_calls == 3
    assert (sr.summary_input_tokens, sr.summary_output_tokens) == (6000, 600)
    assert sr.summary_cost_usd == pytest.approx(0.0168, abs=1e-15)
    prompts = sum(t.input_tokens for t in sr.per_turn()) * 2 / 1e6
    assert sr.cost_usd == pytest.approx(prompts + 0.0168, abs=1e-12)
    assert [turn for _, turn, _, _ in sr.calls()] == [6, 9, 12]
    entry = result.to_json()["strategies"][0]
    assert entry["summary_cost_usd"] == 0.0168
    assert entry["summary_per_call"][0] == {"trace": "run", "turn": 6, "input_tokens": 1000,
                                            "output_tokens": 100}
    assert sum(sr.trace_costs(price)) == pytest.approx(sr.cost_usd, abs=1e-12)


def test_never_larger_a_longer_summary_keeps_the_turns(run_file: Path, tmp_path: Path,
                                                     fixed_usage_registry) -> None:
    """A summary longer than the messages it would replace is not used: every prompt
    stays the full history; each try is still billed, and the next one comes once
    keep (2) more turns were added (prompts 6, 9, 12)."""
    spec = SPEC + ",summarizer=too-long"
    trace = load_trace(run_file)
    strategy = get_strategy(spec)
    for n in range(1, len(trace.turns) + 1):
        args = trace.prompt_arguments(n)
        assert render(**args, compression=strategy) == render(**args,
                                                             compression="full-history")
    result = compare_traces([str(run_file)], [spec], cache="none",
                            price="in=2,cached=0.5,out=8", summary_cache=tmp_path / "c")
    sr = result.strategies[0]
    assert [turn for _, turn, _, _ in sr.calls()] == [6, 9, 12]
    assert sr.summary_cost_usd == pytest.approx(3 * (10 * 2 + 10 * 8) / 1e6, abs=1e-15)


def test_the_cache_break_after_a_summary_is_billed(tmp_path: Path) -> None:
    """Under the openai cache model (prefixes of 1024+ tokens) the prompt that starts with
    a new summary shares only the short head with earlier prompts: nothing is read from
    the cache; the append-only prompts between summaries read most of theirs."""
    path = tmp_path / "long.json"
    path.write_text(json.dumps(chat_run(12, 200)), encoding="utf-8")
    result = compare_traces([str(path)], ["summary-compaction:trigger=5000,keep=2,"
                                          "summarizer=extractive"], cache="openai")
    sr = result.strategies[0]
    rows = {t.turn: t for t in sr.per_turn()}
    compactions = [turn for _, turn, _, _ in sr.calls()]
    assert compactions == [6, 9, 12]
    for turn in compactions:  # smaller than the prompt before, and nothing cached
        assert rows[turn].input_tokens < rows[turn - 1].input_tokens
        assert rows[turn].cached_tokens == 0
    for turn in (3, 4, 5, 7, 8, 10, 11, 13):  # appended: the previous prompt is cached
        assert rows[turn].cached_tokens >= rows[turn - 1].input_tokens - 128


def test_output_price_is_needed_for_a_model_summarizer(run_file: Path) -> None:
    with FakeLLMServer([]) as server, pytest.raises(ValueError, match="add out=USD"):
        compare_traces([str(run_file)], [SPEC], summarizer="llm:openai:x",
                       base_url=server.base_url, price="in=2,cached=0.5")


def test_prices_have_output_prices() -> None:
    assert PRICE_PRESETS["openai-gpt-4.1"].output == 8.0
    assert PRICE_PRESETS["anthropic-sonnet-4"].output == 15.0
    assert parse_price("in=1,cached=0.1,out=4") == Price(1, 0.1, output=4)
    assert str(parse_price("in=1,cached=0.1,out=4")) == "in=1,cached=0.1,out=4"
    with pytest.raises(ValueError, match="is not in=, cached=, write=, out= or min="):
        parse_price("in=1,cached=0.1,outt=4")


# -- Agent and compress() -----------------------------------------------------------------------


def test_agent_summary_goes_through_its_own_adapter_and_is_recorded(tmp_path: Path) -> None:
    """The summary request goes to the agent's LLM (the same ScriptedLLM); its usage is
    added to the usage of the turn whose prompt it built. Each turn prints ~300 tokens:
    after 3 turns the prompt passes 900 tokens, so turns 1-2 are folded (keep=1)."""
    from turnpress.agent.llm import LLMReply

    program = "```clojure\n(println (tool/lookup {:id ID}))\n```"
    replies: list[Any] = [LLMReply(program.replace("ID", str(i)),
                                   {"input_tokens": 50, "output_tokens": 5})
                          for i in range(1, 4)]
    replies.append(LLMReply("THE SUMMARY", {"input_tokens": 700, "output_tokens": 70}))
    replies.append(LLMReply("```clojure\n(return 42)\n```", {"input_tokens": 60}))
    llm = ScriptedLLM(replies)
    agent = Agent("Look up three records, then return 42.", system_prompt="Write PTC-Lisp.",
                  tools={"lookup": lambda args: {"id": args, "body": "x " * 300}},
                  llm=llm, max_turns=6,
                  compression="summary-compaction:trigger=900,keep=1")
    step = agent.run()
    assert step.success and step.result == 42, step.failure
    summary_request = llm.calls[3]
    assert summary_request[0]["content"].startswith("You compact the history")
    assert "Turns 1-2:" in summary_request[1]["content"]
    assert "(tool/lookup {:id 2})" in summary_request[1]["content"]
    assert "(tool/lookup {:id 3})" not in summary_request[1]["content"]
    prompt = step.messages[3]
    assert prompt[2]["content"].endswith("THE SUMMARY")
    assert prompt[3]["content"] == replies[2].text  # turn 3, kept as it was
    assert step.turn_usage[:3] == ({"input_tokens": 50, "output_tokens": 5},) * 3
    assert step.turn_usage[3] == {"input_tokens": 60, "summary_calls": 1,
                                  "summary_input_tokens": 700, "summary_output_tokens": 70}
    assert step.usage["summary_input_tokens"] == 700
    # the saved run keeps it on the turn, and its as-run row bills it (DBG-004)
    trace = step.to_trace("agent-run")
    assert trace.turns[3].usage.summary_input_tokens == 700
    assert trace.turns[2].usage.to_dict() == {"prompt_tokens": 50, "cached_tokens": 0,
                                              "cache_write_tokens": 0}
    path = tmp_path / "agent-run.json"
    save_trace(trace, path)
    again = load_trace(path)
    assert again.turns[3].usage == trace.turns[3].usage
    as_run = compare_traces([again], ["full-history"], cache="none",
                            price="in=2,cached=0.5,out=8").as_run
    assert as_run.cost_usd == pytest.approx((3 * 50 + 60 + 700) * 2e-6 + 70 * 8e-6)


def test_compress_takes_the_strategy() -> None:
    messages = chat_run()[:-1]
    out = compress(messages, strategy=SPEC + ",summarizer=extractive")
    assert out[:2] == messages[:2]
    assert out[2]["content"].startswith("[Summary of turns 1-")
    assert answered(out)
    system, conversation = compress(to_anthropic(messages), format="anthropic",
                                    strategy=SPEC + ",summarizer=extractive")
    assert system[0]["text"] == SYSTEM and conversation[0]["role"] == "user"
    assert conversation[0]["content"][-1]["text"].startswith("[Summary of turns 1-")


# -- the summary cache and the hook ---------------------------------------------------------------


def test_summary_cache_round_trip_and_broken_file(tmp_path: Path) -> None:
    cache = SummaryCache(tmp_path)
    cache.put("ab" + "0" * 62, Summary("text", 3, 4))
    assert cache.get("ab" + "0" * 62) == Summary("text", 3, 4, cached=True)
    (tmp_path / "ab" / ("ab" + "0" * 62 + ".json")).write_text("{broken")
    assert cache.get("ab" + "0" * 62) is None


def test_a_bad_registration_is_left_out_with_a_warning() -> None:
    plugin = types.SimpleNamespace(register_summarizers=hookimpl(
        lambda register: (register("Bad Name", FixedUsage), register("ok", 42))))
    plugin.register_summarizers.__name__ = "register_summarizers"
    registry = Registry(entry_points=False)
    registry.register(plugin, name="bad")
    with pytest.warns(UserWarning) as caught:
        names = set(registry.summarizers())
    assert names == {"extractive", "llm"}
    text = " ".join(str(w.message) for w in caught)
    assert "must be a lower-case word" in text and "is not a summarizer class" in text


def test_strategy_pickles_without_its_adapter(tmp_path: Path) -> None:
    import pickle

    with FakeLLMServer([]) as server:
        strategy = get_strategy(SPEC + ",summarizer=llm:openai:m,base_url=" + server.base_url)
        strategy._summarizer.llm()  # the SDK client is built
        copy = pickle.loads(pickle.dumps(strategy))
    assert isinstance(copy, SummaryCompaction) and copy == strategy
    assert copy._summarizer._llm is None


def test_counts_with_the_runs_token_counter(run_file: Path) -> None:
    """The strategy counts through RenderContext.token_counter (one per run and
    tokenizer), with the tokenizer's own counts; what the counter already encoded (in
    compare: every message of the baseline) is not encoded again."""
    trace = load_trace(run_file)
    turns = list(trace.turns)
    args = trace.prompt_arguments(len(turns) + 1)
    ctx = RenderContext(mission=args["mission"], system_prompt=args["system_prompt"],
                        tools=args["tools"], data=args["data"],
                        turns_left=args["turns_left"], preamble=args["preamble"])
    counter = ctx.token_counter("o200k_base")
    assert ctx.token_counter("o200k_base") is counter
    strategy = get_strategy(("summary-compaction", {"summarizer": "extractive"}))
    messages = render(**args, compression="full-history")
    tokenizer = counter.tokenizer
    expected = sum(tokenizer.count(message_text(m["role"], message_body(m)))
                   for m in messages)
    assert strategy._tokens(messages, ctx) == expected
    encoded = counter.encoded
    assert encoded > 0
    assert strategy._tokens(messages, ctx) == expected and counter.encoded == encoded


class Raising(FixedUsage):
    """A plugin's summarizer whose summarize() raises."""

    name = "qa-summ"

    def summarize(self, turns: Any, ctx: Any, *, previous: Any = None,
                  start: int = 0) -> Summary:
        raise RuntimeError("summ boom")


class NotASummary(FixedUsage):
    name = "qa-text"

    def summarize(self, turns: Any, ctx: Any, *, previous: Any = None,
                  start: int = 0) -> Any:
        return "just text"


@pytest.fixture
def raising_registry():
    def register_summarizers(register: Any) -> None:
        register("qa-summ", Raising)
        register("qa-text", NotASummary)

    plugin = types.SimpleNamespace(register_summarizers=hookimpl(register_summarizers))
    registry = Registry(entry_points=False)
    registry.register(plugin, name="qa_summ_plugin")
    previous = reset_registry(registry)
    yield registry
    reset_registry(previous)


RAISING = "summary-compaction:summarizer=qa-summ,trigger=100,keep=1"
NAMED = "summarizer 'qa-summ' of plugin 'qa_summ_plugin' (distribution (registered in code))"


def test_a_plugin_summarizer_that_raises_is_named_on_every_path(raising_registry) -> None:
    """A plugin summarizer whose summarize() raises: `turnpress render` prints one Error:
    line naming it and its plugin (was a traceback), compare's reason names them (it named
    only the strategy), compress() raises a PluginError naming them (was the bare
    RuntimeError, kept as its cause)."""
    out = CliRunner().invoke(main, ["render", "incident-triage", "-s", RAISING, "--turn",
                                    "10"])
    assert out.exit_code == 2, out.output
    assert out.output == f"Error: {NAMED} failed: RuntimeError: summ boom\n"
    result = compare_traces([next(p for p in example_trace_paths()
                                  if p.stem == "incident-triage")], [RAISING],
                            tokenizer="chars4")
    [(_, status, reason)] = result.not_compared
    assert status == "failed" and reason == (
        f"strategy 'summary-compaction' failed on trace incident-triage, turn 3: {NAMED} "
        f"failed: RuntimeError: summ boom")
    with pytest.raises(PluginError) as caught:
        compress(chat_run()[:-1], strategy=RAISING)
    assert str(caught.value) == f"{NAMED} failed: RuntimeError: summ boom"
    assert caught.value.plugin == "qa_summ_plugin"
    assert isinstance(caught.value.__cause__, RuntimeError)
    with pytest.raises(PluginError, match=r"summarizer 'qa-text' of plugin 'qa_summ_plugin' "
                                          r".*summarize\(\) returned 'just text' \(str\), "
                                          r"not a turnpress.core.summaries.Summary"):
        compress(chat_run()[:-1], strategy=RAISING.replace("qa-summ", "qa-text"))

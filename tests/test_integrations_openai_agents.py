"""The OpenAI Agents SDK input filter (issue 19 item 1): ``RunConfig.call_model_input_filter``
on Responses API input items.

``examples/openai_agents_agent.py`` runs a real ``Runner`` tool loop of 33 model calls
against a scripted implementation of the SDK's ``Model`` interface (each call with a
``reasoning`` item, as reasoning models send).
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("agents")

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage
from agents.run_config import CallModelData, ModelInputData
from integration_checks import (
    check_items,
    example_output,
    example_runs,
    load_example,
    produced_reasoning,
    readme_block,
    run_readme_block,
    saved_percent,
)
from openai.types.responses import (
    EasyInputMessageParam,
    ResponseFunctionWebSearch,
    ResponseInputFileParam,
    ResponseInputImageParam,
    ResponseInputTextParam,
    ResponseOutputMessage,
    ResponseOutputText,
)

from turnpress.compress import count_tokens
from turnpress.integrations.openai_agents import TurnpressFilter, default_is_error

example = load_example("openai_agents_agent")
plain, default, coalesced = example_runs(example)


def test_the_example_runs_a_long_tool_loop_and_prints_its_savings():
    out = example_output("openai_agents_agent")
    # the example's default is the library's (price-scheduled): at least 60% fewer
    # tokens (measured: 71%); the full history shows the largest value, in the middle of
    # a read that the default's deltas and views cut to head and tail
    assert "(without turnpress: The largest is LIMIT_7_33 = 9000.)" in out
    assert saved_percent(out) >= 60


def test_the_default_sends_fewer_tokens_with_mission_errors_and_pairing(plain, default):
    """The default (price-scheduled): at least 60% fewer tokens over the run (measured:
    71%), and every input is valid Responses input (calls paired, reasoning items whole
    and with their calls) with the instructions and the mission, each error right after
    it and the last one at the end."""
    (result, model), (plain_result, plain_model) = default, plain
    assert len(model.requests) == len(plain_model.requests) == 33
    sent = sum(count_tokens(r) for r in model.requests)
    full = sum(count_tokens(r) for r in plain_model.requests)
    assert sent <= 0.4 * full
    assert len(result.to_input_list()) == len(plain_result.to_input_list()) == 98
    produced = produced_reasoning(plain_model)
    for instructions, items in model.requests:
        assert instructions == example.INSTRUCTIONS
        check_items(items, produced)
        assert example.MISSION in json.dumps(items[0])
    texts = [json.dumps(items) for _, items in model.requests]
    assert "no such file 'src/part_12_old.py'" in texts[13]
    assert "no such file 'src/summary.py'" in json.dumps(model.requests[-1][1][-1])


def test_fewer_tokens_and_the_run_keeps_every_item(plain, coalesced):
    """At least 40% fewer tokens over the run (measured: 55%); the run's own items
    (what ``to_input_list()`` gives) are the plain run's."""
    (result, model), (plain_result, plain_model) = coalesced, plain
    assert len(model.requests) == len(plain_model.requests) == 33
    sent = sum(count_tokens(r) for r in model.requests)
    full = sum(count_tokens(r) for r in plain_model.requests)
    assert sent <= 0.6 * full
    assert len(result.to_input_list()) == len(plain_result.to_input_list()) == 98
    assert model.requests[-1][0] == example.INSTRUCTIONS  # the instructions as given


def test_mission_and_errors_reach_the_model(coalesced):
    _, model = coalesced
    texts = [json.dumps(items) for _, items in model.requests]
    assert all(example.MISSION in t for t in texts)
    assert "no such file 'src/part_12_old.py'" in texts[13]
    assert "no such file 'src/summary.py'" in texts[-1]
    assert "no such file 'src/part_12_old.py'" not in texts[-1]


@pytest.mark.parametrize("strategy", ["single-user-coalesced", "observation-masking",
                                      "full-history"])
def test_every_request_is_valid_responses_input(strategy, plain, coalesced):
    """The Agents SDK sent every filtered input (it checks a filter's result is
    ``ModelInputData``), and each validates against the Responses input item types,
    with calls paired and reasoning items whole."""
    _, model = coalesced if strategy == "single-user-coalesced" else example.run(strategy)
    produced = produced_reasoning(plain[1])
    assert len(model.requests) == 33
    for _, items in model.requests:
        check_items(items, produced)


def test_observation_masking_keeps_ids_and_reasoning_with_their_calls(plain):
    _, model = example.run("observation-masking")
    last = model.requests[-1][1]
    assert [i["id"] for i in last if i.get("type") == "reasoning"] == [
        f"rs_{k}" for k in range(32)]
    outputs = [i for i in last if i.get("type") == "function_call_output"]
    assert sum("omitted" in i["output"] for i in outputs) >= 15
    assert len(last) == len(plain[1].requests[-1][1])


def test_full_history_sends_what_the_sdk_alone_sends(plain):
    _, model = example.run("full-history")
    assert model.requests == plain[1].requests


def call(items: list, instructions: str | None = "Be brief.", strategy=True):
    data = CallModelData(model_data=ModelInputData(input=items, instructions=instructions),
                         agent=None, context=None)
    return TurnpressFilter(strategy)(data)


def test_compaction_items_are_sent_whole_and_first():
    compaction = {"type": "compaction", "id": "cmp_1", "encrypted_content": "xyz"}
    items = [compaction, {"role": "user", "content": "Count the files."},
             {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "a\nb"}]
    # single-user-coalesced by name: it rewrites the whole conversation into one user
    # message, and the compaction item still goes first, whole
    out = call(items, strategy="single-user-coalesced")
    assert out.input[0] == compaction and out.instructions == "Be brief."
    assert [i.get("role") for i in out.input[1:]] == ["user"]
    assert call(items).input[0] == compaction  # the default keeps it first too
    assert call(items, strategy="full-history").input == items
    assert call(items, instructions=None, strategy="full-history").instructions is None


def test_a_list_without_a_model_response_yet_is_sent_as_it_is():
    items = [{"role": "user", "content": "Hi"}]
    out = call(items)
    assert out.input == items and out.instructions == "Be brief."


def test_server_managed_state_sends_the_new_items_as_they_are():
    """With previous_response_id, the input is only what came since: outputs of calls
    the server holds. Nothing to compress, and nothing to refuse."""
    items = [{"type": "function_call_output", "call_id": "c9", "output": "done"},
             {"type": "function_call", "call_id": "c10", "name": "ls", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c10", "output": "a"}]
    out = call(items)
    assert out.input == items and out.instructions == "Be brief."


def test_error_outputs():
    assert default_is_error("An error occurred while running the tool. Please try again.")
    assert default_is_error("Error: no such file") and not default_is_error("No errors.")
    with pytest.raises(ValueError, match="unknown"):
        TurnpressFilter("no-such-strategy")
    with pytest.raises(ValueError, match="TurnpressFilter: unknown cache model"):
        TurnpressFilter(cache="gpt")


def test_the_cache_model_is_the_agents_provider(monkeypatch):
    """cache= / price= as given, else the provider of the agent's model, else openai."""
    import turnpress.integrations._common as common

    seen = []
    real = common.compress
    monkeypatch.setattr(common, "compress", lambda m, **k: seen.append(
        (k["cache"], k["price"])) or real(m, **k))
    items = [{"role": "user", "content": "Count the files."},
             {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c1", "output": "a\nb"}]

    class Agent:
        model = "litellm/anthropic/claude-sonnet-4-5"

    for made, agent in [(TurnpressFilter(), None), (TurnpressFilter(), Agent()),
                        (TurnpressFilter(cache="openai", price="openai-gpt-4o"), Agent())]:
        made(CallModelData(model_data=ModelInputData(input=items, instructions=None),
                           agent=agent, context=None))
    assert seen == [("openai", None), ("anthropic", None), ("openai", "openai-gpt-4o")]


def test_the_readme_section_runs_as_printed():
    block = readme_block("TurnpressFilter")
    assert len(block.splitlines()) <= 10
    from agents import Agent, function_tool

    repo = example.repository(2)

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return repo[path]

    model = example.ScriptedModel(list(repo))
    agent = Agent(name="auditor", model=model, tools=[function_tool(read_file)])
    printed = run_readme_block(block, agent=agent, mission=example.MISSION)
    assert printed == "The largest is LIMIT_1_59 = 159.\n"
    # the default (price-scheduled) appends one delta per call: the response as it was
    # (its reasoning item, the call with its id) and the output cut to head and tail
    assert [len(items) for _, items in model.requests] == [1, 4, 7]
    last = model.requests[-1][1]
    assert [i.get("type") for i in last[1:4]] == ["reasoning", "function_call",
                                                  "function_call_output"]
    assert "lines elided" in last[3]["output"] and "lines elided" in last[6]["output"]
    for _, items in model.requests:
        assert items[0] == {"role": "user", "content": example.MISSION}
        check_items(items, produced_reasoning(model))


def search_turn(k: int) -> list[dict]:
    """A user question and a reasoning model's answer to it from a hosted web search:
    ``reasoning``, ``web_search_call``, ``message`` (as the Responses API returns them)."""
    return [{"role": "user", "content": f"Search the news {k}"},
            {"type": "reasoning", "id": f"rs_{k}", "summary": [], "encrypted_content": "x"},
            {"type": "web_search_call", "id": f"ws_{k}", "status": "completed",
             "action": {"type": "search", "query": f"news {k}"}},
            {"type": "message", "role": "assistant", "id": f"msg_{k}", "status": "completed",
             "content": [{"type": "output_text", "text": f"X{k} happened", "annotations": []}]}]


def kinds(items: list) -> list[str]:
    return [i.get("type") or i["role"] for i in items]


def test_full_history_sends_hosted_tool_items_where_they_were():
    """A hosted tool call (``web_search_call``) is part of the model response it came
    in: full-history sends the input in its order (QA r08: it went first)."""
    items = [{"role": "user", "content": "Search the news"},
             {"type": "web_search_call", "id": "ws_1", "status": "completed",
              "action": {"type": "search", "query": "news"}},
             {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
              "content": [{"type": "output_text", "text": "X happened", "annotations": []}]},
             {"role": "user", "content": "thanks"}]
    assert call(items, strategy="full-history").input == items
    runs = [item for k in range(3) for item in search_turn(k)]
    runs += [{"role": "user", "content": "Between two questions"},
             {"type": "file_search_call", "id": "fs_1", "status": "completed",
              "queries": ["a"]},
             {"role": "user", "content": "thanks"}]
    assert call(runs, strategy="full-history").input == runs


@pytest.mark.parametrize("strategy", [True, "single-user-coalesced", "observation-masking",
                                      "rolling-window", "per-turn-summary"])
def test_hosted_tool_items_stay_with_their_turn(strategy):
    """With a compressing strategy a hosted tool item goes right before its response
    when that is sent as it was, else where its turn is (after the question it
    answered), never before the first user message."""
    items = [item for k in range(6) for item in search_turn(k)]
    items.append({"role": "user", "content": "Which was first?"})
    out = call(items, strategy=strategy).input
    searches = [i for i in out if i.get("type") == "web_search_call"]
    assert searches == [i for i in items if i.get("type") == "web_search_call"]  # whole
    first_user = next(k for k, i in enumerate(out) if i.get("role") == "user")
    assert all(k > first_user for k, i in enumerate(out) if i.get("type") == "web_search_call")
    for k, item in enumerate(out):
        if item.get("type") != "web_search_call":
            continue
        number = item["id"].removeprefix("ws_")
        after = out[k + 1] if k + 1 < len(out) else {}
        if after.get("id") == f"msg_{number}":
            continue  # its response, as it was
        before = [i for i in out[:k] if i.get("type") != "web_search_call"]
        assert before[-1].get("role") == "user"  # the question, or the coalesced view
    order = [int(i["id"].removeprefix("ws_")) for i in searches]
    assert order == sorted(order)


class SearchingModel(Model):
    """A fake model behind the Agents SDK's ``Model`` interface (as in
    ``examples/openai_agents_agent.py``) that answers each question from a hosted web
    search: a ``web_search_call`` item, then its message. ``requests`` records the input
    items of every call."""

    def __init__(self) -> None:
        self.requests: list[list] = []

    async def get_response(self, system_instructions, input, *args, **kwargs) -> ModelResponse:
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.requests.append(json.loads(json.dumps(items)))
        k = len(self.requests)
        text = ResponseOutputText(type="output_text", annotations=[], text=f"answer {k}")
        return ModelResponse(output=[
            ResponseFunctionWebSearch(id=f"ws_{k}", status="completed", type="web_search_call",
                                      action={"type": "search", "query": f"q{k}"}),
            ResponseOutputMessage(id=f"msg_{k}", type="message", role="assistant",
                                  status="completed", content=[text])],
            usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError("SearchingModel does not stream")


@pytest.mark.parametrize("strategy", ["full-history", None])
def test_a_conversation_with_hosted_searches_through_the_runner(strategy):
    """A real ``Runner`` conversation of three questions, each continued from
    ``result.to_input_list()``: with full-history the model gets what it gets
    without the filter; with the default no search comes before the question."""
    def converse(input_filter):
        model = SearchingModel()
        agent = Agent(name="searcher", instructions="Be brief.", model=model)
        config = RunConfig(call_model_input_filter=input_filter, tracing_disabled=True)
        history: list = []
        for k in range(3):
            history = Runner.run_sync(agent, [*history, {"role": "user", "content": f"Q{k}"}],
                                      run_config=config).to_input_list()
        return model.requests

    plain = converse(None)
    sent = converse(TurnpressFilter(strategy) if strategy else TurnpressFilter())
    if strategy == "full-history":
        assert sent == plain
    for request in sent:
        first_user = next(k for k, i in enumerate(request) if i.get("role") == "user")
        assert all(k > first_user for k, i in enumerate(request)
                   if i.get("type") == "web_search_call")


@pytest.mark.parametrize("strategy", ["single-user-coalesced", None])
def test_an_image_or_file_the_user_gave_is_marked_and_sent_in_a_rewritten_view(strategy):
    """QA: the filter read a message as its text only, so a view the strategy wrote
    (the coalesced one, the default's mission) lost the user's ``input_image`` and
    ``input_file`` parts with no marker, while ``compress()`` marks them ``[image]`` /
    ``[input_file]`` and carries the parts. A ``Runner`` conversation through the
    SDK's own types: every request still holds the parts as the user gave them
    (``detail`` and all) and, where the message was rewritten, the markers."""
    image = ResponseInputImageParam(type="input_image", image_url="https://x.test/cat.png",
                                    detail="low")
    document = ResponseInputFileParam(type="input_file", file_id="file_1")
    first = EasyInputMessageParam(role="user", content=[
        ResponseInputTextParam(type="input_text", text="What is in these?"), image, document])
    model = SearchingModel()
    agent = Agent(name="searcher", instructions="Be brief.", model=model)
    made = TurnpressFilter(strategy) if strategy else TurnpressFilter()
    config = RunConfig(call_model_input_filter=made, tracing_disabled=True)
    history: list = [first]
    for k in range(3):
        history = Runner.run_sync(agent, history, run_config=config).to_input_list()
        history.append({"role": "user", "content": f"Q{k}"})
    assert history[0] == first  # the run's own items are not changed
    rewritten = 0
    for request in model.requests[1:]:
        parts = [p for i in request if i.get("role") == "user"
                 and isinstance(i["content"], list) for p in i["content"]]
        assert image in parts and document in parts
        texts = [p["text"] for p in parts if p["type"] == "input_text"]
        if texts != ["What is in these?"]:  # a view the strategy wrote: marked
            rewritten += 1
            assert any("What is in these?\n[image]\n[input_file]" in t for t in texts)
    assert rewritten == len(model.requests) - 1


@pytest.mark.parametrize("strategy", [True, "single-user-coalesced", "observation-masking",
                                      "rolling-window", "per-turn-summary", "full-history"])
def test_a_tool_outputs_image_is_marked_as_compress_marks_it(strategy):
    """A ``function_call_output`` whose output holds an ``input_image`` (a screenshot
    tool) was read as its text only: a view the strategy wrote showed the output with
    no trace of the image. The filter sends what ``compress(..., format="responses")``
    sends for the same input, ``[image]`` where the image was."""
    from turnpress import compress

    items: list = [{"role": "user", "content": "Look at the screen."}]
    for k in range(6):
        items += [{"type": "function_call", "call_id": f"c{k}", "name": "shot", "arguments": "{}"},
                  {"type": "function_call_output", "call_id": f"c{k}", "output": [
                      {"type": "input_text", "text": f"shot {k}"},
                      {"type": "input_image", "image_url": f"https://x.test/{k}.png",
                       "detail": "auto"}]},
                  {"type": "message", "role": "assistant",
                   "content": [{"type": "output_text", "text": f"seen {k}", "annotations": []}]},
                  {"role": "user", "content": "next"}]
    out = call(items, instructions=None, strategy=strategy)
    assert out.input == compress(items, strategy=strategy, format="responses")
    if strategy == "single-user-coalesced":
        assert json.dumps(out.input).count("shot 0\\n[image]") == 1

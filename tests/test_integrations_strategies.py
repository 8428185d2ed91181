"""Every built-in strategy, in each of the four framework integrations (issue 19 item 1):
each request of a 17-call run is one the framework and the provider accept (OpenAI chat
types and tool pairing for LangChain and pydantic-ai, Responses input items with
reasoning kept whole for the Agents SDK, smolagents' own request preparation)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("langchain.agents")
pytest.importorskip("pydantic_ai")
pytest.importorskip("agents")
pytest.importorskip("smolagents")

from integration_checks import check_chat_request, check_items, load_example, produced_reasoning
from langchain_core.messages import convert_to_openai_messages

from turnpress.core.compression import strategy_names

FILES = 14  # 15 reads, two of them failing, then the answer
STRATEGIES = strategy_names()


@pytest.fixture(scope="module")
def examples():
    return {name: load_example(f"{name}_agent")
            for name in ("langchain", "pydantic_ai", "openai_agents", "smolagents")}


@pytest.fixture(scope="module")
def reasoning(examples):
    return produced_reasoning(examples["openai_agents"].run(None, FILES)[1])


def test_the_built_in_strategies_are_all_here():
    assert {"full-history", "single-user-coalesced", "observation-masking",
            "rolling-window", "progressive-batch"} <= set(STRATEGIES)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_gives_valid_requests_in_each_framework(strategy, examples, reasoning):
    _, model = examples["langchain"].run(strategy, FILES)
    assert len(model.requests) == FILES + 3
    for request in model.requests:
        check_chat_request(convert_to_openai_messages(request))
    pydantic_ai = examples["pydantic_ai"]
    _, script, _ = pydantic_ai.run(strategy, FILES)
    assert len(script.requests) == FILES + 3
    for request in script.requests:
        check_chat_request(pydantic_ai.to_chat(request)[0])
    _, model = examples["openai_agents"].run(strategy, FILES)
    assert len(model.requests) == FILES + 3
    for _, items in model.requests:
        check_items(items, reasoning)
    answer, _, model = examples["smolagents"].run(strategy, FILES)
    assert answer == 9000 and len(model.requests) == FILES + 3
    for request in model.requests:
        check_chat_request(json.loads(json.dumps(request)))

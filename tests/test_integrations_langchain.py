"""The LangChain v1 middleware (issue 19 item 1): ``create_agent(middleware=[...])``.

The example ``examples/langchain_agent.py`` runs a real ``create_agent`` tool loop of
33 model calls against a scripted ``BaseChatModel``; these tests run it with and
without the middleware and check what the model received.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain.agents")

from integration_checks import (
    check_chat_request,
    example_output,
    example_runs,
    load_example,
    readme_block,
    run_readme_block,
    saved_percent,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    convert_to_openai_messages,
)

from turnpress.compress import count_tokens
from turnpress.integrations._common import CompressOptions, provider_of
from turnpress.integrations.langchain import (
    LangChainCompressor,
    TurnpressMiddleware,
    _openai_tools,
    compress_messages,
    from_openai,
    pre_model_hook,
    to_openai,
)

example = load_example("langchain_agent")
plain, default, coalesced = example_runs(example)


def requests(model) -> list[list[dict]]:
    return [convert_to_openai_messages(r) for r in model.requests]


def test_the_example_runs_a_long_tool_loop_and_prints_its_savings():
    out = example_output("langchain_agent")
    # the example's default is the library's (price-scheduled): at least 60% fewer
    # tokens (measured: 71%); the full history shows the largest value, in the middle of
    # a read that the default's deltas and views cut to head and tail
    assert "(without turnpress: The largest is LIMIT_7_33 = 9000.)" in out
    assert "state keeps 66 messages" in out
    assert saved_percent(out) >= 60


def test_the_default_sends_fewer_tokens_with_mission_errors_and_pairing(plain, default):
    """The default (price-scheduled): at least 60% fewer tokens over the run (measured:
    71%), the state keeps everything, and every request is valid with its calls paired,
    the system prompt and the mission, each error right after it and the last one at
    the end."""
    (state, model), (_, plain_model) = default, plain
    sent, full = requests(model), requests(plain_model)
    assert len(sent) == len(full) == 33
    assert sum(map(count_tokens, sent)) <= 0.4 * sum(map(count_tokens, full))
    assert len(state["messages"]) == 66
    for request in sent:
        check_chat_request(request)
        assert request[0] == {"role": "system", "content": example.SYSTEM}
        assert example.MISSION in str(request[1]["content"])
    assert "no such file 'src/part_12_old.py'" in str(sent[13][-1]["content"])
    assert "no such file 'src/summary.py'" in str(sent[-1][-1]["content"])
    assert any(len(r) == 2 for r in sent[1:])  # views rebuilt along the way


def test_the_model_receives_fewer_tokens_and_the_state_keeps_everything(plain, coalesced):
    """At least 40% fewer tokens over the run (measured: 53%), the same steps taken, and
    the graph state holds the full history, not what the model was sent."""
    (state, model), (plain_state, plain_model) = coalesced, plain
    assert len(model.requests) == len(plain_model.requests) == 33  # 32 tool steps + answer
    sent = sum(count_tokens(r) for r in requests(model))
    full = sum(count_tokens(r) for r in requests(plain_model))
    assert sent <= 0.6 * full
    assert len(state["messages"]) == len(plain_state["messages"]) == 66
    assert [m.content for m in state["messages"][:-1]] == [
        m.content for m in plain_state["messages"][:-1]]
    assert len(model.requests[-1]) == 2  # what the model got: SYSTEM + one USER message


def test_mission_and_errors_reach_the_model(coalesced):
    _, model = coalesced
    sent = requests(model)
    assert sent[0][0] == {"role": "system", "content": example.SYSTEM}
    assert all(example.MISSION in str(r[1]["content"]) for r in sent)
    # each error is in the request right after it; the last one is in the last request
    assert "no such file 'src/part_12_old.py'" in sent[13][-1]["content"]
    assert "no such file 'src/summary.py'" in sent[-1][-1]["content"]
    assert "no such file 'src/part_12_old.py'" not in sent[-1][-1]["content"]  # resolved


@pytest.mark.parametrize("strategy", ["single-user-coalesced", "observation-masking",
                                      "full-history"])
def test_every_request_is_one_the_provider_accepts(strategy, coalesced):
    """LangChain's own conversion (``convert_to_openai_messages``) of every request
    validates against the OpenAI SDK's request types, with tool calls paired."""
    _, model = coalesced if strategy == "single-user-coalesced" else example.run(strategy)
    for request in requests(model):
        check_chat_request(request)


def test_observation_masking_keeps_ids_pairing_and_the_callers_messages():
    _, model = example.run("observation-masking")
    last = model.requests[-1]
    calls = [c["id"] for m in last if isinstance(m, AIMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in last if isinstance(m, ToolMessage)]
    assert calls == results == [f"call_{k}" for k in range(32)]
    assert [m.status for m in last if isinstance(m, ToolMessage)].count("error") == 2
    # messages sent as they were are the caller's own (LangChain ids kept)
    assert all(m.id for m in last if isinstance(m, AIMessage))


def test_full_history_sends_what_the_agent_alone_sends(plain):
    _, model = example.run("full-history")
    assert requests(model) == requests(plain[1])


def test_an_async_agent_goes_through_the_same_middleware():
    import asyncio

    from langchain.agents import create_agent

    model = example.ScriptedModel(paths=["src/part_00.py", "nope.py", "src/part_01.py"])
    repo = example.repository(2)

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return repo.get(path, f"Error: no such file {path!r}")

    agent = create_agent(model, [read_file], system_prompt=example.SYSTEM,
                         middleware=[TurnpressMiddleware()])
    state = asyncio.run(agent.ainvoke({"messages": [{"role": "user",
                                                     "content": example.MISSION}]}))
    assert len(state["messages"]) == 8
    # the default (price-scheduled) appends one delta per call: the call, and its
    # result cut to head and tail (what shows that the middleware ran), the error whole
    sent = requests(model)
    assert [len(r) for r in sent] == [2, 4, 6, 8]
    assert "lines elided" in sent[-1][3]["content"] and "lines elided" in sent[-1][7]["content"]
    assert sent[-1][5]["content"] == "Error: no such file 'nope.py'"
    for request in sent:
        assert request[1] == {"role": "user", "content": example.MISSION}
        check_chat_request(request)


def test_the_middleware_leaves_the_request_it_was_given_unchanged():
    from langchain.agents.middleware import ModelRequest

    messages = [HumanMessage("Count the files."),
                AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
                ToolMessage("a\nb", tool_call_id="c1")]
    request = ModelRequest(model=None, messages=list(messages), system_prompt="Be brief.")
    got = []  # single-user-coalesced by name: its compressed request is one message
    TurnpressMiddleware("single-user-coalesced").wrap_model_call(request, got.append)
    assert request.messages == messages and request.system_prompt == "Be brief."
    assert got[0].system_prompt == "Be brief."
    assert [m.type for m in got[0].messages] == ["human"]
    assert "a\nb" in got[0].messages[0].content


def test_the_readme_section_runs_as_printed():
    """README "In your agent framework / LangChain", run with the example's model."""
    block = readme_block("TurnpressMiddleware")
    assert len(block.splitlines()) <= 10
    model = example.ScriptedModel(paths=["src/part_00.py", "src/part_01.py"])
    repo = example.repository(2)

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return repo[path]

    printed = run_readme_block(block, model=model, tools=[read_file],
                               mission=example.MISSION)
    assert printed == "6 messages kept; The largest is LIMIT_1_59 = 159.\n"
    # the default (price-scheduled) appends one delta per call: the call, and its
    # result cut to head and tail; the mission first
    sent = requests(model)
    assert [len(r) for r in sent] == [1, 3, 5]
    assert "lines elided" in sent[-1][2]["content"] and "lines elided" in sent[-1][4]["content"]
    for request in sent:
        assert request[0] == {"role": "user", "content": example.MISSION}
        check_chat_request(request)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_pre_model_hook_sends_compressed_messages_and_keeps_the_state():
    from langgraph.prebuilt import create_react_agent

    model = example.ScriptedModel(paths=["src/part_00.py", "src/part_01.py", "nope.py"])
    repo = example.repository(2)

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return repo.get(path, f"Error: no such file {path!r}")

    agent = create_react_agent(model, [read_file], prompt=example.SYSTEM,
                               pre_model_hook=pre_model_hook())
    state = agent.invoke({"messages": [{"role": "user", "content": example.MISSION}]})
    assert len(state["messages"]) == 8  # mission, 3 calls and results, the answer
    # what the hook returned was sent: each read cut to head and tail by the default's
    # deltas (the state keeps them whole), the last error whole
    sent = requests(model)
    assert [len(r) for r in sent] == [2, 4, 6, 8]
    assert all("lines elided" in sent[-1][k]["content"] for k in (3, 5))
    assert all("lines elided" not in m.content for m in state["messages"])
    assert sent[-1][-1]["content"] == "Error: no such file 'nope.py'"
    for request in sent:
        check_chat_request(request)


class ChatAnthropic:
    """Stands for langchain-anthropic's chat model: its class name tells the provider."""

    model = "claude-sonnet-4-5"


def test_cache_and_price_are_forwarded(monkeypatch):
    """Every call gets an explicit cache model: the one given, else the provider of the
    request's chat model, else openai; never compress()'s own default for the shape it
    is called with (the anthropic one when a tool result failed)."""
    import turnpress.integrations._common as common

    seen = []

    def recorded(real):
        def call(messages, *failed, **keywords):
            seen.append({k: keywords[k] for k in ("strategy", "cache", "price")})
            return real(messages, *failed, **keywords)
        return call

    # a failed tool result goes through compress_with_errors, the others through compress
    monkeypatch.setattr(common, "compress", recorded(common.compress))
    monkeypatch.setattr(common, "compress_with_errors", recorded(common.compress_with_errors))
    from langchain.agents.middleware import ModelRequest

    messages = [HumanMessage("Count the files."),
                AIMessage("", tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
                ToolMessage("Error: no ls", tool_call_id="c1", status="error")]
    for middleware, model in [(TurnpressMiddleware(), None),
                              (TurnpressMiddleware(), ChatAnthropic()),
                              (TurnpressMiddleware(cache="none", price="in=1,cached=1"),
                               ChatAnthropic())]:
        request = ModelRequest(model=model, messages=list(messages))
        middleware.wrap_model_call(request, lambda r: r)
    assert seen == [{"strategy": True, "cache": "openai", "price": None},
                    {"strategy": True, "cache": "anthropic", "price": None},
                    {"strategy": True, "cache": "none", "price": "in=1,cached=1"}]
    options = CompressOptions(price="anthropic-haiku-3.5")
    assert options.keywords("claude-sonnet-4") == {
        "strategy": True, "cache": "anthropic", "price": "anthropic-haiku-3.5"}
    assert CompressOptions(cache="openai").keywords("claude")["cache"] == "openai"
    assert CompressOptions().keywords(example.ScriptedModel(paths=[]))["cache"] == "openai"
    compress_messages(messages, cache="anthropic")
    assert seen[-1]["cache"] == "anthropic"


def test_bad_options_are_one_error_when_the_integration_is_made():
    with pytest.raises(ValueError, match="TurnpressMiddleware: unknown strategy"):
        TurnpressMiddleware("no-such-strategy")
    with pytest.raises(ValueError, match="pre_model_hook: unknown cache model 'antropic'"):
        pre_model_hook(cache="antropic")
    with pytest.raises(ValueError, match="compress_messages: malformed price"):
        compress_messages([], price="in=3")
    with pytest.raises(ValueError, match="LangChainCompressor: price must be a preset"):
        LangChainCompressor(price={"input": 3.0})


class _SmolModel:
    model_id = "anthropic/claude-sonnet-4"


@pytest.mark.parametrize(("model", "provider"), [
    (_SmolModel(), "anthropic"),
    ("gpt-4o-mini", "openai"), ("o3-mini", "openai"), ("claude-sonnet-4-5", "anthropic"),
    ("anthropic:claude-3-5-haiku", "anthropic"), ("mistral-large", None), (None, None)])
def test_provider_of_a_model_name(model, provider):
    assert provider_of(model) == provider


THINKING = {"type": "thinking", "thinking": "The file is short.", "signature": "c2ln"}
REDACTED = {"type": "redacted_thinking", "data": "ZW5j"}


def thinking_run() -> list[BaseMessage]:
    """A run as ChatAnthropic with extended thinking keeps it: each AIMessage's content
    holds its thinking blocks (signature and all) before its text."""
    return [HumanMessage("Count the files."),
            AIMessage([THINKING, REDACTED, {"type": "text", "text": "Listing."}],
                      tool_calls=[{"name": "ls", "args": {}, "id": "c1"}]),
            ToolMessage("a\nb", tool_call_id="c1"),
            AIMessage([dict(THINKING, thinking="Two files.")],
                      tool_calls=[{"name": "wc", "args": {"path": "a"}, "id": "c2"}]),
            ToolMessage("Error: no wc", tool_call_id="c2", status="error")]


@pytest.mark.parametrize("strategy", [True, "full-history", "observation-masking",
                                      "rolling-window", "single-user-coalesced"])
def test_anthropic_thinking_blocks_are_kept(strategy):
    """ChatAnthropic's ``thinking`` / ``redacted_thinking`` content blocks go to the
    strategy as ``thinking_blocks`` (where turnpress keeps Anthropic thinking) and come
    back in the AIMessage's content, first, as given; the newest AIMessage (the one the
    pending tool result answers, whose thinking Anthropic requires) is sent whole."""
    messages = thinking_run()
    sent = compress_messages(messages, strategy=strategy)
    assert messages == thinking_run()  # not changed in place
    if strategy == "full-history":
        assert sent == messages
    if strategy != "single-user-coalesced":
        assert sent[-2].content == messages[-2].content
        assert sent[-2].tool_calls == messages[-2].tool_calls
    for message in sent:
        if isinstance(message, AIMessage) and isinstance(message.content, list):
            blocks = [b for b in message.content if b["type"] != "text"]
            assert blocks in ([THINKING, REDACTED], [dict(THINKING, thinking="Two files.")])


def test_thinking_blocks_survive_the_openai_shape_and_back():
    forms = to_openai(thinking_run())
    assert forms[1]["thinking_blocks"] == [THINKING, REDACTED]
    assert forms[1]["content"] == [{"type": "text", "text": "Listing."}]
    assert forms[3]["thinking_blocks"] == [dict(THINKING, thinking="Two files.")]
    assert forms[3]["content"] is None
    back = from_openai(forms)
    assert [m.content for m in back] == [m.content for m in thinking_run()]
    compressor = LangChainCompressor("observation-masking")
    compressor.extend(thinking_run())
    assert compressor.messages() == thinking_run()


class ThinkingModel(example.ScriptedModel):
    """The example's scripted model, answering as ChatAnthropic with extended thinking
    does: each AIMessage's content starts with a signed ``thinking`` block."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        result = super()._generate(messages, stop, run_manager, **kwargs)
        reply = result.generations[0].message
        text = [{"type": "text", "text": reply.content}] if reply.content else []
        reply.content = [dict(THINKING, thinking=f"Call {len(self.requests)}."), *text]
        return result


def test_an_agent_whose_model_thinks_runs_with_the_middleware():
    """End to end through ``create_agent``: every request the model gets holds its
    newest AIMessage as the model wrote it, thinking block first."""
    from langchain.agents import create_agent

    model = ThinkingModel(paths=["src/part_00.py", "nope.py", "src/part_01.py"])
    repo = example.repository(2)

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return repo.get(path, f"Error: no such file {path!r}")

    agent = create_agent(model, [read_file], system_prompt=example.SYSTEM,
                         middleware=[TurnpressMiddleware()])
    state = agent.invoke({"messages": [{"role": "user", "content": example.MISSION}]})
    assert len(state["messages"]) == 8
    assert len(model.requests) == 4
    for k, request in enumerate(model.requests[1:], 1):
        newest = [m for m in request if isinstance(m, AIMessage)][-1]
        assert newest.content[0] == dict(THINKING, thinking=f"Call {k}.")
        assert newest.tool_calls == state["messages"][2 * k - 1].tool_calls


def test_dicts_and_tuples_are_read_as_langchain_reads_them():
    """What LangChain's ``convert_to_messages`` takes (dicts, ``(role, content)``
    tuples, strings) is taken, and given back as ``BaseMessage``s."""
    assert compress_messages([{"role": "user", "content": "hi"}]) == [HumanMessage("hi")]
    run = [("user", "Count the files."),
           {"role": "assistant", "content": "", "tool_calls": [
               {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
           {"role": "tool", "tool_call_id": "c1", "content": "a\nb"}]
    sent = compress_messages(run, strategy="full-history")
    assert [type(m) for m in sent] == [HumanMessage, AIMessage, ToolMessage]
    assert sent[1].tool_calls == [{"name": "ls", "args": {}, "id": "c1", "type": "tool_call"}]
    compressor = LangChainCompressor("full-history")
    compressor.extend(run)
    compressor.add("Now count the lines.")
    assert compressor.messages() == [*sent, HumanMessage("Now count the lines.")]
    # a tuple of messages is a sequence of them (it was refused as if it were one pair)
    assert compress_messages(tuple(sent), strategy="full-history") == sent


@pytest.mark.parametrize(("messages", "problem"), [
    ("hi", "a list of messages .*, got str$"),
    (HumanMessage("hi"), "a list of messages .*, got HumanMessage$"),
    ({"role": "user", "content": "hi"}, "a list of messages .*, got dict$"),
    (("user", "hi"), "a list of messages .*, got tuple$"),
    ([HumanMessage("hi"), 42], "message 1 is not one LangChain can read: Unsupported"),
    ([{"role": "user"}], "message 0 is not one LangChain can read: Message dict must "
                         "contain 'role' and 'content'")])
def test_what_is_no_message_list_is_a_type_error_saying_what_to_pass(messages, problem):
    with pytest.raises(TypeError, match=r"compress_messages: .*" + problem) as caught:
        compress_messages(messages)
    assert "BaseMessages" in str(caught.value) and "\n" not in str(caught.value)


def test_a_providers_built_in_tool_does_not_stop_the_agent():
    """create_agent takes a provider's built-in tool as a dict (``{"type":
    "web_search_preview"}``); it has no function schema, and the middleware handed it to
    compress() as one, which refused it, so every model call failed."""
    from langchain.agents import create_agent

    model = example.ScriptedModel(paths=["src/part_00.py"])
    repo = example.repository(1)

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return repo[path]

    agent = create_agent(model, [read_file, {"type": "web_search_preview"}],
                         middleware=[TurnpressMiddleware()])
    state = agent.invoke({"messages": [{"role": "user", "content": example.MISSION}]})
    assert state["messages"][-1].content.startswith("The largest is")
    # a plugin strategy's ctx.tools holds the function tools
    assert [t["function"]["name"] for t in _openai_tools(
        [read_file, {"type": "web_search_preview"}])] == ["read_file"]

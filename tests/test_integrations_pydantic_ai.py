"""The pydantic-ai history processor (issue 19 item 1).

``examples/pydantic_ai_agent.py`` runs a real pydantic-ai ``Agent`` tool loop of 33
model calls against ``FunctionModel``; these tests run it with and without the
processor and check what the model received.
"""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("pydantic_ai")

from integration_checks import (
    check_chat_request,
    example_output,
    example_runs,
    load_example,
    readme_block,
    run_readme_block,
    saved_percent,
)
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from turnpress.compress import count_tokens
from turnpress.integrations.pydantic_ai import TurnpressHistory, from_chat, to_chat

example = load_example("pydantic_ai_agent")
plain, default, coalesced = example_runs(example)


def chat(request) -> list[dict]:
    return to_chat(request)[0]


def check_pairing(messages) -> None:
    """Every tool return / retry answers a call of the response before it, and every
    call of a response is answered by the request after it."""
    for k, message in enumerate(messages):
        if not isinstance(message, ModelRequest):
            continue
        answers = [p.tool_call_id for p in message.parts
                   if isinstance(p, ToolReturnPart | RetryPromptPart) and p.tool_name]
        before = messages[k - 1] if k else None
        calls = [p.tool_call_id for p in before.parts if isinstance(p, ToolCallPart)] if (
            isinstance(before, ModelResponse)) else []
        assert sorted(answers) == sorted(calls), (k, answers, calls)


def test_the_example_runs_a_long_tool_loop_and_prints_its_savings():
    out = example_output("pydantic_ai_agent")
    # the example's default is the library's (price-scheduled): at least 60% fewer
    # tokens (measured: 71%); the full history shows the largest value, in the middle of
    # a read that the default's deltas and views cut to head and tail
    assert "(without turnpress: The largest is LIMIT_7_33 = 9000.)" in out
    assert saved_percent(out) >= 60


def test_the_default_sends_fewer_tokens_with_mission_errors_and_pairing(plain, default):
    """The default (price-scheduled): at least 60% fewer tokens over the run (measured:
    71%), and every request is valid for pydantic-ai and the provider, with its calls
    paired, the system prompt and the mission, each error right after it and the last
    one at the end."""
    (_, script, processor), (_, plain_script, _) = default, plain
    assert len(script.requests) == len(plain_script.requests) == 33
    sent = [chat(r) for r in script.requests]
    full = [chat(r) for r in plain_script.requests]
    assert sum(map(count_tokens, sent)) <= 0.4 * sum(map(count_tokens, full))
    assert chat(processor.full_history()) == full[-1]
    for request, messages in zip(script.requests, sent, strict=True):
        assert isinstance(request[-1], ModelRequest)
        check_pairing(request)
        check_chat_request(messages)
        assert messages[0] == {"role": "system", "content": example.SYSTEM}
        assert example.MISSION in messages[1]["content"]
    assert "no such file 'src/part_12_old.py'" in sent[13][-1]["content"]
    assert "no such file 'src/summary.py'" in sent[-1][-1]["content"]


def test_fewer_tokens_and_the_processor_keeps_the_full_history(plain, coalesced):
    """At least 40% fewer tokens over the run (measured: 54%); the processor's full
    history is the plain run's history."""
    (_, script, processor), (plain_result, plain_script, _) = coalesced, plain
    assert len(script.requests) == len(plain_script.requests) == 33
    sent = sum(count_tokens(chat(r)) for r in script.requests)
    full = sum(count_tokens(chat(r)) for r in plain_script.requests)
    assert sent <= 0.6 * full
    kept = processor.full_history()
    assert chat(kept) == chat(plain_script.requests[-1])
    assert len(plain_result.all_messages()) == len(kept) + 1  # + the answer


def test_mission_and_errors_reach_the_model(coalesced):
    _, script, _ = coalesced
    sent = [chat(r) for r in script.requests]
    assert all(r[0] == {"role": "system", "content": example.SYSTEM} for r in sent)
    assert all(example.MISSION in r[1]["content"] for r in sent)
    assert "no such file 'src/part_12_old.py'" in sent[13][-1]["content"]
    assert "no such file 'src/summary.py'" in sent[-1][-1]["content"]
    assert "no such file 'src/part_12_old.py'" not in sent[-1][-1]["content"]


@pytest.mark.parametrize("strategy", ["single-user-coalesced", "observation-masking",
                                      "full-history"])
def test_every_request_is_valid_for_pydantic_ai_and_the_provider(strategy, coalesced):
    """Each request validates as pydantic-ai messages (its own ``ModelMessagesTypeAdapter``
    round trip), pairs tool calls with returns, and its chat form is a valid OpenAI
    request; pydantic-ai itself refused none (a processed history must end with a
    ``ModelRequest``)."""
    _, script, _ = coalesced if strategy == "single-user-coalesced" else example.run(strategy)
    assert len(script.requests) == 33
    for request in script.requests:
        again = ModelMessagesTypeAdapter.validate_python(
            ModelMessagesTypeAdapter.dump_python(request))
        assert chat(again) == chat(request)
        assert isinstance(request[-1], ModelRequest)
        check_pairing(request)
        check_chat_request(chat(request))


def test_observation_masking_keeps_the_runs_own_objects_and_retry_parts():
    _, script, processor = example.run("observation-masking")
    _, plain, _ = example.run(None)
    last, full = script.requests[-1], plain.requests[-1]
    assert len(last) == len(full)
    responses = [m for m in last if isinstance(m, ModelResponse)]
    assert [p.tool_call_id for m in responses for p in m.parts] == [
        f"call_{k}" for k in range(32)]
    # the failed reads keep pydantic-ai's own failure marks, shortened or not
    failed = [p for m in last if isinstance(m, ModelRequest) for p in m.parts
              if getattr(p, "outcome", None) == "retried" or isinstance(p, RetryPromptPart)]
    assert [p.tool_call_id for p in failed] == ["call_12", "call_31"]
    assert "src/part_12_old.py" in failed[0].content and "src/summary.py" in failed[1].content
    returns = [p for m in last if isinstance(m, ModelRequest) for p in m.parts
               if isinstance(p, ToolReturnPart) and p.outcome == "success"]
    assert sum("omitted" in p.content for p in returns) >= 15  # old outputs masked
    own = processor.full_history()
    kept = [m for m in last if any(m is n for n in own)]
    assert len(kept) >= 40  # the run's own objects, where sent as they were


def test_full_history_sends_what_the_agent_alone_sends(plain):
    _, script, _ = example.run("full-history")
    assert [chat(r) for r in script.requests] == [chat(r) for r in plain[1].requests]


def test_a_response_sent_as_it_was_is_the_runs_own_object_with_its_thinking():
    thinking = ModelResponse(parts=[ThinkingPart("ls first", signature="sig"),
                                    ToolCallPart("ls", {"path": "."}, tool_call_id="c1")])
    history = [ModelRequest(parts=[UserPromptPart("List the files.")]), thinking,
               ModelRequest(parts=[ToolReturnPart("ls", "a.txt", tool_call_id="c1")])]
    forms, _, failed = to_chat(history)
    back = from_chat(forms, history)
    assert back[1] is thinking and back[0] is history[0] and back[2] is history[2]
    assert not failed


def test_options_are_checked_when_the_processor_is_made():
    with pytest.raises(ValueError, match="unknown"):
        TurnpressHistory("no-such-strategy")
    with pytest.raises(ValueError, match="TurnpressHistory: unknown cache model"):
        TurnpressHistory(cache="claude")
    with pytest.raises(ValueError, match="TurnpressHistory: malformed price"):
        TurnpressHistory(price="cached=1")


def test_the_cache_model_is_the_runs_provider(monkeypatch):
    """cache= / price= as given, else the provider of the run's model (pydantic-ai's
    ``RunContext.model``), else openai; FunctionModel tells none."""
    from pydantic_ai.models.function import FunctionModel

    import turnpress.integrations._common as common

    seen = []
    real = common.compress
    monkeypatch.setattr(common, "compress", lambda m, **k: seen.append(
        (k["cache"], k["price"])) or real(m, **k))
    history = [ModelRequest(parts=[UserPromptPart("List the files.")]),
               ModelResponse(parts=[ToolCallPart("ls", {"path": "."}, tool_call_id="c1")]),
               ModelRequest(parts=[ToolReturnPart("ls", "a.txt", tool_call_id="c1")])]

    class Context:
        run_id = "r1"

        def __init__(self, model):
            self.model = model

    for made, model in [(TurnpressHistory(), FunctionModel(lambda m, i: None)),
                        (TurnpressHistory(), "anthropic:claude-3-5-haiku-latest"),
                        (TurnpressHistory(cache="none", price="in=1,cached=1"), "openai:gpt-4o")]:
        made(Context(model), list(history))
    assert seen == [("openai", None), ("anthropic", None), ("none", "in=1,cached=1")]


def test_the_readme_section_runs_as_printed():
    block = readme_block("TurnpressHistory")
    assert len(block.splitlines()) <= 10
    from pydantic_ai.models.function import FunctionModel

    script = example.Script(["src/part_00.py", "src/part_01.py"])
    repo = example.repository(2)

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return repo[path]

    printed = run_readme_block(block, model=FunctionModel(script), tools=[read_file],
                               mission=example.MISSION)
    assert printed == "The largest is LIMIT_1_59 = 159.\n"
    # the default (price-scheduled) appends one delta per call: the call and its return
    # cut to head and tail; the mission first
    assert [len(r) for r in script.requests] == [1, 3, 5]
    assert "lines elided" in chat(script.requests[-1])[-1]["content"]
    for request in script.requests:
        assert chat(request)[0] == {"role": "user", "content": example.MISSION}
        check_pairing(request)
        check_chat_request(chat(request))


def audit_agent(capability):
    """An agent (``FunctionModel``) that reads a file per call, seven times, then
    answers; its model's requests and the agent."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import TextPart
    from pydantic_ai.models.function import FunctionModel

    requests: list[list] = []

    def model(messages, info):
        requests.append(list(messages))
        if len(requests) % 8 == 0:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("read", {"path": f"f{len(requests)}"},
                                                 tool_call_id=f"c{len(requests)}")])

    agent = Agent(FunctionModel(model), capabilities=[capability])

    @agent.tool_plain
    def read(path: str) -> str:
        """Read a file."""
        return "\n".join(f"{path} line {i}" for i in range(40))

    return requests, agent


def test_the_capability_compresses_the_request_only_and_the_run_keeps_its_history():
    """pydantic-ai's own ``ProcessHistory`` stores what a processor returns as the run's
    history; the capability changes only what the model is sent, so
    ``result.all_messages()`` is the full history and a second run continued from it
    compresses the full history again, never a compressed view."""
    history = TurnpressHistory()
    requests, agent = audit_agent(history.capability())
    first = agent.run_sync("Audit the repo")
    assert len(requests[-1]) < len(history.full_history())  # the model got a compressed view
    assert chat(first.all_messages()) == chat([*history.full_history(), first.all_messages()[-1]])
    assert first.all_messages()[0].parts[-1].content == "Audit the repo"
    agent.run_sync("again", message_history=first.all_messages())
    assert chat(history.full_history()[:len(first.all_messages())]) == chat(first.all_messages())
    for request in requests:
        check_pairing(request)
        check_chat_request(chat(request))


def test_a_run_continued_from_a_stored_compressed_view_gets_its_full_history_back():
    """Used as pydantic-ai's ``ProcessHistory`` processor (or pydantic-ai 1's
    ``history_processors``), the run's history is the compressed view; a second run
    given that view is mapped back to the full history the processor kept."""
    from pydantic_ai.capabilities import ProcessHistory

    history = TurnpressHistory()
    _, agent = audit_agent(ProcessHistory(history))
    first = agent.run_sync("Audit the repo")
    full = history.full_history()
    assert len(first.all_messages()) < len(full)  # pydantic-ai stored the view
    agent.run_sync("again", message_history=first.all_messages())
    assert chat(history.full_history()[:len(full)]) == chat(full)


def test_a_compressed_view_it_cannot_map_back_is_a_warning():
    from pydantic_ai.capabilities import ProcessHistory

    history = TurnpressHistory()
    _, agent = audit_agent(ProcessHistory(history))
    view = agent.run_sync("Audit the repo").all_messages()
    _, other = audit_agent(ProcessHistory(TurnpressHistory()))
    with pytest.warns(UserWarning, match="full_history"):
        other.run_sync("again", message_history=view)


def test_a_response_without_text_or_tool_call_does_not_stop_the_run():
    """A response of thinking only (or nothing) is one pydantic-ai answers with retry
    feedback and recovers from; the processor read it as an assistant message with no
    content, which compress() refuses, and the run failed."""
    from pydantic_ai import Agent
    from pydantic_ai.models.function import FunctionModel

    calls = []

    def script(messages, info):
        calls.append(messages)
        if len(calls) == 1:
            return ModelResponse(parts=[ToolCallPart("ls", {}, tool_call_id="c1")])
        if len(calls) == 2:
            return ModelResponse(parts=[ThinkingPart("Nothing to say yet.")])
        return ModelResponse(parts=[TextPart("two files")])

    for strategy in ("full-history", "single-user-coalesced", "price-scheduled"):
        calls.clear()
        agent = Agent(FunctionModel(script), capabilities=[TurnpressHistory(strategy).capability()])
        agent.tool_plain(lambda: "a.txt\nb.txt", name="ls")
        assert agent.run_sync("Count the files.").output == "two files", strategy


def test_retry_feedback_on_an_answer_reaches_the_model():
    """An output validator's ModelRetry is pydantic-ai 2's RetryFeedbackPart, answering no
    tool call: it is sent (as pydantic-ai sends it, a user message), not left out, which
    left the request empty and pydantic-ai refused the processed history."""
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.models.function import FunctionModel

    seen = []

    def script(messages, info):
        seen.append(messages)
        if len(seen) == 1:
            return ModelResponse(parts=[ToolCallPart("ls", {}, tool_call_id="c1")])
        return ModelResponse(parts=[TextPart("2 files" if len(seen) > 2 else "some files")])

    for strategy in ("full-history", "observation-masking", "single-user-coalesced"):
        seen.clear()
        agent = Agent(FunctionModel(script), capabilities=[TurnpressHistory(strategy).capability()])
        agent.tool_plain(lambda: "a.txt\nb.txt", name="ls")

        @agent.output_validator
        def counted(output: str) -> str:
            if not output[0].isdigit():
                raise ModelRetry("Answer with the number of files.")
            return output

        assert agent.run_sync("Count the files.").output == "2 files", strategy
        assert "Answer with the number of files." in str(seen[-1][-1]), strategy


@dataclasses.dataclass
class OtherPart:
    """Stands for a request part turnpress has no chat form for (pydantic-ai 2's
    instruction and tool-availability deltas, a capability part...)."""

    content: str = "delta"
    part_kind: str = "other"


def test_a_request_part_without_a_chat_form_is_kept():
    """Such a part is not read, and was dropped from every request, even the ones the
    strategy sent as they were; the request now comes back whole, and one rebuilt from its
    parts (a masked tool return) keeps it."""
    other = OtherPart()
    first = ModelRequest(parts=[UserPromptPart("Count the files."), other])
    history = [first]
    for i in range(3):
        history += [ModelResponse(parts=[ToolCallPart("ls", {}, tool_call_id=f"c{i}")]),
                    ModelRequest(parts=[ToolReturnPart("ls", "a.txt\n" * 20,
                                                       tool_call_id=f"c{i}"),
                                        *([OtherPart("old")] if i == 0 else [])])]

    class Context:
        run_id = "r1"
        model = None

    assert TurnpressHistory("full-history")(Context(), list(history)) == history
    sent = TurnpressHistory("observation-masking:window=1,step=1")(Context(), list(history))
    assert "omitted" in str(sent[2].parts[0].content)  # rebuilt: the first return masked
    assert [p.content for m in sent if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, OtherPart)] == ["delta", "old"]
    last = ModelRequest(parts=[OtherPart("only")])
    sent = TurnpressHistory("full-history")(Context(), [*history, ModelResponse(
        parts=[TextPart("2")]), last])
    assert sent[-1] is last  # pydantic-ai needs the history to end with a request

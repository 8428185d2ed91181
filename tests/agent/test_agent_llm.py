"""LLM adapters: ScriptedLLM, ReplayLLM, and the HTTP adapters against a local fake server."""

from __future__ import annotations

import sys

import pytest
from fake_openai import FakeLLMServer, Raw

from turnpress import Turn, save_trace
from turnpress.agent import (
    Anthropic,
    LLMReply,
    MissingDependencyError,
    OpenAICompatible,
    ReplayLLM,
    ScriptedLLM,
    ScriptExhaustedError,
    llm_from_spec,
)
from turnpress.agent.llm import LLMError, call_llm
from turnpress.core.model import Usage
from turnpress.core.trace import Trace

MESSAGES = [{"role": "system", "content": "You write PTC-Lisp."},
            {"role": "user", "content": "Count the products\n\nTurns left: 5"}]


def test_scripted_llm_replies_in_order_and_records_calls():
    llm = ScriptedLLM(["one", LLMReply("two", {"input_tokens": 3})])
    assert llm(MESSAGES) == "one"
    assert llm([{"role": "user", "content": "again"}]) == LLMReply("two", {"input_tokens": 3})
    assert llm.calls == [MESSAGES, [{"role": "user", "content": "again"}]]
    assert llm.remaining == 0


def test_scripted_llm_running_out_is_a_clear_error():
    llm = ScriptedLLM(["only"])
    llm(MESSAGES)
    with pytest.raises(ScriptExhaustedError, match=r"no reply left for call 2.*given 1 repl"):
        llm(MESSAGES)


def test_scripted_llm_rejects_a_single_string_and_bad_replies():
    with pytest.raises(TypeError, match="list of replies"):
        ScriptedLLM("oops")
    with pytest.raises(TypeError, match="reply 2 is an int"):
        ScriptedLLM(["ok", 3])


def test_call_llm_normalizes_and_copies_messages():
    seen = []

    def llm(messages):
        seen.append(messages)
        messages[0]["content"] = "changed by the LLM"
        return "reply"

    original = [dict(m) for m in MESSAGES]
    assert call_llm(llm, MESSAGES) == LLMReply("reply")
    assert MESSAGES == original
    with pytest.raises(TypeError, match="returned a NoneType"):
        call_llm(lambda m: None, MESSAGES)


def _trace(replies):
    turns = tuple(Turn.succeeded(i, f"(p{i})", None, memory={}, raw_response=r)
                  for i, r in enumerate(replies, 1))
    return Trace(mission="m", turns=turns, max_turns=5)


def test_replay_llm_replays_raw_responses(tmp_path):
    trace = _trace(["```clojure\n(p1)\n```", "```clojure\n(p2)\n```"])
    llm = ReplayLLM(trace)
    assert [llm(MESSAGES), llm(MESSAGES)] == [t.raw_response for t in trace.turns]
    with pytest.raises(ScriptExhaustedError, match="ReplayLLM"):
        llm(MESSAGES)
    path = tmp_path / "t.json"
    save_trace(trace, path)
    assert ReplayLLM(path)(MESSAGES) == trace.turns[0].raw_response


def test_openai_adapter_against_fake_server():
    with FakeLLMServer(["```clojure\n(return 3)\n```"], prompt_tokens=13,
                       completion_tokens=3, cached_tokens=2) as server:
        llm = OpenAICompatible("fake-model", base_url=server.base_url + "/v1",
                               api_key="sk-test", max_retries=0, temperature=0)
        reply = llm(MESSAGES)
        assert reply.text == "```clojure\n(return 3)\n```"
        assert reply.usage == {"input_tokens": 13, "output_tokens": 3, "cached_input_tokens": 2}
        (request,) = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "fake-model"
    assert request.body["messages"] == MESSAGES
    assert request.body["temperature"] == 0
    assert request.headers["authorization"] == "Bearer sk-test"


def test_openai_adapter_server_error_raises():
    with FakeLLMServer([]) as server:
        llm = OpenAICompatible("m", base_url=server.base_url + "/v1", api_key="k",
                               max_retries=0)
        with pytest.raises(Exception, match="no scripted reply left"):
            llm(MESSAGES)


@pytest.mark.parametrize(("raw", "said"), [
    (Raw(b"<html>hi</html>", "text/html"),
     "answered with a response that is not JSON (HTTP 200, text/html): '<html>hi</html>'"),
    (Raw(b"this is not json {"),
     "answered with a response that is not JSON (HTTP 200, application/json): "
     "'this is not json {'"),
    (Raw(b'{"error": {"message": "model overloaded", "type": "server_error"}}'),
     "answered with an error: model overloaded"),
    (Raw(b'{"error": "quota exceeded"}'), "answered with an error: quota exceeded"),
    (Raw(b'{"id": "x", "choices": []}'), "answered with no choices: "),
])
@pytest.mark.parametrize("adapter", ["openai", "anthropic"])
def test_a_bad_server_reply_is_one_clear_error(raw, said, adapter):
    """qa-b item 6: not an internal AttributeError or JSONDecodeError: the server, the
    model, and what came back (the server's own message when it sent one)."""
    if adapter == "anthropic" and "choices" in said:
        raw, said = Raw(b'{"type": "message", "role": "assistant"}'), "answered with no content: "
    with FakeLLMServer([raw]) as server:
        if adapter == "openai":
            llm = OpenAICompatible("m", base_url=server.base_url + "/v1", max_retries=0)
            url = server.base_url + "/v1/"
        else:
            llm = Anthropic("m", base_url=server.base_url, api_key="k", max_retries=0)
            url = server.base_url
        with pytest.raises(LLMError) as err:
            llm(MESSAGES)
    message = str(err.value)
    assert message.startswith(f"the server at {url} (model m) {said}"), message
    assert "\n" not in message


def test_openai_adapter_needs_a_key_for_the_real_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMError, match="OPENAI_API_KEY"):
        OpenAICompatible("gpt-4.1")
    # a local server needs none
    assert OpenAICompatible("m", base_url="http://127.0.0.1:9/v1").model == "m"


def test_anthropic_adapter_against_fake_server():
    """ux-a item 1: Anthropic's input_tokens leaves the cache out; the reply's input_tokens
    is the whole prompt (6 uncached + 5 read from the cache), as billed usage counts it."""
    with FakeLLMServer(["(return 1)"], prompt_tokens=6, completion_tokens=2,
                       cached_tokens=5) as server:
        llm = Anthropic("fake-claude", base_url=server.base_url, api_key="k", max_retries=0,
                        cache_system_prompt=True, max_tokens=100)
        reply = llm(MESSAGES)
        (request,) = server.requests
    assert reply.text == "(return 1)"
    assert reply.usage == {"input_tokens": 11, "output_tokens": 2, "cached_input_tokens": 5,
                           "cache_write_input_tokens": 0}
    assert reply.billed() == Usage(11, 5, 0)
    assert request.path == "/v1/messages"
    assert request.body["system"] == [{"type": "text", "text": "You write PTC-Lisp.",
                                       "cache_control": {"type": "ephemeral"}}]
    assert request.body["messages"] == MESSAGES[1:]
    assert request.body["max_tokens"] == 100


@pytest.mark.parametrize(("module", "adapter"), [("openai", OpenAICompatible),
                                                 ("anthropic", Anthropic)])
def test_missing_sdk_names_the_extra(monkeypatch, module, adapter):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(MissingDependencyError,
                       match=rf"pip install 'turnpress\[{module}\]'"):
        adapter("m", base_url="http://127.0.0.1:9/v1")


def test_llm_from_spec():
    llm = llm_from_spec("openai:gpt-x", base_url="http://127.0.0.1:9/v1")
    assert isinstance(llm, OpenAICompatible) and llm.model == "gpt-x"
    assert isinstance(llm_from_spec("anthropic:claude-x", api_key="k"), Anthropic)
    with pytest.raises(ValueError, match=r"unknown LLM provider 'gemini'.*openai:MODEL"):
        llm_from_spec("gemini:pro")
    with pytest.raises(ValueError, match="names no model"):
        llm_from_spec("openai:")

"""A fake OpenAI- and Anthropic-compatible server that scripts tool calls (issue 10 examples).

Extends ``tests/agent/fake_openai.FakeLLMServer`` (127.0.0.1, a free port, a thread,
every request recorded): a reply is either plain text (the final answer) or
``call(name, **arguments)`` / ``calls(...)`` (one assistant message with parallel
tool calls), rendered in the protocol of the path asked (``/v1/chat/completions``
or ``/v1/messages``). After its last reply the server answers HTTP 500, so a
looping client cannot run away; the context manager stops the server.
"""

from __future__ import annotations

import json
from typing import Any

from agent.fake_openai import FakeLLMServer

__all__ = ["ScriptedToolServer", "call", "calls"]


def call(name: str, **arguments: Any) -> str:
    """A reply that calls one tool."""
    return calls((name, arguments))


def calls(*items: tuple[str, dict[str, Any]]) -> str:
    """A reply that calls several tools at once (parallel tool calls)."""
    return json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in items]})


def _tool_calls(reply: str) -> list[dict[str, Any]] | None:
    if not reply.startswith('{"tool_calls"'):
        return None
    return json.loads(reply)["tool_calls"]


class ScriptedToolServer(FakeLLMServer):
    """:class:`FakeLLMServer` whose replies may call tools (see the module docstring)."""

    def chat_completion(self, body: dict[str, Any], reply: str) -> dict[str, Any]:
        """An OpenAI response: text, or ``tool_calls`` with ids ``call_<request>_<k>``."""
        response = super().chat_completion(body, reply)
        wanted = _tool_calls(reply)
        if wanted is not None:
            n = len(self.requests)
            response["choices"][0]["message"] = {"role": "assistant", "content": None,
                                                 "tool_calls": [
                {"id": f"call_{n}_{k}", "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                for k, c in enumerate(wanted)]}
            response["choices"][0]["finish_reason"] = "tool_calls"
        return response

    def anthropic_message(self, body: dict[str, Any], reply: str) -> dict[str, Any]:
        """An Anthropic response: a text block, or ``tool_use`` blocks."""
        response = super().anthropic_message(body, reply)
        wanted = _tool_calls(reply)
        if wanted is not None:
            n = len(self.requests)
            response["content"] = [{"type": "tool_use", "id": f"toolu_{n}_{k}",
                                    "name": c["name"], "input": c["arguments"]}
                                   for k, c in enumerate(wanted)]
            response["stop_reason"] = "tool_use"
        return response

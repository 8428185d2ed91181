"""A local fake LLM server for adapter tests: chat completions and Anthropic messages.

``FakeLLMServer(replies)`` listens on 127.0.0.1 on a free port, in a thread. Each
POST to ``/v1/chat/completions`` (OpenAI protocol) or ``/v1/messages`` (Anthropic
protocol) gets the next scripted reply, with the configured token usage, and is recorded in
``requests`` (path, headers, JSON body). No reply left -> HTTP 500 with an error body. A
:class:`Raw` reply is sent as it is (a broken server: HTML, invalid JSON, an error body).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class Raw:
    """A reply sent byte for byte, whatever the protocol, after ``delay`` seconds (a
    server too slow for the client's timeout)."""

    body: bytes = b"{}"
    content_type: str = "application/json"
    status: int = 200
    delay: float = 0.0


class FakeLLMServer:
    """A scripted chat server; use as a context manager."""

    def __init__(self, replies: list[str | Raw], *, prompt_tokens: int = 100,
                 completion_tokens: int = 10, cached_tokens: int = 0) -> None:
        self.replies = list(replies)
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
        self.cached_tokens = cached_tokens
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- protocol ---------------------------------------------------------------------

    def _next_reply(self) -> str | Raw | None:
        with self._lock:
            index = len(self.requests) - 1
            return self.replies[index] if index < len(self.replies) else None

    def chat_completion(self, body: dict[str, Any], reply: str) -> dict[str, Any]:
        """An OpenAI chat-completions response."""
        prompt, completion = self.prompt_tokens, self.completion_tokens
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": reply}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                      "total_tokens": prompt + completion,
                      "prompt_tokens_details": {"cached_tokens": self.cached_tokens}},
        }

    def anthropic_message(self, body: dict[str, Any], reply: str) -> dict[str, Any]:
        """An Anthropic messages response."""
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": [{"type": "text", "text": reply}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": self.prompt_tokens,
                      "output_tokens": self.completion_tokens,
                      "cache_read_input_tokens": self.cached_tokens,
                      "cache_creation_input_tokens": 0},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                path = self.path.split("?")[0]
                with server._lock:
                    server.requests.append(Recorded(
                        path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = server._next_reply()
                if isinstance(reply, Raw):
                    time.sleep(reply.delay)
                    try:
                        self.send_response(reply.status)
                        self.send_header("Content-Type", reply.content_type)
                        self.send_header("Content-Length", str(len(reply.body)))
                        self.end_headers()
                        self.wfile.write(reply.body)
                    except OSError:  # the client gave up waiting
                        pass
                elif reply is None:
                    self._send(500, {"error": {"message": "no scripted reply left",
                                               "type": "server_error"}})
                elif path.endswith("/chat/completions"):
                    self._send(200, server.chat_completion(body, reply))
                elif path.endswith("/messages"):
                    self._send(200, server.anthropic_message(body, reply))
                else:
                    self._send(404, {"error": {"message": f"no route {path}"}})

        return Handler

"""The examples/ agent loops (issue 10 item 3) run against a fake server on 127.0.0.1.

Each example is run as a script, in a subprocess, as a user would run it; the fake
server (``fake_agents.ScriptedToolServer``) scripts the model's tool calls and
records every request, so the test checks what the example printed against what
the server really received.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from fake_agents import ScriptedToolServer, call, calls

from turnpress.compress import count_tokens

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
LINE = re.compile(r"^call (\d+): sent (\d+) messages, (\d+) tokens "
                  r"\(full list: (\d+) messages, (\d+) tokens\)$", re.M)
SAVED = re.compile(r"^tokens sent: (\d+), full lists: (\d+), saved: (-?\d+)", re.M)

SCRIPT = [
    calls(("read_file", {"path": "src/part_0.py"}), ("read_file", {"path": "src/part_1.py"})),
    call("read_file", path="src/part_2.py"),
    call("read_file", path="src/missing.py"),
    call("read_file", path="src/part_3.py"),
    call("read_file", path="src/part_4.py"),
    call("read_file", path="src/part_5.py"),
    "The largest is LIMIT_5_79 = 579.",
]


def run_example(name: str, env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True,
        timeout=180, env={**os.environ, **env}, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def check_printed(printed: str, bodies: list[Any],
                  payloads: list[Any] | None = None) -> list[tuple[int, ...]]:
    """Every 'call k' line matches request k as the server received it (``bodies``: the
    messages of each request; ``payloads``: what the example counted, if not them)."""
    lines = [tuple(map(int, m)) for m in LINE.findall(printed)]
    assert [n for n, *_ in lines] == list(range(1, len(bodies) + 1))
    for (_, count, tokens, *_), body, payload in zip(lines, bodies, payloads or bodies,
                                                    strict=True):
        assert count == len(body)
        assert tokens == count_tokens(payload)
    assert "answer: The largest is LIMIT_5_79 = 579." in printed
    return lines


def totals(printed: str) -> tuple[int, int, int]:
    found = SAVED.search(printed)
    assert found, printed
    sent, full, saved = map(int, found.groups())
    return sent, full, saved


def openai_env(server: ScriptedToolServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url + "/v1", "OPENAI_API_KEY": "test-key"}


@pytest.mark.parametrize("example", ["openai_loop.py", "langchain_loop.py"])
def test_openai_protocol_example_saves_tokens(example: str) -> None:
    pytest.importorskip("langchain_core") if example.startswith("langchain") else None
    with ScriptedToolServer(SCRIPT) as server:
        printed = run_example(example, openai_env(server))
    bodies = [r.body["messages"] for r in server.requests]
    assert len(bodies) == len(SCRIPT)
    lines = check_printed(printed, bodies)
    assert all(r.body["tools"][0]["function"]["name"] == "read_file" for r in server.requests)
    sent, full, saved = totals(printed)
    assert saved == full - sent > 0
    # the last call sends far less than the full list it stands for
    assert lines[-1][2] < lines[-1][4] / 2
    # the tool result of the missing file reached the model
    assert "no such file 'src/missing.py'" in json.dumps(bodies[3])


@pytest.mark.parametrize("example", ["openai_loop.py", "langchain_loop.py"])
def test_openai_protocol_example_full_history_sends_the_full_list(example: str) -> None:
    pytest.importorskip("langchain_core") if example.startswith("langchain") else None
    with ScriptedToolServer(SCRIPT) as server:
        printed = run_example(example, openai_env(server), "--strategy", "full-history")
    bodies = [r.body["messages"] for r in server.requests]
    lines = check_printed(printed, bodies)
    assert all(count == full_count for _, count, _, full_count, _ in lines)
    assert totals(printed)[2] == 0
    # each request is the previous one plus the new messages (append-only)
    for before, after in pairwise(bodies):
        assert after[: len(before)] == before


def anthropic_env(server: ScriptedToolServer) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key"}


def marked(body: dict[str, Any]) -> int:
    """How many cache_control markers a request carries."""
    return json.dumps(body).count('"cache_control"')


def test_anthropic_example_saves_tokens() -> None:
    with ScriptedToolServer(SCRIPT) as server:
        printed = run_example("anthropic_loop.py", anthropic_env(server))
    assert len(server.requests) == len(SCRIPT)
    assert {r.path for r in server.requests} == {"/v1/messages"}
    bodies = [r.body for r in server.requests]
    lines = check_printed(printed, [b["messages"] for b in bodies],
                          [[b["system"], b["messages"]] for b in bodies])
    sent, full, saved = totals(printed)
    assert saved == full - sent > 0
    assert lines[-1][2] < lines[-1][4] / 2
    assert all(1 <= marked(b) <= 4 for b in bodies[1:])  # the stable prefix is marked
    assert all(b["tools"][0]["name"] == "read_file" for b in bodies)
    assert "no such file 'src/missing.py'" in json.dumps(bodies[3])


def test_anthropic_example_full_history_keeps_the_conversation() -> None:
    with ScriptedToolServer(SCRIPT) as server:
        printed = run_example("anthropic_loop.py", anthropic_env(server),
                              "--strategy", "full-history")
    bodies = [r.body for r in server.requests]
    lines = check_printed(printed, [b["messages"] for b in bodies],
                          [[b["system"], b["messages"]] for b in bodies])
    assert all(count == full_count for _, count, _, full_count, _ in lines)
    # the full list is counted in the shape sent: full-history saves nothing (ux-b item 17)
    assert all(tokens == full_tokens for _, _, tokens, _, full_tokens in lines)
    assert totals(printed)[2] == 0
    # the failed tool call is sent back flagged, as the loop flagged it
    results = [block for m in bodies[3]["messages"] if isinstance(m["content"], list)
               for block in m["content"] if block.get("type") == "tool_result"]
    assert [r.get("is_error", False) for r in results] == [False, False, False, True]
    # roles alternate user / assistant, tool uses answered in the next user message
    roles = [m["role"] for m in bodies[-1]["messages"]]
    assert roles == ["user", "assistant"] * (len(roles) // 2) + ["user"] * (len(roles) % 2)


def test_anthropic_example_default_model_is_not_deprecated() -> None:
    """ux-b item 17: the default --model of examples/anthropic_loop.py is not one the
    installed SDK warns about."""
    messages_module = pytest.importorskip("anthropic.resources.messages.messages")
    source = (EXAMPLES / "anthropic_loop.py").read_text()
    model = re.search(r'^MODEL = "([^"]+)"', source, re.M).group(1)
    assert model not in getattr(messages_module, "DEPRECATED_MODELS", {})
    assert 'default=MODEL' in source

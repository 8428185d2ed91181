"""Checks the framework integrations' tests share: what a provider accepts of a request.

``example_runs`` makes the fixtures that run an example (``examples/*_agent.py``) with
and without turnpress; ``example_output`` runs one as a script.

``check_items`` holds Responses API input items to the API's rules.
``check_chat_request`` holds a list of OpenAI chat messages to the rules the OpenAI API
enforces on tool use (each ``tool`` message answers a call of the assistant message
before it, every call is answered before the next other message, ids are unique) and
validates it against the OpenAI SDK's own request types (``ChatCompletionMessageParam``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
README = Path(__file__).resolve().parent.parent / "README.md"


def readme_block(word: str) -> str:
    """The README's one Python block that contains ``word``."""
    blocks = re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"),
                        flags=re.S | re.M)
    [block] = [b for b in blocks if word in b]
    return block


def run_readme_block(block: str, **names: Any) -> str:
    """Run a README block with ``names`` defined (what the prose says the reader has);
    what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "readme_example", **names})
    return out.getvalue()


def load_example(name: str) -> ModuleType:
    """``examples/NAME.py`` as a module (an example is a script, not a package; its
    folder goes on ``sys.path``, as when it runs, for the module the examples share)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.append(str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def example_runs(example: ModuleType) -> tuple[Any, Any, Any]:
    """The module-scoped fixtures ``plain``, ``default`` and ``coalesced``: what
    ``example.run`` returns without turnpress, with the library's default strategy
    (price-scheduled) and with single-user-coalesced by name (the tests that use it pin
    its shape on purpose). A test module assigns them to those three names."""

    @pytest.fixture(scope="module", name="plain")
    def plain() -> Any:
        return example.run(None)

    @pytest.fixture(scope="module", name="default")
    def default() -> Any:
        return example.run(True)  # the library's default: price-scheduled

    @pytest.fixture(scope="module", name="coalesced")
    def coalesced() -> Any:
        return example.run("single-user-coalesced")

    return plain, default, coalesced


def example_output(name: str) -> str:
    """What ``examples/NAME.py`` prints, run as a script with its defaults: one line per
    model call of its 33, then the totals (checked)."""
    out = subprocess.run([sys.executable, str(EXAMPLES / f"{name}.py")],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert out.count("\ncall ") == 32 and out.startswith("call 1: "), out
    return out


def saved_percent(out: str) -> int:
    """The share of tokens saved that an example printed last (``saved: N%``)."""
    return int(out.rsplit("saved: ", 1)[1].split("%")[0])


def check_chat_pairing(messages: list[dict[str, Any]]) -> None:
    """Tool calls and results pair up as the OpenAI chat API requires."""
    open_calls: set[str] = set()
    seen: set[str] = set()
    for k, m in enumerate(messages):
        if m["role"] == "tool":
            assert m["tool_call_id"] in open_calls, f"message {k}: orphan tool result"
            open_calls.discard(m["tool_call_id"])
            continue
        assert not open_calls, f"message {k}: calls {sorted(open_calls)} left unanswered"
        for call in m.get("tool_calls") or ():
            assert call["id"] not in seen, f"message {k}: duplicate id {call['id']}"
            seen.add(call["id"])
            open_calls.add(call["id"])
    assert not open_calls or messages[-1]["role"] == "assistant"


def check_chat_request(messages: list[dict[str, Any]]) -> None:
    """``messages`` is a request the OpenAI chat API takes (see the module docstring)."""
    from openai.types.chat import ChatCompletionMessageParam
    from pydantic import TypeAdapter

    TypeAdapter(list[ChatCompletionMessageParam]).validate_python(messages, strict=True)
    check_chat_pairing(messages)


def check_items(items: list[dict], produced: dict[str, dict]) -> None:
    """What the Responses API requires of input items: each output answers an earlier
    call, every call is answered, ids are unique, and each reasoning item is one the
    model produced, unchanged, right before the item it preceded."""
    from openai.types.responses import ResponseInputItemParam
    from pydantic import TypeAdapter

    TypeAdapter(list[ResponseInputItemParam]).validate_python(items)
    calls: list[str] = []
    answered: set[str] = set()
    for k, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            assert item["call_id"] not in calls, f"item {k}: duplicate call id"
            calls.append(item["call_id"])
        elif kind == "function_call_output":
            assert item["call_id"] in calls, f"item {k}: output without its call"
            answered.add(item["call_id"])
        elif kind == "reasoning":
            assert item == produced[item["id"]], f"item {k}: reasoning item changed"
            following = items[k + 1]
            assert following.get("type") == "function_call", f"item {k}: reasoning alone"
            assert following["id"] == item["id"].replace("rs_", "fc_")
    assert set(calls) == answered, "a call left without its output"


def produced_reasoning(plain_model: Any) -> dict[str, dict]:
    """The reasoning items a scripted Agents SDK model produced, by id."""
    return {i["id"]: i for _, items in plain_model.requests for i in items
            if i.get("type") == "reasoning"}

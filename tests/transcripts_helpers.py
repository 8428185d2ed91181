"""Shared helpers for the transcript reader tests: the small hand-written transcripts
under tests/data/transcripts/ and the "messages before the n-th assistant" oracle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data" / "transcripts"


def data(rel: str) -> Path:
    """The path of a test transcript."""
    return DATA / rel


def sent_before_each_assistant(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """For each assistant message, the messages before it (the prompt of that turn)."""
    return [messages[:i] for i, m in enumerate(messages) if m["role"] == "assistant"]


def load_json(rel: str) -> Any:
    """A test transcript, parsed."""
    return json.loads(data(rel).read_text(encoding="utf-8"))

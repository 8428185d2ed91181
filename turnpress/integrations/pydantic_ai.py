"""pydantic-ai: a history processor (``pip install 'turnpress[pydantic-ai]'``).

pydantic-ai runs every history processor before each model request::

    agent = Agent(model, capabilities=[TurnpressHistory().capability()])  # pydantic-ai 2
    agent = Agent(model, history_processors=[TurnpressHistory()])  # pydantic-ai 1

:class:`TurnpressHistory` reads the run's ``ModelRequest`` / ``ModelResponse``
messages as OpenAI chat messages (``SystemPromptPart`` and ``UserPromptPart`` as
system and user messages, a ``ModelResponse``'s ``TextPart``\\ s and
``ToolCallPart``\\ s as one assistant message, empty when it has neither,
``ToolReturnPart`` as a tool result, a ``RetryPromptPart`` answering a tool call as a
failed tool result, one answering nothing or a ``RetryFeedbackPart`` as a user
message, as pydantic-ai sends them), compresses them with the strategy, and gives back
pydantic-ai messages: a message the strategy sent as it was is the run's own object
(``ThinkingPart``\\ s, ids, usage and timestamps kept), a rewritten one is new
parts. A request part with no chat form (pydantic-ai 2's instruction or tool
availability deltas...) is not compressed: it stays in its request, and in a request
rebuilt from that request's parts. Tool calls and returns stay paired by
``tool_call_id``, and the result ends with a ``ModelRequest`` as pydantic-ai requires.

What the run keeps. pydantic-ai's own ``ProcessHistory`` capability (and pydantic-ai
1's ``history_processors``) stores what a processor returns as the run's history
(``ctx.messages[:] = ...``): ``result.all_messages()`` would be the compressed view,
and a run given it as ``message_history`` would compress a compressed view, what the
first run dropped gone. :meth:`TurnpressHistory.capability` is therefore not
``ProcessHistory`` but a capability whose ``before_model_request`` replaces only
``request_context.messages``, which pydantic-ai 2 sends and never stores: the run's
history, ``result.all_messages()`` and ``new_messages()`` stay whole, and the usual
``agent.run_sync(..., message_history=result.all_messages())`` is compressed from the
full history again.

Used as a plain processor (``ProcessHistory(TurnpressHistory())``, pydantic-ai 1), the
run's history is the compressed view. The processor keeps the full history of each
run (by ``RunContext.run_id``; the last :data:`RUNS_KEPT` runs) and compresses that,
never a compressed view again: a history that starts with a view it returned (the
next request of the run, or a new run given ``result.all_messages()``) is read as the
full history that view came from. Messages it rewrote carry ``metadata={"turnpress":
"rewritten"}``; a history holding one it cannot map back (the run forgotten, another
process) is compressed as it is, with a ``UserWarning``: pass
``message_history=processor.full_history()`` instead.
:meth:`TurnpressHistory.full_history` gives a run's full history back.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

try:
    from pydantic_ai import RunContext
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError:  # pragma: no cover - tested in a subprocess
    raise ImportError("turnpress.integrations.pydantic_ai needs pydantic-ai: "
                      "pip install 'turnpress[pydantic-ai]'") from None

try:  # pydantic-ai >= 2 takes history processors as a capability
    from pydantic_ai.capabilities import AbstractCapability
except ImportError:  # pragma: no cover - pydantic-ai 1
    AbstractCapability = None

try:  # pydantic-ai >= 2: feedback on a response it could not use (no tool call answered)
    from pydantic_ai.messages import RetryFeedbackPart
except ImportError:  # pragma: no cover - pydantic-ai 1 (a RetryPromptPart without tool_name)
    RetryFeedbackPart = RetryPromptPart

from turnpress.core.compression import Compression
from turnpress.core.pricing import CacheRules, Price
from turnpress.integrations._common import CompressOptions, compress_chat, message_key

__all__ = ["TurnpressHistory", "from_chat", "to_chat"]

#: runs whose full history a processor keeps at once (the oldest is forgotten)
RUNS_KEPT = 32
#: outcomes of a ``ToolReturnPart`` (pydantic-ai 2) that are errors
FAILED_OUTCOMES = ("failed", "retried")
#: the ``metadata`` of a message turnpress rewrote (pydantic-ai never sends metadata)
REWRITTEN = {"turnpress": "rewritten"}


def _text(content: Any) -> str:
    """A user prompt's content as text (non-text items as ``[their type]``)."""
    if isinstance(content, str):
        return content
    return "\n".join(c if isinstance(c, str) else f"[{type(c).__name__}]" for c in content)


def to_chat(messages: Sequence[ModelMessage]) -> tuple[list[dict[str, Any]], list[Any], set[str]]:
    """``(chat messages, the part or response each came from, failed tool-call ids)``
    of pydantic-ai ``messages`` (see the module docstring)."""
    forms: list[dict[str, Any]] = []
    sources: list[Any] = []
    failed: set[str] = set()
    for message in messages:
        if isinstance(message, ModelResponse):
            text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [{"id": p.tool_call_id, "type": "function",
                      "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                     for p in message.parts if isinstance(p, ToolCallPart)]
            # a response with neither (only thinking, or nothing: pydantic-ai answers it
            # with retry feedback) is an assistant message with empty content
            form: dict[str, Any] = {"role": "assistant", "content": text or (None if calls
                                                                              else "")}
            if calls:
                form["tool_calls"] = calls
            forms.append(form)
            sources.append(message)
            continue
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                form = {"role": "system", "content": part.content}
            elif isinstance(part, UserPromptPart):
                form = {"role": "user", "content": _text(part.content)}
            elif isinstance(part, ToolReturnPart):
                form = {"role": "tool", "tool_call_id": part.tool_call_id,
                        "content": part.model_response_str()}
                if getattr(part, "outcome", "success") in FAILED_OUTCOMES:
                    failed.add(part.tool_call_id)
            elif isinstance(part, RetryPromptPart) and part.tool_name:
                form = {"role": "tool", "tool_call_id": part.tool_call_id,
                        "content": part.model_response()}
                failed.add(part.tool_call_id)
            elif isinstance(part, RetryPromptPart | RetryFeedbackPart):
                # feedback on a response pydantic-ai could not use: sent as a user message
                form = {"role": "user", "content": part.model_response()}
            else:  # a part turnpress has no chat form for is not read (see from_chat)
                continue
            forms.append(form)
            sources.append(part)
    return forms, sources, failed


def from_chat(sent: Sequence[dict[str, Any]], originals: Sequence[ModelMessage],
              instructions: str | None = None) -> list[ModelMessage]:
    """The chat messages ``sent`` as pydantic-ai messages: one equal to the chat form
    of a part or response of ``originals`` is that part or response; consecutive
    non-assistant messages make one ``ModelRequest`` (the original one when all its
    parts that have a chat form come back in order, else a new one with
    ``instructions``, holding the parts without a chat form of the requests its parts
    came from). A rewritten tool result is its original part with the new content (its
    kind, outcome and retry information kept). The result ends with a ``ModelRequest``
    whenever ``originals`` do."""
    forms, sources, failed = to_chat(originals)
    read = {id(source) for source in sources}
    same: dict[str, list[Any]] = {}
    for form, source in zip(forms, sources, strict=True):
        same.setdefault(message_key(form), []).append(source)
    names = {c["id"]: c["function"]["name"] for m in sent for c in m.get("tool_calls") or ()}
    answers = {p.tool_call_id: p for p in sources
               if isinstance(p, ToolReturnPart | RetryPromptPart) and p.tool_name}
    parents = {id(p): m for m in originals if isinstance(m, ModelRequest) for p in m.parts}
    stands_for: dict[int, Any] = {}  # id of a rewritten tool result -> its original part
    out: list[ModelMessage] = []
    parts: list[Any] = []

    def close() -> None:
        if not parts:
            return
        owner = parents.get(id(parts[0]))
        owned = [p for p in owner.parts if id(p) in read] if owner is not None else []
        if owner is not None and len(owned) == len(parts) and all(
                a is b for a, b in zip(owned, parts, strict=True)):
            out.append(owner)
        else:
            whole = _with_unread(parts, [stands_for.get(id(p), p) for p in parts], parents,
                                 read)
            out.append(_rewritten(ModelRequest(parts=whole, instructions=instructions)))
        parts.clear()

    for message in sent:
        found = same.get(message_key(message))
        source = found.pop(0) if found else None
        role, content = message["role"], message.get("content")
        if role == "assistant":
            close()
            out.append(source if isinstance(source, ModelResponse) else _response(message))
        elif source is not None and not isinstance(source, ModelResponse):
            parts.append(source)
        elif role in ("system", "developer"):
            parts.append(SystemPromptPart(_text_of(content)))
        elif role == "tool" and message["tool_call_id"] in answers:
            answer = answers[message["tool_call_id"]]
            parts.append(dataclasses.replace(answer, content=_text_of(content)))
            stands_for[id(parts[-1])] = answer
        elif role == "tool":
            call_id = message["tool_call_id"]
            kind = RetryPromptPart if call_id in failed else ToolReturnPart
            parts.append(kind(content=_text_of(content), tool_name=names.get(call_id, ""),
                              tool_call_id=call_id))
        else:
            parts.append(UserPromptPart(_text_of(content)))
    close()
    last = originals[-1] if originals else None
    if isinstance(last, ModelRequest) and not (out and isinstance(out[-1], ModelRequest)):
        out.append(last)  # its parts have no chat form: sent as it is, as the run's last
    return out


def _with_unread(parts: Sequence[Any], standing: Sequence[Any], parents: dict[int, Any],
                 read: set[int]) -> list[Any]:
    """``parts`` (of a request being rebuilt; ``standing``: the original part each
    stands for) with the unread parts (no chat form) of the requests they came from put
    back: each right after the part of its request that preceded it, else before the
    first part from its request."""
    whole, origin = list(parts), list(standing)
    owners: list[Any] = []
    for part in standing:
        owner = parents.get(id(part))
        if owner is not None and all(owner is not o for o in owners):
            owners.append(owner)
    for owner in owners:
        for k, part in enumerate(owner.parts):
            if id(part) in read:
                continue
            before = {id(p) for p in owner.parts[:k]}
            after = [i + 1 for i, p in enumerate(origin) if id(p) in before]
            at = max(after) if after else next(
                i for i, p in enumerate(origin) if parents.get(id(p)) is owner)
            whole.insert(at, part)
            origin.insert(at, part)
    return whole


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(b.get("text", "") if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else str(content)


def _response(message: dict[str, Any]) -> ModelResponse:
    parts: list[Any] = [TextPart(message["content"])] if message.get("content") else []
    parts += [ToolCallPart(c["function"]["name"], c["function"]["arguments"],
                           tool_call_id=c["id"]) for c in message.get("tool_calls") or ()]
    return _rewritten(ModelResponse(parts=parts))


def _rewritten(message: ModelMessage) -> ModelMessage:
    """``message`` marked as turnpress's (where this pydantic-ai has message metadata)."""
    if hasattr(message, "metadata"):
        message.metadata = dict(REWRITTEN)
    return message


def _is_rewritten(message: ModelMessage) -> bool:
    return (getattr(message, "metadata", None) or {}).get("turnpress") == REWRITTEN["turnpress"]


def _starts_with(messages: Sequence[ModelMessage], view: Sequence[ModelMessage]) -> bool:
    """Whether ``messages`` begins with ``view`` (the same objects, or equal ones)."""
    return bool(view) and len(messages) >= len(view) and all(
        a is b or a == b for a, b in zip(messages, view, strict=False))


class TurnpressHistory:
    """A pydantic-ai history processor: ``Agent(model,
    capabilities=[TurnpressHistory().capability()])`` (pydantic-ai 2), or
    ``Agent(model, history_processors=[TurnpressHistory()])`` (pydantic-ai 1).

    Before each model request it compresses the run's full history with ``strategy``
    (anything :func:`turnpress.normalize` accepts; an unknown one is a ``ValueError``
    here) and returns pydantic-ai messages (see the module docstring). ``cache``
    (``"openai"`` / ``"anthropic"`` / ``"none"``) and ``price`` (a preset or
    ``in=..,cached=..``) are handed to ``compress()``; without ``cache``, the provider
    of the run's model (``OpenAIChatModel``, ``"anthropic:claude-..."``) where it can
    be told, else ``openai`` (see ``turnpress.integrations._common``).
    """

    def __init__(self, strategy: Compression = True, *, cache: str | CacheRules | None = None,
                 price: str | Price | None = None) -> None:
        self.options = CompressOptions(strategy, cache=cache, price=price,
                                       where="TurnpressHistory")
        #: run id -> (the run's full history, what was returned for it last), oldest first
        self._runs: OrderedDict[Any, tuple[list[ModelMessage], list[ModelMessage]]] = (
            OrderedDict())
        self._lock = threading.Lock()  # pydantic-ai runs a processor in worker threads

    def capability(self) -> Any:
        """This processor as a pydantic-ai 2 capability that compresses what the model
        is sent and leaves the run's history whole (:class:`TurnpressCapability`), for
        ``Agent(capabilities=[...])``."""
        if AbstractCapability is None:  # pragma: no cover - pydantic-ai 1
            raise TypeError("this pydantic-ai has no capabilities: pass the processor "
                            "itself, Agent(history_processors=[TurnpressHistory()])")
        return TurnpressCapability(self)

    def full_history(self, run_id: str | None = None) -> list[ModelMessage]:
        """The full history of run ``run_id`` (default: the latest run) as the processor
        last saw it, before compression."""
        with self._lock:
            if run_id is None:
                return list(next(reversed(self._runs.values()))[0]) if self._runs else []
            return list(self._runs[run_id][0])

    def __call__(self, ctx: RunContext[Any], messages: list[ModelMessage]) -> list[ModelMessage]:
        """The messages to send for this model request."""
        full = self._unfold(ctx.run_id, messages)
        forms, _, failed = to_chat(full)
        keywords = self.options.keywords(getattr(ctx, "model", None))
        sent = compress_chat(forms, failed=failed, **keywords)
        instructions = next((m.instructions for m in reversed(full)
                             if isinstance(m, ModelRequest) and m.instructions), None)
        out = from_chat(sent, full, instructions)
        with self._lock:
            self._runs[ctx.run_id] = (full, list(out))
            self._runs.move_to_end(ctx.run_id)
            while len(self._runs) > RUNS_KEPT:
                self._runs.popitem(last=False)
        return out

    def _unfold(self, run_id: Any, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The full history ``messages`` stand for: when they begin with a view this
        processor returned (this run's last one, else another kept run's, newest
        first), the full history that view came from and what was added since; else
        ``messages`` themselves (with a warning when they hold a rewritten message)."""
        with self._lock:
            kept = [self._runs[run_id]] if run_id in self._runs else []
            kept += [seen for other, seen in reversed(self._runs.items()) if other != run_id]
        for full, view in kept:
            if _starts_with(messages, view):
                return [*full, *messages[len(view):]]
        if any(_is_rewritten(m) for m in messages):
            warnings.warn("TurnpressHistory: the message history holds messages turnpress "
                          "rewrote for an earlier request (a run's compressed view), and "
                          "this processor no longer keeps the full history they came from: "
                          "what that compression dropped is lost. Use capability(), which "
                          "leaves the run's history whole, or pass "
                          "message_history=processor.full_history()", UserWarning,
                          stacklevel=2)
        return list(messages)


if AbstractCapability is not None:
    @dataclasses.dataclass
    class TurnpressCapability(AbstractCapability[Any]):
        """A :class:`TurnpressHistory` as a pydantic-ai 2 capability: before each model
        request it replaces the request's messages (``request_context.messages``) with
        the processor's, and never the run's history (``RunContext.messages``), which
        pydantic-ai's own ``ProcessHistory`` would overwrite."""

        processor: TurnpressHistory

        async def before_model_request(self, ctx: RunContext[Any], request_context: Any) -> Any:
            """The request with the compressed messages (the processor runs in a worker
            thread, as ``ProcessHistory`` runs a plain function)."""
            messages = list(request_context.messages)
            request_context.messages = await asyncio.to_thread(self.processor, ctx, messages)
            return request_context

        @classmethod
        def get_serialization_name(cls) -> str | None:
            """None: not in agent specs (it holds a processor object)."""
            return None

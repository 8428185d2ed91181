"""OpenAI Agents SDK: a ``call_model_input_filter`` (``pip install 'turnpress[openai-agents]'``).

The Agents SDK calls ``RunConfig.call_model_input_filter`` before each model call
with the Responses API input items and the instructions it is about to send, and
sends what the filter returns; the run's own items are not changed::

    result = Runner.run_sync(agent, task, run_config=RunConfig(
        call_model_input_filter=TurnpressFilter()))

:class:`TurnpressFilter` reads the items as chat messages (each model response's
``message`` and ``function_call`` items as one assistant message, a
``function_call_output`` as a tool result, a user / system / developer ``message``
as itself, the instructions as the system prompt), compresses them with the
strategy, and writes the result back as Responses items:

- an assistant message the strategy sent as it was goes back as the response's own
  items, unchanged (``id``\\ s, ``status``, its ``reasoning`` items);
- a ``reasoning`` item is opaque and is sent whole, with the response it belongs
  to, or not at all: the API refuses a reasoning item without the item that
  followed it, so when the strategy rewrites that response its reasoning goes too;
- every other item type (hosted tool calls such as ``web_search_call``, a
  ``compaction`` item standing for the server's compacted earlier context...) is
  opaque and always sent whole, where it was: with the response it came in when
  that response is sent as it was (so ``full-history`` sends the input in its
  order), else right after the last item sent as it was that preceded it, and
  never before the first user message unless it came before it (a leading
  ``compaction`` item stays first);
- rewritten messages are new items (``{"role", "content"}``, ``function_call``,
  ``function_call_output``), with each call's ``call_id``, so every output follows
  its call and no output is left without one;
- a user / system / developer message and a ``function_call_output`` are read with
  their content parts, as ``compress()`` reads Responses input (an ``input_image`` as
  an ``image_url`` part, ``detail`` kept, an ``input_file`` as given): a view the
  strategy writes says ``[image]`` / ``[input_file]`` where such a part was, and
  carries a user's parts, as ``compress(..., format="responses")`` does.

With server-managed conversation state (``previous_response_id``,
``conversation_id``) the input holds only the items added since the last response:
an output whose call is not in the input means the server has the rest, and the
filter sends the input as it is (there is nothing of the past to compress).

A tool output that reports an error (by default: the SDK's own "An error occurred
while running the tool" and text starting with ``Error``; pass ``is_error=``) makes
its turn a failed one for the strategy.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

try:
    from agents.run_config import CallModelData, ModelInputData
except ImportError:  # pragma: no cover - tested in a subprocess
    raise ImportError("turnpress.integrations.openai_agents needs the OpenAI Agents SDK: "
                      "pip install 'turnpress[openai-agents]'") from None

from turnpress.core.compression import Compression
from turnpress.core.pricing import CacheRules, Price
from turnpress.core.responses import chat_content, responses_parts
from turnpress.integrations._common import CompressOptions, compress_chat, message_key

__all__ = ["TurnpressFilter", "from_chat", "to_chat"]

#: item types sent whole and never read: the API wants them back as they were (as
#: every type outside :data:`CHAT_KINDS`: hosted tool calls too)
OPAQUE = ("reasoning", "compaction")
#: the item types read as chat messages; any other but ``reasoning`` is sent whole, in place
CHAT_KINDS = ("message", "function_call", "function_call_output")
_ERROR = re.compile(r"^\s*(An error occurred while running the tool|Error\b)", re.I)


def default_is_error(output: str) -> bool:
    """Whether a tool output reports an error: the Agents SDK's default tool error
    text, or text starting with ``Error``."""
    return bool(_ERROR.match(output))


def _plain(item: Any) -> Any:
    """An item as a dict (SDK / pydantic objects through ``model_dump``)."""
    if hasattr(item, "model_dump") and not isinstance(item, Mapping):
        return item.model_dump(exclude_unset=True)
    return item


def _kind(item: Mapping[str, Any]) -> str:
    """``message``, ``function_call``, ``function_call_output``, or the item's type."""
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return str(kind)


def _text(content: Any) -> str:
    """A message's or an output's content as text."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(str(p.get("text", "") if isinstance(p, Mapping) else p)
                       for p in content)
    return "" if content is None else str(content)


def _chat_content(content: Any) -> Any:
    """A user / system / developer message's Responses content, or a
    ``function_call_output``'s output, in the chat shape, as ``compress()`` reads it
    (:func:`~turnpress.core.responses.chat_content`: an ``input_image`` as an
    ``image_url`` part, ``detail`` kept, an ``input_file`` as given). So the strategy
    marks an image ``[image]`` and another part ``[its type]`` in a view it writes, and
    carries the parts, as ``compress()`` does."""
    return chat_content(content) if isinstance(content, list) else _text(content)


def _responses_content(content: Any) -> Any:
    """A rewritten message's or tool output's chat content back as Responses content
    (the inverse of :func:`_chat_content`)."""
    return responses_parts(content, "user") if isinstance(content, list) else _text(content)


def _is_user(item: Any) -> bool:
    """Whether an input item is a user message."""
    item = _plain(item)
    return isinstance(item, Mapping) and _kind(item) == "message" and item.get("role") == "user"


def _is_hosted(item: Any) -> bool:
    """Whether an input item is opaque and always sent (a hosted tool call, a
    ``compaction``...: neither a chat message nor ``reasoning``)."""
    item = _plain(item)
    return not isinstance(item, Mapping) or _kind(item) not in (*CHAT_KINDS, "reasoning")


def to_chat(items: Sequence[Any], instructions: str | None = None,
            is_error: Callable[[str], bool] = default_is_error,
            ) -> tuple[list[dict[str, Any]], list[list[Any]], list[Any], set[str]]:
    """``(chat messages, the items each came from, items kept aside, failed call ids)``
    of Responses input ``items`` (see the module docstring). ``instructions`` is a
    system message first. Opaque items (``reasoning``, hosted tool calls...) are among
    the items of the model response they precede; those that precede none are kept
    aside."""
    forms: list[dict[str, Any]] = []
    sources: list[list[Any]] = []
    aside: list[Any] = []
    failed: set[str] = set()
    if instructions:
        forms.append({"role": "system", "content": instructions})
        sources.append([])
    pending: list[Any] = []  # reasoning items waiting for the output item they precede
    response: dict[str, Any] | None = None  # the assistant message being gathered
    for raw in items:
        item = _plain(raw)
        kind = _kind(item) if isinstance(item, Mapping) else "?"
        if kind not in CHAT_KINDS:  # reasoning, hosted tool calls...: with what follows
            pending.append(raw)
            continue
        is_assistant = kind == "function_call" or (
            kind == "message" and item.get("role") == "assistant")
        if is_assistant:
            if response is None:
                response = {"role": "assistant", "content": None}
                forms.append(response)
                sources.append([])
            sources[-1].extend([*pending, raw])
            pending = []
            if kind == "message":
                response["content"] = (response["content"] or "") + _text(item.get("content"))
            else:
                response.setdefault("tool_calls", []).append(
                    {"id": item["call_id"], "type": "function",
                     "function": {"name": item["name"], "arguments": item["arguments"]}})
            continue
        response = None
        aside.extend(pending)  # not followed by an output item: sent as it is
        pending = []
        if kind == "function_call_output":
            output = _text(item.get("output"))
            forms.append({"role": "tool", "tool_call_id": item["call_id"],
                          "content": _chat_content(item.get("output"))})
            sources.append([raw])
            if is_error(output):
                failed.add(item["call_id"])
        else:
            forms.append({"role": item.get("role", "user"),
                          "content": _chat_content(item.get("content"))})
            sources.append([raw])
    aside.extend(pending)
    return forms, sources, aside, failed


def from_chat(sent: Sequence[dict[str, Any]], forms: Sequence[dict[str, Any]],
              sources: Sequence[list[Any]], instructions: bool = True
              ) -> tuple[str | None, list[Any]]:
    """``(instructions, items)`` of the chat messages ``sent``: one equal to a form
    is its source items; the others are new items (see the module docstring). With
    ``instructions``, a leading system message is the instructions."""
    same: dict[str, list[list[Any]]] = {}
    for form, source in zip(forms, sources, strict=True):
        same.setdefault(message_key(form), []).append(source)
    text = None
    if instructions and sent and sent[0]["role"] == "system":
        text, sent = _text(sent[0]["content"]), sent[1:]
    items: list[Any] = []
    for message in sent:
        found = same.get(message_key(message))
        source = found.pop(0) if found else None
        if source:
            items.extend(source)
        elif message["role"] == "assistant":
            if message.get("content"):
                items.append({"role": "assistant", "content": _text(message["content"])})
            items.extend({"type": "function_call", "call_id": c["id"],
                          "name": c["function"]["name"],
                          "arguments": c["function"]["arguments"]}
                         for c in message.get("tool_calls") or ())
        elif message["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"],
                          "output": _responses_content(message["content"])})
        else:
            items.append({"role": message["role"],
                          "content": _responses_content(message["content"])})
    return text, items


def _put_back(items: Sequence[Any], out: Sequence[Any], extra: Sequence[Any]) -> list[Any]:
    """``out`` (input items sent as they were, and new ones) with the ``extra`` items of
    ``items`` that it lacks put back where they were: each right after the last item
    of ``out`` that came before it in ``items``, and, if it came after the first user
    message, never before that message."""
    position = {id(item): k for k, item in enumerate(items)}
    known = [position.get(id(item)) for item in out]
    first_user = next((k for k, item in enumerate(items) if _is_user(item)), len(items))
    after_user = next((k + 1 for k, item in enumerate(out) if _is_user(item)), 0)
    slots = []
    for item in extra:
        at = position[id(item)]
        slot = max((k + 1 for k, seen in enumerate(known) if seen is not None and seen < at),
                   default=0)
        slots.append((max(slot, after_user) if at > first_user else slot, at, item))
    placed = list(out)
    for slot, _, item in sorted(slots, key=lambda s: s[:2], reverse=True):
        placed.insert(slot, item)
    return placed


class TurnpressFilter:
    """An Agents SDK ``call_model_input_filter``: ``RunConfig(call_model_input_filter=
    TurnpressFilter())``.

    Compresses the input items and instructions of each model call with ``strategy``
    (anything :func:`turnpress.normalize` accepts; an unknown one is a ``ValueError``
    here); see the module docstring for what is kept whole. ``cache`` (``"openai"`` /
    ``"anthropic"`` / ``"none"``) and ``price`` (a preset or ``in=..,cached=..``) are
    handed to ``compress()``; without ``cache``, the provider of the agent's model
    (``"gpt-4.1"``, ``"litellm/anthropic/claude-..."``, a model object) where it can
    be told, else ``openai`` (see ``turnpress.integrations._common``). ``is_error``
    tells a tool output that reports an error.
    """

    def __init__(self, strategy: Compression = True, *, cache: str | CacheRules | None = None,
                 price: str | Price | None = None,
                 is_error: Callable[[str], bool] = default_is_error) -> None:
        self.options = CompressOptions(strategy, cache=cache, price=price,
                                       where="TurnpressFilter")
        self.is_error = is_error

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The input to send for this model call."""
        items, instructions = data.model_data.input, data.model_data.instructions
        forms, sources, aside, failed = to_chat(items, instructions, self.is_error)
        calls = {c["id"] for f in forms for c in f.get("tool_calls") or ()}
        if not any(f["role"] == "assistant" for f in forms) or any(
                f["role"] == "tool" and f["tool_call_id"] not in calls for f in forms):
            return ModelInputData(input=list(items), instructions=instructions)
        model = getattr(getattr(data, "agent", None), "model", None)
        sent = compress_chat(forms, failed=failed, **self.options.keywords(model))
        new_instructions, out = from_chat(sent, forms, sources, bool(instructions))
        sent_ids = {id(item) for item in out}
        unsent = [item for source in sources for item in source
                  if id(item) not in sent_ids and _is_hosted(item)]
        return ModelInputData(input=_put_back(items, out, [*aside, *unsent]),
                              instructions=new_instructions)

"""A LangChain-style loop: the history is ``BaseMessage``s, compressed by turnpress.

The agent's state is a list of langchain-core messages. A ``LangChainCompressor``
gets each new one and gives back the ``BaseMessage``s to send. Any LangChain chat
model takes them (``ChatOpenAI(...).bind_tools(TOOLS).invoke(sent)`` with
langchain-openai); to stay on langchain-core alone, this example sends them with
the OpenAI SDK, through langchain-core's ``convert_to_openai_messages``. The SDK
reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``:

    python examples/langchain_loop.py [--strategy NAME] [--model MODEL]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)
from openai import OpenAI

from turnpress.compress import count_tokens
from turnpress.integrations.langchain import LangChainCompressor

FILES = {f"src/part_{i}.py": "\n".join(f"LIMIT_{i}_{k} = {i * 100 + k}" for k in range(80))
         for i in range(6)}
TOOLS = [{"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the repository.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"]}}}]


def read_file(path: str) -> str:
    """The tool: a file's text, or an error message the model can act on."""
    return FILES.get(path, f"Error: no such file {path!r}; files: {', '.join(FILES)}")


def main(strategy: str, model: str, max_calls: int = 20) -> None:
    """Run the loop; print, per call, what was sent next to what the full history holds."""
    client = OpenAI()
    history = [SystemMessage("You are a careful code auditor."),
               HumanMessage("Find the largest LIMIT_* constant in src/.")]
    compressor = LangChainCompressor(strategy, tools=TOOLS)
    compressor.extend(history)
    sent_total = full_total = 0
    for number in range(1, max_calls + 1):
        sent = convert_to_openai_messages(compressor.messages())
        reply = client.chat.completions.create(model=model, messages=sent, tools=TOOLS)
        full = convert_to_openai_messages(history)
        sent_tokens, full_tokens = count_tokens(sent), count_tokens(full)
        sent_total, full_total = sent_total + sent_tokens, full_total + full_tokens
        print(f"call {number}: sent {len(sent)} messages, {sent_tokens} tokens "
              f"(full list: {len(full)} messages, {full_tokens} tokens)")
        message = reply.choices[0].message
        new = [AIMessage(message.content or "", tool_calls=[
            {"name": c.function.name, "args": json.loads(c.function.arguments), "id": c.id}
            for c in message.tool_calls or []])]
        new += [ToolMessage(read_file(**c["args"]), tool_call_id=c["id"])
                for c in new[0].tool_calls]
        history.extend(new)
        compressor.extend(new)
        if not message.tool_calls:
            print(f"answer: {message.content}")
            break
    print(f"tokens sent: {sent_total}, full lists: {full_total}, "
          f"saved: {full_total - sent_total} ({1 - sent_total / full_total:.0%})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="single-user-coalesced")
    parser.add_argument("--model", default="gpt-4o-mini")
    options = parser.parse_args()
    if not os.environ.get("OPENAI_API_KEY"):
        sys.exit("examples/langchain_loop.py: set OPENAI_API_KEY (and OPENAI_BASE_URL for another "
                 "OpenAI-compatible server) to run it")
    main(options.strategy, options.model)

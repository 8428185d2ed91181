"""A plain OpenAI SDK tool-calling loop that sends turnpress-compressed messages.

The loop keeps the full message list as usual; a ``turnpress.Compressor`` gets each
new message and says what to send instead. Run it against any OpenAI-compatible
server (the SDK reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``):

    python examples/openai_loop.py [--strategy NAME] [--model MODEL]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from openai import OpenAI

from turnpress import Compressor
from turnpress.compress import count_tokens

# A toy repository the agent reads through its one tool.
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
    """Run the loop; print, per call, what was sent next to what the full list holds."""
    client = OpenAI()
    messages = [{"role": "system", "content": "You are a careful code auditor."},
                {"role": "user", "content": "Find the largest LIMIT_* constant in src/."}]
    compressor = Compressor(strategy, tools=TOOLS)
    compressor.extend(messages)
    sent_total = full_total = 0
    for number in range(1, max_calls + 1):
        sent = compressor.messages()
        reply = client.chat.completions.create(model=model, messages=sent, tools=TOOLS)
        sent_tokens, full_tokens = count_tokens(sent), count_tokens(messages)
        sent_total, full_total = sent_total + sent_tokens, full_total + full_tokens
        print(f"call {number}: sent {len(sent)} messages, {sent_tokens} tokens "
              f"(full list: {len(messages)} messages, {full_tokens} tokens)")
        message = reply.choices[0].message
        new = [{"role": "assistant", "content": message.content,
                **({"tool_calls": [c.model_dump() for c in message.tool_calls]}
                   if message.tool_calls else {})}]
        for tool_call in message.tool_calls or []:
            arguments = json.loads(tool_call.function.arguments)
            new.append({"role": "tool", "tool_call_id": tool_call.id,
                        "content": read_file(**arguments)})
        messages.extend(new)
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
        sys.exit("examples/openai_loop.py: set OPENAI_API_KEY (and OPENAI_BASE_URL for "
                 "another OpenAI-compatible server) to run it")
    main(options.strategy, options.model)

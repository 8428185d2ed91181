"""An Anthropic SDK tool-use loop that sends turnpress-compressed messages.

Like examples/openai_loop.py, with Anthropic's shapes: the Compressor takes the
system prompt apart and each user / assistant message with its blocks, and gives
back ``(system, messages)`` with ``cache_control`` at the strategy's stable prefix.
The SDK reads ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY``:

    python examples/anthropic_loop.py [--strategy NAME] [--model MODEL]
"""

from __future__ import annotations

import argparse
import os
import sys

from anthropic import Anthropic

from turnpress import Compressor
from turnpress.compress import count_tokens

FILES = {f"src/part_{i}.py": "\n".join(f"LIMIT_{i}_{k} = {i * 100 + k}" for k in range(80))
         for i in range(6)}
TOOLS = [{"name": "read_file", "description": "Read a file of the repository.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}},
                           "required": ["path"]}}]
SYSTEM = "You are a careful code auditor."
MODEL = "claude-sonnet-4-6"


def read_file(path: str) -> tuple[str, bool]:
    """The tool: a file's text and whether it is an error."""
    if path in FILES:
        return FILES[path], False
    return f"Error: no such file {path!r}; files: {', '.join(FILES)}", True


def main(strategy: str, model: str, max_calls: int = 20) -> None:
    """Run the loop; print, per call, what was sent next to what the full list holds
    (the full list counted in the same request shape, so full-history saves 0)."""
    client = Anthropic()
    messages = [{"role": "user", "content": "Find the largest LIMIT_* constant in src/."}]
    compressor = Compressor(strategy, format="anthropic", tools=TOOLS, system=SYSTEM)
    compressor.extend(messages)
    # the full list, shaped as it would be sent (system blocks, cache_control markers),
    # so both counts measure the same kind of request
    full = Compressor("full-history", format="anthropic", tools=TOOLS, system=SYSTEM)
    full.extend(messages)
    sent_total = full_total = 0
    for number in range(1, max_calls + 1):
        system, sent = compressor.messages()
        reply = client.messages.create(model=model, max_tokens=1024, system=system,
                                       messages=sent, tools=TOOLS)
        sent_tokens = count_tokens([system, sent])
        full_tokens = count_tokens(list(full.messages()))
        sent_total, full_total = sent_total + sent_tokens, full_total + full_tokens
        print(f"call {number}: sent {len(sent)} messages, {sent_tokens} tokens "
              f"(full list: {len(messages)} messages, {full_tokens} tokens)")
        new = [{"role": "assistant",
                "content": [block.model_dump(exclude_none=True) for block in reply.content]}]
        results = []
        for block in reply.content:
            if block.type == "tool_use":
                text, failed = read_file(**block.input)
                results.append({"type": "tool_result", "tool_use_id": block.id,
                                "content": text, "is_error": failed})
        if results:
            new.append({"role": "user", "content": results})
        messages.extend(new)
        compressor.extend(new)
        full.extend(new)
        if reply.stop_reason != "tool_use":
            print("answer: " + "".join(b.text for b in reply.content if b.type == "text"))
            break
    print(f"tokens sent: {sent_total}, full lists: {full_total}, "
          f"saved: {full_total - sent_total} ({1 - sent_total / full_total:.0%})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="single-user-coalesced")
    parser.add_argument("--model", default=MODEL)
    options = parser.parse_args()
    if not os.environ.get("ANTHROPIC_API_KEY"):
        sys.exit("examples/anthropic_loop.py: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL "
                 "for another Anthropic-compatible server) to run it")
    main(options.strategy, options.model)

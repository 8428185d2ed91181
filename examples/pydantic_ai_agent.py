"""A pydantic-ai agent whose model sees turnpress's compressed history: one history processor.

    agent = Agent(model, capabilities=[TurnpressHistory(strategy).capability()])

(pydantic-ai 2; with pydantic-ai 1, ``history_processors=[TurnpressHistory(strategy)]``.)

The agent audits a repository of 30 files, one ``read_file`` call per step; two
reads fail (the tool raises ``ModelRetry``: pydantic-ai hands the model a
``RetryPromptPart``, which turnpress reads as a failed step). The model is
pydantic-ai's ``FunctionModel`` driven by a script, so the example runs offline: it
reads the next file each step and, at the end, answers with the largest constant it
can still see. It prints, per model call, the tokens the model received (the
messages in the OpenAI chat shape), then the same run without the processor.

The strategy is the library's default, ``price-scheduled``, unless ``--strategy``
names another. It sends each read as a compact delta (the output cut to its head and
tail) and now and then rebuilds one view of the run (tool calls, key lines, the last
error), so the model misses the largest value, in the middle of a file read 25 steps
before the end, which the full history still shows (``single-user-coalesced``,
which shows the newest 15 outputs, misses it too): the recall a strategy trades for
tokens, which ``turnpress compare`` measures on real runs. (The smolagents example
keeps it: its code holds the value in a variable.)

    python examples/pydantic_ai_agent.py [--strategy NAME] [--files N]
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from turnpress.compress import count_tokens
from turnpress.integrations.pydantic_ai import TurnpressHistory, to_chat

MISSION = "Find the largest LIMIT_* constant in src/ and say which file defines it."
SYSTEM = "You are a careful code auditor. Read files with read_file."
MISSING = ("src/part_12_old.py", "src/summary.py")


def repository(files: int) -> dict[str, str]:
    """``files`` source files of 60 constants each; the largest sits in part 7."""
    return {f"src/part_{i:02d}.py": "\n".join(
        f"LIMIT_{i}_{k} = {(9000 if i == 7 and k == 33 else i * 100 + k)}"
        for k in range(60)) for i in range(files)}


def reading_order(files: dict[str, str]) -> list[str]:
    """The paths the model asks for: every file, a missing one in the middle and
    another one last."""
    paths = list(files)
    return [*paths[:12], MISSING[0], *paths[12:], MISSING[1]]


class Script:
    """The model's behaviour, for ``FunctionModel``: it records every request's
    messages and reads the next file, then answers from what it sees."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.requests: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """One model call."""
        self.requests.append(list(messages))
        step = len(self.requests) - 1
        if step < len(self.paths):
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": self.paths[step]},
                                                     tool_call_id=f"call_{step}")])
        seen = " ".join(str(f["content"]) for f in to_chat(messages)[0])
        best = max(re.findall(r"(LIMIT_\d+_\d+) = (\d+)", seen), key=lambda f: int(f[1]))
        return ModelResponse(parts=[TextPart(f"The largest is {best[0]} = {best[1]}.")])


def run(strategy: str | None, files: int = 30) -> tuple[Any, Script, TurnpressHistory | None]:
    """One agent run (``strategy=None``: no processor): its result, script, processor."""
    repo = repository(files)
    script = Script(reading_order(repo))
    processor = TurnpressHistory(strategy) if strategy else None
    agent = Agent(FunctionModel(script), system_prompt=SYSTEM, retries=3,
                  capabilities=[processor.capability()] if processor else [])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        if path not in repo:
            raise ModelRetry(f"no such file {path!r}; files: {', '.join(list(repo)[:3])}...")
        return repo[path]

    return agent.run_sync(MISSION), script, processor


def tokens(messages: list[ModelMessage]) -> int:
    """Tokens of one request's messages, in the OpenAI chat shape."""
    return count_tokens(to_chat(messages)[0])


def main(strategy: str, files: int) -> None:
    """Run with and without the processor; print what the model received."""
    result, script, _ = run(strategy, files)
    plain_result, plain, _ = run(None, files)
    sent = [tokens(r) for r in script.requests]
    full = [tokens(r) for r in plain.requests]
    for number, (a, b) in enumerate(zip(sent, full, strict=True), 1):
        print(f"call {number}: {len(script.requests[number - 1])} messages, {a} tokens "
              f"(without turnpress: {len(plain.requests[number - 1])} messages, {b} tokens)")
    print(f"answer: {result.output} (without turnpress: {plain_result.output})")
    print(f"tokens received: {sum(sent)}, without turnpress: {sum(full)}, "
          f"saved: {1 - sum(sent) / sum(full):.0%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="price-scheduled",
                        help="a turnpress strategy (default: the library's default)")
    parser.add_argument("--files", type=int, default=30)
    options = parser.parse_args()
    main(options.strategy, options.files)

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
names another; it misses the largest value, which the full history still shows (the
recall it trades for tokens: see ``_scripted_task.py``).

    python examples/pydantic_ai_agent.py [--strategy NAME] [--files N]
"""

from __future__ import annotations

from typing import Any

# the audit task the framework examples share: examples/_scripted_task.py
from _scripted_task import (
    MISSION,
    SYSTEM,
    answer,
    options,
    print_calls,
    print_totals,
    reading_order,
    repository,
)
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from turnpress.compress import count_tokens
from turnpress.integrations.pydantic_ai import TurnpressHistory, to_chat


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
        return ModelResponse(parts=[TextPart(answer(seen))])


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
    sent, full = print_calls(script.requests, plain.requests, tokens)
    print_totals(result.output, plain_result.output, sent, full)


if __name__ == "__main__":
    main(*options(__doc__))

"""A LangChain v1 agent whose model sees turnpress's compressed history: one middleware.

    agent = create_agent(model, tools, middleware=[TurnpressMiddleware(strategy)])

The agent audits a repository of 30 files, one ``read_file`` call per step, two
of them files that do not exist (the tool raises; LangChain hands the model the
error as a ``ToolMessage`` with ``status="error"``, which turnpress reads as a
failed step). The chat model is a scripted fake (a LangChain ``BaseChatModel``), so the
example runs offline: it reads the next file each step and, at the end, answers with
the largest constant it can still see. It prints, per model call, the tokens the
model received, then the same run without the middleware.

The strategy is the library's default, ``price-scheduled``, unless ``--strategy``
names another. It sends each read as a compact delta (the output cut to its head and
tail) and now and then rebuilds one view of the run (tool calls, key lines, the last
error), so the model misses the largest value, in the middle of a file read 25 steps
before the end, which the full history still shows (``single-user-coalesced``,
which shows the newest 15 outputs, misses it too): the recall a strategy trades for
tokens, which ``turnpress compare`` measures on real runs. (The smolagents example
keeps it: its code holds the value in a variable.)

    python examples/langchain_agent.py [--strategy NAME] [--files N]
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import ToolException, tool
from pydantic import Field

from turnpress.compress import count_tokens
from turnpress.integrations.langchain import TurnpressMiddleware

MISSION = "Find the largest LIMIT_* constant in src/ and say which file defines it."
SYSTEM = "You are a careful code auditor. Read files with read_file."
MISSING = ("src/part_12_old.py", "src/summary.py")


def repository(files: int) -> dict[str, str]:
    """``files`` source files of 60 constants each; the largest sits in part 7."""
    return {f"src/part_{i:02d}.py": "\n".join(
        f"LIMIT_{i}_{k} = {(9000 if i == 7 and k == 33 else i * 100 + k)}"
        for k in range(60)) for i in range(files)}


def reading_order(files: dict[str, str]) -> list[str]:
    """The paths the model asks for, in order: every file, a missing one in the middle
    and another one last."""
    paths = list(files)
    return [*paths[:12], MISSING[0], *paths[12:], MISSING[1]]


class ScriptedModel(BaseChatModel):
    """A fake chat model: reads the next file each call, then answers from what it sees.

    ``requests`` records the messages of every call, as the model received them."""

    paths: list[str]
    requests: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        """The tools are the agent's; the script knows them."""
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.requests.append(list(messages))
        step = len(self.requests) - 1
        if step < len(self.paths):
            reply = AIMessage("", tool_calls=[{"name": "read_file", "id": f"call_{step}",
                                               "args": {"path": self.paths[step]}}])
        else:
            seen = " ".join(str(m.content) for m in messages)
            best = max(re.findall(r"(LIMIT_\d+_\d+) = (\d+)", seen), key=lambda f: int(f[1]))
            reply = AIMessage(f"The largest is {best[0]} = {best[1]}.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def run(strategy: str | None, files: int = 30) -> tuple[dict[str, Any], ScriptedModel]:
    """One agent run (``strategy=None``: no middleware); its final state and its model."""
    repo = repository(files)

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        if path not in repo:
            raise ToolException(f"no such file {path!r}; files: {', '.join(list(repo)[:3])}...")
        return repo[path]

    read_file.handle_tool_error = lambda e: f"Error: {e}"
    model = ScriptedModel(paths=reading_order(repo))
    middleware = [TurnpressMiddleware(strategy)] if strategy else []
    agent = create_agent(model, [read_file], system_prompt=SYSTEM, middleware=middleware)
    state = agent.invoke({"messages": [{"role": "user", "content": MISSION}]},
                         {"recursion_limit": 4 * files + 20})
    return state, model


def tokens(messages: list[BaseMessage]) -> int:
    """Tokens of one request's messages, in the OpenAI shape."""
    return count_tokens(convert_to_openai_messages(messages))


def main(strategy: str, files: int) -> None:
    """Run with and without the middleware; print what the model received."""
    state, model = run(strategy, files)
    plain_state, plain = run(None, files)
    sent = [tokens(r) for r in model.requests]
    full = [tokens(r) for r in plain.requests]
    for number, (a, b) in enumerate(zip(sent, full, strict=True), 1):
        print(f"call {number}: {len(model.requests[number - 1])} messages, {a} tokens "
              f"(without turnpress: {len(plain.requests[number - 1])} messages, {b} tokens)")
    print(f"state keeps {len(state['messages'])} messages")
    print(f"answer: {state['messages'][-1].content} "
          f"(without turnpress: {plain_state['messages'][-1].content})")
    print(f"tokens received: {sum(sent)}, without turnpress: {sum(full)}, "
          f"saved: {1 - sum(sent) / sum(full):.0%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="price-scheduled",
                        help="a turnpress strategy (default: the library's default)")
    parser.add_argument("--files", type=int, default=30)
    options = parser.parse_args()
    main(options.strategy, options.files)

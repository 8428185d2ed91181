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
names another; it misses the largest value, which the full history still shows (the
recall it trades for tokens: see ``_scripted_task.py``).

    python examples/langchain_agent.py [--strategy NAME] [--files N]
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
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import ToolException, tool
from pydantic import Field

from turnpress.compress import count_tokens
from turnpress.integrations.langchain import TurnpressMiddleware


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
            reply = AIMessage(answer(" ".join(str(m.content) for m in messages)))
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
    sent, full = print_calls(model.requests, plain.requests, tokens)
    print(f"state keeps {len(state['messages'])} messages")
    print_totals(state["messages"][-1].content, plain_state["messages"][-1].content, sent, full)


if __name__ == "__main__":
    main(*options(__doc__))

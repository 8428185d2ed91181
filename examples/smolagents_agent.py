"""A smolagents CodeAgent whose old steps become what its code learned: one step callback.

    agent = CodeAgent(tools=[read_file], model=model, step_callbacks=[TurnpressMemory()])

The agent audits a repository of 30 files, one step per file: its code reads the
file, keeps the largest constant seen in a variable and prints the file. Two reads
fail (no such file: the tool raises, smolagents records the step's error). The model
is a scripted smolagents ``Model`` that writes that code, so the example runs
offline; its last step answers with the variable. It prints, per model call, the
tokens of the request the model prepared (smolagents' own
``_prepare_completion_kwargs``), then the same run without the callback. The strategy
is the library's default, ``price-scheduled``, unless ``--strategy`` names another:

    python examples/smolagents_agent.py [--strategy NAME] [--files N]
"""

from __future__ import annotations

from typing import Any

# the audit task the framework examples share: examples/_scripted_task.py
from _scripted_task import options, print_calls, print_totals, reading_order, repository
from smolagents import CodeAgent, Model, tool
from smolagents.models import ChatMessage, MessageRole

from turnpress.compress import count_tokens
from turnpress.integrations.smolagents import TurnpressMemory

MISSION = "Find the largest LIMIT_* constant in src/ and say its value."


def code_for(step: int, path: str | None) -> str:
    """The code the scripted model writes at ``step`` (0-based) for ``path``
    (``None``: answer)."""
    if path is None:
        return "final_answer(best)"
    start = "best = 0\n" if step == 0 else ""
    return (f'{start}text = read_file(path="{path}")\n'
            'values = [int(line.split(" = ")[1]) for line in text.splitlines()]\n'
            "best = max([best] + values)\nprint(text)")


class ScriptedModel(Model):
    """A fake smolagents model: writes the next step's code. ``requests`` records every
    request as smolagents prepares it for a provider (role-merged message dicts)."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__(model_id="scripted")
        self.paths = paths
        self.requests: list[list[dict[str, Any]]] = []

    def generate(self, messages: list[ChatMessage], stop_sequences: list[str] | None = None,
                 response_format: Any = None, tools_to_call_from: Any = None,
                 **kwargs: Any) -> ChatMessage:
        """The next step's code, after smolagents prepared the request."""
        request = self._prepare_completion_kwargs(
            messages=messages, stop_sequences=stop_sequences,
            response_format=response_format, tools_to_call_from=tools_to_call_from, **kwargs)
        self.requests.append(request["messages"])
        step = len(self.requests) - 1
        path = self.paths[step] if step < len(self.paths) else None
        return ChatMessage(role=MessageRole.ASSISTANT, content=(
            f"Thought: step {step + 1}.\n<code>\n{code_for(step, path)}\n</code>"))


def run(strategy: str | None, files: int = 30) -> tuple[Any, CodeAgent, ScriptedModel]:
    """One agent run (``strategy=None``: no callback): its answer, agent and model."""
    repo = repository(files)

    @tool
    def read_file(path: str) -> str:
        """Read a file of the repository.

        Args:
            path: the file's path, e.g. src/part_00.py
        """
        if path not in repo:
            raise FileNotFoundError(f"no such file {path!r}")
        return repo[path]

    model = ScriptedModel(reading_order(repo))
    callbacks = [TurnpressMemory(strategy)] if strategy else []
    agent = CodeAgent(tools=[read_file], model=model, step_callbacks=callbacks,
                      max_steps=files + 10, verbosity_level=-1)
    answer = agent.run(MISSION)
    return answer, agent, model


def main(strategy: str, files: int) -> None:
    """Run with and without the callback; print what the model received."""
    answer, _, model = run(strategy, files)
    plain_answer, _, plain = run(None, files)
    sent, full = print_calls(model.requests, plain.requests, count_tokens)
    print_totals(answer, plain_answer, sent, full)


if __name__ == "__main__":
    main(*options(__doc__))

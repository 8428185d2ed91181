"""An OpenAI Agents SDK agent whose model sees turnpress's compressed input: one filter.

    Runner.run_sync(agent, task, run_config=RunConfig(
        call_model_input_filter=TurnpressFilter(strategy)))

The agent audits a repository of 30 files, one ``read_file`` call per step, each
call preceded by a ``reasoning`` item as reasoning models send; two reads fail (the
tool raises; its ``failure_error_function`` hands the model ``Error: ...``). The
model is a scripted implementation of the SDK's ``Model`` interface, so the example
runs offline: it reads the next file each step and, at the end, answers with the
largest constant it can still see. It prints, per model call, the tokens of the
Responses input the model received, then the same run without the filter.

The strategy is the library's default, ``price-scheduled``, unless ``--strategy``
names another; it misses the largest value, which the full history still shows (the
recall it trades for tokens: see ``_scripted_task.py``).

    python examples/openai_agents_agent.py [--strategy NAME] [--files N]
"""

from __future__ import annotations

import json
from typing import Any

# the audit task the framework examples share: examples/_scripted_task.py
from _scripted_task import (
    MISSION,
    answer,
    options,
    print_calls,
    print_totals,
    reading_order,
    repository,
)
from _scripted_task import SYSTEM as INSTRUCTIONS
from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)

from turnpress.compress import count_tokens
from turnpress.integrations.openai_agents import TurnpressFilter


class ScriptedModel(Model):
    """A fake model behind the SDK's ``Model`` interface: ``requests`` records the
    instructions and input items of every call."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self.requests: list[tuple[str | None, list[Any]]] = []

    async def get_response(self, system_instructions: str | None, input: Any,
                           model_settings: Any, tools: Any, output_schema: Any,
                           handoffs: Any, tracing: Any, **kwargs: Any) -> ModelResponse:
        """The next call: a reasoning item and a read, or the answer."""
        items = [{"role": "user", "content": input}] if isinstance(input, str) else input
        self.requests.append((system_instructions, json.loads(json.dumps(items))))
        step = len(self.requests) - 1
        if step < len(self.paths):
            output: list[Any] = [
                ResponseReasoningItem(id=f"rs_{step}", type="reasoning", summary=[],
                                      encrypted_content=f"opaque-{step}"),
                ResponseFunctionToolCall(id=f"fc_{step}", call_id=f"call_{step}",
                                         type="function_call", name="read_file",
                                         arguments=json.dumps({"path": self.paths[step]}))]
        else:
            output = [ResponseOutputMessage(
                id="msg_answer", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", annotations=[],
                                            text=answer(json.dumps(items)))])]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        """Not used: the example runs without streaming."""
        raise NotImplementedError("ScriptedModel does not stream")


def run(strategy: str | None, files: int = 30) -> tuple[Any, ScriptedModel]:
    """One agent run (``strategy=None``: no filter): its result and model."""
    repo = repository(files)

    def read_file(path: str) -> str:
        """Read a file of the repository."""
        if path not in repo:
            raise FileNotFoundError(f"no such file {path!r}")
        return repo[path]

    tool = function_tool(read_file, failure_error_function=lambda ctx, e: f"Error: {e}")
    model = ScriptedModel(reading_order(repo))
    agent = Agent(name="auditor", instructions=INSTRUCTIONS, model=model, tools=[tool])
    config = RunConfig(call_model_input_filter=TurnpressFilter(strategy) if strategy else None,
                       tracing_disabled=True)
    result = Runner.run_sync(agent, MISSION, run_config=config, max_turns=files + 10)
    return result, model


def main(strategy: str, files: int) -> None:
    """Run with and without the filter; print what the model received."""
    result, model = run(strategy, files)
    plain_result, plain = run(None, files)
    sent, full = print_calls(model.requests, plain.requests, count_tokens,
                             size=lambda request: len(request[1]), unit="items")
    print_totals(result.final_output, plain_result.final_output, sent, full)


if __name__ == "__main__":
    main(*options(__doc__))

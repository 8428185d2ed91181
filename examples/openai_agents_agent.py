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
names another. It sends each read as a compact delta (the output cut to its head and
tail) and now and then rebuilds one view of the run (tool calls, key lines, the last
error), so the model misses the largest value, in the middle of a file read 25 steps
before the end, which the full history still shows (``single-user-coalesced``,
which shows the newest 15 outputs, misses it too): the recall a strategy trades for
tokens, which ``turnpress compare`` measures on real runs. (The smolagents example
keeps it: its code holds the value in a variable.)

    python examples/openai_agents_agent.py [--strategy NAME] [--files N]
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)

from turnpress.compress import count_tokens
from turnpress.integrations.openai_agents import TurnpressFilter

MISSION = "Find the largest LIMIT_* constant in src/ and say which file defines it."
INSTRUCTIONS = "You are a careful code auditor. Read files with read_file."
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
            seen = json.dumps(items)
            best = max(re.findall(r"(LIMIT_\d+_\d+) = (\d+)", seen), key=lambda f: int(f[1]))
            output = [ResponseOutputMessage(
                id="msg_answer", type="message", role="assistant", status="completed",
                content=[ResponseOutputText(type="output_text", annotations=[],
                                            text=f"The largest is {best[0]} = {best[1]}.")])]
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
    sent = [count_tokens(r) for r in model.requests]
    full = [count_tokens(r) for r in plain.requests]
    for number, (a, b) in enumerate(zip(sent, full, strict=True), 1):
        print(f"call {number}: {len(model.requests[number - 1][1])} items, {a} tokens "
              f"(without turnpress: {len(plain.requests[number - 1][1])} items, {b} tokens)")
    print(f"answer: {result.final_output} (without turnpress: {plain_result.final_output})")
    print(f"tokens received: {sum(sent)}, without turnpress: {sum(full)}, "
          f"saved: {1 - sum(sent) / sum(full):.0%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strategy", default="price-scheduled",
                        help="a turnpress strategy (default: the library's default)")
    parser.add_argument("--files", type=int, default=30)
    options = parser.parse_args()
    main(options.strategy, options.files)

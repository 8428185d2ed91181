"""The long scripted runs of ``scripts/record_long_runs.py``: one module per run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from turnpress import Tool, Trace
from turnpress.agent import Agent, ScriptedLLM

__all__ = ["LongRun", "record"]


@dataclass
class LongRun:
    """One scripted run: what the agent is given and the replies it will send."""

    name: str
    mission: str
    data: dict[str, Any]
    tools: dict[str, Tool]
    replies: list[str] = field(default_factory=list)
    failures: dict[int, str] = field(default_factory=dict)  # turn number -> failure reason
    max_turns: int = 0

    def say(self, prose: str, program: str, *, fails: str | None = None) -> None:
        """Append one scripted reply; ``fails`` is the failure reason this turn must hit."""
        self.replies.append(f"{prose.strip()}\n\n```clojure\n{program.strip()}\n```")
        if fails:
            self.failures[len(self.replies)] = fails


def record(run: LongRun) -> Trace:
    """Run the agent over the scripted replies and check the run went as scripted."""
    agent = Agent(mission=run.mission, tools=run.tools, data=run.data,
                  llm=ScriptedLLM(run.replies), max_turns=run.max_turns or len(run.replies) + 6,
                  compression=False)
    step = agent.run()
    failed = {t.number: t.result.reason for t in step.turns if not t.success}
    problems = []
    if len(step.turns) != len(run.replies):
        problems.append(f"{len(step.turns)} turns ran, {len(run.replies)} were scripted")
    if failed != run.failures:
        problems.append(f"failed turns {failed} differ from the scripted {run.failures}"
                        + "".join(f"\n  turn {t.number}: {t.result.message}"
                                  for t in step.turns if not t.success))
    if not step.success:
        problems.append(f"the run did not return: {step.failure}")
    if problems:
        raise SystemExit(f"{run.name}: " + "; ".join(problems))
    return step.to_trace(name=run.name)



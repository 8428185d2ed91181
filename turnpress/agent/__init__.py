"""The agent side: the multi-turn loop, LLM adapters, mission expansion and tasks.

```python
from turnpress.agent import Agent, ScriptedLLM

step = Agent("Count the products", data={"products": [1, 2, 3]},
             llm=ScriptedLLM(["```clojure\n(return (count data/products))\n```"])).run()
step.result, step.success, step.turns, step.messages
```

Modules: ``agent`` (Agent), ``loop`` (the turn loop), ``step`` (Step), ``llm``
(adapters), ``mission`` (placeholders), ``program`` (program extraction),
``system_prompt`` (the static system prompt), ``tasks`` (TASK.toml files),
``cli`` (``turnpress run``).
"""

from turnpress.agent.agent import INHERIT, Agent, AgentToolError, Settings
from turnpress.agent.llm import (
    LLM,
    Anthropic,
    LLMError,
    LLMReply,
    MissingAPIKeyError,
    MissingDependencyError,
    OpenAICompatible,
    ReplayLLM,
    ScriptedLLM,
    ScriptExhaustedError,
    llm_from_spec,
)
from turnpress.agent.mission import expand_mission
from turnpress.agent.program import extract_program
from turnpress.agent.step import Step
from turnpress.agent.system_prompt import system_prompt
from turnpress.agent.tasks import Task, TaskError, load_task

__all__ = [
    "INHERIT",
    "LLM",
    "Agent",
    "AgentToolError",
    "Anthropic",
    "LLMError",
    "LLMReply",
    "MissingAPIKeyError",
    "MissingDependencyError",
    "OpenAICompatible",
    "ReplayLLM",
    "ScriptExhaustedError",
    "ScriptedLLM",
    "Settings",
    "Step",
    "Task",
    "TaskError",
    "expand_mission",
    "extract_program",
    "llm_from_spec",
    "load_task",
    "system_prompt",
]

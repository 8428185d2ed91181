"""smolagents: a ``CodeAgent``'s old steps as what its code learned
(``pip install 'turnpress[smolagents]'``).

A smolagents ``CodeAgent`` writes Python every step, as turnpress's own agent writes
PTC-Lisp, and keeps its history as ``agent.memory.steps``: a ``TaskStep``, then one
``ActionStep`` per step (``model_output``, ``code_action``, ``observations``,
``error``). The model's input is ``agent.write_memory_to_messages()``, every step
written out in full. The library's documented way to change that memory while the
agent runs is a step callback; :class:`TurnpressMemory` is one::

    agent = CodeAgent(tools=..., model=..., step_callbacks=[TurnpressMemory()])

After each step it replaces the *old* ``ActionStep``\\ s in ``agent.memory.steps``
with :class:`TurnpressView` steps: the strategy's rendering of those steps as
turnpress turns. The newest step stays as smolagents wrote it (the model sees its
last code and that code's observation or error exactly), the ``TaskStep`` (the
mission) and planning steps stay as they are.

What the model sees keeps the order of the steps. A view stands for one *run* of
consecutive old ``ActionStep``\\ s: a ``PlanningStep`` (``planning_interval=``) or a
``TaskStep`` (the next task of ``agent.run(..., reset=False)``) ends the run, and the
steps after it go into a view of their own, after it. So each plan comes before the
steps taken under it and each task before its own steps (whose numbers start again at
1), as smolagents wrote them. A view that no later step joins is left as it is, never
rendered again: the prompt before the newest plan or task does not change, which is
what a provider's prompt cache rewards. The price is one view per plan or task (each
lists what its steps defined and called) instead of one for the whole run; between
plans, where most of a run's steps are, the compression is that of one view.

Each ``ActionStep`` becomes a turn:

- ``program``: ``code_action`` (the coalesced views drop it; ``full-history``
  shows it); a ``ToolCallingAgent``'s step has its tool calls as Python calls;
- ``prints``: the execution logs of ``observations`` (what the code printed), and
  ``result`` the "Last output from code snippet";
- ``tool_calls``: the agent's tools the code called, read from the code (name and
  arguments: literals as values, other expressions as their source text); for a
  ``ToolCallingAgent`` (no code), the step's own ``tool_calls``;
- ``memory``: the variables the code defined, as the Python executor holds them
  after the step (the coalesced views list them with their types);
- a step with ``error`` is a failed turn (reason: the error's class, message: its
  text), which the coalesced views show while it is the latest.

A ``ToolCallingAgent`` writes no code, so a view of steps none of which has code is
rendered with the templates in ``smolagents_templates/`` next to this module (passed as
``template_dirs``): its deltas name each step's tool calls where the strategies'
own templates say "ran (code omitted)" (``price-scheduled``, ``checkpoint-coalesced``).
A ``TURNPRESS_TEMPLATES`` override of those two names still wins: the user's
directories are searched first.

Images of old steps (``observations_images``) are not in the view (a coalesced
view is text). Nothing is lost: the view keeps the ``ActionStep``\\ s it replaced
(``TurnpressView.steps``) and the callback keeps every step (``TurnpressMemory.steps``).
"""

from __future__ import annotations

import ast
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

try:
    from smolagents.memory import ActionStep, MemoryStep
    from smolagents.models import ChatMessage, MessageRole
except ImportError:  # pragma: no cover - tested in a subprocess
    raise ImportError("turnpress.integrations.smolagents needs smolagents: "
                      "pip install 'turnpress[smolagents]'") from None

from turnpress.core.compression import Compression, render
from turnpress.core.model import Failure, ToolCall, Turn
from turnpress.core.pricing import CacheRules, Price
from turnpress.core.templates import resolve_template_dirs
from turnpress.integrations._common import CompressOptions

__all__ = ["TurnpressMemory", "TurnpressView", "turn_of"]

LOGS = "Execution logs:\n"
#: the templates of a view of steps without code (see the module docstring)
NO_CODE_TEMPLATES = Path(__file__).resolve().parent / "smolagents_templates"
LAST_OUTPUT = "Last output from code snippet:\n"
_ROLES = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT,
          "system": MessageRole.SYSTEM, "developer": MessageRole.SYSTEM,
          "tool": MessageRole.TOOL_RESPONSE}


@dataclass
class TurnpressView(MemoryStep):
    """The old ``ActionStep``\\ s of ``agent.memory.steps``, as the strategy renders them.

    ``steps`` are the ``ActionStep``\\ s it stands for (unchanged); ``messages`` the
    strategy's messages for them (its system message left out: the agent's own system
    prompt is sent)."""

    steps: list[ActionStep]
    messages: list[dict[str, Any]] = field(default_factory=list)

    def to_messages(self, summary_mode: bool = False) -> list[ChatMessage]:
        """The view's messages for the model (the same in summary mode)."""
        return [ChatMessage(role=_ROLES[m["role"]],
                            content=[{"type": "text", "text": str(m["content"])}])
                for m in self.messages if m["content"]]

    def dict(self) -> dict[str, Any]:
        """The view as smolagents serialises steps: the steps it stands for, and its
        messages."""
        return {"turnpress_view": [s.dict() for s in self.steps], "messages": self.messages}


def _observation(text: str | None) -> tuple[tuple[str, ...], Any]:
    """``(prints, result)`` of a CodeAgent's ``observations`` text."""
    if not text:
        return (), None
    logs, _, last = text.partition(LAST_OUTPUT)
    logs = logs[len(LOGS):] if logs.startswith(LOGS) else logs
    result = last.strip() if last.strip() not in ("", "None") else None
    return ((logs.rstrip("\n"),) if logs.strip() else ()), result


def _argument(node: ast.expr) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def tool_calls_in(code: str, tools: Any) -> list[ToolCall]:
    """The calls of ``tools`` (names) in ``code``, in source order: positional
    arguments, then keyword arguments as one map."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name) and n.func.id in tools]
    calls = []
    for node in sorted(found, key=lambda n: (n.lineno, n.col_offset)):
        args: list[Any] = [_argument(a) for a in node.args]
        named = {k.arg: _argument(k.value) for k in node.keywords if k.arg}
        calls.append(ToolCall(node.func.id, (*args, named) if named else tuple(args)))
    return calls


def _variables(state: Mapping[str, Any], tools: Any) -> dict[str, Any]:
    """The variables the code defined: the executor's state without its own keys,
    the tools, modules and functions."""
    return {k: v for k, v in state.items() if not k.startswith("_") and k not in tools
            and not isinstance(v, types.ModuleType) and not callable(v)}


def _call_text(name: str, arguments: Any) -> str:
    """A tool call as a line of Python: ``name(key='value', ...)``."""
    if isinstance(arguments, Mapping):
        return f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})"
    return f"{name}({arguments!r})"


def _step_calls(step: ActionStep) -> list[tuple[str, Any]]:
    """``(name, arguments)`` of each tool call of a ``ToolCallingAgent``'s step: its
    ``tool_calls``, or, when a tool raised (smolagents then leaves them unset), those of
    the model's message (``model_output_message``), arguments given as JSON read."""
    if step.tool_calls:
        return [(c.name, c.arguments) for c in step.tool_calls]
    message = getattr(step, "model_output_message", None)
    out = []
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if not isinstance(name, str):
            continue
        arguments = getattr(function, "arguments", None)
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except ValueError:
                pass  # not JSON: shown as the text it is
        out.append((name, arguments))
    return out


def turn_of(step: ActionStep, *, tools: Any = (), variables: Mapping[str, Any] | None = None
            ) -> Turn:
    """One ``ActionStep`` as a turnpress :class:`~turnpress.Turn` (see the module
    docstring); ``tools``: the agent's tool names, ``variables``: the code's
    variables after the step."""
    code = step.code_action or ""
    prints, result = _observation(step.observations)
    called = _step_calls(step) if step.code_action is None else []
    if called:  # a ToolCallingAgent's step
        calls = [ToolCall(name, (arguments,)) for name, arguments in called]
        code = "\n".join(_call_text(name, arguments) for name, arguments in called)
    else:
        calls = tool_calls_in(code, tools)
    common: dict[str, Any] = {
        "memory": dict(variables or {}), "prints": prints, "tool_calls": calls,
        "raw_response": str(step.model_output or code)}
    if step.error is not None:
        failure = Failure(type(step.error).__name__, str(step.error).strip())
        return Turn.failed(step.step_number, code, failure, **common)
    return Turn.succeeded(step.step_number, code, result, **common)


class TurnpressMemory:
    """A smolagents step callback: ``CodeAgent(..., step_callbacks=[TurnpressMemory()])``.

    After each ``ActionStep`` it replaces the older ``ActionStep``\\ s of
    ``agent.memory.steps`` with a :class:`TurnpressView` for each run of them between
    plans and tasks (see the module docstring),
    so the next ``write_memory_to_messages()`` (the model's input) holds the
    strategy's view of them. ``strategy`` is anything :func:`turnpress.normalize`
    accepts (an unknown one is a ``ValueError`` here). ``cache`` (``"openai"`` /
    ``"anthropic"`` / ``"none"``) and ``price`` (a preset or ``in=..,cached=..``) are
    handed to the rendering; without ``cache``, the provider of the agent's model
    (its ``model_id``, e.g. ``"anthropic/claude-sonnet-4"``) where it can be told,
    else ``openai`` (see ``turnpress.integrations._common``). ``steps`` holds every
    ``ActionStep`` seen, unchanged, and ``turns`` their turns.
    """

    def __init__(self, strategy: Compression = True, *, cache: str | CacheRules | None = None,
                 price: str | Price | None = None) -> None:
        self.options = CompressOptions(strategy, cache=cache, price=price,
                                       where="TurnpressMemory")
        self.steps: list[ActionStep] = []
        self.turns: list[Turn] = []
        self._turn: dict[int, Turn] = {}  # id(ActionStep) -> its turn

    def __call__(self, step: MemoryStep, agent: Any = None) -> None:
        """Read ``step`` (the one that just ended) and rewrite ``agent.memory``."""
        if not isinstance(step, ActionStep) or agent is None:
            return
        tools = set(getattr(agent, "tools", {}) or {})
        state = getattr(getattr(agent, "python_executor", None), "state", None) or {}
        turn = turn_of(step, tools=tools, variables=_variables(state, tools))
        self.steps.append(step)
        self.turns.append(turn)
        self._turn[id(step)] = turn
        self._rewrite(agent.memory, step, tools, getattr(agent, "model", None))

    def _rewrite(self, memory: Any, newest: ActionStep, tools: Any, model: Any = None) -> None:
        """Replace each run of old action steps (steps and views in a row; ``newest`` is
        appended by smolagents after its callbacks) by one view of them, where the run
        was; a run that is one view already is left as it is (see the module
        docstring)."""
        steps: list[MemoryStep] = []
        for fold, group in groupby(memory.steps, lambda step: isinstance(
                step, (ActionStep, TurnpressView)) and step is not newest):
            run = list(group)  # a run of old steps and views, or other steps in a row
            if fold and not (len(run) == 1 and isinstance(run[0], TurnpressView)):
                steps.append(self._view(run, memory, tools, model))
            else:
                steps.extend(run)
        memory.steps = steps

    def _view(self, run: list[MemoryStep], memory: Any, tools: Any, model: Any = None
              ) -> TurnpressView:
        """One view of the action steps ``run`` holds (its steps and those of its
        views). A step this callback did not see (added before it) is read without
        variables; steps that all wrote no code are rendered with
        :data:`NO_CODE_TEMPLATES`."""
        replaced: list[ActionStep] = []
        for s in run:
            replaced.extend(s.steps if isinstance(s, TurnpressView) else [s])
        turns = [self._turn.get(id(s)) or turn_of(s, tools=tools) for s in replaced]
        keywords = self.options.keywords(model)
        no_code = all(s.code_action is None for s in replaced)
        rendered = render(turns, mission="", system_prompt=memory.system_prompt.system_prompt,
                          turns_left=None, compression=keywords.pop("strategy"),
                          template_dirs=(*resolve_template_dirs(), NO_CODE_TEMPLATES)
                          if no_code else (), **keywords)
        return TurnpressView(replaced, [m for m in rendered if m["role"] != "system"])

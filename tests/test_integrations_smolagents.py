"""The smolagents step callback (issue 19 item 1): a CodeAgent's old ActionSteps become
turnpress's view of what the code learned.

``examples/smolagents_agent.py`` runs a real ``CodeAgent`` loop of 33 steps (the code
runs in smolagents' Python executor) against a scripted smolagents ``Model``.
"""

from __future__ import annotations

import json
from itertools import pairwise

import pytest

pytest.importorskip("smolagents")

from integration_checks import (
    check_chat_request,
    example_output,
    example_runs,
    load_example,
    readme_block,
    run_readme_block,
    saved_percent,
)
from smolagents import CodeAgent, Model, ToolCallingAgent, tool
from smolagents.memory import ActionStep, TaskStep
from smolagents.memory import ToolCall as SmolToolCall
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import Timing
from smolagents.utils import AgentExecutionError

from turnpress import Failure, ToolCall
from turnpress.compress import count_tokens
from turnpress.integrations.smolagents import (
    TurnpressMemory,
    TurnpressView,
    tool_calls_in,
    turn_of,
)

example = load_example("smolagents_agent")
plain, default, coalesced = example_runs(example)


def text(request: list[dict]) -> str:
    return "\n".join(b["text"] for m in request for b in m["content"])


def test_the_example_runs_and_prints_its_savings():
    out = example_output("smolagents_agent")
    assert "answer: 9000 (without turnpress: 9000)" in out
    # the example's default is the library's (price-scheduled); measured: 65% saved
    assert saved_percent(out) >= 55


def test_the_default_sends_fewer_tokens_and_keeps_what_the_code_learned(plain, default):
    """The default (price-scheduled): at least 55% fewer tokens over the run (measured:
    65%), the same answer, and every request valid (smolagents' preparation, the OpenAI
    types, roles alternating) with the mission once and the last error at the end."""
    (answer, agent, model), (plain_answer, _, plain_model) = default, plain
    assert answer == plain_answer == 9000
    assert len(model.requests) == len(plain_model.requests) == 33
    sent = sum(count_tokens(r) for r in model.requests)
    full = sum(count_tokens(r) for r in plain_model.requests)
    assert sent <= 0.45 * full
    assert [type(s) for s in agent.memory.steps] == [TaskStep, TurnpressView, ActionStep]
    for request in model.requests:
        plain_request = json.loads(json.dumps(request))
        check_chat_request(plain_request)
        roles = [m["role"] for m in plain_request]
        assert roles[:2] == ["system", "user"]
        assert all(a != b for a, b in pairwise(roles))
        assert text(request).count("New task:\n" + example.MISSION) == 1
    assert "src/part_12_old.py'" in text(model.requests[14])
    assert "FileNotFoundError: no such file 'src/summary.py'" in text(model.requests[-1])


def test_fewer_tokens_and_the_same_answer_from_what_the_code_learned(plain, coalesced):
    """At least 25% fewer tokens over the run (measured: 34%) with single-user-coalesced,
    and the same answer: the largest value, read 25 steps before the end, lives on in the
    code's variable ``best``."""
    (answer, agent, model), (plain_answer, _, plain_model) = coalesced, plain
    assert answer == plain_answer == 9000
    assert len(model.requests) == len(plain_model.requests) == 33
    sent = sum(count_tokens(r) for r in model.requests)
    full = sum(count_tokens(r) for r in plain_model.requests)
    assert sent <= 0.75 * full
    # memory: the task, one view of the old steps, the newest (final answer) step
    assert [type(s) for s in agent.memory.steps] == [TaskStep, TurnpressView, ActionStep]
    view = agent.memory.steps[1]
    assert [s.step_number for s in view.steps] == list(range(1, 33))


def test_code_is_dropped_and_tool_calls_variables_and_errors_are_kept(coalesced):
    _, _, model = coalesced
    last = text(model.requests[-1])
    assert last.count("New task:\n" + example.MISSION) == 1
    assert 'read_file(path="src/part_05.py")' not in last  # old code: gone
    assert last.count("values = [int(") == 2  # the newest step's code (and its tool call)
    assert ';   read_file({:path "src/part_28.py"})' in last  # the tool calls it made
    assert "best" in last and "; = integer" in last  # the variables it defined
    # the newest step's error, as smolagents wrote it
    assert "FileNotFoundError: no such file 'src/summary.py'" in last
    # an old step's error is shown while it is the latest of the old steps, then resolved
    after = text(model.requests[14])
    assert "Your previous attempt" in after and "src/part_12_old.py'" in after
    assert "no such file 'src/part_12_old.py'" not in last


def test_every_request_passed_smolagents_preparation_and_the_openai_types(coalesced):
    """Each request went through smolagents' ``_prepare_completion_kwargs`` (the model
    recorded its result) and is a valid OpenAI chat request, roles alternating."""
    _, agent, model = coalesced
    for request in model.requests:
        plain = json.loads(json.dumps(request))
        check_chat_request(plain)
        roles = [m["role"] for m in plain]
        assert roles[:2] == ["system", "user"]
        assert all(a != b for a, b in pairwise(roles))  # merged as smolagents does
    json.dumps(agent.memory.get_full_steps(), default=str)  # the memory still serialises


def test_full_history_shows_every_step_code_included():
    answer, _, model = example.run("full-history", files=4)
    assert answer == 359
    last = text(model.requests[-1])
    assert all(f'read_file(path="src/part_0{i}.py")' in last for i in range(4))


def test_turn_of_an_action_step():
    step = ActionStep(step_number=3, timing=Timing(start_time=0.0),
                      code_action='x = read_file("a.py")\ny = search(q=x[:3], limit=2)',
                      observations="Execution logs:\nhello\nLast output from code snippet:\n42",
                      model_output="Thought: go")
    turn = turn_of(step, tools={"read_file", "search"}, variables={"x": "abc"})
    assert turn.success and turn.number == 3 and turn.result == "42"
    assert turn.prints == ("hello",) and dict(turn.memory) == {"x": "abc"}
    assert turn.tool_calls == (ToolCall("read_file", ("a.py",)),
                               ToolCall("search", ({"q": "x[:3]", "limit": 2},)))
    failed = ActionStep(step_number=4, timing=Timing(start_time=0.0), code_action="1/0",
                        error=AgentExecutionError("division by zero", _Logger()))
    assert turn_of(failed).error == Failure("AgentExecutionError", "division by zero")
    assert tool_calls_in("def broken(:", {"read_file"}) == []
    called = ActionStep(step_number=5, timing=Timing(start_time=0.0), observations="a.txt",
                        tool_calls=[SmolToolCall("ls", {"path": "."}, "c1")])
    assert turn_of(called).tool_calls == (ToolCall("ls", ({"path": "."},)),)  # no code
    assert turn_of(called).prints == ("a.txt",)


class _Logger:
    def log_error(self, *args, **kwargs):
        """smolagents errors log themselves."""


def test_options_are_checked_when_the_callback_is_made():
    with pytest.raises(ValueError, match="unknown"):
        TurnpressMemory("no-such-strategy")
    with pytest.raises(ValueError, match="TurnpressMemory: price must be a preset"):
        TurnpressMemory(price={"input": 3.0})
    with pytest.raises(ValueError, match="TurnpressMemory: unknown cache model"):
        TurnpressMemory(cache="bedrock")


@pytest.mark.parametrize(("model_id", "cache", "price"), [
    ("scripted", "openai", None), ("anthropic/claude-sonnet-4", "anthropic", None),
    ("anthropic/claude-sonnet-4", "anthropic", "anthropic-haiku-3.5")])
def test_the_cache_model_is_the_models_provider(model_id, cache, price, monkeypatch):
    """render() gets cache= / price= as given, else the provider of the agent's model
    (its ``model_id``), else openai."""
    import turnpress.integrations.smolagents as integration

    seen = []
    real = integration.render
    monkeypatch.setattr(integration, "render", lambda turns, **k: seen.append(
        (k["cache"], k["price"])) or real(turns, **k))
    repo = example.repository(3)

    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: the path
        """
        return repo[path]

    model = example.ScriptedModel(list(repo))
    model.model_id = model_id
    agent = CodeAgent(tools=[tool(read_file)], model=model, verbosity_level=-1,
                      step_callbacks=[TurnpressMemory(price=price)])
    assert agent.run(example.MISSION) == 259
    assert seen and set(seen) == {(cache, price)}


def test_the_readme_section_runs_as_printed():
    block = readme_block("TurnpressMemory()")
    assert len(block.splitlines()) <= 10
    repo = example.repository(3)

    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: the path
        """
        return repo[path]

    printed = run_readme_block(block, model=example.ScriptedModel(list(repo)),
                               tools=[tool(read_file)], mission=example.MISSION)
    assert printed == "259\n['TaskStep', 'TurnpressView', 'ActionStep']\n"


class ToolCallingModel(Model):
    """A scripted smolagents model for a ``ToolCallingAgent``: five reads, then the answer."""

    def __init__(self, name: str) -> None:
        super().__init__(model_id="scripted")
        self.name = name
        self.requests: list = []

    def generate(self, messages, stop_sequences=None, response_format=None,
                 tools_to_call_from=None, **kwargs):
        request = self._prepare_completion_kwargs(
            messages=messages, stop_sequences=stop_sequences,
            tools_to_call_from=tools_to_call_from, **kwargs)
        self.requests.append(request["messages"])
        k = len(self.requests)
        name, args = ((self.name, {"path": f"src/part_0{k}.py"}) if k < 6
                      else ("final_answer", {"answer": "done"}))
        if k == 3:
            args = {"path": "src/nope.py"}
        function = ChatMessageToolCallFunction(name=name, arguments=args)
        call = ChatMessageToolCall(id=f"c{k}", type="function", function=function)
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])


def test_a_tool_calling_agent_gets_the_view_of_its_tool_calls():
    model = ToolCallingModel(name="read_file_of_the_example")
    read_file = tool(read_file_of_the_example)
    memory = TurnpressMemory()
    agent = ToolCallingAgent(tools=[read_file], model=model, verbosity_level=-1,
                             step_callbacks=[memory])
    assert agent.run("Read the files.") == "done"
    assert [type(s) for s in agent.memory.steps] == [TaskStep, TurnpressView, ActionStep]
    last = text(model.requests[-1])
    # old calls (the newest of them in its compact delta: called NAME(ARGS))
    assert 'read_file_of_the_example({:path "src/part_04.py"})' in last
    assert "LIMIT_5_59 = 559" in last  # the newest step's observation, as written
    assert last.count("Calling tools:") == 1  # the newest step's only
    after_error = text(model.requests[4])  # the failed step, old now, as a delta
    # the call whose tool raised is named (smolagents leaves step.tool_calls unset then:
    # it is read from the model's message; the view said "No tool calls made")
    assert (';; Turn 3\n;; Tool calls made:\n;   read_file_of_the_example({:path '
            '"src/nope.py"})\nError: ') in after_error
    assert ';; Turn 2 called read_file_of_the_example({:path "src/part_02.py"})' in after_error
    assert "Error: Error executing tool 'read_file_of_the_example' with arguments {'path': " \
        "'src/nope.py'}: KeyError" in after_error
    # a step without code has its tool calls as its program
    assert memory.turns[0].program == "read_file_of_the_example(path='src/part_01.py')"


def read_file_of_the_example(path: str) -> str:
    """Read a file of the example's repository.

    Args:
        path: the file's path
    """
    return example.repository(6)[path]


class PlanningModel(Model):
    """A scripted smolagents model for a ``CodeAgent``: the given code, one step at a
    time; a planning call (stop sequence ``<end_plan>``) gets ``PLAN n``."""

    def __init__(self, codes: list[str]) -> None:
        super().__init__(model_id="scripted")
        self.codes = list(codes)
        self.plans = 0
        self.requests: list = []

    def generate(self, messages, stop_sequences=None, response_format=None,
                 tools_to_call_from=None, **kwargs):
        if stop_sequences and "<end_plan>" in stop_sequences:
            self.plans += 1
            return ChatMessage(role=MessageRole.ASSISTANT,
                               content=f"PLAN {self.plans}: read the next files.")
        request = self._prepare_completion_kwargs(
            messages=messages, stop_sequences=stop_sequences,
            response_format=response_format, tools_to_call_from=tools_to_call_from, **kwargs)
        self.requests.append(request["messages"])
        return ChatMessage(role=MessageRole.ASSISTANT,
                           content=f"Thought: go on.\n<code>\n{self.codes.pop(0)}\n</code>")


def reads(*paths: str) -> list[str]:
    """The code of one step per path: read it, print its first line."""
    return [f'text = read_file(path="{p}")\nprint(text.splitlines()[0])' for p in paths]


@tool
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: the file's path
    """
    return "\n".join(f"{path}: LIMIT_{k} = {k * 11}" for k in range(30))


def check_in_order(request: list[dict], groups: list[list[str]]) -> None:
    """Every mention of each group's words in ``request`` comes after every mention of
    the words of the groups before it (those the request mentions)."""
    said = text(request)
    spans = [[(said.find(w), said.rfind(w)) for w in group if w in said] for group in groups]
    spans = [s for s in spans if s]
    for before, after in pairwise(spans):
        assert max(last for _, last in before) < min(first for first, _ in after), (
            before, after, said)


def test_steps_after_a_plan_are_never_shown_before_it():
    """``planning_interval=3``: the steps taken after the second plan are folded into a
    view of their own, after that plan, so the model sees the steps and plans in the
    order they happened; the view of the steps before it is left as it was."""
    model = PlanningModel([*reads(*(f"f{k}.py" for k in range(5))), 'final_answer("ok")'])
    memory = TurnpressMemory()
    agent = CodeAgent(tools=[read_file], model=model, step_callbacks=[memory],
                      verbosity_level=-1, max_steps=10, planning_interval=3)
    assert agent.run("Read five files.") == "ok"
    kinds = [type(s).__name__ for s in agent.memory.steps]
    assert kinds == ["TaskStep", "PlanningStep", "TurnpressView", "PlanningStep",
                     "TurnpressView", "ActionStep"]
    assert [s.step_number for s in agent.memory.steps[2].steps] == [1, 2, 3]
    assert [s.step_number for s in agent.memory.steps[4].steps] == [4, 5]
    assert len(memory.steps) == 6
    for request in model.requests:
        check_in_order(request, [["PLAN 1"], ["f0.py", "f1.py", "f2.py"], ["PLAN 2"],
                                 ["f3.py", "f4.py"]])
    assert "f3.py" in text(model.requests[-1]) and "PLAN 2" in text(model.requests[-1])


def test_the_steps_of_a_second_task_come_after_it():
    """``agent.run(..., reset=False)``: the steps of the first task stay in their view,
    before the second ``TaskStep``; the second task's steps follow it."""
    model = PlanningModel([*reads("a.py", "b.py"), 'final_answer("one")',
                           *reads("c.py"), 'final_answer("two")'])
    agent = CodeAgent(tools=[read_file], model=model, step_callbacks=[TurnpressMemory()],
                      verbosity_level=-1, max_steps=10)
    assert agent.run("Task one: read a.py and b.py.") == "one"
    assert agent.run("Task two: read c.py.", reset=False) == "two"
    kinds = [type(s).__name__ for s in agent.memory.steps]
    assert kinds == ["TaskStep", "TurnpressView", "TaskStep", "TurnpressView", "ActionStep"]
    assert [s.step_number for s in agent.memory.steps[1].steps] == [1, 2, 3]
    for request in model.requests:
        check_in_order(request, [["Task one"], ["a.py", "b.py", '"one"'], ["Task two"],
                                 ["c.py"]])
    assert "c.py" in text(model.requests[-1])


@pytest.mark.parametrize("strategy", ["price-scheduled", "checkpoint-coalesced"])
def test_a_step_without_code_is_not_said_to_have_code(strategy):
    """A ``ToolCallingAgent`` writes no code: its old steps are not "ran (code omitted)"
    but the tool calls they made; a ``CodeAgent``'s steps still are."""
    model = ToolCallingModel(name="read_file_of_the_example")
    agent = ToolCallingAgent(tools=[tool(read_file_of_the_example)], model=model,
                             verbosity_level=-1, step_callbacks=[TurnpressMemory(strategy)])
    assert agent.run("Read the files.") == "done"
    said = "\n".join(text(r) for r in model.requests)
    assert "code omitted" not in said
    assert ";; Turn 1" in said and 'read_file_of_the_example({:path "src/part_01.py"})' in said
    coder = PlanningModel([*reads("a.py", "b.py"), 'final_answer("ok")'])
    agent = CodeAgent(tools=[read_file], model=coder, verbosity_level=-1,
                      step_callbacks=[TurnpressMemory(strategy)])
    assert agent.run("Read two files.") == "ok"
    assert ";; Turn 1 ran (code omitted)" in text(coder.requests[-1])


def test_a_users_template_override_wins_over_the_no_code_templates(tmp_path, monkeypatch):
    """The integration's templates for steps without code come after the user's own
    TURNPRESS_TEMPLATES directories: an override of the same name is still the one used."""
    (tmp_path / "price_scheduled").mkdir()
    (tmp_path / "price_scheduled" / "compact_call.j2").write_text(
        ";; Turn {{ number }} (the user's own template)", encoding="utf-8")
    monkeypatch.setenv("TURNPRESS_TEMPLATES", str(tmp_path))
    model = ToolCallingModel(name="read_file_of_the_example")
    agent = ToolCallingAgent(tools=[tool(read_file_of_the_example)], model=model,
                             verbosity_level=-1,
                             step_callbacks=[TurnpressMemory("price-scheduled")])
    assert agent.run("Read the files.") == "done"
    said = "\n".join(text(r) for r in model.requests)
    assert ";; Turn 1 (the user's own template)" in said
    assert "Turn 1 called" not in said

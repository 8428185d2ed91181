"""TASK.toml loading: the bundled tasks, canned tools, and clear errors for bad files."""

from __future__ import annotations

import pytest

from turnpress.agent import Agent, LLMReply, ScriptedLLM, Task, TaskError, load_task
from turnpress.agent.tasks import (
    DEFAULT_TASK,
    CannedTool,
    bundled_task_names,
    parse_task,
)

MINIMAL = 'mission = "Count to three"\n'


def test_bundled_tasks_load():
    names = bundled_task_names()
    assert {"product-research", "phone-campaign", "order-summary"} <= set(names)
    assert DEFAULT_TASK in names
    for name in names:
        task = load_task(name)
        assert task.name == name and task.bundled
        assert task.description and task.mission and task.replies


def test_load_task_default_and_path(tmp_path):
    assert load_task().name == DEFAULT_TASK
    path = tmp_path / "mine.toml"
    path.write_text(MINIMAL + 'replies = ["(return 3)"]\n')
    task = load_task(path)
    assert (task.name, task.mission, task.replies, task.bundled) == (
        "mine", "Count to three", ("(return 3)",), False)
    assert task.max_turns == 5 and task.compression is True  # the one default


def test_full_format():
    task = parse_task('''
name = "demo"
description = "A demo"
mission = "Use {{x}}"
max_turns = 3
compression = "single-user-coalesced:println_limit=4"
replies = ["first"]

[data]
x = 1
items = [{ a = 1 }, { a = 2 }]

[tools.lookup]
description = "Look up"
params = { key = "string", deep = "boolean" }
returns = "map"
result = { found = true }

[tools.notify]
params = { to = "string" }
returns = "nil"
''')
    assert task.name == "demo" and task.max_turns == 3
    assert task.data == {"x": 1, "items": [{"a": 1}, {"a": 2}]}
    lookup, _notify = task.tools
    assert (lookup.name, dict(lookup.params), lookup.returns, lookup.description) == (
        "lookup", {"key": "string", "deep": "boolean"}, "map", "Look up")
    tools = task.build_tools()
    assert tools["lookup"].fn("k", True) == {"found": True}
    assert tools["notify"].fn("ann") is None  # no result: a side-effect tool returns nil


def test_replies_as_tables_with_usage():
    task = parse_task(MINIMAL + '''
[[replies]]
text = "one"
usage = { input_tokens = 10, output_tokens = 2 }

[[replies]]
text = "two"
''')
    assert task.replies == (LLMReply("one", {"input_tokens": 10, "output_tokens": 2}), "two")


def test_canned_tool_results_per_call_and_copies():
    tool = CannedTool("t", results=[[1], [2]])
    first = tool()
    first.append(99)
    assert tool() == [2]
    with pytest.raises(RuntimeError, match=r"has 2 result.*called 3 times"):
        tool()
    same = CannedTool("s", result={"a": [1]})
    same()["a"].append(2)
    assert same() == {"a": [1]}
    with pytest.raises(RuntimeError, match="service down"):
        CannedTool("e", error="service down")()


def test_build_agent_uses_scripted_replies_and_overrides():
    task = parse_task(MINIMAL + 'max_turns = 3\nreplies = ["a", "b"]\n')
    agent = task.build_agent()
    assert isinstance(agent, Agent) and isinstance(agent.llm, ScriptedLLM)
    assert agent.llm.replies == ("a", "b")
    assert (agent.max_turns, agent.compression) == (3, True)
    other = task.build_agent(lambda m: "x", max_turns=2, compression=True)
    assert (other.max_turns, other.compression) == (2, True)
    assert task.build_agent().llm is not agent.llm  # fresh script each time


def test_build_agent_without_replies_needs_an_llm():
    with pytest.raises(TaskError, match="no scripted replies"):
        parse_task(MINIMAL).build_agent()


@pytest.mark.parametrize(("text", "message"), [
    ('mission = "x', "invalid TOML"),
    ("max_turns = 3\n", "mission: missing"),
    ('mission = 3\n', "mission: expected a string"),
    (MINIMAL + "max_turns = 0\n", "max_turns: must be at least 1"),
    (MINIMAL + 'max_turn = 3\n', "max_turn: unknown key; valid keys: name, description"),
    (MINIMAL + 'compression = "nope"\n', "compression: unknown strategy 'nope'"),
    (MINIMAL + "replies = [1]\n", r"replies\[0\]: expected a string or a table"),
    (MINIMAL + "[[replies]]\nusage = { input_tokens = 1 }\n", r"replies\[0\]\.text: missing"),
    # qa-b item 4: a typo in usage is an error, as everywhere else in the file
    (MINIMAL + '[[replies]]\ntext = "x"\nusage = { input_tokens = 9, cached_tokens = 1 }\n',
     r"replies\[0\]\.usage\.cached_tokens: unknown key; valid keys: input_tokens, "
     r"output_tokens, cached_input_tokens, cache_write_input_tokens$"),
    (MINIMAL + '[[replies]]\ntext = "x"\nusage = { foo = 1 }\n',
     r"replies\[0\]\.usage\.foo: unknown key"),
    (MINIMAL + "[data]\nwhen = 2024-01-01\n", "data.when: dates and times are not supported"),
    (MINIMAL + '[tools.t]\nparams = { a = 1 }\n', "tools.t.params.a: expected a type label"),
    (MINIMAL + '[tools.t]\nresult = 1\nresults = [1]\n', "tools.t.results: give only one of"),
    (MINIMAL + '[tools.t]\nreply = 1\n', "tools.t.reply: unknown key"),
    (MINIMAL + '[tools]\nt = 1\n', "tools.t: expected a table"),
])
def test_bad_task_files_name_the_field(text, message):
    with pytest.raises(TaskError, match=message) as err:
        parse_task(text, where="my.toml")
    assert str(err.value).startswith("my.toml: ")


def test_unknown_task_lists_the_bundled_ones(tmp_path):
    with pytest.raises(TaskError, match=r"unknown task 'nope'; bundled tasks: .*product-research"):
        load_task("nope")
    with pytest.raises(TaskError, match="no such task file"):
        load_task(tmp_path / "missing.toml")


def test_task_is_a_plain_value():
    task = parse_task(MINIMAL)
    assert isinstance(task, Task) and task.source is None and not task.bundled


def test_docs_tasks_md_example_parses_and_runs():
    """docs/tasks.md documents every field, and its example is a working task."""
    import re
    from pathlib import Path

    from turnpress.agent import tasks

    doc = (Path(__file__).resolve().parents[2] / "docs" / "tasks.md").read_text()
    example = re.search(r"## Example\n\n```toml\n(.*?)\n```\n\n## ", doc, re.S).group(1)
    task = parse_task(example, where="docs/tasks.md")
    assert task.name == "cheapest-laptop" and len(task.replies) == 2
    step = task.build_agent().run()
    assert step.success and step.result == "Air"
    for key in (*tasks._TASK_KEYS, *tasks._TOOL_KEYS, "text", "usage"):
        assert f"| `{key}` |" in doc, key

"""docs/plugins.md documents every hook, and each hook's example is a working plugin.

Issue 12 item 9: one section per hook (signature, when it is called, an example,
the errors an author can meet). The test fails when a hook is added to
hookspecs without a section, or when an example stops loading cleanly.
"""

from __future__ import annotations

import re
import types
import warnings
from pathlib import Path

import click
import pytest

from turnpress.cli import TurnpressGroup
from turnpress.core import hookspecs
from turnpress.core.registry import Registry

DOC = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text()
SECTIONS = dict(re.findall(r"^## `(\w+)\(.*?\)`\n(.*?)(?=^## |\Z)", DOC, flags=re.S | re.M))


def spec_names() -> set[str]:
    return {name for name in dir(hookspecs)
            if hasattr(getattr(hookspecs, name), hookspecs.PROJECT_NAME + "_spec")}


def test_every_hook_has_a_section_and_nothing_else_does() -> None:
    assert set(hookspecs.HOOK_NAMES) == spec_names()
    assert list(SECTIONS) == list(hookspecs.HOOK_NAMES)


@pytest.mark.parametrize("hook", hookspecs.HOOK_NAMES)
def test_each_section_has_signature_when_example_errors(hook: str) -> None:
    section = SECTIONS[hook]
    for part in ("**Signature**", "**When it is called**", "**Example**",
                 "**Errors you can meet**"):
        assert part in section, (hook, part)
    assert f"`{hook}(" in section


@pytest.mark.parametrize("hook", hookspecs.HOOK_NAMES)
def test_each_example_loads_strictly_and_registers_something(hook: str,
                                                             tmp_path) -> None:
    [source] = re.findall(r"```python\n(.*?)```", SECTIONS[hook], flags=re.S)
    module = types.ModuleType(f"doc_example_{hook}")
    module.__file__ = str(tmp_path / "plugin.py")
    exec(compile(source, "docs/plugins.md", "exec"), module.__dict__)
    registry = Registry(entry_points=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any PluginWarning fails the test
        info = registry.register(module, name="doc-example")
        registry.load_all()
        group = TurnpressGroup("t")
        registry.register_commands(group)
    assert info.hooks == [hook]
    if hook == "type_label":
        import datetime

        assert registry.type_label(datetime.datetime(2026, 1, 1)) == "datetime"
    elif hook == "template_dirs":
        assert registry.template_dirs() == (tmp_path.resolve(),)
    elif hook == "register_commands":
        assert isinstance(group.commands["hello"], click.Command)
        assert info.registers["command"] == ["hello"]
    else:
        assert info.registers, info


def test_the_trace_reader_example_reads_its_format(tmp_path) -> None:
    """The register_trace_readers example reads `{"my_events": [...], "mission": ...}`
    (ux-b item 1: the "mission" key sent it to turnpress's own reader, so the example
    could never run), and its documented error names the file once (ux-b item 11)."""
    import json

    from turnpress import load_trace
    from turnpress.core.registry import reset_registry
    from turnpress.core.trace import TraceError

    [source] = re.findall(r"```python\n(.*?)```", SECTIONS["register_trace_readers"], flags=re.S)
    module = types.ModuleType("doc_example_reader")
    exec(compile(source, "docs/plugins.md", "exec"), module.__dict__)
    registry = Registry(entry_points=False)
    registry.register(module, name="doc-example")
    previous = reset_registry(registry)
    try:
        good = tmp_path / "ev.json"
        good.write_text(json.dumps({"my_events": [], "mission": "Do X"}))
        trace = load_trace(good)
        assert (trace.mission, trace.source) == ("Do X", "my-events")
        bad = tmp_path / "ev2.json"
        bad.write_text(json.dumps({"my_events": [], "mission": 5}))
        with pytest.raises(TraceError) as caught:
            load_trace(bad)
        assert str(caught.value).count("ev2.json") == 1, str(caught.value)
        assert "field 'mission' must be a string" in str(caught.value)
        # a broken turnpress trace that no reader claims still gets turnpress's own error
        native = tmp_path / "t.json"
        native.write_text(json.dumps({"mission": "m", "max_turns": 2}))
        with pytest.raises(TraceError, match="field"):
            load_trace(native)
    finally:
        reset_registry(previous)

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

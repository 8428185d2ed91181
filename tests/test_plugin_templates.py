"""Plugin templates live in their own namespace; broken templates are one line.

Issue 12 item 8: a plugin that ships ``history/turns_left.j2`` must not change any
built-in strategy; overriding is explicit (``overrides/``) and visible. Issue 13
item 4: a syntax error, an undefined variable, a missing ``default:`` parent or a
template nobody ships is a :class:`TemplateProblem` naming file and line.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from plugin_helpers import make_plugin
from scenarios import exploration

from turnpress import PluginWarning, TemplateProblem, render
from turnpress.cli import main
from turnpress.core.registry import Registry, reset_registry
from turnpress.core.templates import list_templates
from turnpress.examples import example_trace_paths

PRODUCT = str(next(p for p in example_trace_paths() if p.stem == "product-research"))

TEMPLATE_PLUGIN = """
from pathlib import Path
from turnpress import Strategy, hookimpl

class Own(Strategy):
    name = "own-template"

    def to_messages(self, turns, memory, ctx):
        return [ctx.message("user", ctx.template("{template}", mission=ctx.mission))]

@hookimpl
def register_strategies(register):
    register(Own)

@hookimpl
def template_dirs():
    return [str(Path(__file__).parent / "tpl")]
"""



def plugin_with(site, files: dict[str, str], template: str = "own/user.j2") -> Registry:
    make_plugin(site, "tpl", TEMPLATE_PLUGIN.replace("{template}", template),
                module="tpf_tpl.__init__")
    for name, text in files.items():
        path = site / "tpf_tpl" / "tpl" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (site / "turnpress_tpl-1.0.dist-info" / "entry_points.txt").write_text(
        "[turnpress]\ntpl = tpf_tpl\n")
    registry = Registry()
    reset_registry(registry)
    return registry


def test_a_plugin_template_with_a_builtin_name_changes_nothing(site) -> None:
    sc = exploration()
    before = {s: render(sc.turns, compression=s, **sc.render_kwargs())
              for s in ("full-history", "single-user-coalesced")}
    registry = plugin_with(site, {"history/turns_left.j2": "SHADOW {{ turns_left }}",
                                  "own/user.j2": "own: {{ mission }}"})
    with pytest.warns(PluginWarning, match=r"turnpress-tpl 1.0.*history/turns_left.j2' has "
                                           r"the name of a built-in template.*move it to "
                                           r"overrides/history/turns_left.j2"):
        registry.load_all()
    for strategy, messages in before.items():
        assert render(sc.turns, compression=strategy, **sc.render_kwargs()) == messages
    assert render([], mission="m", turns_left=1, compression="own-template") == [
        {"role": "user", "content": "own: m"}]
    infos = {i.name: i.origin for i in list_templates()}
    assert infos["history/turns_left.j2"] == "built-in"
    assert infos["own/user.j2"] == "plugin turnpress-tpl"


def test_an_explicit_override_is_used_and_shown(site) -> None:
    registry = plugin_with(site, {"overrides/history/turns_left.j2": "left={{ turns_left }}"})
    registry.load_all()
    assert render([], mission="m", turns_left=3)[1]["content"] == "m\n\nleft=3"
    assert registry.plugins["tpl"].registers["overrides"] == ["history/turns_left.j2"]
    listing = CliRunner().invoke(main, ["templates", "list"])
    [row] = [line for line in listing.stdout.splitlines()
             if line.startswith("history/turns_left.j2")]
    assert row.split(None, 1)[1] == "overridden by turnpress-tpl"
    plugins = CliRunner().invoke(main, ["plugins"]).stdout
    assert "template history/turns_left.j2: overridden by turnpress-tpl" in plugins
    assert "overrides: history/turns_left.j2" in plugins


def test_a_user_directory_still_beats_a_plugin_override(site, tmp_path_factory) -> None:
    plugin_with(site, {"overrides/history/turns_left.j2": "plugin"})
    mine = tmp_path_factory.mktemp("mine")
    (mine / "history").mkdir()
    (mine / "history" / "turns_left.j2").write_text("mine")
    assert render([], mission="m", turns_left=3, template_dirs=[mine])[1]["content"] == (
        "m\n\nmine")
    assert render([], mission="m", turns_left=3)[1]["content"] == "m\n\nplugin"


def test_a_misspelled_override_warns_and_is_not_a_new_template(site) -> None:
    registry = plugin_with(site, {"overrides/history/turn_left.j2": "typo"},
                           template="history/turn_left.j2")
    with pytest.warns(PluginWarning, match=r"overrides/history/turn_left.j2' overrides no "
                                           r"built-in template \(did you mean "
                                           r"overrides/history/turns_left.j2\?\); it is "
                                           r"ignored"):
        registry.load_all()
    assert "history/turn_left.j2" not in {i.name for i in list_templates()}
    with pytest.raises(TemplateProblem, match=r"template 'history/turn_left.j2' does not "
                                              r"exist"):
        render([], mission="m", turns_left=1, compression="own-template")


# -- broken templates: one line naming file, line and problem ---------------------------


@pytest.mark.parametrize(("text", "problem"), [
    ("line one\n{% if %}", r"turns_left.j2, line 2: syntax error: "),
    ("ok\n{{ turns_remaining }}", r"turns_left.j2, line 2: 'turns_remaining' is undefined "
                                  r"\(undefined variable\)"),
    ('{% extends "default:history/nope.j2" %}',
     r"turns_left.j2, line 1: template 'default:history/nope.j2' does not exist: there is "
     r"no built-in template 'history/nope.j2'"),
])
def test_a_broken_override_is_one_line_naming_file_and_line(tmp_path, text, problem) -> None:
    (tmp_path / "history").mkdir()
    (tmp_path / "history" / "turns_left.j2").write_text(text)
    with pytest.raises(TemplateProblem, match=r"^template .*" + problem) as caught:
        render([], mission="m", turns_left=3, template_dirs=[tmp_path])
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)
    result = CliRunner().invoke(main, ["render", PRODUCT, "--templates", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: template ")
    assert str(tmp_path / "history" / "turns_left.j2") in lines[0]
    assert "Traceback" not in result.output


def test_a_template_a_plugin_strategy_names_but_does_not_ship(site) -> None:
    plugin_with(site, {"own/user.j2": "shipped"}, template="own/missing.j2")
    with pytest.raises(TemplateProblem, match=r"template 'own/missing.j2' does not exist"):
        render([], mission="m", turns_left=1, compression="own-template")
    result = CliRunner().invoke(main, ["render", PRODUCT, "-s", "own-template"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == (
        "Error: template 'own/missing.j2' does not exist in the --templates directories, the "
        "plugins' template directories or the built-in templates")


def test_a_plugin_strategy_that_raises_is_one_line_naming_it(site) -> None:
    make_plugin(site, "raising-strategy", """
        from turnpress import Strategy, hookimpl

        class Boom(Strategy):
            name = "boom"

            def to_messages(self, turns, memory, ctx):
                raise RuntimeError("kaboom")

        @hookimpl
        def register_strategies(register):
            register(Boom)
    """)
    reset_registry(None)
    result = CliRunner().invoke(main, ["render", PRODUCT, "-s", "boom"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip() == (
        "Error: strategy 'boom' of plugin 'raising-strategy' (distribution "
        "turnpress-raising-strategy 1.0, entry point raising-strategy = "
        "tpf_raising_strategy) failed: RuntimeError: kaboom")

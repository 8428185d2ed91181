"""Every way a third-party plugin can go wrong is named, contained, and never a traceback.

Each test installs a throwaway distribution (a real ``*.dist-info`` with a
``turnpress`` entry point), then checks the message (distribution and entry
point named), that the built-in strategies keep working, and that the CLI prints
no traceback (issue 12 tests, issue 13 item 4).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from plugin_helpers import make_plugin

from turnpress import PluginError, PluginWarning, render
from turnpress.cli import main
from turnpress.core import plugin_loading
from turnpress.core.registry import Registry, reset_registry
from turnpress.examples import example_trace_paths

PRODUCT = str(next(p for p in example_trace_paths() if p.stem == "product-research"))
BUILTIN_OK = ["render", PRODUCT, "--strategy", "full-history", "--turn", "2", "-f", "json"]



def cli(*args: str, env: dict[str, str] | None = None):
    """Invoke the CLI against a registry built inside the call (warnings included)."""
    reset_registry(None)
    result = CliRunner().invoke(main, list(args), env=env)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception)
    return result


def assert_builtins_work(result=None) -> None:
    """The default and baseline strategies still render through the CLI."""
    out = cli(*BUILTIN_OK)
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["strategy"] == "full-history"
    assert render([], mission="m", turns_left=2)[1]["content"] == "m\n\nTurns left: 2"


def warning_lines(result) -> list[str]:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    # warnings come as one line each, with no source line echoed after them
    assert all(line.startswith("Warning: ") for line in lines), lines
    return lines


# -- loading -------------------------------------------------------------------------


def test_an_unknown_hook_is_an_error_naming_plugin_hook_and_nearest(site) -> None:
    dist, ep = make_plugin(site, "typo", """
        from turnpress import hookimpl

        @hookimpl
        def register_strategy(register):
            pass
    """)
    with pytest.warns(PluginWarning) as caught:
        registry = Registry()
    message = str(caught[0].message)
    assert f"distribution {dist} 1.0, entry point {ep}" in message
    assert "register_strategy(), which is not a turnpress hook (did you mean " \
           "register_strategies?)" in message
    assert isinstance(registry.errors[0], PluginError)
    assert registry.errors[0].distribution == dist and registry.errors[0].entry_point == ep
    assert registry.plugins["typo"].error and not registry.plugins["typo"].hooks
    result = cli("plugins")
    assert result.exit_code == 0
    assert "typo" in result.stdout and "NOT LOADED" in result.stdout
    assert "did you mean register_strategies?" in result.stdout
    out = cli(*BUILTIN_OK)
    assert [line for line in warning_lines(out) if "register_strategy()" in line]
    assert_builtins_work()


def test_registering_by_hand_with_an_unknown_hook_raises() -> None:
    from turnpress import hookimpl

    class Typo:
        @hookimpl
        def type_lable(self, value):
            return None

    registry = Registry(entry_points=False)
    with pytest.raises(PluginError, match=r"type_lable\(\), which is not a turnpress hook "
                                          r"\(did you mean type_label\?\)"):
        registry.register(Typo(), name="typo")
    assert "typo" not in registry.plugins


def test_a_hook_without_the_marker_is_reported(site) -> None:
    make_plugin(site, "unmarked", """
        def register_strategies(register):
            pass
    """)
    with pytest.warns(PluginWarning, match=r"turnpress-unmarked 1.0.*defines "
                                           r"register_strategies\(\) without "
                                           r"@turnpress.hookimpl"):
        Registry()


@pytest.mark.parametrize(("hook", "expected"), [
    ("type_label(obj)", "its hook type_label(obj) takes 'obj', which type_label(value) does "
                        "not pass; name the parameters as in the hookspec (docs/plugins.md)"),
    ("register_strategies(register, extra)",
     "its hook register_strategies(register, extra) takes 'extra', which "
     "register_strategies(register) does not pass; name the parameters as in the hookspec "
     "(docs/plugins.md)"),
])
def test_a_hook_with_wrong_parameter_names_is_one_warning_line(site, hook, expected) -> None:
    """pluggy's refusal (three lines: 'Plugin ... for hook ...', 'hookimpl definition:',
    'Argument(s) ... can not be found in the hookspec') is one line naming the parameter
    and the hookspec's parameters; the built-ins keep working."""
    dist, ep = make_plugin(site, "qa-argname", f"""
        from turnpress import hookimpl

        @hookimpl
        def {hook}:
            return None
    """)
    result = cli(*BUILTIN_OK)
    assert result.exit_code == 0, result.output
    [line] = warning_lines(result)
    assert line == (f"Warning: plugin 'qa-argname' (distribution {dist} 1.0, entry point "
                    f"{ep}) could not be registered: {expected}")
    assert_builtins_work()


@pytest.mark.parametrize(("body", "expected"), [
    ("raise RuntimeError('kaput')", "failed to import: RuntimeError: kaput"),
    ("import no_such_module_xyz", "failed to import: ModuleNotFoundError"),
    ("raise SystemExit(3)", "called exit (3) while importing; it is left out"),
    ("import sys; sys.exit('bye')", "called exit ('bye') while importing"),
    ("raise KeyboardInterrupt", "raised KeyboardInterrupt while importing; it is left out"),
])
def test_a_plugin_that_fails_to_import_is_named_and_left_out(site, body, expected) -> None:
    dist, ep = make_plugin(site, "bad-import", body + "\n")
    result = cli(*BUILTIN_OK)
    assert result.exit_code == 0, result.output
    [line] = warning_lines(result)
    assert f"plugin 'bad-import' (distribution {dist} 1.0, entry point {ep})" in line
    assert expected in line
    assert "leave it out with TURNPRESS_LOAD_PLUGINS" in line or "left out" in line
    listing = cli("plugins")
    assert listing.exit_code == 0 and "NOT LOADED" in listing.stdout
    assert_builtins_work()


def test_a_slow_import_is_reported_with_its_time(site, monkeypatch, capfd) -> None:
    monkeypatch.setattr(plugin_loading, "SLOW_IMPORT_SECONDS", 0.05)
    make_plugin(site, "slow", "import time\ntime.sleep(0.3)\n")
    with pytest.warns(PluginWarning, match=r"plugin 'slow' .* took \d+\.\d s to import "
                                           r"\(more than 0.05 s\).*TURNPRESS_LOAD_PLUGINS"):
        registry = Registry()
    assert "still importing plugin 'slow'" in capfd.readouterr().err
    assert registry.plugins["slow"].error is None  # slow, but loaded
    assert registry.plugins["slow"].problems


# -- TURNPRESS_LOAD_PLUGINS ------------------------------------------------------------


SHOUT = """
from turnpress import Strategy, hookimpl

class Shout(Strategy):
    name = "shout-{n}"

    def to_messages(self, turns, memory, ctx):
        return [ctx.message("user", ctx.mission.upper())]

@hookimpl
def register_strategies(register):
    register(Shout)
"""


@pytest.mark.parametrize(("value", "loaded"), [
    (None, {"shout-a", "shout-b"}),
    ("", set()),
    ("a", {"shout-a"}),
    ("turnpress-b", {"shout-b"}),
    (" A , turnpress_b ", {"shout-a", "shout-b"}),
])
def test_load_plugins_environment_variable(site, monkeypatch, value, loaded) -> None:
    make_plugin(site, "a", SHOUT.format(n="a"))
    make_plugin(site, "b", SHOUT.format(n="b"))
    if value is not None:
        monkeypatch.setenv("TURNPRESS_LOAD_PLUGINS", value)
    registry = Registry()
    strategies = set(registry.strategies())
    assert strategies & {"shout-a", "shout-b"} == loaded
    assert {"single-user-coalesced", "full-history"} <= strategies  # built-ins always
    env = {} if value is None else {"TURNPRESS_LOAD_PLUGINS": value}
    listing = json.loads(cli("plugins", "--json", env=env).stdout)
    names = {p["name"] for p in listing["plugins"]}
    assert {"a", "b"} & names == {n[-1] for n in loaded}


def test_load_plugins_naming_nothing_installed_warns(site, monkeypatch) -> None:
    make_plugin(site, "a", SHOUT.format(n="a"))
    monkeypatch.setenv("TURNPRESS_LOAD_PLUGINS", "a,nope")
    with pytest.warns(PluginWarning, match="TURNPRESS_LOAD_PLUGINS names 'nope', which no "
                                           "installed plugin has"):
        registry = Registry()
    assert "shout-a" in registry.strategies()



def test_an_unknown_strategy_names_the_plugins_load_plugins_leaves_out(site, monkeypatch
                                                                      ) -> None:
    """With TURNPRESS_LOAD_PLUGINS set, an unknown strategy's error says which installed
    plugins it left out (one of them may provide the name) and how to mend it; a name
    the variable gives that nothing installed has is not called a failed load."""
    from turnpress.core.compression import get_strategy

    make_plugin(site, "a", SHOUT.format(n="a"))
    make_plugin(site, "b", SHOUT.format(n="b"))
    monkeypatch.setenv("TURNPRESS_LOAD_PLUGINS", "b")
    reset_registry(Registry())
    with pytest.raises(ValueError) as info:
        get_strategy("shout-a")
    assert ("Note: TURNPRESS_LOAD_PLUGINS='b' leaves out the installed plugin "
            "turnpress-a (a), which may provide it: unset it, or add the plugin's name."
            in str(info.value))
    assert "failed to load" not in str(info.value)
    monkeypatch.setenv("TURNPRESS_LOAD_PLUGINS", "a,b,nope")
    with pytest.warns(PluginWarning, match="names 'nope'"):
        reset_registry(Registry())
    with pytest.raises(ValueError) as info:
        get_strategy("shout-c")
    assert "Note:" not in str(info.value)  # nothing left out, nothing failed
    reset_registry(None)


def test_an_unknown_command_names_the_plugins_load_plugins_leaves_out(site) -> None:
    """With TURNPRESS_LOAD_PLUGINS set, an unknown command's error says which installed
    plugins it left out, as an unknown strategy's does (it was click's plain "No such
    command 'hello'"); with nothing left out it is click's message alone."""
    make_plugin(site, "hello", """
        import click
        from turnpress import hookimpl

        @hookimpl
        def register_commands(cli):
            @cli.command()
            def hello():
                click.echo("hello")
    """)
    assert cli("hello").output == "hello\n"
    out = cli("hello", env={"TURNPRESS_LOAD_PLUGINS": ""})
    assert out.exit_code == 2
    assert out.output.splitlines()[-1] == (
        "Error: No such command 'hello'. Note: TURNPRESS_LOAD_PLUGINS='' leaves out the "
        "installed plugin turnpress-hello (hello), which may provide it: unset it, or add "
        "the plugin's name.")
    out = cli("helo")
    assert out.exit_code == 2 and "Note:" not in out.output, out.output


# -- raising in each hook --------------------------------------------------------------


@pytest.mark.parametrize("hook", ["register_strategies", "register_namespace_renderers",
                                  "register_tokenizers", "template_dirs",
                                  "register_commands"])
def test_raising_in_a_registration_hook(site, hook) -> None:
    args = "cli" if hook == "register_commands" else (
        "" if hook == "template_dirs" else "register")
    dist, ep = make_plugin(site, "raiser", f"""
        from turnpress import hookimpl

        @hookimpl
        def {hook}({args}):
            raise RuntimeError("inside {hook}")
    """)
    registry = Registry()
    with pytest.warns(PluginWarning, match=rf"distribution {dist} 1.0, entry point {ep}\) "
                                           rf"raised in hook {hook}\(\): RuntimeError: "
                                           rf"inside {hook}"):
        registry.load_all()
        from turnpress.cli import TurnpressGroup

        registry.register_commands(TurnpressGroup("t"))
    listing = cli("plugins")
    assert listing.exit_code == 0 and f"inside {hook}" in listing.stdout
    assert_builtins_work()


def test_raising_in_type_label_falls_back_to_the_builtin(site) -> None:
    make_plugin(site, "label-raiser", """
        from turnpress import hookimpl

        @hookimpl
        def type_label(value):
            raise ValueError("no label")
    """)
    registry = Registry()
    with pytest.warns(PluginWarning, match="turnpress-label-raiser.*raised in hook "
                                           r"type_label\(\): ValueError: no label"):
        assert registry.type_label({"a": 1}) == "map[1]"
    assert_builtins_work()


NAMESPACE = """
from turnpress import hookimpl

@hookimpl
def register_namespace_renderers(register):
    register("env/", {renderer}, 250)
"""


@pytest.mark.parametrize(("renderer", "expected"), [
    ("lambda view: 1 / 0", "failed: ZeroDivisionError: division by zero; its section is "
                           "left out"),
    ("lambda view: ['not', 'text']", "returned ['not', 'text'] (list), not a string or None;"
                                     " its section is left out"),
])
def test_a_broken_namespace_renderer_is_named_and_left_out(site, renderer, expected) -> None:
    dist, ep = make_plugin(site, "ns", NAMESPACE.format(renderer=renderer))
    previous = reset_registry(Registry())
    try:
        with pytest.warns(PluginWarning) as caught:
            for strategy in ("single-user-coalesced", "full-history", "rolling-window"):
                messages = render([], mission="m", data={"x": 1}, turns_left=2,
                                  compression=strategy)
                assert "data/x" in messages[1]["content"]
                assert "env/" not in messages[1]["content"]
    finally:
        reset_registry(previous)
    message = str(caught[0].message)
    assert f"namespace renderer 'env/' of plugin 'ns' (distribution {dist} 1.0, entry point " \
           f"{ep})" in message and expected in message
    result = cli("render", PRODUCT, "--strategy", "single-user-coalesced", "--turn", "2")
    assert result.exit_code == 0 and "env/" not in result.stdout
    assert any("namespace renderer 'env/'" in line for line in warning_lines(result))


def test_a_broken_tokenizer_is_a_plugin_error_naming_it(site) -> None:
    make_plugin(site, "tok", """
        from turnpress import hookimpl

        @hookimpl
        def register_tokenizers(register):
            register("boom", lambda text: 1 / 0)
            register("float", lambda text: 2.5)
    """)
    registry = Registry()
    tokenizers = registry.tokenizers()
    with pytest.raises(PluginError, match=r"tokenizer 'boom' of plugin 'tok' .*turnpress-tok"
                                          r".*failed: ZeroDivisionError"):
        tokenizers["boom"].value("text")
    from turnpress.core.tokens import get_tokenizer

    with pytest.raises(ValueError, match=r"tokenizer 'float' returned 2.5"):
        get_tokenizer("float", registry=registry).count("text")
    assert tokenizers["chars4"].value("abcdefgh") == 2
    # compare says it once (ux-b item 12: "... failed: PluginError: tokenizer ... failed: ...")
    from turnpress.compare import CompareError, compare_traces
    from turnpress.core.registry import reset_registry

    previous = reset_registry(registry)
    try:
        with pytest.raises(CompareError) as caught:
            compare_traces([PRODUCT], ["full-history"], tokenizer="boom")
    finally:
        reset_registry(previous)
    message = str(caught.value)
    assert message.count("failed") == 1 and "PluginError" not in message, message
    assert "tokenizer 'boom' of plugin 'tok'" in message and "ZeroDivisionError" in message


# -- wrong answers ---------------------------------------------------------------------


@pytest.mark.parametrize(("source", "expected"), [
    ("@hookimpl\ndef template_dirs():\n    return 5\n",
     r"template_dirs\(\) returned 5 \(int\); it must return a list of directory paths"),
    ("@hookimpl\ndef template_dirs():\n    return ['/no/such/dir/xyz']\n",
     r"template directory '/no/such/dir/xyz' does not exist; it is left out"),
    ("@hookimpl\ndef template_dirs():\n    return [3]\n",
     r"template_dirs\(\) returned 3 \(int\) in its list, not a directory path"),
    ("class S:\n    name = 's'\n    def to_messages(self, t, m, c): return []\n"
     "@hookimpl\ndef register_strategies(register):\n    return [S]\n",
     r"register_strategies\(\) returned \[<class .*\] \(list\), which is ignored; call "
     r"register\(...\) once for each strategy instead"),
    ("@hookimpl\ndef register_strategies(register):\n    register('last-turn')\n",
     r"called register\('last-turn' \(str\)\) in register_strategies\(\): 'last-turn' "
     r"\(str\) is not a strategy class"),
    # names -s cannot select, or that it reads as full-history
    ("class S:\n    name = 'a:b'\n    def to_messages(self, t, m, c): return []\n"
     "@hookimpl\ndef register_strategies(register):\n    register(S)\n",
     r"strategy name 'a:b' cannot be selected with -s NAME\[:k=v,...\]"),
    ("class S:\n    name = 'my strategy'\n    def to_messages(self, t, m, c): return []\n"
     "@hookimpl\ndef register_strategies(register):\n    register(S)\n",
     r"a name holds no ':', ',', '=' nor white space"),
    ("class S:\n    name = 'None'\n    def to_messages(self, t, m, c): return []\n"
     "@hookimpl\ndef register_strategies(register):\n    register(S)\n",
     r"strategy name 'None' is taken: -s None means full-history"),
    ("@hookimpl\ndef register_namespace_renderers(register):\n"
     "    register('x/', 'not callable', 1)\n",
     r"register\(\) takes a name string and a callable renderer; it is left out"),
    ("@hookimpl\ndef register_tokenizers(register):\n    register('x')\n",
     r"register\(\) takes \(name, count_fn\)"),
])
def test_wrong_answers_are_named_and_ignored(site, source, expected) -> None:
    dist, ep = make_plugin(site, "wrong", "from turnpress import hookimpl\n" + source)
    registry = Registry()
    with pytest.warns(PluginWarning, match=rf"distribution {dist} 1.0, entry point "
                                           rf"{ep}\).*{expected}"):
        registry.load_all()
    assert "full-history" in registry.strategies()
    result = cli("plugins")
    assert result.exit_code == 0 and "problems: see below" in result.stdout
    assert_builtins_work()


@pytest.mark.parametrize(("answer", "shown"), [("['x']", r"\['x'\] \(list\)"),
                                               ("5", r"5 \(int\)")])
def test_a_type_label_that_is_not_a_string_is_ignored(site, answer, shown) -> None:
    make_plugin(site, "labeller", f"""
        from turnpress import hookimpl

        @hookimpl
        def type_label(value):
            return {answer}
    """)
    registry = Registry()
    with pytest.warns(PluginWarning, match=rf"turnpress-labeller 1.0.*type_label\(\) returned "
                                           rf"{shown} for a list, not a string or None; the "
                                           rf"answer is ignored"):
        assert registry.type_label([1, 2]) == "list[2]"
    previous = reset_registry(registry)
    try:
        content = render([], mission="m", data={"xs": [1, 2]}, turns_left=2)[1]["content"]
    finally:
        reset_registry(previous)
    assert "list[2]" in content and "['x']" not in content and "; 5" not in content


# -- duplicate names --------------------------------------------------------------------


def test_duplicate_names_keep_the_first_and_name_both(site) -> None:
    make_plugin(site, "dup", """
        from turnpress import Strategy, hookimpl

        class Fake(Strategy):
            name = "single-user-coalesced"

            def to_messages(self, turns, memory, ctx):
                return []

        @hookimpl
        def register_strategies(register):
            register(Fake)

        @hookimpl
        def register_namespace_renderers(register):
            register("tool/", lambda view: "fake", 1)

        @hookimpl
        def register_tokenizers(register):
            register("chars4", len)
    """)
    registry = Registry()
    with pytest.warns(PluginWarning) as caught:
        registry.load_all()
    messages = "\n".join(str(w.message) for w in caught)
    for kind, name in (("strategy", "single-user-coalesced"), ("namespace", "tool/"),
                       ("tokenizer", "chars4")):
        assert f"{kind} name {name!r} from plugin 'dup' (distribution turnpress-dup 1.0, " \
               f"entry point dup = tpf_dup) clashes with the one from plugin" in messages
    assert registry.strategies()["single-user-coalesced"].plugin.builtin
    assert registry.tokenizers()["chars4"].plugin.builtin
    assert_builtins_work()


def test_two_distributions_with_one_entry_point_name(site) -> None:
    make_plugin(site, "same", SHOUT.format(n="one"), module="tpf_same_one")
    from plugin_helpers import install_fake_distribution

    install_fake_distribution(site, "turnpress-other", "2.0", {"same": "tpf_same_two"},
                              {"tpf_same_two": SHOUT.format(n="two")})
    with pytest.warns(PluginWarning, match="plugin 'same' .*turnpress-same 1.0.* already has"):
        registry = Registry()
    assert "shout-two" in registry.strategies() and "shout-one" not in registry.strategies()


# -- register_commands -----------------------------------------------------------------


COMMANDS = """
import click
from turnpress import hookimpl

@hookimpl
def register_commands(cli):
    @cli.command()
    @click.argument("who", default="world")
    def hello(who):
        "Say hello."
        click.echo(f"hello {who}")

    cli.add_lazy_command("later", "tpf_cmds_later:later", "A lazy command.")

    @cli.command()
    def render():
        "A clash with the built-in render."
        click.echo("hijacked")
"""

LATER = """
import click

@click.command()
def later():
    click.echo("later ran")
"""


def test_a_plugin_adds_commands_and_cannot_replace_builtins(site) -> None:
    make_plugin(site, "cmds", COMMANDS)
    (site / "tpf_cmds_later.py").write_text(LATER)
    helped = cli("--help")
    assert "hello" in helped.stdout and "Say hello." in helped.stdout
    assert "later" in helped.stdout and "A lazy command." in helped.stdout
    assert "tpf_cmds_later" not in sys.modules  # listed, not imported
    hello = cli("hello", "you")
    assert hello.exit_code == 0 and hello.stdout == "hello you\n"
    assert [line for line in warning_lines(hello)
            if "adds the command 'render', which turnpress (core command) already has; "
               "it is left out" in line]
    assert cli("later").stdout == "later ran\n"
    assert "tpf_cmds_later" in sys.modules
    assert_builtins_work()
    info = {p["name"]: p for p in json.loads(cli("plugins", "--json").stdout)["plugins"]}
    assert info["cmds"]["registers"]["command"] == ["hello", "later"]
    assert info["commands"]["registers"]["command"] == ["compare", "run", "import"]


def test_a_lazy_command_whose_module_is_missing_is_one_line(site) -> None:
    make_plugin(site, "ghost", """
        from turnpress import hookimpl

        @hookimpl
        def register_commands(cli):
            cli.add_lazy_command("ghost", "tpf_no_such_module:cmd", "Missing.")
    """)
    result = cli("ghost")
    assert result.exit_code == 2
    assert "Error: command 'ghost' (tpf_no_such_module:cmd) could not be loaded: " \
           "ModuleNotFoundError" in result.output


def test_importing_the_cli_imports_neither_compare_nor_agent() -> None:
    """register_commands keeps the built-in compare and run lazy."""
    code = ("import sys\n"
            "from turnpress.cli import main\n"
            "assert not [m for m in sys.modules if m.startswith(('turnpress.compare', "
            "'turnpress.agent'))]\n"
            "try:\n"
            "    main(['--help'])\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(sorted(m for m in sys.modules if m.startswith(('turnpress.compare', "
            "'turnpress.agent'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 0, out.stderr
    assert "compare" in out.stdout and "run" in out.stdout  # listed by --help
    assert out.stdout.strip().splitlines()[-1] == "[]"


# -- plain output and clean warnings in a real process ----------------------------------


def test_piped_plugins_output_is_greppable_and_warnings_have_no_source_line(site) -> None:
    make_plugin(site, "typo", """
        from turnpress import hookimpl

        @hookimpl
        def template_dir():
            return []
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]), "COLUMNS": "40"}
    env.pop("TURNPRESS_LOAD_PLUGINS", None)
    out = subprocess.run([sys.executable, "-m", "turnpress", "plugins"], env=env,
                         capture_output=True, text=True, check=True)
    [row] = [line for line in out.stdout.splitlines() if "single-user-coalesced" in line]
    from importlib.metadata import version

    assert row.split() == ["single_user_coalesced", "turnpress", "(built-in)",
                           version("turnpress"), "strategy:", "single-user-coalesced"]
    assert "did you mean template_dirs?" in out.stdout
    rendered = subprocess.run([sys.executable, "-m", "turnpress", "render", "-s",
                               "full-history", "-t", "1", PRODUCT], env=env, capture_output=True,
                              text=True, check=True)
    lines = [line for line in rendered.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Warning: plugin 'typo' "), lines
    assert "warnings.warn" not in rendered.stderr and "Traceback" not in rendered.stderr


def test_plugins_table_lists_every_hook_a_plugin_implements(site) -> None:
    """ux-b item 10: a type_label hook was hidden when the plugin also registered something;
    the long "registers" column comes last, so piped it pads no other column."""
    make_plugin(site, "both", """
        from turnpress import hookimpl

        @hookimpl
        def type_label(value):
            return None

        @hookimpl
        def register_tokenizers(register):
            for i in range(12):
                register(f"tok-with-a-long-name-{i}", len)
    """)
    result = cli("plugins")
    assert result.exit_code == 0
    header = result.stdout.splitlines()[0]
    assert header.split() == ["plugin", "distribution", "version", "registers"]
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("both "))
    assert "tokenizer: tok-with-a-long-name-0" in line and line.endswith("; type_label")
    builtin = next(ln for ln in result.stdout.splitlines() if ln.startswith("namespaces "))
    assert builtin.endswith("namespace: tool/, data/, user/")


def test_plugins_output_says_error_for_a_plugin_left_out_and_warning_for_a_part(site) -> None:
    """ux-b item 13: docs/plugins.md calls a problem with part of a plugin a warning (the
    rest of it is used), but `turnpress plugins` printed every problem as `error:`."""
    make_plugin(site, "broken", "raise ImportError('no such thing')\n")
    make_plugin(site, "partly", """
        from turnpress import hookimpl

        @hookimpl
        def template_dirs():
            return ['/no/such/dir/xyz']
    """)
    out = cli("plugins").stdout.splitlines()
    [broken] = [ln for ln in out if "'broken'" in ln and "no such thing" in ln]
    [partly] = [ln for ln in out if "/no/such/dir/xyz" in ln]
    assert broken.startswith("error: ") and partly.startswith("warning: ")

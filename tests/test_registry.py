"""The plugin system: hooks, entry points, lazy loading and error isolation."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest
from plugin_helpers import forget_modules, install_fake_distribution

from turnpress import render
from turnpress.core.compression import get_strategy, strategy_names
from turnpress.core.registry import PluginError, PluginWarning, Registry, reset_registry

STRATEGY_PLUGIN = """
from turnpress import Strategy, hookimpl

class Shout(Strategy):
    name = "shout"

    def __init__(self, *, volume: int = 3):
        self.volume = self.check_int("volume", volume, 1, 10)

    def to_messages(self, turns, memory, ctx):
        return [ctx.message("user", ctx.mission.upper() + "!" * self.volume)]

@hookimpl
def register_strategies(register):
    register(Shout)
"""


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A directory on sys.path where tests install fake distributions."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    forget_modules("tp_shout", "tp_broken", "tp_raises", "tp_clash", "tp_lazy")


def test_builtins_are_plugins_registered_through_the_hooks() -> None:
    """ARC-003: built-in strategies come through register_strategies like any plugin."""
    registry = Registry(entry_points=False)
    strategies = registry.strategies()
    assert {"single-user-coalesced", "full-history"} <= set(strategies)
    assert strategies["full-history"].plugin.builtin
    assert [r.name for r in registry.namespace_renderers()][:3] == ["tool/", "data/", "user/"]
    assert registry.type_label([1]) == "list[1]"


def test_third_party_strategy_is_found_through_entry_points(site) -> None:
    install_fake_distribution(site, "turnpress-shout", "1.2", {"shout": "tp_shout"},
                              {"tp_shout": STRATEGY_PLUGIN})
    registry = Registry()
    reg = registry.strategies()["shout"]
    assert (reg.plugin.distribution, reg.plugin.version) == ("turnpress-shout", "1.2")
    assert reg.plugin.entry_point == "shout = tp_shout"
    previous = reset_registry(registry)
    try:
        assert render([], mission="hi", turns_left=1, compression="shout:volume=2") == [
            {"role": "user", "content": "HI!!"}]
        with pytest.raises(ValueError, match="strategy 'shout': option 'volume' must be an "
                                             "integer from 1 to 10, got 11"):
            get_strategy("shout", volume=11)
    finally:
        reset_registry(previous)


def test_a_plugin_that_fails_to_import_is_named_and_isolated(site) -> None:
    install_fake_distribution(site, "turnpress-broken", "0.1", {"broken": "tp_broken"},
                              {"tp_broken": "import no_such_module_anywhere\n"})
    install_fake_distribution(site, "turnpress-shout", "1.2", {"shout": "tp_shout"},
                              {"tp_shout": STRATEGY_PLUGIN})
    with pytest.warns(PluginWarning, match="turnpress-broken 0.1, entry point broken = "
                                           "tp_broken\\) failed to import: "
                                           "ModuleNotFoundError"):
        registry = Registry()
    assert "shout" in registry.strategies() and "single-user-coalesced" in registry.strategies()
    [error] = registry.errors
    assert isinstance(error, PluginError)
    assert (error.distribution, error.entry_point) == ("turnpress-broken",
                                                       "broken = tp_broken")
    previous = reset_registry(registry)
    try:
        with pytest.raises(ValueError, match=r"unknown strategy 'nope'.*turnpress-broken"):
            get_strategy("nope")
    finally:
        reset_registry(previous)


def test_a_plugin_that_raises_in_a_hook_is_named_and_isolated(site) -> None:
    install_fake_distribution(site, "turnpress-raises", "2.0", {"raises": "tp_raises"}, {
        "tp_raises": """
            from turnpress import hookimpl

            @hookimpl
            def register_strategies(register):
                raise RuntimeError("boom")

            @hookimpl
            def type_label(value):
                raise RuntimeError("label boom")
        """})
    registry = Registry()
    with pytest.warns(PluginWarning, match="turnpress-raises 2.0.*raised in hook "
                                           "register_strategies\\(\\): RuntimeError: boom"):
        strategies = registry.strategies()
    assert "single-user-coalesced" in strategies
    with pytest.warns(PluginWarning, match="raised in hook type_label"):
        assert registry.type_label([1, 2]) == "list[2]"


def test_two_strategies_with_one_name_name_both_sources(site) -> None:
    install_fake_distribution(site, "turnpress-clash", "0.3", {"clash": "tp_clash"}, {
        "tp_clash": """
            from turnpress import Strategy, hookimpl

            class Imposter(Strategy):
                name = "full-history"

                def to_messages(self, turns, memory, ctx):
                    return []

            @hookimpl
            def register_strategies(register):
                register(Imposter)
        """})
    registry = Registry()
    with pytest.warns(PluginWarning) as caught:
        strategies = registry.strategies()
    message = str(caught[0].message)
    assert "strategy name 'full-history' from plugin 'clash' (distribution turnpress-clash " \
           "0.3, entry point clash = tp_clash) clashes with the one from plugin " \
           "'full_history' (distribution turnpress" in message
    assert strategies["full-history"].plugin.builtin  # the first one keeps working


def test_plugins_are_loaded_lazily(site) -> None:
    """Importing turnpress loads no third-party code; the first use does."""
    install_fake_distribution(site, "turnpress-lazy", "1.0", {"lazy": "tp_lazy"}, {
        "tp_lazy": "import sys\nsys.modules['__main__'].LOADED = True\n"})
    code = ("import sys, turnpress\n"
            "from turnpress.core import registry\n"
            "assert registry._registry is None\n"
            "assert 'tp_lazy' not in sys.modules\n"
            "turnpress.normalize(True)\n"
            "assert 'tp_lazy' in sys.modules\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(site), "PATH": ""}, check=False)
    assert out.stdout.strip() == "ok", out.stderr


def test_registering_something_that_is_not_a_strategy() -> None:
    class NotAStrategy:
        pass

    class Plugin:
        @staticmethod
        def register_strategies(register):
            register(NotAStrategy)

    from turnpress import hookimpl

    Plugin.register_strategies = hookimpl(Plugin.register_strategies)  # type: ignore[method-assign]
    registry = Registry(entry_points=False)
    registry.register(Plugin, name="bad-plugin")
    with pytest.warns(PluginWarning, match="bad-plugin.*is not a strategy class"):
        registry.strategies()


def test_register_by_hand_and_namespace_renderer_order() -> None:
    from turnpress import hookimpl

    class EnvPlugin:
        @hookimpl
        def register_namespace_renderers(self, register):
            register("env/", lambda view: ";; === env/ ===\nenv/region ; string", 250)

    registry = Registry(entry_points=False)
    registry.register(EnvPlugin(), name="env")
    assert [r.name for r in registry.namespace_renderers()] == ["tool/", "data/", "env/",
                                                               "user/"]
    previous = reset_registry(registry)
    try:
        content = render([], mission="m", data={"x": 1}, turns_left=2)[1]["content"]
        assert content == ("m\n\n;; === data/ ===\ndata/x                    ; integer, sample: 1"
                           "\n\n;; === env/ ===\nenv/region ; string\n\nTurns left: 2")
    finally:
        reset_registry(previous)


def test_strategy_names_lists_the_registered_ones() -> None:
    names = strategy_names()
    assert names == sorted(names) and "full-history" in names
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Registry(entry_points=False).load_all()


def test_registering_later_recollects_without_duplicates() -> None:
    from turnpress import Strategy, hookimpl

    class Late(Strategy):
        name = "late"

        def to_messages(self, turns, memory, ctx):
            return []

    class LatePlugin:
        @hookimpl
        def register_strategies(self, register):
            register(Late)

    registry = Registry(entry_points=False)
    registry.load_all()
    registry.register(LatePlugin(), name="late-plugin")
    registry.load_all()
    assert "late" in registry.strategies()
    assert registry.plugins["full_history"].registers["strategy"] == ["full-history"]

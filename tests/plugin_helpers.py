"""Plugins for tests: real installed-distribution metadata (``*.dist-info``), or strategy
classes registered in code."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

EXAMPLE_PLUGIN = Path(__file__).resolve().parent.parent / "examples" / "turnpress-plugin-example"
"""The example third-party plugin package shipped in the repository."""


def install_fake_distribution(root: Path, name: str, version: str,
                              entry_points: dict[str, str], modules: dict[str, str]) -> Path:
    """Write ``modules`` and a ``NAME-VERSION.dist-info`` declaring ``entry_points`` in the
    ``turnpress`` group under ``root`` (which the caller puts on ``sys.path``)."""
    for module, source in modules.items():
        path = root / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    dist = root / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (dist / "entry_points.txt").write_text(
        "[turnpress]\n" + "".join(f"{k} = {v}\n" for k, v in entry_points.items()))
    return dist


def forget_modules(*names: str) -> None:
    """Drop test plugin modules from ``sys.modules`` so the next import is fresh."""
    for name in list(sys.modules):
        if name in names or any(name.startswith(n + ".") for n in names):
            del sys.modules[name]


def forget_prefix(prefix: str) -> None:
    """Drop every module whose name starts with ``prefix`` from ``sys.modules``."""
    for name in list(sys.modules):
        if name.startswith(prefix):
            del sys.modules[name]


def make_plugin(root: Path, name: str, source: str, *, version: str = "1.0",
                module: str | None = None) -> tuple[str, str]:
    """Install a throwaway distribution ``turnpress-NAME`` whose entry point ``NAME``
    is the module ``tpf_NAME`` with ``source``; return (distribution, entry point)."""
    module = module or f"tpf_{name.replace('-', '_')}"
    dist = f"turnpress-{name}"
    install_fake_distribution(root, dist, version, {name: module}, {module: source})
    return dist, f"{name} = {module}"


def register_strategies(plugin: str, *classes: type) -> None:
    """Register ``classes`` as strategies of a plugin named ``plugin``, in code (use with
    the ``fresh_registry`` fixture)."""
    from turnpress import hookimpl
    from turnpress.core.registry import get_registry

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            for cls in classes:
                register(cls)

    get_registry().register(Plugin(), plugin)

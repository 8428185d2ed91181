"""Built-in plugin: the ``tool/``, ``data/`` and ``user/`` namespace sections.

Each renderer turns its part of the world into plain data and hands it to its
template (``namespaces/*.j2``), which holds the exact line format.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from turnpress.core.compression import NamespaceView
from turnpress.core.hookspecs import hookimpl
from turnpress.core.model import Fn


def render_tools(view: NamespaceView) -> str | None:
    """``;; === tool/ ===`` and one line per tool (stable across turns: NS-012)."""
    ctx = view.ctx
    if not ctx.tools:
        return None
    tools = [
        {
            "name": tool.name,
            "params": [{"name": n, "type": t} for n, t in tool.params.items()],
            "returns": tool.returns,
            "description": " ".join(tool.description.split()),
        }
        for tool in ctx.tools.values()
    ]
    return ctx.template("namespaces/tool.j2", tools=tools)


def render_data(view: NamespaceView) -> str | None:
    """``;; === data/ ===`` and one line per input value, with a sample (NS-008)."""
    ctx = view.ctx
    if not ctx.data:
        return None
    entries = [
        {
            "name": name,
            "label": ctx.type_label(value),
            "sample": None if view.minimal else ctx.sample(value),
        }
        for name, value in ctx.data.items()
    ]
    return ctx.template("namespaces/data.j2", entries=entries)


def _clean_doc(doc: Any) -> str | None:
    """DEF-007: a docstring loses every ``;``; whitespace runs fold into one space."""
    if doc is None:
        return None
    return " ".join(str(doc).replace(";", "").split())


def render_user(view: NamespaceView) -> str | None:
    """``;; === user/ (your prelude) ===``: functions, then values (NS-010, NS-011)."""
    ctx = view.ctx
    if not view.memory:
        return None
    docs = getattr(view.memory, "docs", {}) or {}
    functions, values = [], []
    for name, value in view.memory.items():
        doc = None if view.minimal else _clean_doc(
            getattr(value, "doc", None) if isinstance(value, Fn) and value.doc is not None
            else docs.get(name))
        if isinstance(value, Fn):
            functions.append({"name": name, "params": list(value.params), "doc": doc,
                              "return_type": value.return_type})
        else:
            show = view.show_samples and not view.minimal
            values.append({"name": name, "label": ctx.type_label(value), "doc": doc,
                           "sample": ctx.sample(value) if show else None})
    return ctx.template("namespaces/user.j2", functions=functions, values=values)


@hookimpl
def register_namespace_renderers(register: Callable[..., None]) -> None:
    """tool/ (100), data/ (200), user/ (300)."""
    register("tool/", render_tools, 100)
    register("data/", render_data, 200)
    register("user/", render_user, 300)

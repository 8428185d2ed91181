"""A hand-written renderer of the default format (``single-user-coalesced``, DESIGN §4).

Plain Python f-strings, no templates, no plugins, nothing cached between calls:
the yardstick ``bench_render.py`` holds turnpress's template-driven render path
against. It covers the default options (``println_limit=15``, ``tool_call_limit=20``,
``errors="last"``) and the built-in type vocabulary; values are formatted with
turnpress's own ``to_clojure`` (the value formatter is not what is measured).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from turnpress.core.clojure import to_clojure
from turnpress.core.model import Fn, Keyword, Tool, Turn

PRINTLN_LIMIT = 15
TOOL_CALL_LIMIT = 20


def label(value: Any) -> str:
    """The built-in type label of ``value``."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Keyword):
        return "keyword"
    if isinstance(value, numbers.Integral):
        return "integer"
    if isinstance(value, numbers.Real):
        return "float"
    if isinstance(value, Fn):
        return "#fn[...]"
    if isinstance(value, (list, tuple)):
        return f"list[{len(value)}]"
    if isinstance(value, (set, frozenset)):
        return f"set[{len(value)}]"
    if isinstance(value, Mapping):
        return f"map[{len(value)}]"
    return "unknown"


def sample(value: Any) -> str | None:
    """A value's sample (limit 3, 80 characters), or None for nil and empty collections."""
    if value is None:
        return None
    if not isinstance(value, str) and hasattr(value, "__len__") and len(value) == 0:
        return None
    return to_clojure(value, 3, 80)[0]


def tool_section(tools: Mapping[str, Tool]) -> str | None:
    if not tools:
        return None
    lines = [";; === tool/ ==="]
    for tool in tools.values():
        names = "".join(f" {p}" for p in tool.params)
        params = "".join(f"{p}:{t}, " for p, t in tool.params.items())
        params = params[:-2] + " " if params else ""
        description = " ".join(tool.description.split())
        tail = f" - {description}" if description else ""
        lines.append(f"(tool/{tool.name}{names})      ; {params}-> {tool.returns}{tail}")
    return "\n".join(lines)


def data_section(data: Mapping[str, Any]) -> str | None:
    if not data:
        return None
    lines = [";; === data/ ==="]
    for name, value in data.items():
        s = sample(value)
        lines.append(f"data/{name}                    ; {label(value)}"
                     + (f", sample: {s}" if s is not None else ""))
    return "\n".join(lines)


def _clean_doc(doc: Any) -> str | None:
    return None if doc is None else " ".join(str(doc).replace(";", "").split())


def user_section(memory: Mapping[str, Any], show_samples: bool) -> str | None:
    if not memory:
        return None
    docs = getattr(memory, "docs", {}) or {}
    functions, values = [], []
    for name, value in memory.items():
        if isinstance(value, Fn):
            doc = _clean_doc(value.doc if value.doc is not None else docs.get(name))
            line = f"({name} [{' '.join(value.params)}])"
            if doc is not None or value.return_type is not None:
                line += "           ;"
                if doc is not None:
                    line += f' "{doc}"'
                if value.return_type is not None:
                    line += f" -> {value.return_type}"
            functions.append(line)
        else:
            doc = _clean_doc(docs.get(name))
            line = (f"{name}                         ; " + (f'"{doc}" ' if doc is not None else "")
                    + f"= {label(value)}")
            s = sample(value) if show_samples else None
            if s is not None:
                line += f", sample: {s}"
            values.append(line)
    return "\n".join([";; === user/ (your prelude) ===", *functions, *values])


def _last(groups: list[Sequence[Any]], limit: int) -> list[Any]:
    picked: list[Any] = []
    for group in reversed(groups):
        need = limit - len(picked)
        picked.extend(reversed(group[-need:]))
        if len(picked) >= limit:
            break
    picked.reverse()
    return picked


def render(turns: Sequence[Turn], *, mission: str, system_prompt: str,
           tools: Mapping[str, Tool], data: Mapping[str, Any], turns_left: int
           ) -> list[dict[str, str]]:
    """``[SYSTEM, USER]`` of ``single-user-coalesced`` with its default options."""
    memory = turns[-1].memory if turns else {}
    printed = any(t.prints for t in turns if t.success)
    parts = [mission.rstrip("\n"), tool_section(tools), data_section(data),
             user_section(memory, not printed)]
    if turns:
        calls = _last([t.tool_calls for t in turns], TOOL_CALL_LIMIT)
        if calls:
            parts.append("\n".join([";; Tool calls made:", *(
                f";   {c.name}({' '.join(to_clojure(a, 3, 60)[0] for a in c.args)})"
                for c in calls)]))
        else:
            parts.append(";; No tool calls made")
    if printed:
        prints = _last([t.prints for t in turns if t.success], PRINTLN_LIMIT)
        parts.append("\n".join([";; Output:", *prints]))
    if turns and not turns[-1].success:
        error = turns[-1].result
        message = getattr(error, "message", None) or str(error)
        parts.append(f"---\nYour previous attempt:\n```clojure\n{turns[-1].program}\n```\n\n"
                     f"Error: {message}\n---")
    parts.append("FINAL TURN - you must call (return result) or (fail reason) now."
                 if turns_left == 1 else f"Turns left: {turns_left}")
    user = "\n\n".join(p for p in parts if p)
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": user}]

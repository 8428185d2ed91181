"""Finding the strategy a ``compression=`` value names: names, specs, options.

``"rolling-window:window=3"``, ``True``, a class, an instance or
``(name, {options})`` become a strategy instance (:func:`get_strategy`) or a
``(name, options)`` pair (:func:`normalize`); unknown names and options raise a
``ValueError`` naming the valid ones.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Mapping
from typing import Any

from turnpress.core.breakpoints import strategy_origin
from turnpress.core.errors import PLUGIN_FAULTS, PluginError, a_or_an
from turnpress.core.hooks.strategies import NO_STRATEGY
from turnpress.core.registry import Registry, get_registry
from turnpress.core.strategy import (
    BASELINE_STRATEGY,
    DEFAULT_STRATEGY,
    Compression,
    option_defaults,
)

__all__ = ["StrategyCreationError", "baseline_spec", "describe_options", "get_strategy",
           "normalize", "parse_strategy_spec", "spec_value", "strategy_names"]


def strategy_names(registry: Registry | None = None) -> list[str]:
    """The names of all registered strategies, sorted."""
    return sorted((registry or get_registry()).strategies())


#: how much of an option's description ``describe_options`` keeps
OPTION_DOC_CHARS = 110

#: an option named in a docstring, with what follows it in parentheses (its default and
#: range, which ``turnpress strategies`` shows beside the name already)
_NAMED = re.compile(r"``(\w+)``(?:\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\))?")


def _clauses(cls: type) -> list[str]:
    """The clauses (split at each ``;`` outside parentheses) of a strategy docstring's
    options part (from ``Options...:`` on; the whole docstring when it has none), each
    on one line, words split across lines by a hyphen joined again."""
    doc = re.sub(r"(\w)-\n\s*(\w)", r"\1-\2", inspect.getdoc(cls) or "")
    doc = " ".join(doc.split())
    found = re.search(r"\bOptions\b[^:.;]*:", doc)
    if found:  # where a docstring documents them, as the built-ins do
        doc = doc[found.end():]
    clauses, depth, start = [], 0, 0
    for at, char in enumerate(doc):
        depth += (char == "(") - (char == ")")
        if char == ";" and depth <= 0:
            clauses.append(doc[start:at])
            start = at + 1
    clauses.append(doc[start:])
    return [c.strip() for c in clauses if c.strip()]


def _option_text(clause: str, option: str) -> str:
    """What ``clause`` says of ``option``: the clause up to its first full stop, each
    option named in it plain (its range kept, its default left out), and ``option``'s
    own leading ``name:`` dropped."""
    clause = re.split(r"(?<=[a-z)`])\. (?=[A-Z])", clause)[0].rstrip(".")

    def plain(found: re.Match[str]) -> str:
        inside = found.group(2) or ""
        ranges = [p.strip() for p in inside.split(",") if re.match(r"\s*[<>]=?", p)]
        return found.group(1) + (f" ({', '.join(ranges)})" if ranges else "")

    text = _NAMED.sub(plain, clause).replace("``", "")
    text = re.sub(rf"^{re.escape(option)}(?: \([^)]*\))?\s*:\s*", "", text)
    if len(text) > OPTION_DOC_CHARS:
        text = text[: OPTION_DOC_CHARS - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."
    return text


def describe_options(cls: type) -> list[tuple[str, Any, str]]:
    """``(option, default, one line)`` for each option of a strategy class, the line
    being the clause of its docstring (:func:`_clauses`) that defines the option (starts
    with it in double backquotes, else gives its default in parentheses after it, else
    names it first), as :func:`_option_text` words it; ``""`` when the docstring does
    not name it."""
    clauses = _clauses(cls)
    out = []
    for option, default in option_defaults(cls).items():
        named = [c for c in clauses if f"``{option}``" in c or f"``{option}=" in c]
        # where it is defined: the clause it starts, else one giving its default
        found = next((c for c in named if c.startswith(f"``{option}``")),
                     next((c for c in named if re.search(rf"``{option}``\s*\(", c)),
                          named[0] if named else None))
        out.append((option, default, "" if found is None else _option_text(found, option)))
    return out


def _is_strategy_class(x: Any) -> bool:
    return isinstance(x, type) and isinstance(getattr(x, "name", None), str) and callable(
        getattr(x, "to_messages", None))


def _lookup(name: str, registry: Registry) -> type:
    strategies = registry.strategies()
    if name in strategies:
        return strategies[name].value
    valid = ", ".join(sorted(strategies)) or "(none)"
    raise ValueError(f"unknown strategy {name!r}; registered strategies: {valid} (or "
                     f"{'/'.join(NO_STRATEGY)} for no compression)." + registry.failure_note())


def parse_strategy_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``"NAME:k=v,k2=v2"`` into ``("NAME", {"k": "v", "k2": "v2"})`` (values as text)."""
    name, _, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"strategy spec {spec!r} has no strategy name; "
                         f"use NAME or NAME:option=value,...")
    options: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"strategy spec {spec!r}: {item!r} is not option=value")
        if key.strip() in options:
            raise ValueError(f"strategy spec {spec!r} gives option {key.strip()!r} twice; "
                             f"give each option once")
        options[key.strip()] = value.strip()
    return name, options


def _coerce_option(strategy: str, option: str, text: str, default: Any) -> Any:
    """Turn an option's text into the type of its default (for CLI-style specs)."""
    try:
        if isinstance(default, bool):
            lowered = text.lower()
            if lowered in ("1", "true", "yes", "on"):
                return True
            if lowered in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
    except ValueError:
        kind = {bool: "a boolean (true or false)", int: "an integer",
                float: "a number"}.get(type(default), a_or_an(type(default).__name__))
        raise ValueError(f"strategy {strategy!r}: option {option!r} expects {kind}, "
                         f"got {text!r}") from None
    return text


def baseline_spec(spec: str) -> str:
    """``spec`` (``NAME[:k=v,...]``), with a name of :data:`NO_STRATEGY` (``none``,
    ``off``, ``false``: no compression) read as the ``full-history`` baseline, options
    too (``none:k=v``); any other spec as it is. No strategy may be registered under
    those names."""
    name, sep, options = spec.partition(":")
    if name.strip().lower() in NO_STRATEGY:
        return BASELINE_STRATEGY + sep + options
    return spec


def spec_value(value: Any) -> str:
    """An option's value as ``-s NAME:option=value`` takes it (what
    :func:`_coerce_option` reads back): ``true``/``false`` for a boolean, the text itself
    for a string (nothing for an empty one), else ``str(value)``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _resolve(compression: Compression, registry: Registry) -> tuple[type, dict[str, Any]]:
    """``(strategy class, validated options as given)`` for a ``compression=`` value."""
    if compression is None or compression is False:
        compression = BASELINE_STRATEGY
    elif compression is True:
        compression = DEFAULT_STRATEGY
    if isinstance(compression, tuple):
        if len(compression) != 2 or not isinstance(compression[1], Mapping):
            raise ValueError(f"compression tuple must be (name_or_class, {{options}}), "
                             f"got {compression!r}")
        cls, options = _resolve(compression[0], registry)
        return cls, _validated(cls, {**options, **compression[1]})
    if isinstance(compression, str):
        name, text_options = parse_strategy_spec(baseline_spec(compression))
        cls = _lookup(name, registry)
        return cls, _validated(cls, text_options, from_text=True)
    if _is_strategy_class(compression):
        return compression, {}
    if _is_strategy_class(type(compression)):
        return type(compression), dict(getattr(compression, "options", {}))
    valid = ", ".join(strategy_names(registry))
    raise ValueError(
        f"compression={compression!r} is not understood; use True, False, None, a strategy "
        f"name ({valid}), a Strategy class, or (name_or_class, {{options}})"
    )


def _validated(cls: type, options: Mapping[str, Any], *, from_text: bool = False
               ) -> dict[str, Any]:
    defaults = option_defaults(cls)
    unknown = [k for k in options if k not in defaults]
    if unknown:
        if unknown[0] in _required_options(cls):
            raise ValueError(
                f"strategy {cls.name!r}: option {unknown[0]!r} has no default in "
                f"{cls.__name__}.__init__; a strategy's options are keyword-only arguments "
                f"with defaults (give {unknown[0]!r} one)")
        valid = ", ".join(defaults) or "(none)"
        raise ValueError(f"strategy {cls.name!r} has no option {unknown[0]!r}; "
                         f"valid options: {valid}")
    if from_text:
        return {k: _coerce_option(cls.name, k, v, defaults[k]) for k, v in options.items()}
    return dict(options)


def _required_options(cls: type) -> list[str]:
    """The keyword arguments of ``cls``'s constructor that have no default (which no
    option can give: a strategy is made from its name alone)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]


class StrategyCreationError(PluginError):
    """A strategy's ``__init__`` raised something other than the ``ValueError`` that
    rejects an option's value (``check_int``, ``check_choice``): a fault of the
    strategy's code, not of the options given. The message names the strategy and, for
    a third-party one, its plugin; ``strategy`` is its name."""

    def __init__(self, message: str, strategy: str) -> None:
        super().__init__(message)
        self.strategy = strategy


def _instantiate(cls: type, options: Mapping[str, Any]) -> Any:
    try:
        return cls(**options)
    except ValueError:
        raise  # an option's value rejected: the message says which and why
    except PLUGIN_FAULTS as exc:
        message = " ".join(str(exc).split()) or "(no message)"
        raise StrategyCreationError(
            f"{strategy_origin(cls)} cannot be created: {type(exc).__name__}: {message}",
            cls.name) from exc


_RESOLVED: dict[tuple[Any, ...], tuple[Any, type, dict[str, Any]]] = {}
_RESOLVED_LOCK = threading.Lock()


def get_strategy(compression: Compression = True, /, registry: Registry | None = None,
                 **options: Any) -> Any:
    """The strategy instance that ``render(..., compression=compression)`` uses.

    Accepts everything :func:`normalize` accepts, plus a ready instance; extra
    keyword arguments are options. ``False``/``None`` (and ``"none"``, ``"off"``,
    ``"false"``) give the ``full-history`` baseline. Bad names and options raise
    ``ValueError``. A name, spec string or ``True``/``False``/``None`` is looked up,
    parsed and validated once per set of registered strategies; later calls only build
    a new instance from the result.
    """
    registry = registry or get_registry()
    if not options and _is_strategy_class(type(compression)):
        return compression
    cacheable = not options and (compression is None or isinstance(compression, (bool, str)))
    if cacheable:
        key = (type(compression), compression, id(registry))
        strategies = registry.strategies()
        hit = _RESOLVED.get(key)
        if hit is not None and hit[0] is strategies:
            return _instantiate(hit[1], hit[2])
    cls, given = _resolve(compression, registry)
    valid = _validated(cls, {**given, **options})
    instance = _instantiate(cls, valid)
    if cacheable:
        with _RESOLVED_LOCK:
            if len(_RESOLVED) > 256:
                _RESOLVED.clear()
            _RESOLVED[key] = (strategies, cls, valid)
    return instance


def normalize(compression: Compression) -> tuple[str | None, dict[str, Any]]:
    """Normalize a ``compression=`` value to ``(strategy_name | None, options)``.

    ``True`` -> ``("price-scheduled", {})`` (``DEFAULT_STRATEGY``); ``False``/``None``
    and the names ``"none"``, ``"off"``, ``"false"`` (``NO_STRATEGY``) -> ``(None, {})``;
    a registered name (or ``"name:k=v,..."``), a Strategy class, an instance, or
    ``(name_or_class, {options})``. Anything else, an unknown name or an unknown
    option raises ``ValueError`` naming the bad value and the valid ones.
    """
    if compression is None or compression is False:
        return None, {}
    cls, options = _resolve(compression, get_registry())
    _instantiate(cls, options)  # option values are checked by the constructor
    if isinstance(compression, str) and baseline_spec(compression) != compression:
        return None, {}
    return cls.name, options

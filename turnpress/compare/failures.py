"""One-line descriptions of what failed during a comparison, naming the plugin or template.

A comparison must survive a broken plugin: a strategy that cannot be created or
rendered is reported with its reason while every other strategy completes
(issue 13). These helpers turn an exception into that one line, without a
traceback: a broken template is named by its file and line (not blamed on the
strategy that happened to render it), and a plugin by its distribution and
entry point.
"""

from __future__ import annotations

from types import TracebackType

import jinja2

from turnpress.core.registry import PluginError, get_registry

__all__ = ["CompareError", "TemplateCompareError", "describe_failure", "is_template_problem",
           "strategy_origin", "template_location", "tokenizer_origin"]


class CompareError(RuntimeError):
    """The comparison as a whole cannot go on (the ``full-history`` baseline, a template
    or the tokenizer failed); the message says which, where. A single strategy that
    fails does not raise: it is listed in :attr:`ComparisonResult.not_compared`."""


class TemplateCompareError(CompareError):
    """A :class:`CompareError` because a template is broken: one of the user's
    (``--templates``) or a plugin's, bad input rather than a failure of the run."""


def template_location(exc: BaseException) -> str | None:
    """``file.j2, line N`` of the template an exception came from, or None.

    Looks at the exception's own fields (``TemplateSyntaxError.filename``/``lineno``,
    ``TemplateNotFound.name``, a ``TemplateProblem``'s ``template``/``path``) and then
    at the traceback, where Jinja2 puts the template's file and line.
    """
    for attr in ("filename", "path", "template", "name"):
        value = getattr(exc, attr, None)
        if isinstance(value, str) and value.endswith(".j2"):
            line = getattr(exc, "lineno", None)
            return value + (f", line {line}" if isinstance(line, int) else "")
    tb: TracebackType | None = exc.__traceback__
    found = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename.endswith(".j2"):
            found = f"{filename}, line {tb.tb_lineno}"
        tb = tb.tb_next
    return found


def is_template_problem(exc: BaseException) -> bool:
    """Whether ``exc`` is a broken template (a Jinja2 error, or the registry's
    ``TemplateProblem``), rather than a fault of the strategy's own code."""
    return (isinstance(exc, jinja2.TemplateError)
            or any(c.__name__ == "TemplateProblem" for c in type(exc).__mro__))


def describe_failure(exc: BaseException, origin: str | None = None) -> str:
    """``Type: message`` on one line; for a template problem, ``template FILE, line N:
    message``; for a :class:`PluginError` (which names the plugin and what it did), the
    message. ``origin`` is what the caller says before it (``strategy 'x' of plugin
    ...``): a message starting with it (a bad message, ``check_messages``) does not say
    it again."""
    message = " ".join(str(exc).split()) or "(no message)"
    if origin is not None and message.startswith(origin + " "):
        message = message[len(origin) + 1:]
    if isinstance(exc, PluginError):
        return message
    if is_template_problem(exc):
        where = template_location(exc)
        if where and where.split(",")[0] not in message:
            return f"template {where}: {message}"
        return message if type(exc).__name__ == "TemplateProblem" else \
            f"template problem: {message}"
    return f"{type(exc).__name__}: {message}"


def _origin(kind: str, name: str, found: dict) -> str:
    reg = found.get(name)
    if reg is None or reg.plugin.builtin:
        return f"{kind} {name!r}"
    return f"{kind} {name!r} of {reg.plugin.source}"


def strategy_origin(name: str) -> str:
    """``strategy 'x'``, plus ``of plugin 'p' (distribution d 1.0, ...)`` for a plugin's."""
    try:
        return _origin("strategy", name, get_registry().strategies())
    except Exception:  # the registry itself is broken: name the strategy only
        return f"strategy {name!r}"


def tokenizer_origin(name: str) -> str:
    """``tokenizer 'x'``, plus the plugin that registered it when it is not built in."""
    try:
        return _origin("tokenizer", name, get_registry().tokenizers())
    except Exception:
        return f"tokenizer {name!r}"

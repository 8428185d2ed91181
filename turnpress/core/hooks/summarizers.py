"""``register_summarizers(register)``: ``register(name, summarizer_class)``.

A summarizer is a class (or a factory) called with its options, or a
``"module:attribute"`` string naming one, imported when the summarizer is first
built (how ``llm`` is registered: it lives in ``turnpress.agent``, a layer above the
plugins, as the ``run`` command does). Anything else is reported, naming the plugin,
and left out. What a summarizer instance must do is in :mod:`turnpress.core.summaries`.

A third-party summarizer is guarded, as a tokenizer is: :meth:`SummarizersHook.new_summarizer`
builds it and wraps it so that a constructor, ``summarize()``, ``cache_key()`` or
``estimate()`` that raises (or a ``summarize()`` that returns no ``Summary``) raises a
:class:`~turnpress.core.errors.PluginError` naming the summarizer and its plugin.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from turnpress.core.errors import PLUGIN_FAULTS, PluginError
from turnpress.core.hooks.base import HookCalls
from turnpress.core.plugin_loading import PluginInfo, Registration, short_repr
from turnpress.core.summaries import Summary, SummaryBudgetExceeded, SummaryUnavailable

__all__ = ["GuardedSummarizer", "SummarizersHook"]

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


class SummarizersHook(HookCalls):
    """The registered summarizers."""

    def summarizers(self) -> dict[str, Registration]:
        """Registered summarizers by name (a class, a factory, or a lazy
        ``"module:attribute"`` string)."""

        def make(info: PluginInfo, args: tuple[Any, ...]) -> Registration:
            if len(args) != 2:
                raise TypeError("register() takes (name, summarizer_class)")
            name, value = args
            if not isinstance(name, str) or not _NAME.match(name):
                raise TypeError(f"summarizer name {short_repr(name)} must be a lower-case "
                                f"word (letters, digits, '-', '_')")
            if isinstance(value, str):
                if not _TARGET.match(value):
                    raise TypeError(f"{value!r} is not 'module:attribute'")
            elif not callable(value):
                raise TypeError(f"{short_repr(value)} is not a summarizer class")
            return Registration(name, value, info)

        return self._collect("register_summarizers", "summarizer", make)

    def summarizer_class(self, name: str) -> Any:
        """The summarizer class registered as ``name`` (a lazy one imported now).

        Raises ``ValueError`` naming the registered summarizers for an unknown name,
        :class:`PluginError` naming the plugin when a lazy target cannot be imported.
        """
        regs = self.summarizers()
        reg = regs.get(name)
        if reg is None:
            valid = ", ".join(sorted(regs)) or "(none)"
            raise ValueError(f"unknown summarizer {name!r}; registered summarizers: "
                             f"{valid}." + self.failure_note())  # type: ignore[attr-defined]
        if not isinstance(reg.value, str):
            return reg.value
        module, _, attribute = reg.value.partition(":")
        try:
            return getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise PluginError(f"summarizer {name!r} of {reg.plugin.source}: cannot load "
                              f"{reg.value}: {type(exc).__name__}: {exc}",
                              plugin=reg.plugin.name, distribution=reg.plugin.distribution,
                              entry_point=reg.plugin.entry_point) from None

    def new_summarizer(self, name: str, **kwargs: Any) -> Any:
        """The summarizer registered as ``name``, built with ``kwargs``; a third-party
        one guarded (see the module's docstring). ``SummaryUnavailable`` and
        ``ValueError`` from its constructor are raised as they are (a summarizer that
        cannot be used, a bad model argument)."""
        cls = self.summarizer_class(name)
        reg = self.summarizers()[name]
        if reg.plugin.builtin:
            return cls(**kwargs)
        try:
            summarizer = cls(**kwargs)
        except (SummaryUnavailable, ValueError, PluginError):
            raise
        except PLUGIN_FAULTS as exc:
            raise _failure(name, reg.plugin, "could not be created", exc) from exc
        return GuardedSummarizer(summarizer, name, reg.plugin)


#: turnpress's own answers, which a summarizer may raise as they are
_PASSED = (SummaryUnavailable, SummaryBudgetExceeded, PluginError)


def _failure(name: str, info: PluginInfo, what: str, exc: BaseException) -> PluginError:
    return PluginError(f"summarizer {name!r} of {info.source} {what}: "
                       f"{type(exc).__name__}: {' '.join(str(exc).split())}",
                       plugin=info.name, distribution=info.distribution,
                       entry_point=info.entry_point)


class GuardedSummarizer:
    """A third-party summarizer whose ``summarize()``, ``cache_key()`` and ``estimate()``
    raise a :class:`PluginError` naming it and its plugin when they fail (every other
    attribute is the summarizer's own)."""

    def __init__(self, summarizer: Any, name: str, info: PluginInfo) -> None:
        self.summarizer, self.registered_as, self.plugin = summarizer, name, info

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") or attribute in ("summarizer", "registered_as",
                                                       "plugin"):
            raise AttributeError(attribute)  # not set yet (unpickling): not delegated
        return getattr(self.summarizer, attribute)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self.summarizer, method)(*args, **kwargs)
        except _PASSED:
            raise
        except PLUGIN_FAULTS as exc:
            what = "failed" if method == "summarize" else f"failed in {method}()"
            raise _failure(self.registered_as, self.plugin, what, exc) from exc

    def summarize(self, *args: Any, **kwargs: Any) -> Summary:
        summary = self._call("summarize", *args, **kwargs)
        if not isinstance(summary, Summary):
            raise PluginError(f"summarizer {self.registered_as!r} of {self.plugin.source}: "
                              f"summarize() returned {short_repr(summary)}, not a "
                              f"turnpress.core.summaries.Summary",
                              plugin=self.plugin.name, distribution=self.plugin.distribution,
                              entry_point=self.plugin.entry_point)
        return summary

    def cache_key(self, *args: Any, **kwargs: Any) -> Any:
        return self._call("cache_key", *args, **kwargs)

    @property
    def estimate(self) -> Any:
        """The summarizer's ``estimate`` (guarded), or None when it has none."""
        if getattr(self.summarizer, "estimate", None) is None:
            return None
        return lambda *args, **kwargs: self._call("estimate", *args, **kwargs)

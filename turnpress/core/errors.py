"""The errors turnpress raises about its input and its plugins, below every other module.

They live at the bottom of the core so that any layer can raise them: a trace that
cannot be read (:class:`TraceError`, raised by the trace readers and by the guard
around a plugin's reader), a plugin that cannot be loaded or used
(:class:`PluginError`), and the warning that something a plugin did was left out
(:class:`PluginWarning`); and how a value is shown in a message (:func:`quote`,
:func:`printable`). ``turnpress.core.trace`` and ``turnpress.core.registry``
export them too.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["PLUGIN_FAULTS", "QUOTE_LIMIT", "ExecutorError", "PluginError", "PluginWarning",
           "TraceError", "a_or_an", "printable", "quote"]

#: at most this many characters of a bad value are quoted in an error message
QUOTE_LIMIT = 80

#: what a plugin's code may raise that is a failure of that plugin alone: any exception,
#: and ``sys.exit()`` (not Ctrl-C)
PLUGIN_FAULTS = (Exception, SystemExit)


def quote(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message, cut to at most ``limit`` characters (a cut
    string ends ``...'`` inside its quotes; anything else ends ``...``): a bad value of
    100k characters is not echoed whole."""
    text = repr(value)
    if len(text) <= limit:
        return text
    if isinstance(value, str):
        cut = value[:limit]
        while len(repr(cut)) + 3 > limit:
            cut = cut[: -max(1, (len(repr(cut)) + 3 - limit) // 2)]
        shown = repr(cut)
        return shown[:-1] + "..." + shown[-1]
    return text[: limit - 3] + "..."


def a_or_an(word: str) -> str:
    """``word`` after its article, for a message: ``a str``, ``an int``, ``an assistant``,
    ``a user`` (by the sound: ``a`` before a "you" or "w" sound, ``a usage``, ``a unit``,
    ``a euro``, ``a one``; ``an unknown``, ``an upper``)."""
    return f"{'an' if _vowel_sound(word.lower()) else 'a'} {word}"


#: words written with a vowel first that start with a consonant sound: "you" (user,
#: usage, unit: a u, then one consonant and a vowel, or "uni"; not the "un-" of unknown),
#: "you" again (euro), "w" (one, once)
_CONSONANT_SOUND = re.compile(r"uni|u(?!n)[b-df-hj-np-tv-z][aeiouy]|eu|one\b|once\b")


def _vowel_sound(word: str) -> bool:
    return word[:1] in tuple("aeiou") and not _CONSONANT_SOUND.match(word)


def printable(text: str) -> str:
    """``text`` with each lone surrogate (half of a UTF-16 pair, e.g. the ``"\\ud83d"``
    of a cut-off emoji, which no UTF-8 stream can write) as its escape ``\\ud83d``.

    In plain text the character stays visible; inside JSON text (only a string can
    hold one) the escape is valid JSON that reads back as the same character.
    """
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class TraceError(ValueError):
    """A trace file that cannot be read; the message says where and what is wrong."""


class PluginError(Exception):
    """A plugin could not be loaded or used; the message names the plugin."""

    def __init__(self, message: str, *, plugin: str | None = None,
                 distribution: str | None = None, entry_point: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.distribution = distribution
        self.entry_point = entry_point


class PluginWarning(UserWarning):
    """Issued when a plugin, or something it registered or answered, is left out."""


class ExecutorError(Exception):
    """Where ``compare`` runs its traces could not be used: an engine that cannot be
    reached, a worker that lacks a plugin the driver has; the message names the
    executor or the worker."""

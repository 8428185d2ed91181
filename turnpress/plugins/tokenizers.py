"""Built-in plugin: the ``o200k_base``, ``cl100k_base`` and ``chars4`` tokenizers.

Registered through ``register_tokenizers`` exactly like a third-party tokenizer.
The two OpenAI encodings are exact and work offline through the ``bpe-openai``
package (tiktoken-compatible; tiktoken itself downloads its vocabulary at run
time). ``bpe_openai`` is imported on the first count, so ``import turnpress``
stays light. ``chars4`` is ``len(text) // 4``, for when exactness does not matter.

A registered count function may also carry an ``encode(text) -> list[int]``
method, as the BPE ones here do: the cache models then compare real token
sequences instead of counting the shared characters.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from turnpress.core.hookspecs import hookimpl

__all__ = ["BPETokenizer", "chars4", "register_tokenizers"]


class BPETokenizer:
    """An exact OpenAI BPE encoding from ``bpe-openai``, loaded on first use.

    Calling it counts tokens; :meth:`encode` gives the token ids. Special-token
    text such as ``<|endoftext|>`` is encoded as ordinary text, as a prompt's
    content would be. Picklable (the loaded encoding is not carried along), so it
    can be sent to worker processes.
    """

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._enc: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._enc is None:
            with self._lock:
                if self._enc is None:
                    with warnings.catch_warnings():  # its importlib.resources use is dated
                        warnings.simplefilter("ignore", DeprecationWarning)
                        import bpe_openai

                        self._enc = bpe_openai.get_encoding(self.encoding)
        return self._enc

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``."""
        return self._load().encode_ordinary(text)

    def __call__(self, text: str) -> int:
        """The number of tokens of ``text``."""
        return len(self.encode(text))

    def __getstate__(self) -> dict[str, Any]:
        return {"encoding": self.encoding}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["encoding"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"BPETokenizer({self.encoding!r})"


def chars4(text: str) -> int:
    """A rough count: one token per four characters."""
    return len(text) // 4


@hookimpl
def register_tokenizers(register: Callable[[str, Callable[[str], int]], None]) -> None:
    """Register ``o200k_base`` (the default), ``cl100k_base`` and ``chars4``."""
    register("o200k_base", BPETokenizer("o200k_base"))
    register("cl100k_base", BPETokenizer("cl100k_base"))
    register("chars4", chars4)

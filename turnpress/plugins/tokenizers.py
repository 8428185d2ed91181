"""Built-in plugin: the ``o200k_base``, ``cl100k_base`` and ``chars4`` tokenizers.

Registered through ``register_tokenizers`` exactly like a third-party tokenizer.
The two OpenAI encodings are exact and work offline through the ``bpe-openai``
package (tiktoken-compatible; tiktoken itself downloads its vocabulary at run
time). The encoding is loaded on the first count, so ``import turnpress`` stays
light. ``chars4`` is ``len(text) // 4``, for when exactness does not matter.

A registered count function may also carry an ``encode(text) -> list[int]``
method, as the BPE ones here do: the cache models then compare real token
sequences instead of counting the shared characters.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
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
        #: no pre-token spans a line break followed by a letter, a digit or most punctuation,
        #: so a text may be encoded in pieces cut there (``Tokenizer.splits_lines``)
        self.splits_lines = encoding in ("o200k_base", "cl100k_base")
        self._enc: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._enc is None:
            with self._lock:
                if self._enc is None:
                    self._enc = _rust_backend(self.encoding) or _public_encoder(self.encoding)
        return self._enc

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``."""
        try:
            return self._load()(text)
        except UnicodeEncodeError:  # lone surrogates: replaced, as bpe_openai does
            return self._load()(text.encode("utf-16", "surrogatepass").decode("utf-16",
                                                                              "replace"))

    def __call__(self, text: str) -> int:
        """The number of tokens of ``text``."""
        return len(self.encode(text))

    def __getstate__(self) -> dict[str, Any]:
        return {"encoding": self.encoding}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["encoding"])  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"BPETokenizer({self.encoding!r})"


def _rust_backend(encoding: str) -> Callable[[str], list[int]] | None:
    """``bpe-openai``'s Rust tokenizer, loaded without the package's Python layer.

    ``import bpe_openai`` builds Python rank tables for every encoding (about half a
    second and 130 MB per process) that counting does not need; its compiled
    ``_bindings`` module alone encodes exactly the same (``encode_ordinary`` is a
    thin wrapper over it). None if that module cannot be loaded this way, and the
    public API is used instead.
    """
    try:
        module = sys.modules.get("bpe_openai._bindings")
        if module is None:
            package = importlib.util.find_spec("bpe_openai")
            if package is None or not package.submodule_search_locations:
                return None
            path = next(p for where in package.submodule_search_locations
                        for p in Path(where).glob("_bindings*") if p.suffix in (".so", ".pyd"))
            loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(path))
            spec = importlib.util.spec_from_file_location("bpe_openai._bindings", path,
                                                          loader=loader)
            if spec is None:
                return None
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
        backend = module.tokenizer_for_encoding(encoding)
        if backend.encode("hello world") != _SELF_CHECK.get(encoding, backend.encode(
                "hello world")):
            return None
        return lambda text: list(backend.encode(text)) if text else []
    except Exception:
        return None


_SELF_CHECK = {"o200k_base": [24912, 2375], "cl100k_base": [15339, 1917]}


def _public_encoder(encoding: str) -> Callable[[str], list[int]]:
    """``bpe_openai.get_encoding(encoding).encode_ordinary`` (the documented API)."""
    with warnings.catch_warnings():  # its importlib.resources use is dated
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai  # heavy dependency (~1 s): loaded on the first exact count

        return bpe_openai.get_encoding(encoding).encode_ordinary


def chars4(text: str) -> int:
    """A rough count: one token per four characters."""
    return len(text) // 4


@hookimpl
def register_tokenizers(register: Callable[[str, Callable[[str], int]], None]) -> None:
    """Register ``o200k_base`` (the default), ``cl100k_base`` and ``chars4``."""
    register("o200k_base", BPETokenizer("o200k_base"))
    register("cl100k_base", BPETokenizer("cl100k_base"))
    register("chars4", chars4)

"""Shared test fixtures: readable one-file-per-case snapshots under ``snapshots/``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import settings
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation

from turnpress.core.registry import Registry, reset_registry

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT_DIR = ROOT / "snapshots"

# Property tests check the same examples on every run ("fixed"), so a test run, and CI,
# is reproducible; TURNPRESS_HYPOTHESIS=explore draws new examples each run (and
# `python scripts/fuzz.py` searches much further). A failure prints the example.
settings.register_profile("fixed", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
_PROFILE = os.environ.get("TURNPRESS_HYPOTHESIS", "fixed")
if _PROFILE not in ("fixed", "explore"):
    raise pytest.UsageError(f"TURNPRESS_HYPOTHESIS={_PROFILE!r}: use 'fixed' (the default, "
                            f"the same examples every run) or 'explore' (new examples)")
settings.load_profile(_PROFILE)


class TextSnapshot(SingleFileSnapshotExtension):
    """One ``.txt`` file per snapshot, in ``snapshots/<test module>/``."""

    file_extension = "txt"  # syrupy >= 5 (Python >= 3.11)
    _file_extension = "txt"  # syrupy 4 (the last for Python 3.10)
    _write_mode = WriteMode.TEXT

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        return str(SNAPSHOT_DIR / Path(test_location.filepath).stem)


@pytest.fixture
def snapshot(snapshot):
    """syrupy's fixture, writing readable text files under the top-level snapshots/."""
    return snapshot.use_extension(TextSnapshot)


@pytest.fixture
def fresh_registry():
    """Run a test against a new process-wide registry, then put the old one back."""
    previous = reset_registry(None)
    try:
        yield
    finally:
        reset_registry(previous)


@pytest.fixture
def example_on_path(tmp_path, monkeypatch):
    """The example plugin package's source plus a real dist-info with its entry point,
    loaded by a fresh registry (the old one is put back afterwards)."""
    from plugin_helpers import EXAMPLE_PLUGIN, forget_modules, install_fake_distribution

    monkeypatch.syspath_prepend(str(EXAMPLE_PLUGIN))
    install_fake_distribution(tmp_path, "turnpress-plugin-example", "0.1.0",
                              {"example": "turnpress_plugin_example"}, {})
    monkeypatch.syspath_prepend(str(tmp_path))
    previous = reset_registry(Registry())
    yield
    reset_registry(previous)
    forget_modules("turnpress_plugin_example")


@pytest.fixture
def site(tmp_path, monkeypatch):
    """A directory on sys.path for throwaway distributions (modules named ``tpf_*``),
    with ``TURNPRESS_LOAD_PLUGINS`` unset and a fresh registry per test."""
    from plugin_helpers import forget_prefix

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("TURNPRESS_LOAD_PLUGINS", raising=False)
    previous = reset_registry(None)
    yield tmp_path
    reset_registry(previous)
    forget_prefix("tpf_")


@pytest.fixture
def audio_chat(tmp_path):
    """A chat transcript (``chat.json``) whose user message holds an OpenAI-only
    ``input_audio`` part, which has no Anthropic block."""
    chat = [{"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]},
            {"role": "assistant", "content": "ok"}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(chat))
    return path

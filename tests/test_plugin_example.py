"""The example third-party plugin in examples/turnpress-plugin-example/, installed for real."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_helpers import EXAMPLE_PLUGIN

from turnpress import Turn, render, type_label


def test_strategy_type_label_and_templates_are_discovered(example_on_path) -> None:
    stamp = datetime.datetime(2026, 11, 23, 9, 30)
    turn = Turn.succeeded(1, "(def when (tool/now))", stamp, memory={"when": stamp},
                          prints=["it is late"])
    messages = render([turn], mission="What time is it?", turns_left=2,
                      compression="last-turn-only")
    assert type_label(stamp) == "datetime"
    assert messages[1]["content"] == (
        "What time is it?\n\n;; === user/ (your prelude) ===\n"
        "when                         ; = datetime, sample: "
        '#object[datetime "2026-11-23 09:30:00"]\n\nit is late\n\nTurns left: 2')
    hidden = render([Turn.failed(1, "x", __import__("turnpress").Failure("e", "bad"),
                                 memory={})], mission="m", turns_left=2,
                    compression="last-turn-only:show_errors=false")
    assert hidden[1]["content"] == "m\n\nTurns left: 2"


def test_plugins_command_lists_it(example_on_path) -> None:
    from click.testing import CliRunner

    from turnpress.cli import main

    result = CliRunner().invoke(main, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    info = {p["name"]: p for p in json.loads(result.output)["plugins"]}["example"]
    assert info["distribution"] == "turnpress-plugin-example" and info["version"] == "0.1.0"
    assert info["registers"]["strategy"] == ["last-turn-only"]
    assert info["registers"]["templates"][0].endswith("templates")
    assert "type_label" in info["hooks"]


@pytest.mark.slow
def test_pip_install_and_discovery(tmp_path) -> None:
    """pip installs the example package; a fresh process discovers and uses it."""
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "--target", str(target), str(EXAMPLE_PLUGIN)],
                   check=True, capture_output=True, text=True)
    assert list(target.glob("turnpress_plugin_example-0.1.0.dist-info"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(target), *filter(None, [os.environ.get("PYTHONPATH")])])}
    listing = subprocess.run([sys.executable, "-m", "turnpress", "plugins", "--json"],
                             env=env, capture_output=True, text=True, check=True)
    names = {p["name"]: p for p in json.loads(listing.stdout)["plugins"]}
    assert names["example"]["registers"]["strategy"] == ["last-turn-only"]
    rendered = subprocess.run([sys.executable, "-m", "turnpress", "render", "--strategy",
                               "last-turn-only", "--format", "json",
                               str(Path(__file__).parent.parent / "turnpress" / "examples" /
                                   "product-research.json")],
                              env=env, capture_output=True, text=True, check=True)
    doc = json.loads(rendered.stdout)
    assert doc["strategy"] == "last-turn-only"
    assert doc["messages"][1]["content"].startswith(
        "Find well-reviewed electronics that are in stock")

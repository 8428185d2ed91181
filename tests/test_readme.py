"""The README's Python examples run as printed."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from turnpress import render
from turnpress.core.registry import Registry, reset_registry

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```python\n(.*?)^```$", README, flags=re.S | re.M)


def run_block(source: str) -> tuple[dict, str]:
    namespace: dict = {"__name__": "readme_example"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "README.md", "exec"), namespace)
    return namespace, out.getvalue()


def test_render_example() -> None:
    _, printed = run_block(BLOCKS[0])
    assert printed.startswith("Find the cheapest laptop\n\n;; === tool/ ===")
    assert "Error: undefined symbol 'hitz'" in printed and "Turns left: 3" in printed


def test_request_for_example_prints_what_render_prints() -> None:
    from click.testing import CliRunner

    from turnpress.cli import main

    namespace, printed = run_block(next(b for b in BLOCKS if "request_for(" in b))
    assert printed == "['messages', 'system']\n"
    cli = CliRunner().invoke(main, ["render", "product-research", "-t", "3", "-s",
                                    "rolling-window:window=2", "-f", "anthropic"])
    assert cli.exit_code == 0 and cli.stdout == namespace["text"] + "\n"


def test_agent_example() -> None:
    namespace, printed = run_block(next(b for b in BLOCKS if "ScriptedLLM" in b))
    assert printed.startswith("True Mouse\n")
    assert ";; Output:\n2 hits" in printed
    assert namespace["step"].to_trace("x").turns == namespace["step"].turns


def test_strategy_example_is_a_working_plugin() -> None:
    namespace, _ = run_block(next(b for b in BLOCKS if "class NewestTurn" in b))
    registry = Registry(entry_points=False)
    registry.register(_module(namespace), name="readme-plugin")
    previous = reset_registry(registry)
    try:
        messages = render([], mission="m", turns_left=2, compression="newest-turn")
        assert messages[1]["content"] == "m\n\nTurns left: 2"
    finally:
        reset_registry(previous)


def test_type_label_example() -> None:
    import datetime

    namespace, _ = run_block(next(b for b in BLOCKS if "def type_label" in b))
    assert namespace["type_label"](datetime.datetime(2026, 1, 1)) == "datetime"


def _module(namespace: dict):
    import types

    module = types.ModuleType("readme_plugin")
    module.__dict__.update(namespace)
    return module


@pytest.mark.parametrize("block", [b for b in BLOCKS if "compare_traces" in b])
def test_compare_example_names_real_functions(block: str) -> None:
    from turnpress.compare import compare_traces, write_html_report  # noqa: F401
    from turnpress.core.providers import prompt_with_breakpoints, to_anthropic  # noqa: F401


def test_compress_example_runs_against_a_fake_server() -> None:
    """The 'Compress your own agent's messages' loop, run as printed (issue 10 item 5)."""
    from fake_agents import ScriptedToolServer, call
    from openai import OpenAI

    import turnpress
    from turnpress.compress import count_tokens

    namespace, _ = run_block(next(b for b in BLOCKS if "def agent_loop" in b))
    tools = [{"type": "function", "function": {"name": "cat", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}]
    messages = [{"role": "system", "content": "Audit."}, {"role": "user", "content": "Go."}]
    script = [call("cat", path=f"f{i}") for i in range(25)] + ["done"]
    with ScriptedToolServer(script) as server:
        client = OpenAI(base_url=server.base_url + "/v1", api_key="test", max_retries=0)
        answer = namespace["agent_loop"](
            client, messages, tools, lambda name, args: f"{args['path']}:\n" + "x\n" * 50)
    assert answer == "done"
    assert len(messages) == 2 + 2 * 25 + 1
    sent = server.requests[-1].body["messages"]
    assert len(sent) == len(messages) - 1  # observation-masking keeps every message...
    full = turnpress.compress(messages[:-1], strategy="full-history")
    assert count_tokens(sent) < 0.7 * count_tokens(full)  # ...but masks old outputs
    assert sum("omitted" in str(m["content"]) for m in sent if m["role"] == "tool") >= 10


SHELL_BLOCKS = re.findall(r"^```\n\$ (turnpress compare[^\n]*)\n(.*?)^```$", README,
                          flags=re.S | re.M)


def test_readme_shows_what_compare_prints() -> None:
    """The README's `turnpress compare` outputs are what the command prints today on the
    bundled runs: the 80-column table (whole strategy names) and the plain lines."""
    import shlex

    from click.testing import CliRunner
    from rich.console import Console

    from turnpress.cli import main
    from turnpress.compare import compare_traces
    from turnpress.compare.table import print_comparison

    assert len(SHELL_BLOCKS) == 2
    for command, shown in SHELL_BLOCKS:
        words = shlex.split(command.split("#")[0])
        expected = [line.rstrip() for line in shown.splitlines()]
        if "|" in words:  # piped: plain lines
            head = int(words[words.index("head") + 1].lstrip("-"))
            out = CliRunner().invoke(main, words[1:words.index("|")])
            assert out.exit_code == 0, out.output
            assert out.output.splitlines()[:head] == expected
        else:
            options = dict(zip(words[2::2], words[3::2], strict=True))
            result = compare_traces(cache=options.get("--cache", "openai"),
                                    price=options.get("--price"))
            console = Console(width=80, force_terminal=True, color_system=None, record=True,
                              file=io.StringIO())
            print_comparison(result, console, plain=False)
            lines = [line.rstrip() for line in console.export_text().splitlines()]
            assert lines[:len(expected)] == expected

"""Snapshot tests: every spec-01 scenario and every bundled trace, rendered by every
registered strategy (and the option variants below). One readable ``.txt`` per case
under ``snapshots/test_snapshots/``; review a changed file before updating it with
``pytest --snapshot-update``.
"""

from __future__ import annotations

import pytest
from scenarios import SCENARIOS

from turnpress import load_trace, render
from turnpress.core.compression import strategy_names
from turnpress.core.providers import format_text
from turnpress.examples import short_example_trace_paths

# Option variants worth pinning besides each strategy's defaults.
VARIANTS = [
    "single-user-coalesced:errors=pairs",
    "rolling-window:window=1,step=2",
    "rolling-window:window=1,step=1,errors=pairs",
    "progressive-batch:min_preserved=1,batch_size=2",
    "progressive-batch:min_preserved=0,batch_size=2",
    "observation-masking:window=1,step=1",
    "observation-masking:window=1,step=2",
    "checkpoint-coalesced:every=2",
    "clear-tool-uses:trigger=200,keep=1",
    "aggressive:output_chars=40",
]

STRATEGIES = [*strategy_names(), *VARIANTS]


def _id(spec: str) -> str:
    return spec.replace(":", "+").replace("=", "-").replace(",", "+")


@pytest.mark.parametrize("strategy", STRATEGIES, ids=_id)
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_scenario(scenario: str, strategy: str, snapshot) -> None:
    """Each scenario of spec 01 under each strategy (FMT-*, MSG-*, ERR-*, CMP-*)."""
    sc = SCENARIOS[scenario]()
    messages = render(sc.turns, compression=strategy, **sc.render_kwargs())
    assert format_text(messages) == snapshot


@pytest.mark.parametrize("strategy", STRATEGIES, ids=_id)
@pytest.mark.parametrize("path", short_example_trace_paths(), ids=lambda p: p.stem)
def test_bundled_trace_last_prompt(path, strategy: str, snapshot) -> None:
    """The prompt of the last turn of each short bundled trace (the long recorded runs
    would make snapshots of hundreds of kilobytes; tests/test_examples_long_runs.py
    checks those)."""
    trace = load_trace(path)
    assert format_text(trace.prompt(len(trace.turns), strategy)) == snapshot


def test_agent_system_prompt(snapshot) -> None:
    """The static system prompt (agent/system_prompt.j2 + the PTC-Lisp reference)."""
    from turnpress.agent import system_prompt

    assert system_prompt() + "\n" == snapshot


@pytest.mark.parametrize("task", ["order-summary", "phone-campaign", "product-research"])
def test_bundled_task_run(task: str, snapshot) -> None:
    """A bundled task run end to end, offline: the prompts the LLM received on every turn
    (system prompt elided), from real execution of its scripted programs."""
    from turnpress.agent import load_task

    step = load_task(task).build_agent().run()
    blocks = []
    for n, messages in enumerate(step.messages, 1):
        shown = [m if m["role"] != "system" else {**m, "content": "(system prompt)"}
                 for m in messages]
        blocks.append(f"######## turn {n}\n{format_text(shown)}")
    blocks.append(f"######## result\nsuccess={step.success} result={step.result!r}\n")
    assert "\n".join(blocks) == snapshot

"""turnpress.request_for(): the request document `turnpress render -f FORMAT` prints,
from Python (the CLI is a thin layer over it)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from transcripts_helpers import data

import turnpress
from turnpress import RequestError, load_trace, request_for
from turnpress.cli import main
from turnpress.core.trace_inputs import load_traces
from turnpress.examples import example_trace_paths

FORMATS = ("anthropic", "responses", "openai", "json")


def printed(path: str, *args: str) -> str:
    """What `turnpress render PATH ARGS...` prints on stdout (it must succeed)."""
    result = CliRunner().invoke(main, ["render", path, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def as_printed(document: dict) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def bundled() -> str:
    return str(next(p for p in example_trace_paths() if p.stem == "product-research"))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("strategy", "turn"), [
    (None, None), ("full-history", 2), ("rolling-window:window=2", 4)])
def test_request_for_a_bundled_trace_is_what_render_prints(fmt, strategy, turn):
    path = bundled()
    trace = load_trace(path)
    args = ["-f", fmt, *(["-s", strategy] if strategy else []),
            *(["-t", str(turn)] if turn else [])]
    kwargs = {"strategy": strategy} if strategy else {}
    assert as_printed(request_for(trace, turn, format=fmt, **kwargs)) == printed(path, *args)


@pytest.fixture
def imported(tmp_path):
    """The hand-written OpenAI, Anthropic and Responses transcripts, each with the
    tools its request defined, imported into one JSONL file of runs."""
    out = tmp_path / "runs.jsonl"
    for rel in ("openai/request.json", "anthropic/run.json", "responses/request.json"):
        runs = tmp_path / f"{rel.replace('/', '-')}.jsonl"
        result = CliRunner().invoke(main, ["import", str(data(rel)), "-o", str(runs)])
        assert result.exit_code == 0, result.output
        with out.open("a", encoding="utf-8") as f:
            f.write(runs.read_text(encoding="utf-8"))
    return out


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("strategy", ["full-history", "observation-masking", "aggressive"])
def test_request_for_an_imported_transcript_is_what_render_prints(imported, fmt, strategy):
    traces = load_traces([imported]).traces
    assert len(traces) == 3 and all(t.tools for t in traces)
    # several runs: one JSON document a line, in the file's order
    lines = printed(str(imported), "-s", strategy, "-f", fmt).splitlines()
    assert lines == [json.dumps(request_for(t, strategy=strategy, format=fmt),
                                ensure_ascii=False) for t in traces]
    for trace in traces:  # each run alone, at every turn
        single = imported.parent / f"{trace.name.replace('#', '-')}.json"
        turnpress.save_trace(trace, single)
        for n in range(1, len(trace.turns) + 2):
            doc = request_for(trace, n, strategy=strategy, format=fmt)
            assert as_printed(doc) == printed(str(single), "-s", strategy, "-t", str(n),
                                              "-f", fmt)
            if fmt != "json":
                assert "tools" in doc


def test_request_for_keeps_the_request_tools_and_compactions():
    responses = load_trace(data("responses/request.json"))
    doc = request_for(responses, 3, strategy="aggressive", format="responses")
    defined = json.loads(data("responses/request.json").read_text())["tools"]
    assert doc["tools"] == [t for t in defined if t["type"] == "function"]
    # the strategy's view drops the run's compaction item: it is put back, first
    view = request_for(responses, 3, strategy="aggressive", format="json")["messages"]
    assert "compaction" not in json.dumps(view)
    assert [i.get("type") for i in doc["input"]].count("compaction") == 1
    assert doc["input"][0]["type"] == "compaction"
    anthropic = load_trace(data("anthropic/run.json"))
    doc = request_for(anthropic, strategy="full-history")
    assert set(doc) == {"system", "messages", "tools"}
    assert doc["tools"] == json.loads(data("anthropic/run.json").read_text())["tools"]


def test_request_for_takes_what_render_takes_as_strategy():
    trace = load_trace(bundled())
    assert request_for(trace, format="json", strategy=False)["strategy"] == "full-history"
    assert request_for(trace, format="json")["strategy"] == "price-scheduled"
    instance = turnpress.get_strategy("rolling-window", window=2)
    doc = request_for(trace, 3, strategy=instance, format="json")
    assert (doc["strategy"], doc["options"]["window"], doc["turn"]) == (
        "rolling-window", 2, 3)
    assert doc["messages"] == trace.prompt(3, "rolling-window:window=2")


@pytest.mark.parametrize("turn", [0, 99, "2", True])
def test_a_bad_turn_names_the_trace_turn_and_format(turn):
    trace = load_trace(bundled())
    with pytest.raises(RequestError) as info:
        request_for(trace, turn, format="openai")
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"trace product-research, turn {turn}, format openai: "
                                      f"trace product-research has ")
    assert "turn must be from 1 to" in str(info.value)
    assert (info.value.trace, info.value.turn, info.value.format) == (
        "product-research", turn, "openai")


@pytest.mark.parametrize("fmt", ["text", "xml", "", "Anthropic"])
def test_a_bad_format_names_the_trace_turn_format_and_the_formats(fmt):
    trace = load_trace(bundled())
    with pytest.raises(RequestError) as info:
        request_for(trace, 2, format=fmt)
    assert str(info.value) == (f"trace product-research, turn 2, format {fmt!r}: no such "
                               f"format; one of anthropic, responses, openai, json")


def test_a_part_with_no_anthropic_block_names_the_trace_turn_and_format(audio_chat):
    path = audio_chat
    trace = load_trace(path)
    with pytest.raises(RequestError, match=r"^trace chat, turn 1, format anthropic: message "
                       r"0: content part type 'input_audio' has no Anthropic"):
        request_for(trace, strategy="full-history")
    assert request_for(trace, strategy="full-history", format="openai")["messages"]
    cli = CliRunner().invoke(main, ["render", str(path), "-s", "full-history", "-f",
                                    "anthropic"])  # the CLI's words are as they were
    assert cli.exit_code == 2
    assert "Error: trace chat, turn 1, -f anthropic: message 0: content part type" \
        in cli.output


def test_request_for_is_public():
    assert turnpress.request_for is request_for and "request_for" in turnpress.__all__
    assert "RequestError" in turnpress.__all__

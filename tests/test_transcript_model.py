"""The transcript side of the model (DESIGN §10): original messages and billed usage on
turns, a trace's preamble, exact replay under full-history, and the trace-reader hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnpress import ToolCall, Turn, hookimpl, render
from turnpress.core.model import Usage
from turnpress.core.registry import get_registry
from turnpress.core.trace import Trace, TraceError, load_trace, save_trace, trace_to_dict

PREAMBLE = [{"role": "system", "content": "You fix bugs."},
            {"role": "user", "content": "Fix the failing test"}]
CALL = {"id": "c1", "type": "function",
        "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}


def transcript() -> Trace:
    turn = Turn.succeeded(
        1, "", None, memory={}, tool_calls=[ToolCall("bash", ({"cmd": "ls"},), "a.py")],
        messages=[{"role": "assistant", "content": None, "tool_calls": [CALL]},
                  {"role": "tool", "tool_call_id": "c1", "content": "a.py"}],
        usage=Usage(120, 100))
    return Trace("Fix the failing test", [turn], "You fix bugs.", 1, source="openai-chat",
                 preamble=PREAMBLE,
                 skipped=[{"index": 4, "reason": "final submission", "message": {}}])


def test_usage_checks_its_counts() -> None:
    assert Usage(10, 4, 2).to_dict() == {"prompt_tokens": 10, "cached_tokens": 4,
                                         "cache_write_tokens": 2}
    with pytest.raises(TypeError, match="cached_tokens"):
        Usage(10, -1)
    with pytest.raises(ValueError, match="exceed"):
        Usage(10, 8, 5)


def test_transcript_fields_round_trip(tmp_path: Path) -> None:
    trace = transcript()
    save_trace(trace, tmp_path / "run.json")
    loaded = load_trace(tmp_path / "run.json")
    assert loaded == trace
    assert loaded.turns[0].usage == Usage(120, 100)
    assert loaded.skipped[0]["reason"] == "final submission"


def test_full_history_replays_a_transcript_exactly() -> None:
    trace = transcript()
    args = trace.prompt_arguments(1)
    assert render(**args, compression=False) == PREAMBLE
    args["turns"], args["turns_left"] = trace.turns, 0
    assert render(**args, compression=False) == [*PREAMBLE, *trace.turns[0].messages]


def test_bad_usage_in_a_trace_names_the_turn(tmp_path: Path) -> None:
    obj = trace_to_dict(transcript())
    obj["turns"][0]["usage"]["cached_tokens"] = 500
    (tmp_path / "bad.json").write_text(json.dumps(obj))
    with pytest.raises(TraceError, match=r"bad.json: turn 1: field 'usage': .*exceed"):
        load_trace(tmp_path / "bad.json")


class _LinesReader:
    """A third-party format: {"log": [lines]} becomes a run with one turn a line."""

    @staticmethod
    def detect(data, path) -> bool:
        return isinstance(data, dict) and "log" in data

    @staticmethod
    def read(data, where) -> Trace:
        if not data["log"]:
            raise ValueError("the log is empty")
        turns = [Turn.succeeded(i, line, None, memory={}, prints=[line])
                 for i, line in enumerate(data["log"], 1)]
        return Trace("replay the log", turns, max_turns=len(turns))

    @hookimpl
    def register_trace_readers(self, register) -> None:
        register("lines-log", self.detect, self.read)


def test_registered_reader_is_used_by_load_trace(fresh_registry, tmp_path: Path) -> None:
    get_registry().register(_LinesReader(), "lines-log-plugin")
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"log": ["a", "b"]}))
    trace = load_trace(path)
    assert [t.program for t in trace.turns] == ["a", "b"] and trace.name == "run"
    path.write_text(json.dumps({"log": []}))
    with pytest.raises(TraceError, match=r"run.json: the log is empty"):
        load_trace(path)
    path.write_text(json.dumps({"something": "else"}))
    with pytest.raises(TraceError, match=r"not a format turnpress reads; it reads: "
                                         r"turnpress, .*lines-log"):
        load_trace(path)


@pytest.mark.parametrize(("answer", "said"), [
    ([None], "returned list whose item 0 is None, not a Trace or a list of Traces"),
    ("TRACE, 5", "returned list whose item 1 is 5 (int), not a Trace or a list of Traces"),
    ([], "returned list (an empty list), not a Trace or a list of Traces"),
    (7, "returned int, not a Trace or a list of Traces"),
])
def test_a_reader_answer_that_is_no_trace_names_the_bad_item(fresh_registry, tmp_path: Path,
                                                            answer, said) -> None:
    """A reader returning [None] was "returned list, not a Trace or a list of Traces":
    the error says which item is not a Trace."""
    trace = Trace("m", [], max_turns=1)
    answer = [trace, 5] if answer == "TRACE, 5" else answer

    class Reader:
        @hookimpl
        def register_trace_readers(self, register) -> None:
            register("odd", lambda data, path: "odd" in data, lambda data, where: answer)

    get_registry().register(Reader(), "odd-plugin")
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"odd": 1}))
    with pytest.raises(TraceError) as caught:
        load_trace(path)
    assert str(caught.value).endswith(f"trace reader 'odd' of plugin 'odd-plugin' "
                                      f"(distribution (registered in code)) {said}")

"""Trace files: lossless JSON/JSONL round trips and errors that say where."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scenarios import SCENARIOS

from turnpress import Failure, Fn, Keyword, Memory, ToolCall, Trace, Turn, load_trace, save_trace
from turnpress.core.trace import TraceError, iter_traces, save_traces, trace_to_dict
from turnpress.examples import example_trace_paths


def scenario_trace(name: str) -> Trace:
    sc = SCENARIOS[name]()
    return Trace(mission=sc.mission, turns=sc.turns, system_prompt=sc.system_prompt,
                 max_turns=len(sc.turns) + sc.turns_left, tools=sc.tools, data=sc.data,
                 name=name)


@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_scenarios_round_trip(tmp_path, name: str, suffix: str) -> None:
    trace = scenario_trace(name)
    path = tmp_path / f"t{suffix}"
    save_trace(trace, path)
    loaded = load_trace(path)
    assert loaded == trace
    assert trace_to_dict(loaded) == trace_to_dict(trace)
    assert loaded.prompt(len(trace.turns) or 1) == trace.prompt(len(trace.turns) or 1)


@pytest.mark.parametrize("path", example_trace_paths(), ids=lambda p: p.stem)
def test_bundled_traces_load_and_save_byte_identically(tmp_path, path) -> None:
    """Loading then saving is lossless."""
    trace = load_trace(path)
    text = path.read_text()
    version = json.loads(text.splitlines()[0] if path.suffix == ".jsonl" else text)["version"]
    save_trace(trace, tmp_path / path.name, version=version)  # same suffix: JSON or JSONL
    assert (tmp_path / path.name).read_text() == path.read_text()
    # the other version gives the same turns, each with its full memory
    other = tmp_path / f"other{path.suffix}"
    save_trace(trace, other, version=3 - version)
    assert load_trace(other) == trace
    assert [t.memory for t in load_trace(other).turns] == [t.memory for t in trace.turns]


def test_tags_for_values_json_lacks(tmp_path) -> None:
    memory = Memory({"kw": Keyword("a"), "s": frozenset({1, 2}), "f": Fn(("x",), "d", "nil"),
                     "m": {1: "one", (1, 2): "pair"}, "tricky": {"$kw": "not a keyword"},
                     "nan": float("inf")}, docs={"kw": "a keyword"})
    turn = Turn.failed(1, "p", Failure("tool_error", "boom"), memory=memory,
                       tool_calls=[ToolCall("t", (Keyword("x"), {Keyword("k"): {3}}), None)])
    trace = Trace(mission="m", turns=(turn,), max_turns=2)
    save_trace(trace, tmp_path / "t.json")
    raw = json.loads((tmp_path / "t.json").read_text())["turns"][0]
    assert raw["memory_set"]["kw"] == {"$kw": "a"}
    assert raw["memory_set"]["s"] == {"$set": [1, 2]}
    assert raw["memory_set"]["f"] == {"$fn": {"params": ["x"], "doc": "d",
                                              "return_type": "nil"}}
    assert raw["memory_set"]["m"] == {"$map": [[1, "one"], [[1, 2], "pair"]]}
    assert raw["memory_set"]["tricky"] == {"$map": [["$kw", "not a keyword"]]}
    assert raw["result"] == {"$fail": {"reason": "tool_error", "message": "boom"}}
    assert raw["docs_set"] == {"kw": "a keyword"}
    assert load_trace(tmp_path / "t.json") == trace


def test_jsonl_holds_many_runs_and_streams(tmp_path) -> None:
    traces = [scenario_trace(n) for n in ("exploration", "failed_once", "many_prints")]
    save_traces(traces, tmp_path / "runs.jsonl")
    loaded = list(iter_traces(tmp_path / "runs.jsonl"))
    assert [t.turns for t in loaded] == [t.turns for t in traces]
    with pytest.raises(TraceError, match="more than one run"):
        load_trace(tmp_path / "runs.jsonl")


def _write(tmp_path, obj, name="bad.json") -> str:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


def good() -> dict:
    return trace_to_dict(scenario_trace("failed_once"))


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda d: d.pop("mission"), r"bad.json: field 'mission': missing"),
    (lambda d: d.update(max_turns="5"), r"field 'max_turns': expected an integer, got a "
                                        r"string '5'"),
    (lambda d: d.update(version=3), r"field 'version': unsupported trace version 3"),
    (lambda d: d.update(version=True), r"field 'version': unsupported trace version True"),
    (lambda d: d["turns"][1].update(number=7), r"turn 2: field 'number': turns must be "
                                               r"numbered"),
    (lambda d: d["turns"][0].update(prints=["ok", 3]), r"turn 1: field 'prints\[1\]': "
                                                       r"expected a string"),
    (lambda d: d["turns"][0]["tool_calls"][0].pop("name"),
     r"turn 1: field 'tool_calls\[0\].name': missing"),
    (lambda d: d["turns"][1].update(result=None), r"turn 2: field 'result': a failed turn "
                                                  r"needs"),
    (lambda d: d["turns"][0]["memory_set"].update(k={"$kw": 5}),
     r"turn 1: field 'memory_set.k.\$kw': expected a string, got an integer 5"),
    (lambda d: d.update(max_turns=1), r"field 'turns': 2 turns but max_turns is 1"),
    (lambda d: d["tools"].update(bad={"params": {"x": 1}}), r"field 'tools.bad'"),
])
def test_broken_traces_name_file_turn_and_field(tmp_path, mutate, message) -> None:
    data = good()
    mutate(data)
    with pytest.raises(TraceError, match=message):
        load_trace(_write(tmp_path, data))


def test_invalid_json_names_line_and_column(tmp_path) -> None:
    with pytest.raises(TraceError, match=r"bad.json: line 2: invalid JSON at column 14"):
        load_trace(_write(tmp_path, '{\n  "mission": oops}'))
    lines = json.dumps(good()) + "\n" + "{not json\n"
    with pytest.raises(TraceError, match=r"bad.jsonl: line 2: invalid JSON"):
        list(iter_traces(_write(tmp_path, lines, "bad.jsonl")))
    with pytest.raises(TraceError, match=r"bad.jsonl: line 1: field 'mission': missing"):
        list(iter_traces(_write(tmp_path, json.dumps({"max_turns": 1, "turns": []}),
                                "bad.jsonl")))
    with pytest.raises(TraceError, match="cannot read trace file"):
        load_trace(tmp_path / "missing.json")
    with pytest.raises(TraceError, match="empty"):
        load_trace(_write(tmp_path, "\n", "empty.jsonl"))


def test_unstorable_values_are_named(tmp_path) -> None:
    turn = Turn.succeeded(1, "p", object(), memory={})
    with pytest.raises(TraceError, match="turn 1: result: an object value cannot be stored"):
        save_trace(Trace(mission="m", turns=(turn,)), tmp_path / "x.json")


scalars = (st.none() | st.booleans() | st.integers(-10**12, 10**12)
           | st.floats(allow_nan=False) | st.text(max_size=20)
           | st.builds(Keyword, st.text(min_size=1, max_size=6)))
hashables = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
values = st.recursive(scalars, lambda c: (
    st.lists(c, max_size=4)
    | st.dictionaries(st.text(max_size=6), c, max_size=4)
    | st.dictionaries(st.integers() | st.builds(Keyword, st.text(min_size=1, max_size=4)), c,
                      max_size=3)
    | st.frozensets(hashables, max_size=4)), max_leaves=12)
names = st.text(alphabet="abcdefxyz-?", min_size=1, max_size=6)


@st.composite
def traces(draw) -> Trace:
    turns = []
    for number in range(1, draw(st.integers(0, 4)) + 1):
        memory = Memory(draw(st.dictionaries(names, values | st.builds(
            Fn, st.lists(names, max_size=3), st.none() | st.text(max_size=10),
            st.none() | st.sampled_from(["integer", "list[2]"])), max_size=3)),
            docs=draw(st.dictionaries(names, st.text(max_size=10), max_size=2)))
        kw = {"memory": memory, "prints": draw(st.lists(st.text(max_size=20), max_size=3)),
              "tool_calls": draw(st.lists(st.builds(ToolCall, names, st.lists(values,
                                                                              max_size=2),
                                                    values), max_size=2)),
              "raw_response": draw(st.text(max_size=30))}
        if draw(st.booleans()):
            turns.append(Turn.succeeded(number, draw(st.text(max_size=30)), draw(values), **kw))
        else:
            turns.append(Turn.failed(number, draw(st.text(max_size=30)),
                                     Failure(draw(names), draw(st.text(max_size=20))), **kw))
    return Trace(mission=draw(st.text(max_size=30)), turns=tuple(turns),
                 system_prompt=draw(st.text(max_size=10)), max_turns=len(turns) + 1,
                 data=draw(st.dictionaries(st.text(max_size=6), values, max_size=3)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_save_load_round_trips(tmp_path_factory, trace: Trace) -> None:
    """Property: any trace survives save + load unchanged, as JSON and as JSONL."""
    directory = tmp_path_factory.mktemp("rt")
    for suffix in (".json", ".jsonl"):
        save_trace(trace, directory / f"t{suffix}")
        assert load_trace(directory / f"t{suffix}") == trace

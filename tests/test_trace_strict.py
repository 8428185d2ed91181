"""Strict trace loading (issue 13 item 3): every malformed input is one TraceError line.

Each minimal repro named in issue 13 is checked through the Python API and through
``turnpress trace show`` (one ``Error:`` line, exit code 2, no traceback).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from turnpress import Trace, Turn, load_trace, save_trace
from turnpress.cli import main
from turnpress.core.trace import TraceError, iter_traces, trace_to_dict


def good(version: int = 2) -> dict:
    turns = (Turn.succeeded(1, "(def x 1)", 1, memory={"x": 1}),
             Turn.succeeded(2, "(def y [x])", [1], memory={"x": 1, "y": [1]}))
    return trace_to_dict(Trace(mission="m", turns=turns, max_turns=3,
                               data={"d": [1, 2]}), version)


def nest(depth: int) -> str:
    return "[" * depth + "]" * depth


# (name, file text, expected message pattern)
REPROS = [
    ("deep-json", lambda: json.dumps(good()).replace('"d": [1, 2]', f'"d": {nest(100_000)}'),
     r"JSON nested too deeply"),
    ("deep-600", lambda: json.dumps(good()).replace('"d": [1, 2]', f'"d": {nest(600)}'),
     r"field 'data.d.*': nested deeper than"),
    ("big-int", lambda: json.dumps(good()).replace('"d": [1, 2]', '"d": ' + "9" * 5000),
     r"a number too large to read .*\$int"),
    ("data-kw", lambda: _with(good(), data={"$kw": "x"}),
     r"field 'data': expected a map of names to values"),
    ("data-map", lambda: _with(good(), data={"$map": [[1, 2]]}),
     r"field 'data': names must be strings"),
    ("tool-properties", lambda: _with(good(), tools={"t": {"parameters": {"properties": [1]}}}),
     r"field 'tools.t': .*'parameters.properties' must be an object"),
    ("set-of-str", lambda: _data({"$set": "abc"}),
     r"field 'data.d.\$set': expected a list of items, got a string"),
    ("fn-params", lambda: _data({"$fn": {"params": "abc"}}),
     r"field 'data.d.\$fn.params': expected a list of strings"),
    ("fn-doc", lambda: _data({"$fn": {"params": [], "doc": 5}}),
     r"field 'data.d.\$fn.doc': expected a string or null"),
    ("float-true", lambda: _data({"$float": True}),
     r"field 'data.d.\$float': expected \"nan\", \"inf\" or \"-inf\", got True"),
    ("float-word", lambda: _data({"$float": "1.5"}), r"expected \"nan\""),
    ("kw-int", lambda: _data({"$kw": 1}), r"field 'data.d.\$kw': expected a string"),
    ("map-not-pairs", lambda: _data({"$map": [[1]]}),
     r"field 'data.d.\$map\[0\]': expected a \[key, value\] pair"),
    ("map-not-list", lambda: _data({"$map": {"a": 1}}), r"expected a list of \[key, value\]"),
    ("unknown-tag", lambda: _data({"$kwd": "a"}), r"unknown tag '\$kwd'"),
    ("ref-outside", lambda: _data({"$ref": 0}), r"only valid inside a \$graph"),
    ("ref-forward", lambda: _data({"$graph": [[{"$ref": 1}], 2]}),
     r"index of an earlier \$graph node"),
    ("int-tag", lambda: _data({"$int": "12"}), r"expected a hex string"),
    ("str-tag", lambda: _data({"$str": ["a", -1]}), r"expected a string or a code point"),
    ("nan-literal", lambda: json.dumps(good()).replace('"d": [1, 2]', '"d": NaN'),
     r"NaN is not JSON"),
    ("version-true", lambda: _with(good(), version=True),
     r"field 'version': unsupported trace version True"),
    ("version-3", lambda: _with(good(), version=3), r"unsupported trace version 3"),
    ("version-str", lambda: _with(good(), version="2"), r"unsupported trace version '2'"),
    ("unknown-field", lambda: _with(good(), mision="m"),
     r"field 'mision': unknown field in trace .*did you mean 'mission'"),
    ("v1-field-in-v2", lambda: _turn0(memory={"x": 1}),
     r"turn 1: field 'memory': unknown field in turn"),
    ("remove-missing", lambda: _turn0(memory_removed=["nope"]),
     r"turn 1: field 'memory_removed': removes 'nope'"),
    ("order-wrong", lambda: _turn0(memory_order=["zz"]),
     r"turn 1: field 'memory_order': must list every name"),
    ("docs-not-str", lambda: _turn0(docs_set={"x": 5}),
     r"turn 1: field 'docs_set.x': expected a string"),
    ("max-turns-huge", lambda: _with(good(), max_turns=10 ** 30),
     r"field 'max_turns': must be from 1 to"),
    ("success-str", lambda: _turn0(success="yes"),
     r"turn 1: field 'success': expected true/false"),
    ("number-bool", lambda: _turn0(number=True), r"turn 1: field 'number': expected an "
                                                 r"integer, got true/false"),
    ("usage-extra", lambda: _turn0(usage={"prompt_tokens": 1, "cost": 2}),
     r"turn 1: field 'usage.cost': unknown field"),
]


def _with(obj: dict, **changes) -> str:
    obj.update(changes)
    return json.dumps(obj)


def _data(value) -> str:
    obj = good()
    obj["data"]["d"] = value
    return json.dumps(obj)


def _turn0(**changes) -> str:
    obj = good()
    obj["turns"][0].update(changes)
    return json.dumps(obj)


@pytest.mark.parametrize(("name", "make", "message"), REPROS, ids=[r[0] for r in REPROS])
def test_malformed_traces_are_one_trace_error(tmp_path, name, make, message) -> None:
    path = tmp_path / "bad.json"
    path.write_text(make())
    with pytest.raises(TraceError, match=message) as info:
        load_trace(path)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)
    # the same through the CLI: one line, exit code 2, no traceback
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1
    assert "Traceback" not in result.output
    # and as one line of a JSONL file, naming the line
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text(json.dumps(good()) + "\n" + make().replace("\n", " ") + "\n")
    with pytest.raises(TraceError, match=r"bad.jsonl: line 2: "):
        list(iter_traces(jsonl))


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_invalid_utf8_names_the_line(tmp_path, suffix) -> None:
    """issue 13: invalid UTF-8 in a JSONL file gave a traceback."""
    text = json.dumps(good()).encode()
    data = text + b"\n" + text.replace(b'"m"', b'"m\xff"') + b"\n"
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(data)
    with pytest.raises(TraceError, match=r"line 2: not UTF-8 text \(byte 0xff"):
        list(iter_traces(path))
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert result.exit_code == 2 and "line 2: not UTF-8" in result.output


def test_lone_surrogates_are_accepted_in_a_form_that_renders_and_saves(tmp_path) -> None:
    """issue 13: a "\\ud800" escape was accepted, then broke render and save_trace."""
    obj = good()
    obj["data"]["d"] = "\ud800"
    obj["turns"][0]["memory_set"]["s"] = {"$str": ["a", 0xDC00]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(obj))  # ensure_ascii: the file holds \ud800 escapes
    trace = load_trace(path)
    assert trace.data["d"] == "\ud800"
    assert trace.turns[0].memory["s"] == "a\udc00"
    prompt = trace.prompt(2)
    prompt[-1]["content"].encode("utf-8")  # the samples escape the surrogates
    save_trace(trace, tmp_path / "copy.json")
    assert load_trace(tmp_path / "copy.json") == trace
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert result.exit_code == 0, result.output


def test_both_versions_give_the_same_turns(tmp_path) -> None:
    """Issue 12 item 6: version 1 and 2 files load to equal turns with full memory."""
    for version in (1, 2):
        (tmp_path / f"v{version}.json").write_text(json.dumps(good(version)))
    v1, v2 = load_trace(tmp_path / "v1.json"), load_trace(tmp_path / "v2.json")
    assert v1 == v2
    assert dict(v2.turns[1].memory) == {"x": 1, "y": [1]}
    raw = good(2)["turns"]
    assert raw[0]["memory_set"] == {"x": 1}
    assert raw[1]["memory_set"] == {"y": [1]}  # x unchanged: not written again


def _round_trips(path) -> None:
    """Load every trace of ``path``, save it, load it again: the same trace, field for
    field (the fuzzer's "changes on save + load" check)."""
    for i, trace in enumerate(iter_traces(path)):
        copy = path.with_name(f"copy{i}{path.suffix}")
        save_trace(trace, copy)
        (again,) = iter_traces(copy)
        assert trace_to_dict(again) == trace_to_dict(trace), path.read_text()[:300]


# Optional fields holding the value the writer leaves out: (where, field, value).
EMPTY_OPTIONAL = [("trace", "name", ""), ("trace", "source", ""), ("trace", "preamble", []),
                  ("trace", "skipped", []), ("trace", "system_prompt", ""),
                  ("trace", "data", {}), ("trace", "tools", {}),
                  ("turn", "prints", []), ("turn", "tool_calls", []),
                  ("turn", "messages", []), ("turn", "usage", None),
                  ("turn", "memory_set", {}), ("turn", "memory_removed", []),
                  ("turn", "docs_set", {}), ("turn", "docs_removed", [])]


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
@pytest.mark.parametrize(("where", "key", "value"), EMPTY_OPTIONAL,
                         ids=[f"{w}.{k}" for w, k, _ in EMPTY_OPTIONAL])
def test_an_optional_field_left_empty_round_trips(tmp_path, suffix, where, key,
                                                  value) -> None:
    """issue 23 (fuzz seed 4242, traces case 6752): ``"name": ""`` loaded as a trace named
    "", which the writer leaves out, so the copy loaded named after its file. The rule:
    an optional field holding the value the writer leaves out reads as if it were
    missing, so what loads saves and loads again unchanged."""
    obj = good()
    (obj if where == "trace" else obj["turns"][1])[key] = value
    path = tmp_path / f"t{suffix}"
    path.write_text(json.dumps(obj) + "\n")
    _round_trips(path)


def test_fuzz_traces_case_6752_round_trips(tmp_path) -> None:
    """The fuzzer's file (a bundled example, version 2 JSONL, with ``"name": ""``)."""
    from turnpress.examples import example_trace_paths

    trace = load_trace(next(p for p in example_trace_paths() if "phone" in p.name))
    obj = trace_to_dict(trace)
    obj = {"version": 2, "name": "", **{k: v for k, v in obj.items()
                                       if k not in ("version", "name")}}
    path = tmp_path / "case6752.jsonl"
    path.write_text(json.dumps(obj) + "\n")
    _round_trips(path)
    named = load_trace(path).name
    del obj["name"]
    path.write_text(json.dumps(obj) + "\n")
    assert named == load_trace(path).name != ""  # as if the name were missing


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_a_utf16_file_says_save_it_as_utf8(tmp_path, suffix) -> None:
    """A UTF-16 file (what Windows PowerShell's ``>`` writes) is named as such, with the
    fix, by every path that reads it (load, the CLI, compare's streamed JSONL)."""
    path = tmp_path / f"run{suffix}"
    path.write_bytes((json.dumps(good()) + "\n").encode("utf-16"))
    hint = "it is UTF-16 (it starts with a UTF-16 byte order mark"
    with pytest.raises(TraceError, match="save it as UTF-8") as info:
        list(iter_traces(path))
    assert hint in str(info.value)
    for args in (["trace", "show", str(path)], ["compare", str(path), "--strict"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and hint in result.output, result.output
    # a file that is not UTF-8 for another reason gets no such hint
    path.write_bytes(b"\xff" + json.dumps(good()).encode())
    with pytest.raises(TraceError) as info:
        list(iter_traces(path))
    assert "UTF-16" not in str(info.value)

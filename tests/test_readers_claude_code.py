"""The ``claude-code`` reader (DESIGN §10, §12; issue 19 item 2): stream-json output and
session files, usage once per message.id, side chains, rewinds and compaction."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transcripts_helpers import data

from turnpress.cli import main
from turnpress.core.model import Usage
from turnpress.core.providers import to_anthropic
from turnpress.core.trace import TraceError, is_event_log, iter_traces
from turnpress.importing import import_transcripts
from turnpress.plugins.readers.claude_code import MISSING_PROMPT, detect

STREAM = "claude-code/stream.jsonl"
SESSION = "claude-code/session.jsonl"


def _lines(rel):
    return [json.loads(line) for line in data(rel).read_text().splitlines()]


def _plain(messages):
    """Anthropic messages without turnpress's cache_control markers, one text block
    written as its text (the same request to the API)."""
    def strip(block):
        return {k: v for k, v in block.items() if k != "cache_control"}

    def content(c):
        if isinstance(c, list):
            c = [strip(b) for b in c]
            if len(c) == 1 and set(c[0]) == {"type", "text"}:
                return c[0]["text"]
        return c
    return [{**m, "content": content(m["content"])} for m in messages]


def _sent_stream():
    """The stream's main thread as the API received it: lines of one message.id joined,
    consecutive user lines joined, usage left out."""
    messages, last_id = [], None
    for e in _lines(STREAM):
        if e["type"] not in ("user", "assistant") or e.get("parent_tool_use_id"):
            continue
        m = e["message"]
        if messages and messages[-1]["role"] == m["role"] and (
                m["role"] == "user" or m.get("id") == last_id):
            messages[-1]["content"] += m["content"]
        else:
            messages.append({"role": m["role"], "content": list(m["content"])})
        last_id = m.get("id")
    return messages


def test_stream_json_usage_once_per_message_id_and_sidechain_left_out():
    assert is_event_log(data(STREAM))
    [trace] = list(iter_traces(data(STREAM)))
    assert trace.source == "claude-code" and trace.mission == MISSING_PROMPT
    assert [t.usage for t in trace.turns] == [Usage(1503, 0, 1500), Usage(1625, 1500, 120),
                                              Usage(1684, 1620, 60)]
    result = _lines(STREAM)[-1]["usage"]  # the main thread adds up to the result line
    assert sum(t.usage.cached_tokens for t in trace.turns) == result["cache_read_input_tokens"]
    assert sum(t.usage.prompt_tokens for t in trace.turns) == (
        result["input_tokens"] + result["cache_read_input_tokens"]
        + result["cache_creation_input_tokens"])
    first = trace.turns[0]
    assert [c.name for c in first.tool_calls] == ["Read", "Bash"]  # parallel calls
    assert not first.success and first.result.reason == "tool_error"
    assert first.messages[0]["thinking_blocks"][0]["signature"] == "sig1"
    notes = [s["note"] for s in trace.skipped]
    assert any("side chain (sub-agent) 'toolu_3', lines 9-12" in n and "2 call(s)" in n
               for n in notes)
    assert set(trace.tools) == {"Bash", "Read", "Task"}


def test_stream_full_history_replays_each_prompt_exactly():
    [trace] = list(iter_traces(data(STREAM)))
    sent = [{"role": "user", "content": MISSING_PROMPT}, *_sent_stream()]
    starts = [i for i, m in enumerate(sent) if m["role"] == "assistant"]
    assert len(starts) == len(trace.turns)
    for n, start in enumerate(starts, 1):
        _, messages = to_anthropic(trace.prompt(n, "full-history"))
        assert _plain(messages) == sent[:start]


def test_session_follows_the_chain_and_splits_at_compaction():
    first, second = iter_traces(data(SESSION))
    assert (first.name, second.name) == ("session", "session/2")
    assert first.mission == "Fix the failing test in tests/test_math.py."
    assert second.mission.startswith("This session is being continued")
    # the rewound prompt "Actually, just delete the test." is on no run
    texts = [json.dumps(m) for t in (first, second) for turn in t.turns for m in turn.messages]
    assert not any("delete the test" in t for t in texts)
    assert [len(first.turns), len(second.turns)] == [2, 2]
    assert first.turns[0].usage == Usage(1503, 0, 1500) and first.turns[1].usage is None
    notes = " | ".join(s["note"] for s in first.skipped)
    assert "1 message line(s) on other branches" in notes
    assert "segment 1 of 2" in notes and "side chain" not in notes
    # the sub-agent ran after the compaction (line 13): noted on that segment's run only
    assert "side chain (sub-agent) 'ag1', line 13" in second.skipped[0]["note"]


def test_trace_show_says_how_sidechains_and_compaction_were_handled():
    shown = CliRunner().invoke(main, ["trace", "show", str(data(SESSION))])
    assert shown.exit_code == 0, shown.output
    assert "note: segment 2 of 2: the session was compacted" in shown.output
    assert "note: side chain (sub-agent) 'ag1'" in shown.output


@pytest.mark.parametrize(("value", "expected"), [
    ([{"type": "system", "subtype": "init", "session_id": "s"}], True),
    ([None, {"type": "summary", "summary": "x", "leafUuid": "u"}], True),
    ([{"type": "message", "role": "user", "content": "x"}], False),
    ({"type": "system", "session_id": "s"}, False),
])
def test_detect(value, expected):
    assert detect(value) is expected


def _write(tmp_path, events):
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


INIT = {"type": "system", "subtype": "init", "session_id": "s", "uuid": "i"}


@pytest.mark.parametrize(("events", "problem"), [
    ([INIT, {"type": "assistant", "message": {"role": "user", "content": []},
             "session_id": "s"}],
     "line 2: message.role 'user' does not match the line's type 'assistant'"),
    ([INIT, {"type": "user", "message": {"role": "user", "content": "go"}, "session_id": "s"},
      {"type": "assistant", "session_id": "s",
       "message": {"id": "m", "role": "assistant", "content": [{"type": "bogus"}]}}],
     "line 3: content block 0 is 'bogus', which turnpress cannot carry"),
    ([INIT, {"type": "user", "message": {"role": "user", "content": "go"}, "session_id": "s"},
      {"type": "user", "session_id": "s", "message": {"role": "user", "content": [
          {"type": "tool_result", "tool_use_id": "nope", "content": "x"}]}},
      {"type": "assistant", "session_id": "s",
       "message": {"id": "m", "role": "assistant", "content": "ok"}}],
     "line 3: content block 0 (tool_result) has no matching tool_use"),
    # one assistant message written as one line per block: the bad block's own line
    ([INIT, {"type": "user", "message": {"role": "user", "content": "go"}, "session_id": "s"},
      {"type": "assistant", "session_id": "s",
       "message": {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "a"}]}},
      {"type": "assistant", "session_id": "s",
       "message": {"id": "m", "role": "assistant", "content": [{"type": "bogus"}]}}],
     "line 4: content block 0 is 'bogus', which turnpress cannot carry"),
    ([INIT], "empty run: no user or assistant line"),
])
def test_bad_input_is_one_line_naming_file_and_line(events, problem, tmp_path):
    path = _write(tmp_path, events)
    with pytest.raises(TraceError) as err:
        list(iter_traces(path))
    assert str(err.value).startswith(f"{path}: ") and problem in str(err.value)
    result = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert result.exit_code == 2 and result.output.count("\n") == 1, result.output


def _live_log(tmp_path, cut, newline=False):
    """A stream-json log whose last line is ``cut`` (the start of a line still being
    written), ended by a newline or not."""
    events = [INIT, {"type": "user", "message": {"role": "user", "content": "go"},
                     "session_id": "s"},
              {"type": "assistant", "session_id": "s",
               "message": {"id": "m", "role": "assistant", "content": "done"}}]
    path = _write(tmp_path, events)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(cut + ("\n" if newline else ""))
    return path


def test_a_last_line_cut_off_is_left_out_with_a_note(tmp_path):
    """QA: a session whose last line was cut off (still being written, a crash) was
    skipped whole. Without its newline, the last line is left out and the run read up
    to it, with a note (trace show prints it; compare and import read the run)."""
    path = _live_log(tmp_path, '{"type": "assistant", "session_id": "s", "message": {"te')
    (trace,) = iter_traces(path)
    assert len(trace.turns) == 1 and trace.turns[0].messages[0]["content"] == "done"
    note = ("line 4, the last, is cut off (invalid JSON at column 54: Unterminated string "
            "starting, and no newline ends it): left out, the run read up to line 3 (was "
            "the file still being written?)")
    assert trace.skipped[-1] == {"note": note}
    shown = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert shown.exit_code == 0 and f"note: {note}" in shown.stdout
    compared = CliRunner().invoke(main, ["compare", str(path), "-s", "full-history",
                                         "-t", "chars4", "--json"])
    assert compared.exit_code == 0 and compared.stderr == ""
    assert json.loads(compared.stdout)["traces"][0]["turns"] == 1
    # a last line cut in the middle of a UTF-8 character is cut off too
    cut = _live_log(tmp_path, '{"type": "user", "x": "caf\u00e9')
    cut.write_bytes(cut.read_bytes()[:-1])
    (trace,) = iter_traces(cut)
    assert trace.skipped[-1]["note"].startswith("line 4, the last, is cut off (not UTF-8")


def test_a_cut_line_with_its_newline_or_in_the_middle_stays_an_error(tmp_path):
    path = _live_log(tmp_path, '{"type": "assistant", "session_id": "s", "message": {"te',
                     newline=True)
    with pytest.raises(TraceError) as err:
        list(iter_traces(path))
    assert str(err.value) == (f"{path}: line 4: invalid JSON at column 57: Invalid control "
                              f"character; it is the last line and looks cut off (was the "
                              f"file still being written?)")
    skipped = CliRunner().invoke(main, ["compare", str(path), "-s", "full-history",
                                        "-t", "chars4"])
    assert skipped.exit_code == 2 and "looks cut off" in skipped.output
    middle = _live_log(tmp_path, '{"type": "user", "oops\n' + json.dumps(
        {"type": "user", "message": {"role": "user", "content": "more"}, "session_id": "s"}))
    with pytest.raises(TraceError, match=r"line 4: invalid JSON at column 23: "
                                         r"Invalid control character$"):
        list(iter_traces(middle))


# -- property: random Claude Code logs survive import -> save -> load -> full-history ------

_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)


@st.composite
def stream_logs(draw):
    events = [dict(INIT), {"type": "user", "session_id": "s",
                           "message": {"role": "user", "content": draw(_text)}}]
    ids = iter(range(10_000))
    for _ in range(draw(st.integers(1, 4))):
        mid = f"msg_{next(ids)}"
        usage = draw(st.none() | st.builds(
            lambda a, b, c: {"input_tokens": a, "cache_read_input_tokens": b,
                             "cache_creation_input_tokens": c},
            st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)))
        blocks = [{"type": "text", "text": draw(_text)}] if draw(st.booleans()) else []
        calls = [f"toolu_{next(ids)}" for _ in range(draw(st.integers(0, 3)))]
        blocks += [{"type": "tool_use", "id": c, "name": "Bash",
                    "input": {"command": draw(_text)}} for c in calls]
        for block in blocks or [{"type": "text", "text": "."}]:
            message = {"id": mid, "role": "assistant", "content": [block]}
            if usage is not None:
                message["usage"] = usage
            events.append({"type": "assistant", "session_id": "s", "message": message,
                           "parent_tool_use_id": None})
        if not calls:  # the user answers (the API alternates roles)
            events.append({"type": "user", "session_id": "s", "parent_tool_use_id": None,
                           "message": {"role": "user", "content": draw(_text)}})
        for c in calls:
            events.append({"type": "user", "session_id": "s", "parent_tool_use_id": None,
                           "message": {"role": "user", "content": [
                               {"type": "tool_result", "tool_use_id": c,
                                "content": draw(_text), "is_error": draw(st.booleans())}]}})
    return events


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stream_logs())
def test_random_logs_survive_import_save_load_full_history(events):
    directory = Path(tempfile.mkdtemp())
    try:
        source = _write(directory, events)
        out = directory / "out.jsonl"
        import_transcripts([source], out)
        [loaded] = list(iter_traces(out))
        assert [loaded] == list(iter_traces(source))
        sent, last_id = [], None
        for e in events[1:]:
            m = e["message"]
            content = m["content"]
            if sent and sent[-1]["role"] == m["role"] and (
                    m["role"] == "user" or m.get("id") == last_id):
                sent[-1]["content"] += content
            else:
                sent.append({"role": m["role"], "content": content if isinstance(
                    content, str) else list(content)})
            last_id = m.get("id")
        starts = [i for i, m in enumerate(sent) if m["role"] == "assistant"]
        assert len(starts) == len(loaded.turns)
        for n, start in enumerate(starts, 1):
            assert (_plain(to_anthropic(loaded.prompt(n, "full-history"))[1])
                    == _plain(sent[:start]))
    finally:
        shutil.rmtree(directory)


def _compaction_after(parent, summary_uuid):
    """A compaction of session ``sess-9`` after line ``parent``: its boundary (``cb``),
    then the summary the next segment starts with (``summary_uuid``)."""
    return [{"parentUuid": None, "logicalParentUuid": parent, "isSidechain": False,
             "type": "system", "subtype": "compact_boundary", "uuid": "cb",
             "sessionId": "sess-9"},
            _session_line(summary_uuid, "cb", "user", "This session is being continued ...",
                          isCompactSummary=True)]


def _session_line(uuid, parent, kind, content, *, side=None, message_id=None, **extra):
    """One line of a Claude Code session file (a sub-agent's when ``side`` names it)."""
    message = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = message_id or f"msg_{uuid}"
    line = {"parentUuid": parent, "isSidechain": side is not None, "sessionId": "sess-9",
            "type": kind, "message": message, "uuid": uuid, **extra}
    if side is not None:
        line["agentId"] = side
    return line


def _task(uuid, parent, call):
    return _session_line(uuid, parent, "assistant", [
        {"type": "tool_use", "id": call, "name": "Task", "input": {"prompt": "look"}}])


def _result(uuid, parent, call, text):
    return _session_line(uuid, parent, "user", [
        {"type": "tool_result", "tool_use_id": call, "content": text}])


def _side_chain(agent, n, parent=None):
    """Sub-agent ``agent``: its prompt, then ``n`` calls (as Claude Code writes them,
    its first line has no parent)."""
    lines = [_session_line(f"{agent}-u", parent, "user", "look around", side=agent)]
    for k in range(n):
        lines.append(_session_line(f"{agent}-a{k}", lines[-1]["uuid"], "assistant",
                                   [{"type": "text", "text": f"seen {k}"}], side=agent))
    return lines


def test_each_side_chain_is_noted_once_on_the_segment_that_started_it(tmp_path):
    """Review: "side-chain notes are repeated per compaction segment". A sub-agent that
    ran before the compaction was noted on every run of the session, NAME/2 included
    ("left out of this run", which never had it), and one that ran after it on the run
    before the compaction too. Each is noted once, on the run whose Task call started
    it; the prompts are not changed (the notes are not sent)."""
    events = [
        _session_line("u1", None, "user", "Audit the repo."),
        _task("a1", "u1", "t1"),
        *_side_chain("ag-early", 2),
        _result("u2", "a1", "t1", "early report"),
        _session_line("a2", "u2", "assistant", "Done with part one."),
        *_compaction_after("a2", "u3"),
        _task("a3", "u3", "t2"),
        *_side_chain("ag-late", 1),
        _result("u4", "a3", "t2", "late report"),
        _session_line("a4", "u4", "assistant", "All done."),
    ]
    path = _write(tmp_path, events)
    first, second = iter_traces(path)
    assert (first.name, second.name) == ("log", "log/2")
    sides = [[s["note"] for s in t.skipped if s["note"].startswith("side chain")]
             for t in (first, second)]
    assert sides == [["side chain (sub-agent) 'ag-early', lines 3-5: left out of this run, "
                      "its own prompts (2 call(s)) billed apart"],
                     ["side chain (sub-agent) 'ag-late', lines 11-12: left out of this "
                      "run, its own prompts (1 call(s)) billed apart"]]
    for trace in (first, second):  # the notes are never sent
        for n in range(1, len(trace.turns) + 2):
            assert "side chain" not in json.dumps(trace.prompt(n, "full-history"))
    shown = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert shown.output.count("side chain (sub-agent) 'ag-early'") == 1
    assert shown.output.count("side chain (sub-agent) 'ag-late'") == 1


def test_chain_notes_are_on_the_run_of_the_segment_they_are_about(tmp_path):
    """Review: the chain's notes were copied onto every segment's run: NAME/2 said the
    chain stopped at line 1 (before the first run, not its own) and counted the lines
    rewound before the compaction as its own, and the first run counted those rewound
    after it. The lines left out are counted on the run of the segment they were
    written in, and the chain's stop on the first run (its start); none is lost."""
    events = [
        _session_line("u1", "gone", "user", "Audit the repo."),  # its parent: not here
        _session_line("a1", "u1", "assistant", "Which part?"),
        _session_line("x1", "a1", "user", "Everything."),  # rewound
        _session_line("u2", "a1", "user", "The tests."),
        _session_line("a2", "u2", "assistant", "Done with part one."),
        *_compaction_after("a2", "u3"),
        _session_line("a3", "u3", "assistant", "Next?"),
        _session_line("x2", "a3", "user", "Stop."),  # an edited prompt, then its answer
        _session_line("x3", "x2", "assistant", "Stopping."),
        _session_line("u4", "a3", "user", "Go on."),
        _session_line("a4", "u4", "assistant", "All done."),
    ]
    path = _write(tmp_path, events)
    first, second = iter_traces(path)
    chain = [[s["note"] for s in t.skipped if "chain" in s["note"]] for t in (first, second)]
    assert chain == [
        ["the chain stops at line 1: its parent 'gone' is not in the file",
         "1 message line(s) on other branches of the parentUuid chain (rewound or edited) "
         "left out"],
        ["2 message line(s) on other branches of the parentUuid chain (rewound or edited) "
         "left out"]]
    shown = CliRunner().invoke(main, ["trace", "show", str(path)])
    assert shown.exit_code == 0, shown.output
    assert shown.output.count("the chain stops at line 1") == 1
    assert shown.output.count("message line(s) on other branches") == 2

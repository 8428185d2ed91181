"""``turnpress import``, lossless round trips, every command reading every format,
bad input (one line, exit code 2) and snapshots of ``trace show`` / ``render``."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transcripts_helpers import data, sent_before_each_assistant

from turnpress import load_trace
from turnpress.cli import main
from turnpress.compare import compare_traces
from turnpress.core.providers import to_openai
from turnpress.core.trace import (
    TRACE_VERSION,
    TraceError,
    iter_traces,
    run_digest,
    save_traces,
    trace_formats,
)
from turnpress.importing import import_transcripts
from turnpress.plugins.readers.openai_chat import trace_from_messages

ONE_PER_FORMAT = {"openai-chat": "openai/request.json",
                  "mini-swe-agent": "mini/fix-typo.traj.json",
                  "anthropic-messages": "anthropic/run.json",
                  "openai-responses": "responses/request.json",
                  "claude-code": "claude-code/stream.jsonl"}
ALL = [*ONE_PER_FORMAT.values(), "openai/no_usage.json", "openai/runs.jsonl",
       "anthropic/no_usage.json", "responses/items.jsonl", "claude-code/session.jsonl"]


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_import_writes_traces_that_load_back_losslessly(tmp_path):
    out = tmp_path / "all.jsonl"
    result = import_transcripts([data(rel) for rel in ALL], out)
    assert result.total == 13 and result.formats == {
        "openai-chat": 4, "mini-swe-agent": 1, "anthropic-messages": 2, "openai-responses": 3,
        "claude-code": 3}
    originals = [t for rel in ALL for t in iter_traces(data(rel))]
    imported = list(iter_traces(out))
    assert imported == originals
    assert [t.name for t in imported] == [t.name for t in originals]
    first = json.loads(out.read_text().splitlines()[0])
    assert first["version"] == TRACE_VERSION and first["source"] == "openai-chat"
    assert {"preamble", "turns"} <= set(first) and "messages" in first["turns"][0]
    assert first["turns"][0]["usage"] == {"prompt_tokens": 1200, "cached_tokens": 0,
                                          "cache_write_tokens": 0}


def test_compare_gives_the_same_figures_on_the_import(tmp_path):
    out = tmp_path / "runs.jsonl"
    inputs = [data(rel) for rel in ONE_PER_FORMAT.values()]
    import_transcripts(inputs, out)
    before = compare_traces(inputs, ["full-history"]).to_json()
    after = compare_traces([out], ["full-history"]).to_json()
    # the same figures; only where each run was read differs
    for doc in (before, after):
        for trace in doc["traces"]:
            del trace["file"], trace["line"]
    assert before == after
    assert before["strategies"][0]["input_tokens"] > 0


def test_import_command(tmp_path):
    out = tmp_path / "runs.jsonl"
    result = run("import", str(data("mini/fix-typo.traj.json")),
                 str(data("openai/runs.jsonl")), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.output == (f"imported 3 run(s) from 2 file(s) to {out} "
                             f"(mini-swe-agent x1, openai-chat x2)\n")
    assert len(list(iter_traces(out))) == 3


def test_import_refuses_a_json_output_and_leaves_nothing_on_bad_input(tmp_path):
    result = run("import", str(data("openai/request.json")), "-o", str(tmp_path / "x.json"))
    assert result.exit_code == 2 and "name it with .jsonl or .ndjson" in result.output
    out = tmp_path / "x.jsonl"
    result = run("import", str(data("openai/request.json")),
                 str(data("bad/unknown_role.json")), "-o", str(out))
    assert result.exit_code == 2 and not out.exists()
    assert list(tmp_path.iterdir()) == []


BAD = {
    "unknown_role.json": "message 2: unknown role 'robot'; a message's role must be one of "
                         "system, developer, user, assistant, tool",
    "orphan_tool.json": "message 2: tool message with no matching call: tool_call_id 'zzz' "
                        "is not a call of the assistant message 1 (its calls: 'a')",
    "messages_not_list.json": "\"messages\" must be a list of message objects, got str",
    "truncated.json": "line 1: invalid JSON at column 58",
    "empty.json": "empty run: the transcript has no messages",
    "undetectable.json": "not a format turnpress reads; it reads: turnpress, ",
}


@pytest.mark.parametrize("command", [["trace", "show"], ["render"], ["compare"],
                                     ["import", "-o", "ignored.jsonl"]])
@pytest.mark.parametrize("name", list(BAD))
def test_bad_input_is_one_line_naming_file_and_message(name, command, tmp_path,
                                                       monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = data(f"bad/{name}")
    result = run(*command, str(path))
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert result.output.startswith(f"Error: {path}: ")
    assert BAD[name] in result.output
    if name == "undetectable.json":
        for fmt in trace_formats():
            assert fmt in result.output


@pytest.mark.parametrize("rel", ALL)
def test_every_command_auto_detects_the_format(rel, tmp_path):
    path = str(data(rel))
    assert run("trace", "show", path).exit_code == 0
    rendered = run("render", path, "-s", "full-history", "-f", "openai", "-t", "1")
    assert rendered.exit_code == 0, rendered.output
    compared = run("compare", path, "-s", "full-history", "--json", "--jobs", "2")
    assert compared.exit_code == 0, compared.output
    assert len(json.loads(compared.output)["traces"]) == len(list(iter_traces(path)))


def test_compare_with_jobs_streams_a_jsonl_of_transcripts(tmp_path):
    mixed = tmp_path / "mixed.jsonl"
    lines = [json.dumps(json.loads(data(rel).read_text())) for rel in ONE_PER_FORMAT.values()
             if rel.endswith(".json")]
    mixed.write_text("\n".join(lines) + "\n")
    result = run("compare", str(mixed), "-s", "full-history", "--json", "--jobs", "2")
    assert result.exit_code == 0, result.output
    # a trajectory names itself by its instance_id; the others by file and line
    assert [t["name"] for t in json.loads(result.output)["traces"]] == [
        "mixed#1", "demo__fix-typo", "mixed#3", "mixed#4"]


def test_render_openai_format_is_the_original_prefix():
    raw = json.loads(data("mini/fix-typo.traj.json").read_text())["messages"]
    sent = [{k: v for k, v in m.items() if k not in ("extra", "provider_specific_fields")}
            for m in raw if m["role"] != "exit"]
    result = run("render", str(data("mini/fix-typo.traj.json")), "-s", "full-history",
                 "-f", "openai", "-t", "3")
    assert json.loads(result.output) == {"messages": sent_before_each_assistant(sent)[2]}


@pytest.mark.parametrize("fmt", list(ONE_PER_FORMAT))
def test_trace_show_snapshot(fmt, snapshot):
    result = run("trace", "show", str(data(ONE_PER_FORMAT[fmt])))
    assert result.exit_code == 0, result.output
    assert result.output == snapshot


@pytest.mark.parametrize("fmt", list(ONE_PER_FORMAT))
def test_render_snapshot(fmt, snapshot):
    path = data(ONE_PER_FORMAT[fmt])
    text = run("render", str(path), "-s", "full-history")
    anthropic = run("render", str(path), "-s", "full-history", "-f", "anthropic")
    assert text.exit_code == 0 and anthropic.exit_code == 0, text.output + anthropic.output
    assert text.output + "\n--- --format anthropic ---\n" + anthropic.output == snapshot


@pytest.mark.parametrize("fmt", list(ONE_PER_FORMAT))
def test_render_openai_and_responses_snapshot(fmt, snapshot):
    """Issue 19: `render -f openai` and `-f responses` of each format, pinned."""
    path = str(data(ONE_PER_FORMAT[fmt]))
    outputs = [run("render", path, "-s", "full-history", "-f", shape)
               for shape in ("openai", "responses")]
    assert all(r.exit_code == 0 for r in outputs), [r.output for r in outputs]
    assert (outputs[0].output + "\n--- --format responses ---\n" + outputs[1].output
            == snapshot)


# -- property: random OpenAI-chat transcripts survive import -> save -> load -> render ----

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_args = st.one_of(st.dictionaries(st.sampled_from(["path", "n", "q"]),
                                  st.one_of(_text, st.integers()), max_size=2).map(json.dumps),
                  _text)


@st.composite
def transcripts(draw):
    messages = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_text)})
    messages.append({"role": "user", "content": draw(_text)})
    ids = iter(range(10_000))
    for _ in range(draw(st.integers(1, 4))):
        calls = [{"id": f"c{next(ids)}", "type": "function",
                  "function": {"name": draw(st.sampled_from(["ls", "cat"])),
                               "arguments": draw(_args)}}
                 for _ in range(draw(st.integers(0, 3)))]
        assistant = {"role": "assistant", "content": draw(_text) if not calls or draw(
            st.booleans()) else None}
        if calls:
            assistant["tool_calls"] = calls
        messages.append(assistant)
        for call in calls:  # every call answered (issue 19: APIs refuse unanswered calls)
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": draw(_text)})
        if draw(st.booleans()):
            messages.append({"role": "user", "content": draw(_text)})
    return messages


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts())
def test_random_transcripts_survive_import_save_load_render(messages):
    import tempfile
    from pathlib import Path

    directory = Path(tempfile.mkdtemp())
    try:
        path = directory / "run.jsonl"
        save_traces([trace_from_messages(messages)], path)
        loaded = load_trace(path)
        prefixes = sent_before_each_assistant(messages)
        assert len(prefixes) == len(loaded.turns)
        for n, prefix in enumerate(prefixes, 1):
            prompt = to_openai(loaded.prompt(n, "full-history"))
            assert json.dumps(prompt) == json.dumps(prefix)
    finally:
        shutil.rmtree(directory)


def test_import_error_names_the_file_for_a_bad_line(tmp_path):
    bad = tmp_path / "two.jsonl"
    bad.write_text(json.dumps([{"role": "user", "content": "m"},
                               {"role": "assistant", "content": "a"}]) + "\n"
                   + json.dumps([{"role": "user", "content": "m"}, {"role": "bot"}]) + "\n")
    with pytest.raises(TraceError, match=r"two.jsonl: line 2: message 1: unknown role 'bot'"):
        import_transcripts([bad], tmp_path / "out.jsonl")


def test_readme_transcript_example():
    """The README's "Compare strategies on your own agent's logs" example runs as printed."""
    import contextlib
    import io
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = next(b for b in re.findall(r"^```python\n(.*?)^```$", readme, flags=re.S | re.M)
                 if "trace_from_messages" in b)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, "README.md", "exec"), {"__name__": "readme_example"})
    assert out.getvalue() == "({'command': 'ls | wc -l'},)\nTrue\n"


def test_import_appends_to_an_existing_output_and_force_replaces_it(tmp_path):
    """ux-a item 6: `import -o` never silently replaces an existing file: it appends the
    runs, as `run --save-trace x.jsonl` does; --force replaces the file."""
    out = tmp_path / "imp.jsonl"
    first = run("import", str(data("mini/fix-typo.traj.json")),
                str(data("openai/runs.jsonl")), "-o", str(out))
    assert first.exit_code == 0, first.output
    before = [t.name for t in iter_traces(out)]
    out.write_text(out.read_text().rstrip("\n"))  # a last line without its newline
    second = run("import", str(data("openai/request.json")), "-o", str(out))
    assert second.exit_code == 0, second.output
    assert second.stdout == (f"appended 1 run(s) from 1 file(s) to {out} "
                             f"(openai-chat x1)\n")
    # runs.jsonl's second run is this very run (issue 19: warned, named)
    assert "run 'request' was imported again" in second.stderr
    assert [t.name for t in iter_traces(out)] == [*before, "request"]
    # a bad input leaves the existing file as it was, and no temporary file behind
    kept = out.read_bytes()
    bad = run("import", str(data("bad/unknown_role.json")), "-o", str(out))
    assert bad.exit_code == 2 and out.read_bytes() == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["imp.jsonl"]
    forced = run("import", str(data("openai/request.json")), "-o", str(out), "--force")
    assert forced.exit_code == 0 and forced.output.startswith("imported 1 run(s)")
    assert [t.name for t in iter_traces(out)] == ["request"]


def test_import_does_not_append_to_a_file_that_is_no_trace_file(tmp_path):
    """ux-a item 6: an existing -o file that is not a turnpress trace file (a raw log,
    say) is neither appended to nor replaced without --force."""
    out = tmp_path / "log.jsonl"
    shutil.copy(data("openai/runs.jsonl"), out)
    kept = out.read_bytes()
    result = run("import", str(data("openai/request.json")), "-o", str(out))
    assert result.exit_code == 2 and out.read_bytes() == kept
    assert result.output == (f"Error: {out}: the file exists and is not a turnpress trace "
                             f"file, so the runs were not appended to it; choose another -o, "
                             f"or add --force to replace it\n")
    assert run("import", str(data("openai/request.json")), "-o", str(out),
               "--force").exit_code == 0
    assert [t.source for t in iter_traces(out)] == ["openai-chat"]


def test_the_same_run_is_told_by_one_digest_in_import_and_compare(tmp_path):
    """One rule for "the same run" (``run_digest``: the trace without its name): import
    warns of it whatever the version the output was written in (a version 1 line is not
    the same text as version 2), and compare counts it once."""
    run1 = load_trace(data("openai/request.json"))
    out = tmp_path / "old.jsonl"
    save_traces([run1], out, version=1)
    assert run_digest(next(iter_traces(out))) == run_digest(run1)
    result = run("import", str(data("openai/request.json")), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stderr == (f"warning: run 'request' was imported again: the same run is "
                             f"already at {out}: line 1\n")
    compared = compare_traces([data("openai/request.json"), out], ["full-history"],
                              tokenizer="chars4")
    assert len(compared.traces) == 1 and len(compared.repeated) == 2


def test_runs_of_the_same_name_keep_it_with_a_warning(tmp_path):
    """QA: dup/a/run.json and dup/b/run.json both became runs named "run", silently.
    Names are kept as they are (the output reads back losslessly), with one warning per
    run that has the name of another run of the output, in it already or imported now."""
    raw = json.loads(data("openai/request.json").read_text())
    for folder, mission in (("a", "Fix it."), ("b", "Fix the other one.")):
        (tmp_path / folder).mkdir()
        changed = json.loads(json.dumps(raw).replace("Fix the failing test in calc.py.",
                                                     mission))
        (tmp_path / folder / "run.json").write_text(json.dumps(changed))
    out = tmp_path / "out.jsonl"
    result = run("import", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"warning: run 'run', run 2 of this import ({tmp_path}/b/run.json), has the name of "
        f"another run, at run 1 of this import ({tmp_path}/a/run.json): both keep it "
        f"(compare tells them apart by file and line)\n")
    assert [t.name for t in iter_traces(out)] == ["run", "run"]
    again = import_transcripts([tmp_path / "a" / "run.json", data("openai/request.json")],
                               out)
    assert again.duplicates == [("run", f"{out}: line 1")]
    assert again.same_names == []  # the same run: one warning, that one

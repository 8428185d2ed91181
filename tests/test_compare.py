"""``turnpress compare`` and :func:`turnpress.compare.compare_traces`."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from plugin_helpers import register_strategies

from turnpress import Strategy, compress, hookimpl, load_trace, save_trace
from turnpress.cli import main
from turnpress.compare import CompareError, compare_traces, count_traces, strategy_label
from turnpress.compare.pricing import PRICE_PRESETS, cost_usd
from turnpress.core.compression import get_strategy, strategy_names
from turnpress.core.registry import PluginError, get_registry
from turnpress.core.tokens import TokenCounter
from turnpress.core.trace import TraceError, iter_traces, save_traces, trace_to_dict
from turnpress.examples import example_trace_paths, short_example_trace_paths

PHONE = next(p for p in example_trace_paths() if p.stem == "phone-campaign")
AUDIT = next(p for p in example_trace_paths() if p.stem == "inventory-audit")
SHORT = short_example_trace_paths()  # one test (the `bundled` fixture) compares every bundled run


def run(*args: str):
    return CliRunner().invoke(main, ["compare", *args])


@pytest.fixture(scope="module")
def bundled():
    return compare_traces(cache="anthropic")


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A JSONL file with the bundled traces twice (6 unnamed runs: runs#1..runs#6), the
    copies with missions of their own (the same run twice would be counted once)."""
    traces = [dataclasses.replace(load_trace(p), name="") for p in short_example_trace_paths()]
    traces += [dataclasses.replace(t, mission=t.mission + " (again)") for t in traces]
    path = tmp_path / "runs.jsonl"
    save_traces(traces, path)
    return path


# -- the engine ---------------------------------------------------------------------------


def test_defaults_compare_every_strategy_on_the_bundled_traces(bundled):
    assert [s.label for s in bundled.strategies] == strategy_names()
    assert [t.name for t in bundled.traces] == [load_trace(p).name
                                                for p in example_trace_paths()]
    assert bundled.prompts == sum(len(load_trace(p).turns) for p in example_trace_paths())
    assert bundled.tokenizer == "o200k_base" and bundled.cache == "anthropic"
    assert bundled.price is PRICE_PRESETS["anthropic-sonnet-4"]


def test_totals_are_sums_over_every_prompt(bundled):
    for s in bundled.strategies:
        rows = list(s.per_turn())
        assert len(rows) == bundled.prompts
        assert s.input_tokens == sum(r.input_tokens for r in rows)
        assert s.cached_tokens == sum(r.cached_tokens for r in rows)
        assert s.written_tokens == sum(r.written_tokens for r in rows)
        assert s.retention == pytest.approx(sum(r.retention for r in rows) / len(rows))
        assert s.cost_usd == pytest.approx(sum(
            cost_usd(bundled.price, r.input_tokens, r.cached_tokens, r.written_tokens)
            for r in rows))
        assert all(r.cached_tokens + r.written_tokens <= r.input_tokens for r in rows)


def test_prompt_tokens_are_the_rendered_prompts_tokens(bundled):
    counter = TokenCounter("o200k_base")
    s = bundled.strategy("single-user-coalesced")
    traces = {load_trace(p).name: load_trace(p) for p in example_trace_paths()}
    for row in s.per_turn():
        assert row.input_tokens == counter.count(
            traces[row.trace].prompt(row.turn, "single-user-coalesced"))
    # a trace of K turns contributes the prompts of turns 1..K
    turns = [(r.trace, r.turn) for r in s.per_turn()]
    expected = [(t.name, n) for t in bundled.traces for n in range(1, t.turns + 1)]
    assert turns == expected


def test_full_history_is_the_baseline(bundled):
    full = bundled.strategy("full-history")
    assert full.savings_vs_full_history == 0.0
    assert full.retention == 1.0 and not full.dropped
    for s in bundled.strategies:
        assert s.baseline_tokens == full.input_tokens
        assert s.savings_vs_full_history == pytest.approx(1 - s.input_tokens / full.input_tokens)
        assert 0.0 <= s.retention <= 1.0


def test_baseline_is_computed_even_when_not_compared():
    result = compare_traces(AUDIT, ["single-user-coalesced"], tokenizer="chars4")
    full = compare_traces(AUDIT, ["full-history"], tokenizer="chars4")
    s = result.strategies[0]
    assert s.baseline_tokens == full.strategies[0].input_tokens
    assert 0 < s.savings_vs_full_history < 1


def test_json_document_shape(bundled):
    doc = bundled.to_json()
    assert list(doc) == ["tokenizer", "cache", "price", "min_recall", "floor", "traces",
                         "strategies", "as_run", "recommended", "not_compared", "candidate",
                         "sample", "intervals", "notes", "skipped", "repeated"]
    assert doc["sample"] is None and doc["intervals"]["unit"] == "run"
    assert doc["price"] == {"input": 3.0, "cached": 0.3, "write": 3.75, "output": 15.0}
    first = bundled.traces[0]
    assert doc["traces"][0] == {"name": first.name, "file": first.file, "line": first.line,
                                "turns": first.turns, "as_run": None,
                                "floor": round(first.floor_usd, 8)}
    assert Path(first.file) == example_trace_paths()[0]
    assert doc["as_run"] is None and doc["not_compared"] == []
    assert list(doc["recommended"]) == ["name", "options", "cost_ratio", "needed_fact_recall",
                                        "min_trace_recall", "ci"]
    for entry in doc["strategies"]:
        assert list(entry) == ["name", "options", "input_tokens", "cached_tokens",
                               "written_tokens", "savings_vs_full_history", "cost_usd",
                               "cost_ratio", "retention", "needed_fact_recall",
                               "min_trace_recall", "floor_ratio", "ci", "needed_facts",
                               "dropped_facts", "dropped", "dropped_examples",
                               "summary_calls", "summary_input_tokens",
                               "summary_output_tokens", "summary_cost_usd",
                               "summary_per_call", "per_turn"]
        assert list(entry["ci"]) == ["cost_ratio", "needed_fact_recall",
                                     "savings_vs_full_history"]
        for ci in entry["ci"].values():
            assert list(ci) == ["low", "high"] and ci["low"] <= ci["high"]
        assert isinstance(entry["input_tokens"], int)
        assert isinstance(entry["savings_vs_full_history"], float)
        assert isinstance(entry["cost_usd"], float)
        assert 0.0 <= entry["needed_fact_recall"] <= 1.0
        assert list(entry["per_turn"][0]) == ["trace", "turn", "input_tokens", "cached_tokens",
                                              "written_tokens", "cost_usd", "retention",
                                              "needed", "needed_shown"]
        # every per-prompt number: the prompts' costs add up to the strategy's
        assert math.isclose(sum(t["cost_usd"] for t in entry["per_turn"]),
                            entry["cost_usd"] - entry["summary_cost_usd"], abs_tol=1e-6)
        assert sum(t["written_tokens"] for t in entry["per_turn"]) == entry["written_tokens"]
    assert json.loads(bundled.dumps()) == json.loads(json.dumps(doc))


def test_json_snapshot(snapshot):
    """The --json document for one bundled trace with the deterministic chars4 tokenizer."""
    result = run(str(AUDIT), "--tokenizer", "chars4", "--json",
                 "-s", "full-history", "-s", "single-user-coalesced",
                 "-s", "single-user-coalesced:tool_call_limit=5", "--cache", "anthropic",
                 "--price", "in=1,cached=0.1")
    assert result.exit_code == 0, result.output
    # the trace's "file" is where turnpress is installed: the same on every machine here
    assert result.output.replace(str(AUDIT.parent), "EXAMPLES") == snapshot


def test_strategy_specs_options_and_repeats():
    result = compare_traces(PHONE, ["rolling-window:window=1", "rolling-window",
                                    "rolling-window:window=1", ("rolling-window", {})],
                            tokenizer="chars4")
    assert [s.label for s in result.strategies] == ["rolling-window:window=1", "rolling-window"]
    assert result.strategies[0].options["window"] == 1
    assert strategy_label(get_strategy("single-user-coalesced:errors=pairs")) == \
        "single-user-coalesced:errors=pairs"


def test_openai_cache_rounds_to_blocks(bundled):
    result = compare_traces(SHORT, cache="openai")
    for s in result.strategies:
        for row in s.per_turn():
            assert row.cached_tokens == 0 or (row.cached_tokens >= 1024
                                              and row.cached_tokens % 128 == 0)
        assert s.written_tokens == 0
    assert compare_traces(SHORT, cache="none").strategy("full-history").cached_tokens == 0


def test_jsonl_is_streamed_and_named(corpus):
    result = compare_traces(corpus, ["single-user-coalesced"], tokenizer="chars4")
    assert [t.name for t in result.traces] == [f"runs#{i}" for i in range(1, 7)]
    assert count_traces(corpus) == 6
    assert count_traces([corpus, PHONE]) == 7


def test_trace_objects_and_progress():
    traces = [load_trace(p) for p in SHORT]
    seen = []
    result = compare_traces(traces, ["aggressive"], tokenizer="chars4", progress=seen.append)
    assert [t.name for t in seen] == [t.name for t in traces]
    assert result.traces == seen


def test_two_jobs_give_the_same_result(corpus):
    one = compare_traces(corpus, tokenizer="o200k_base", cache="anthropic", jobs=1)
    two = compare_traces(corpus, tokenizer="o200k_base", cache="anthropic", jobs=2)
    assert one.to_json() == two.to_json()


def test_kept_prompts_for_the_report(corpus):
    result = compare_traces(corpus, ["full-history", "aggressive"], tokenizer="chars4",
                            keep_prompts=2, jobs=2)
    assert [k.trace for k in result.kept_prompts] == ["runs#1", "runs#2"]
    first = load_trace(SHORT[0])
    kept = result.kept_prompts[0]
    assert len(kept.prompts) == len(first.turns)
    assert kept.prompts[-1][1] == first.prompt(len(first.turns), "aggressive")


def test_a_lossy_plugin_strategy_shows_its_dropped_facts(fresh_registry):
    class MissionOnly(Strategy):
        name = "mission-only"

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("system", ctx.system_prompt),
                    ctx.message("user", ctx.mission)]

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(MissionOnly)

    get_registry().register(Plugin(), "mission-only-plugin")
    result = compare_traces(PHONE, ["mission-only", "full-history"], tokenizer="chars4")
    lossy = result.strategy("mission-only")
    assert lossy.retention < 0.6
    assert set(lossy.dropped) >= {"tool call", "name"}
    assert lossy.dropped_examples[0].trace == "phone-campaign"
    assert lossy.savings_vs_full_history > 0.5


class Broken(Strategy):
    """A plugin strategy that raises on every prompt after the first."""

    name = "broken"

    def to_messages(self, turns, memory, ctx):
        if turns:
            raise KeyError("boom")
        return [ctx.message("user", ctx.mission)]


def test_a_failing_strategy_is_listed_and_the_rest_complete(fresh_registry):
    """Issue 13: a plugin strategy that raises leaves the others' results intact."""
    _plugin(Broken, "broken-plugin")
    result = compare_traces(PHONE, ["broken", "full-history"], tokenizer="chars4")
    assert [s.label for s in result.compared] == ["full-history"]
    [(label, status, reason)] = result.not_compared
    assert (label, status) == ("broken", "failed")
    assert reason.startswith("strategy 'broken' of plugin 'broken-plugin' (")
    assert reason.endswith("failed on trace phone-campaign, turn 2: KeyError: 'boom'")
    assert "broken" not in [s["name"] for s in result.to_json()["strategies"]]
    out = run(str(PHONE), "-s", "broken", "-s", "full-history", "--tokenizer", "chars4")
    assert out.exit_code == 0, out.output
    assert "Traceback" not in out.output
    assert "broken: failed: " in out.output and "KeyError: 'boom'" in out.output


def test_nothing_compared_is_exit_1_with_a_line_saying_why(fresh_registry):
    """QA-b item 8: when every strategy asked for failed or does not apply, the table (or
    the JSON) still lists them with their reasons, then one line says nothing was
    compared and the exit code is 1 (it was 0, as if the comparison had succeeded)."""
    from turnpress.core.strategy import StrategyNotApplicable

    class Elsewhere(Strategy):
        name = "elsewhere"

        def to_messages(self, turns, memory, ctx):
            raise StrategyNotApplicable("only for transcripts")

    _plugin(Broken, "broken-plugin")
    _plugin(Elsewhere, "elsewhere-plugin")
    out = run(str(PHONE), "-s", "broken", "--tokenizer", "chars4")
    assert out.exit_code == 1, out.output
    assert "broken: failed: " in out.stdout and "KeyError: 'boom'" in out.stdout
    assert out.stderr.splitlines()[-1] == (
        "Error: nothing was compared: no strategy asked for could run (broken: failed); "
        "the reasons are listed above")
    both = run(str(PHONE), "-s", "broken", "-s", "elsewhere", "--tokenizer", "chars4",
               "--json")
    assert both.exit_code == 1, both.output
    doc = json.loads(both.stdout)
    assert doc["strategies"] == []
    assert [e["status"] for e in doc["not_compared"]] == ["failed", "n/a"]
    assert "(broken: failed, elsewhere: n/a)" in both.stderr
    assert run(str(PHONE), "-s", "broken", "-s", "aggressive", "--tokenizer",
               "chars4").exit_code == 0


def test_bad_arguments_raise_value_errors():
    with pytest.raises(ValueError, match="unknown tokenizer"):
        compare_traces(PHONE, tokenizer="nope")
    with pytest.raises(ValueError, match="unknown cache model"):
        compare_traces(PHONE, cache="redis")
    with pytest.raises(ValueError, match="jobs must be a positive integer"):
        compare_traces(PHONE, jobs=0)
    with pytest.raises(ValueError, match="no strategy to compare"):
        compare_traces(PHONE, [])
    with pytest.raises(TraceError, match="cannot read trace file"):
        compare_traces("/no/such/file.jsonl")


# -- the command --------------------------------------------------------------------------


def test_table_output():
    result = run(*map(str, SHORT), "--cache", "anthropic", "--price", "anthropic-sonnet-4")
    assert result.exit_code == 0, result.output
    for name in strategy_names():
        assert name in result.output
    assert "3 traces" in result.output
    assert "anthropic-sonnet-4" in result.output
    assert "written" in result.output and "retention" in result.output
    assert "recall" in result.output and "cost_ratio" in result.output


def test_json_output_parses():
    result = run(*map(str, SHORT), "--json", "-s", "single-user-coalesced",
                 "--tokenizer", "cl100k_base")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["tokenizer"] == "cl100k_base" and doc["cache"] == "openai"
    assert doc["price"] == {"input": 2.0, "cached": 0.5, "write": None, "output": 8.0}
    assert [s["name"] for s in doc["strategies"]] == ["single-user-coalesced"]


def test_html_option_writes_a_report(tmp_path):
    out = tmp_path / "report.html"
    result = run(*map(str, SHORT), "--html", str(out), "-s", "single-user-coalesced",
                 "-s", "full-history")
    assert result.exit_code == 0, result.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert f"HTML report: {out}" in result.output
    # a directory, or a missing one, is one line before anything is compared
    for bad, problem in ((tmp_path, "is a directory; name the report's file"),
                         (tmp_path / "no" / "r.html", "does not exist")):
        result = run(*map(str, SHORT), "--html", str(bad), "-s", "full-history")
        assert result.exit_code == 2 and problem in result.output
        assert result.output.count("\n") == 1


def test_jobs_option(corpus):
    one = run(str(corpus), "--json", "--jobs", "1", "--tokenizer", "chars4")
    two = run(str(corpus), "--json", "--jobs", "2", "--tokenizer", "chars4")
    assert one.exit_code == two.exit_code == 0
    assert one.output == two.output


def write(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


@pytest.mark.parametrize(("args", "message"), [
    (["-s", "nope"], "Error: unknown strategy 'nope'; registered strategies: "),
    (["-s", "rolling-window:size=3"], "Error: strategy 'rolling-window' has no option 'size'"),
    (["-s", "rolling-window:window=x"], "Error: strategy 'rolling-window': option 'window' "
                                        "expects an integer"),
    (["--tokenizer", "gpt2"], "Error: unknown tokenizer 'gpt2'; registered tokenizers: "
                              "chars4, cl100k_base, o200k_base."),
    (["--price", "gpt-5"], "Error: unknown price preset 'gpt-5'; use a preset "),
    (["--price", "in=2,cached=x"], "Error: malformed price 'in=2,cached=x': 'x' is not a "
                                   "number"),
    (["--price", "in=2"], "Error: malformed price 'in=2': cached= is missing"),
    (["--cache", "azure"], "Error: unknown cache model 'azure'; valid: openai, anthropic, "
                           "none"),
    (["/no/such/trace.json"], "Error: /no/such/trace.json: cannot read trace file: "),
    (["--html", "/no/such/dir/r.html"], "Error: --html /no/such/dir/r.html: directory "),
])
def test_bad_input_is_one_line_exit_2(args, message):
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(message), result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


@pytest.mark.parametrize(("name", "content", "message"), [
    ("broken.json", "{not json", "broken.json: line 1: invalid JSON at column 2"),
    ("broken.jsonl", '{"version": 1}\n', "broken.jsonl: line 1: field 'mission': missing"),
    ("empty.jsonl", "\n\n", "empty.jsonl: no trace in this file (it is empty)"),
    ("latin.jsonl", b"\xff\xfe{}", "latin.jsonl: not UTF-8 text"),
    ("bad-turn.json", json.dumps({"mission": "m", "max_turns": 2, "turns": [{"number": 1}]}),
     "bad-turn.json: turn 1: field 'success': missing"),
])
def test_invalid_traces_are_one_line_exit_2(tmp_path, name, content, message):
    path = write(tmp_path, name, content)
    for jobs in ("1", "2"):
        result = run(path, "--jobs", jobs, "--tokenizer", "chars4")
        assert result.exit_code == 2, result.output
        assert message in result.output
        assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_second_line_of_jsonl_is_named(tmp_path):
    good = json.dumps(json.loads(Path(PHONE).read_text()))
    path = write(tmp_path, "runs.jsonl", good + "\n" + "{oops\n")
    result = run(path, "--tokenizer", "chars4", "--strict")
    assert result.exit_code == 2
    assert "runs.jsonl: line 2: invalid JSON at column 2" in result.output
    # issue 20 item 5: by default the broken line is skipped, named, and the rest compared
    result = run(path, "--tokenizer", "chars4")
    assert result.exit_code == 0, result.output
    assert "Skipped " + path + ": line 2: invalid JSON at column 2" in result.stderr


def test_an_empty_directory_is_one_error(tmp_path):
    """A directory is read recursively (issue 19 item 3); one with no file is an error."""
    result = run(str(tmp_path), "--tokenizer", "chars4")
    assert result.exit_code == 2
    assert "the directory holds no file" in result.output


def test_trace_files_from_anywhere(tmp_path):
    copy = tmp_path / "copy.json"
    shutil.copy(PHONE, copy)
    other = dataclasses.replace(load_trace(PHONE), mission="Another campaign.")
    save_trace(other, tmp_path / "one.jsonl")
    result = run(str(copy), str(tmp_path / "one.jsonl"), "--json", "--tokenizer", "chars4",
                 "-s", "aggressive")
    assert result.exit_code == 0, result.output
    assert [t["name"] for t in json.loads(result.stdout)["traces"]] == [
        "phone-campaign", "phone-campaign"]


def test_runs_of_the_same_name_are_told_apart_by_file_and_line(tmp_path):
    """QA: dup/a/run.json and dup/b/run.json (or two JSONL lines of the same name) gave
    --json traces both named "run", with nothing to tell them apart: each entry carries
    its file (and line, in a JSONL file), as --per-trace does; so does the HTML data."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
    save_trace(dataclasses.replace(load_trace(PHONE), name="run"), tmp_path / "a" / "run.json")
    other = dataclasses.replace(load_trace(PHONE), name="run", mission="Another campaign.")
    save_trace(other, tmp_path / "b" / "run.json")
    lines = tmp_path / "b" / "runs.jsonl"
    save_traces([dataclasses.replace(other, name="run", mission=f"Campaign {k}.")
                 for k in (1, 2)], lines)
    result = run(str(tmp_path), "--json", "--tokenizer", "chars4", "-s", "aggressive")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(t["name"], t["file"], t["line"]) for t in doc["traces"]] == [
        ("run", f"{tmp_path}/a/run.json", None), ("run", f"{tmp_path}/b/run.json", None),
        ("run", str(lines), 1), ("run", str(lines), 2)]
    objects = _compare([other], ["aggressive"], tokenizer="chars4").to_json()
    assert (objects["traces"][0]["file"], objects["traces"][0]["line"]) == (None, None)
    report = tmp_path / "report.html"
    assert run(str(tmp_path), "--html", str(report), "--tokenizer", "chars4", "-s",
               "aggressive").exit_code == 0
    assert f'"file": "{tmp_path}/b/run.json", "line": null' in report.read_text() or \
        f'"file":"{tmp_path}/b/run.json","line":null' in report.read_text()


def test_the_same_run_in_two_files_is_counted_once(tmp_path):
    """QA: a run in a .json file and again in a JSONL line (import's output, or a copy
    under another name) was compared twice. It is the same run as import tells it
    (``run_digest``: the trace without its name): counted once, where it came first,
    with one warning naming both places; --jobs 1 and 2 agree."""
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(PHONE, logs / "a.json")
    other = dataclasses.replace(load_trace(PHONE), mission="Another campaign.")
    save_traces([other, dataclasses.replace(load_trace(PHONE), name="renamed")],
                logs / "b.jsonl")
    outputs = []
    for jobs in ("1", "2"):
        result = run(str(logs), "--json", "--tokenizer", "chars4", "-s", "aggressive",
                     "--jobs", jobs)
        assert result.exit_code == 0, result.output
        assert result.stderr == (f"warning: run 'renamed' at {logs}/b.jsonl: line 2 is the "
                                 f"same run as at {logs}/a.json: counted once, there\n")
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    doc = json.loads(outputs[0])
    assert [(t["name"], t["turns"]) for t in doc["traces"]] == [
        ("phone-campaign", len(load_trace(PHONE).turns))] * 2
    assert doc["repeated"] == [{"name": "renamed", "file": f"{logs}/b.jsonl", "line": 2,
                                "same_as": {"name": "phone-campaign",
                                            "file": f"{logs}/a.json", "line": None}}]
    table = run(str(logs), "--tokenizer", "chars4", "-s", "aggressive")
    assert "repeated: 1 run found again in another place (the same run), each counted " \
           "once, where it came first" in table.stdout
    # the same Trace object twice (the API): counted once as well
    twice = _compare([load_trace(PHONE), load_trace(PHONE)], ["aggressive"],
                     tokenizer="chars4")
    assert len(twice.traces) == 1 and str(twice.repeated[0]) == (
        "run 'phone-campaign' at trace phone-campaign is the same run as at trace "
        "phone-campaign: counted once, there")


# -- transcripts, as run, recall, recommendation, isolation (issues 9, 11, 13) --------------

from turnpress import StrategyNotApplicable, ToolCall, Trace, Turn, Usage  # noqa: E402
from turnpress.compare import compare_traces as _compare  # noqa: E402


def transcript(usage: bool = True, name: str = "chat") -> Trace:
    """A small OpenAI-chat transcript: a parallel tool call, an error, billed usage."""
    system = {"role": "system", "content": "You are a coding agent. " * 300}
    mission = {"role": "user", "content": "Fix the failing test in the repository."}

    def call(cid, cmd):
        return {"id": cid, "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"cmd": cmd})}}

    steps = [
        ([call("a", "ls src"), call("b", "cat setup.cfg")],
         ["src/parser_utils.py\nsrc/cli.py", "[metadata]\nname = demo"], True),
        ([call("c", "cat src/parser_utils.py")],
         ["def parse_header(line):\n    return line.split(':')  # issue 48213"], True),
        ([call("d", "python -m pytest tests/test_parser.py -k 48213")],
         ["FAILED tests/test_parser.py::test_parse_header - ValueError"], False),
        ([call("e", "sed -i 's/split/partition/' src/parser_utils.py")], ["(no output)"], True),
    ]
    turns = []
    for n, (calls, outputs, ok) in enumerate(steps, 1):
        messages = [{"role": "assistant", "content": None, "tool_calls": calls},
                    *({"role": "tool", "tool_call_id": c["id"], "content": out}
                      for c, out in zip(calls, outputs, strict=True))]
        tool_calls = [ToolCall("bash", (json.loads(c["function"]["arguments"]),), out)
                      for c, out in zip(calls, outputs, strict=True)]
        billed = Usage(2000 + 300 * n, 1920 if n > 1 else 0) if usage else None
        make = Turn.succeeded if ok else Turn.failed
        extra = {} if ok else {"error": __import__("turnpress").Failure("error", outputs[0])}
        if ok:
            turns.append(make(n, "", None, memory={}, tool_calls=tool_calls,
                              raw_response=json.dumps(calls), messages=messages, usage=billed))
        else:
            turns.append(make(n, "", extra["error"], memory={}, tool_calls=tool_calls,
                              raw_response=json.dumps(calls), messages=messages, usage=billed))
    return Trace(mission=mission["content"], turns=tuple(turns), system_prompt=system["content"],
                 max_turns=10, name=name, source="openai-chat", preamble=(system, mission))


def test_transcript_prompts_count_tool_calls_and_tool_messages():
    trace = transcript()
    result = _compare([trace], ["full-history"], tokenizer="o200k_base")
    counter = TokenCounter("o200k_base")
    rows = list(result.strategies[0].per_turn())
    assert rows[1].input_tokens == counter.count([*trace.preamble, *trace.turns[0].messages])
    # the tool calls and outputs of turn 1 weigh in the prompt of turn 2
    assert rows[1].input_tokens - rows[0].input_tokens > 20


def test_as_run_rows_from_billed_usage():
    """Issue 9 item 4: billed usage summed per trace and over the traces carrying it."""
    price = PRICE_PRESETS["openai-gpt-4.1"]
    result = _compare([transcript(), transcript(usage=False, name="no-usage")],
                      ["full-history"], price=price)
    doc = result.to_json()
    billed = [Usage(2000 + 300 * n, 1920 if n > 1 else 0) for n in range(1, 5)]
    expected = {"prompts": 4, "prompt_tokens": sum(u.prompt_tokens for u in billed),
                "cached_tokens": sum(u.cached_tokens for u in billed),
                "cache_write_tokens": 0,
                "cost_usd": round(sum(cost_usd(price, u.prompt_tokens, u.cached_tokens)
                                      for u in billed), 8)}
    assert doc["as_run"] == expected
    assert doc["traces"][0]["as_run"] == expected
    assert doc["traces"][1]["as_run"] is None
    assert _compare([transcript(usage=False)], ["full-history"]).to_json()["as_run"] is None
    plain = "\n".join(__import__("turnpress.compare.table", fromlist=["x"]).plain_lines(result))
    assert "as-run-(billed)" in plain and str(expected["prompt_tokens"]) in plain
    assert "log no system prompt" not in plain
    # a log without its system prompt (Claude Code's): billed for what the replay lacks
    bare = dataclasses.replace(transcript(name="bare"), system_prompt="",
                               preamble=(transcript().preamble[1],))
    both = _compare([transcript(), bare], ["full-history"], price=price)
    assert both.to_json()["as_run"]["runs_without_system"] == 1
    assert "runs_without_system" not in both.to_json()["traces"][0]["as_run"]
    plain = "\n".join(__import__("turnpress.compare.table", fromlist=["x"]).plain_lines(both))
    assert ("as run (billed): 1 of the runs with usage log no system prompt (Claude Code "
            "does not write it") in plain


def test_needed_fact_recall_on_a_transcript(fresh_registry):
    """Issue 11 item 2: full-history shows every needed fact; a strategy that drops
    tool output loses the ones the agent went on to use (src/parser_utils.py, 48213)."""
    class NoOutput(Strategy):
        name = "no-output"

        def to_messages(self, turns, memory, ctx):
            out = [dict(m) for m in ctx.preamble]
            for t in turns:
                out.extend(dict(m) if m["role"] == "assistant" else
                           {**m, "content": "(output dropped)"} for m in t.messages)
            return out

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(NoOutput)

    get_registry().register(Plugin(), "no-output-plugin")
    result = _compare([transcript()], ["full-history", "no-output"])
    full, lossy = result.strategy("full-history"), result.strategy("no-output")
    assert full.needed > 0 and full.needed_fact_recall == 1.0 and full.retention == 1.0
    assert lossy.needed == full.needed
    assert lossy.needed_fact_recall < 1.0
    doc = result.to_json()
    assert [s["needed_fact_recall"] for s in doc["strategies"]] == [
        1.0, round(lossy.needed_fact_recall, 6)]


def test_recommended_is_the_cheapest_above_min_recall(bundled):
    ci = bundled.intervals()
    ok = [s for s in bundled.compared
          if ci[s.label]["needed_fact_recall"].low >= bundled.min_recall]
    best = bundled.recommended
    assert best is not None and best.cost_usd == min(s.cost_usd for s in ok)
    doc = bundled.to_json()["recommended"]
    interval = ci[best.label]
    assert doc == {"name": best.name, "options": best.options,
                   "cost_ratio": round(best.cost_ratio, 6),
                   "needed_fact_recall": round(best.needed_fact_recall, 6),
                   "min_trace_recall": round(best.min_trace_recall, 6),
                   "ci": {k: interval[k].to_json() for k in ("cost_ratio",
                                                             "needed_fact_recall")}}
    full = bundled.strategy("full-history")
    assert full.cost_ratio == pytest.approx(1.0)
    assert best.cost_ratio == pytest.approx(best.cost_usd / full.cost_usd)


def test_min_recall_option_and_mark():
    strict = run("--json", "--min-recall", "1.0", "-s", "full-history", "-s", "aggressive")
    assert strict.exit_code == 0, strict.output
    assert json.loads(strict.output)["min_recall"] == 1.0
    assert run("--min-recall", "2").exit_code == 2
    table = run("-s", "full-history", "-s", "aggressive")
    marked = [ln for ln in table.output.splitlines() if ln.endswith(" *") or " * " in ln]
    assert len(marked) == 1


def _plugin(fresh_cls, name="p"):
    register_strategies(name, fresh_cls)


def test_default_compare_survives_broken_plugin_strategies(fresh_registry):
    """Issue 13 item 4: __init__ raising, to_messages raising, cache_breakpoints raising and
    StrategyNotApplicable each leave one line; every built-in still has its numbers."""
    class BadInit(Strategy):
        name = "bad-init"

        def __init__(self):
            raise RuntimeError("no config")

        def to_messages(self, turns, memory, ctx):
            return []

    class BadPoints(Strategy):
        name = "bad-points"

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("user", ctx.mission)]

        def cache_breakpoints(self, turns, memory, ctx):
            raise ZeroDivisionError("nope")

    class NotHere(Strategy):
        name = "not-here"

        def to_messages(self, turns, memory, ctx):
            raise StrategyNotApplicable("needs a transcript\nwith tools")

    for cls in (BadInit, BadPoints, NotHere):
        _plugin(cls, cls.name + "-plugin")
    result = _compare(PHONE, cache="anthropic", tokenizer="chars4")
    assert {s.label for s in result.compared} == set(strategy_names()) - {
        "bad-init", "bad-points", "not-here"}
    left = {label: (status, reason) for label, status, reason in result.not_compared}
    assert left["not-here"] == ("n/a", "needs a transcript with tools")
    assert left["bad-init"][0] == "failed" and "RuntimeError: no config" in left["bad-init"][1]
    assert "bad-init-plugin" in left["bad-init"][1]
    assert left["bad-points"][0] == "failed"
    assert "cache_breakpoints() failed" in left["bad-points"][1]
    assert "ZeroDivisionError: nope" in left["bad-points"][1]
    out = run(str(PHONE), "--cache", "anthropic", "--tokenizer", "chars4")
    assert out.exit_code == 0 and "Traceback" not in out.output
    assert "not-here: n/a: needs a transcript with tools" in out.output
    for name in ("bad-init", "bad-points", "full-history", "single-user-coalesced"):
        assert name in out.output


def test_a_named_strategy_whose_init_fails_is_listed_and_the_rest_complete(fresh_registry):
    """A strategy picked with -s whose __init__ raises (a bug in its code, not a bad
    option) is listed as failed, naming its plugin, as when every strategy is compared;
    the others complete. Alone, it is one line, exit 2. Python's compress() raises a
    PluginError naming it (a TypeError in __init__ was once reported as a bad option)."""
    class BadInit(Strategy):
        name = "bad-init"

        def __init__(self):
            self.limit = None + 1  # type: ignore[operator]

        def to_messages(self, turns, memory, ctx):
            return []

    _plugin(BadInit, "bad-init-plugin")
    out = run(str(PHONE), "-s", "bad-init", "-s", "aggressive", "--tokenizer", "chars4")
    assert out.exit_code == 0 and "Traceback" not in out.output
    assert "bad-init: failed: strategy 'bad-init' of plugin 'bad-init-plugin'" in out.output
    assert "cannot be created: TypeError: unsupported operand" in out.output
    assert "aggressive" in out.output
    alone = run(str(PHONE), "-s", "bad-init", "--tokenizer", "chars4")
    assert alone.exit_code == 2 and "Traceback" not in alone.output
    assert "no strategy to compare: strategy 'bad-init' of plugin" in alone.output
    with pytest.raises(PluginError, match=r"bad-init-plugin.*cannot be created: TypeError"):
        compress([{"role": "user", "content": "hi"}], strategy="bad-init")
    with pytest.raises(ValueError, match="option 'window' must be an integer"):
        compress([{"role": "user", "content": "hi"}], strategy=("rolling-window",
                                                               {"window": -1}))


def test_a_plugin_strategy_that_calls_sys_exit_is_listed_as_failed(fresh_registry):
    """sys.exit() in a plugin strategy's to_messages, cache_breakpoints or __init__ is a
    failure of that strategy, like any exception: the others are compared (it ended the
    whole comparison, printing nothing, exit 3)."""
    import sys

    class Quits(Strategy):
        name = "quits"

        def to_messages(self, turns, memory, ctx):
            sys.exit(3)

    class QuitsAtPoints(Strategy):
        name = "quits-at-points"

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("user", ctx.mission)]

        def cache_breakpoints(self, turns, memory, ctx):
            sys.exit("bye")

    class QuitsAtInit(Strategy):
        name = "quits-at-init"

        def __init__(self):
            sys.exit(4)

        def to_messages(self, turns, memory, ctx):
            return []

    for cls in (Quits, QuitsAtPoints, QuitsAtInit):
        _plugin(cls, cls.name + "-plugin")
    out = run(str(PHONE), "--cache", "anthropic", "--tokenizer", "chars4", "-s", "quits",
              "-s", "quits-at-points", "-s", "quits-at-init", "-s", "aggressive")
    assert out.exit_code == 0 and "Traceback" not in out.output, out.output
    assert "quits: failed: strategy 'quits' of plugin 'quits-plugin'" in out.output
    assert "SystemExit: 3" in out.output and "SystemExit: bye" in out.output
    assert "quits-at-init: failed:" in out.output and "SystemExit: 4" in out.output
    assert "aggressive" in out.output


def test_a_strategy_that_returns_no_message_is_listed_as_failed(fresh_registry):
    """An empty prompt is no prompt: compare counted it as free (0 tokens, 100% saved)."""
    class Empty(Strategy):
        name = "empty"

        def to_messages(self, turns, memory, ctx):
            return []

    _plugin(Empty, "empty-plugin")
    result = _compare(PHONE, ["empty", "aggressive"], tokenizer="chars4")
    [(label, status, reason)] = result.not_compared
    assert (label, status) == ("empty", "failed")
    assert reason.endswith("TypeError: returned no message; a prompt needs at least one")
    assert [s.label for s in result.compared] == ["aggressive"]


def test_a_failing_tokenizer_is_one_line(fresh_registry):
    def count(text):
        raise OSError("vocabulary missing")

    class Plugin:
        @hookimpl
        def register_tokenizers(self, register):
            register("broken-tok", count)

    get_registry().register(Plugin(), "tok-plugin")
    with pytest.raises(CompareError, match=r"tokenizer 'broken-tok' of plugin 'tok-plugin' .*"
                                           r"failed: OSError: vocabulary missing"):
        _compare(PHONE, ["full-history"], tokenizer="broken-tok")
    out = run(str(PHONE), "--tokenizer", "broken-tok")
    assert out.exit_code == 1 and out.output.count("\n") == 1
    assert "Traceback" not in out.output


def test_a_broken_template_names_the_file_not_full_history(tmp_path):
    (tmp_path / "full_history").mkdir()
    (tmp_path / "full_history" / "first_user.j2").write_text("{{ mission }\n")
    out = run(str(PHONE), "--templates", str(tmp_path), "--tokenizer", "chars4")
    # the user's template is bad input: exit 2, as for render (README "Exit codes")
    assert out.exit_code == 2 and out.output.count("\n") == 1, out.output
    assert "first_user.j2" in out.output and "Traceback" not in out.output
    assert "strategy 'full-history'" not in out.output


def test_the_table_fits_80_columns_and_numbers_are_whole(bundled):
    """Issue 12 item 8: no cut numbers at 80 columns in a terminal."""
    from rich.console import Console

    from turnpress.compare.table import print_comparison

    result = bundled  # every bundled run, every strategy, anthropic cache
    console = Console(width=80, force_terminal=True, record=True, color_system=None)
    print_comparison(result, console, plain=False)
    text = console.export_text()
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= 80
    assert "…" not in text
    for s in result.compared:
        assert f"${s.cost_usd:.4f}" in text or f"${s.cost_usd:.2f}" in text
        assert f"{s.cost_ratio:.2f}x" in text
        # the name whole on its row (it was folded: "single-user-coalesce" / "d")
        mark = " *" if s is result.recommended else ""
        assert any(ln.startswith(f"{s.label}{mark} ") for ln in lines), s.label


def test_the_legend_names_the_columns_of_each_layout(bundled):
    """The plain lines head their columns cost_ratio/retention/dropped_facts, and the
    legend under them explains those names (it explained the table's xfull/kept/drop)."""
    from turnpress.compare.table import notes, plain_lines

    plain = plain_lines(bundled)
    header = plain[1].split()
    for name in ("cost_ratio", "retention", "dropped_facts", "written"):
        assert name in header
        assert any(ln.startswith(f"{name}: ") or f"; {name}: " in ln for ln in plain[2:]), name
    assert not any(ln.startswith(("xfull:", "kept:", "wrote:")) for ln in plain)
    table_notes = notes(bundled)
    assert any(ln.startswith("xfull: ") for ln in table_notes)
    assert any(ln.startswith("wrote: ") for ln in table_notes)


def test_dropped_summary_without_examples_gives_the_counts(bundled):
    from turnpress.compare.table import dropped_summary

    lines = dropped_summary(bundled, examples=0)
    dropping = [s for s in bundled.compared if s.dropped_facts]
    assert lines == [f"{s.label} dropped {s.dropped_facts} distinct facts" for s in dropping]


def test_full_history_transcript_is_cached_under_anthropic():
    """The breakpoint at the end of a replayed transcript is in range (it was one past the
    last message, so nothing was ever cached)."""
    result = _compare([transcript()], ["full-history"], cache="anthropic")
    full = result.strategies[0]
    assert full.written_tokens > 0 and full.cached_tokens > 0


def test_jsonl_lines_in_a_registered_transcript_format_are_streamed(fresh_registry, tmp_path):
    """Each JSONL line goes through the trace readers, as load_trace does (issue 9)."""
    def detect(data, path):
        return isinstance(data, dict) and "chat" in data

    def read(data, where):  # two different runs (the same run is counted once)
        return dataclasses.replace(transcript(name=data["chat"]), mission=data["chat"])

    class Plugin:
        @hookimpl
        def register_trace_readers(self, register):
            register("test-chat", detect, read)

    get_registry().register(Plugin(), "chat-reader")
    path = tmp_path / "chats.jsonl"
    path.write_text('{"chat": "one"}\n{"chat": "two"}\n')
    result = _compare(path, ["full-history"], jobs=1)
    assert [t.name for t in result.traces] == ["one", "two"]
    assert result.as_run is not None and result.as_run.prompts == 8


def test_a_bundled_trace_by_name():
    """Issue 12 item 8: bundled traces have names in every command, compare too."""
    named = run("product-research", "-s", "full-history", "--json")
    assert named.exit_code == 0, named.output
    assert [t["name"] for t in json.loads(named.stdout)["traces"]] == ["product-research"]
    missing = run("no-such-run")
    assert missing.exit_code != 0
    assert "no trace file 'no-such-run' and no bundled trace of that name" in missing.output
    assert "Traceback" not in missing.output


@pytest.mark.parametrize("jobs", [1, 2])
def test_bundled_names_and_errors_from_python_as_from_the_cli(jobs, tmp_path):
    """ux-b item 15: compare_traces and load_trace take a bundled trace's name as the
    command line does, and an error in a worker process comes without the worker's
    traceback chained to it."""
    assert load_trace("product-research") == load_trace(
        next(p for p in example_trace_paths() if p.stem == "product-research"))
    result = compare_traces(["product-research"], ["full-history"], jobs=jobs)
    assert [t.name for t in result.traces] == ["product-research"]
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(TraceError, match=r"bad\.json") as caught:
        compare_traces([str(bad), "product-research"], ["full-history"], jobs=jobs,
                       strict=True)
    assert caught.value.__cause__ is None


def test_a_bad_jsonl_line_gets_the_error_load_trace_gives(tmp_path):
    """ux-a item 17: compare parsed JSONL lines with its own json.loads: a control
    character gave "... invalid JSON at column 9: Invalid control character at" (cut), and
    a NaN or a 5,000-digit number was read where load_trace refuses it."""
    good = load_trace(PHONE)
    lines = [json.dumps(trace_to_dict(good)), '{"mission": "a\tb"}']
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TraceError) as from_load:
        list(iter_traces(path))
    with pytest.raises(TraceError) as from_compare:
        compare_traces([path], ["full-history"], strict=True)
    assert str(from_compare.value) == str(from_load.value)
    assert str(from_load.value).endswith("column 15: Invalid control character")
    with_nan = lines[0].replace('"max_turns": ', '"max_turns": NaN, "x": ', 1)
    path.write_text(lines[0] + "\n" + with_nan + "\n")
    with pytest.raises(TraceError, match="line 2"):
        compare_traces([path], ["full-history"], strict=True)


def test_the_footer_says_what_a_cache_write_costs():
    """ux-a item 14: `--price in=3,cached=0.3` under the anthropic cache billed writes at
    1.25x input without saying so anywhere."""
    from turnpress.compare.table import notes

    implicit = compare_traces([PHONE], ["full-history"], cache="anthropic",
                              price="in=3,cached=0.3")
    assert any("billed at write=3.75: 1.25x input, as no write= was given" in line
               for line in notes(implicit))
    given = compare_traces([PHONE], ["full-history"], cache="anthropic",
                           price="in=3,cached=0.3,write=4")
    assert any(line.endswith("(billed at write=4)") for line in notes(given, plain=True))


def test_the_as_run_cost_ratio_compares_the_same_prompts():
    """ux-a item 5: with usage on some turns only, the as-run ratio divided the billed
    cost of those prompts by full-history's cost over every prompt."""
    import dataclasses

    from turnpress.compare.table import plain_lines

    full = transcript()
    part = dataclasses.replace(full, turns=tuple(
        t if t.number == 2 else dataclasses.replace(t, usage=None) for t in full.turns))
    result = _compare([part], ["full-history"], price="openai-gpt-4.1")
    run = result.as_run
    assert run is not None and run.prompts == 1
    from turnpress.compare.pricing import PRICE_PRESETS, cost_usd

    [turn_2] = [r for r in result.strategies[0].per_turn() if r.turn == 2]
    cost_2 = cost_usd(PRICE_PRESETS["openai-gpt-4.1"], turn_2.input_tokens,
                      turn_2.cached_tokens, turn_2.written_tokens)
    assert run.baseline_cost_usd == pytest.approx(cost_2)
    assert run.cost_ratio == pytest.approx(run.cost_usd / cost_2)
    assert run.baseline_cost_usd < result.baseline_cost_usd
    [row] = [ln for ln in plain_lines(result) if ln.startswith("as-run")]
    assert row.split()[-1] == f"{run.cost_ratio:.3f}"


def test_no_recommendation_when_recall_measured_nothing():
    """ux-a item 20: a trace with no turns (or runs too short for any needed fact) got
    `aggressive` recommended "with recall 1.000": recall measured nothing."""
    from turnpress import Trace
    from turnpress.compare.table import notes

    empty = Trace(mission="m", max_turns=3, name="empty")
    result = compare_traces([empty], strict=True)  # not strict: a run with no turn is skipped
    assert result.prompts == 0 and result.recommended is None
    assert result.to_json()["recommended"] is None
    assert any(line.startswith("no recommendation: no prompt had a needed fact")
               for line in notes(result))

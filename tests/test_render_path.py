"""The one render path (issue 12 items 3 and 5): ``prompt_arguments`` says what "the
prompt of turn n" is, for ``render``, ``trace show``, ``compare`` and the agent loop;
``--turn`` runs from 1 to len(turns)+1; sections of a run are rendered once and
stay correct when templates, plugins or data change."""

from __future__ import annotations

import inspect
import json

import pytest
from click.testing import CliRunner

import turnpress
from turnpress import Strategy, Tool, ToolCall, Trace, Turn, hookimpl, render
from turnpress.agent import Agent, ScriptedLLM
from turnpress.agent.agent import Settings
from turnpress.agent.tasks import Task
from turnpress.cli import main
from turnpress.core import compression, render_context, run_cache
from turnpress.core import strategy as strategy_module
from turnpress.core.compression import RunState, get_strategy, prompt_arguments
from turnpress.core.registry import get_registry
from turnpress.core.trace import save_traces
from turnpress.examples import EXAMPLES_DIR, example_trace_paths

PRODUCT = str(next(p for p in example_trace_paths() if p.stem == "product-research"))


def two_turn_trace(**overrides) -> Trace:
    t1 = Turn.succeeded(1, '(def hits (tool/search "x"))', None, memory={"hits": [1, 2]},
                        tool_calls=[ToolCall("search", ("x",), [1, 2])])
    t2 = Turn.succeeded(2, '(println "two hits")', None, memory={"hits": [1, 2]},
                        prints=["two hits"])
    fields = {"mission": "Find things", "turns": (t1, t2), "system_prompt": "SYS",
              "max_turns": 5, "tools": {"search": Tool("search", {"q": "string"}, "list")},
              "data": {"rows": [1, 2, 3]}, "name": "tiny"}
    return Trace(**{**fields, **overrides})


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


# -- the formula, once -------------------------------------------------------------------


def test_prompt_of_turn_n_is_the_turns_before_it_and_max_turns_minus_n_minus_1():
    """ARC-006: turns_left comes from the turn count; turn len+1 is the next prompt."""
    trace = two_turn_trace()
    for n in (1, 2, 3):
        args = prompt_arguments(trace, n)
        assert args["turns"] == trace.turns[: n - 1]
        assert args["turns_left"] == 5 - (n - 1)
        assert trace.prompt_arguments(n) == args
    assert trace.prompt(3) == render(trace.turns, mission="Find things", system_prompt="SYS",
                                     tools=trace.tools, data=trace.data, turns_left=3)


@pytest.mark.parametrize("n", [0, -1, 4, 99, True, "2"])
def test_a_turn_out_of_range_names_the_trace_and_the_valid_range(n):
    with pytest.raises(ValueError) as info:
        two_turn_trace().prompt(n)
    assert str(info.value) == (f"trace tiny has 2 turns; turn must be from 1 to 3 "
                               f"(3 is the next prompt), got {n!r}")


def test_a_run_with_no_turns_renders_turn_1_only():
    empty = two_turn_trace(turns=())
    assert empty.prompt(1)[1]["content"].endswith("Turns left: 5")
    with pytest.raises(ValueError, match="has 0 turns; turn must be from 1 to 1"):
        empty.prompt(2)


def test_the_agent_loop_sends_exactly_the_prompts_of_its_trace():
    """The loop renders through prompt_arguments: each prompt it sent is the trace's."""
    llm = ScriptedLLM(["```clojure\n(def n (count data/xs))\n```",
                       "```clojure\n(println n)\n```", "```clojure\n(return n)\n```"])
    step = Agent("Count xs", data={"xs": [1, 2, 3]}, llm=llm, max_turns=4).run()
    trace = step.to_trace("counted")
    assert len(step.messages) == len(trace.turns) == 3
    for n, sent in enumerate(step.messages, 1):
        assert trace.prompt(n) == sent


def test_run_state_keeps_tools_and_data_uncopied():
    tools, data = {"t": Tool("t")}, {"d": 1}
    state = RunState(mission="m", system_prompt="", max_turns=3, tools=tools, data=data)
    args = prompt_arguments(state, 1)
    assert args["tools"] is tools and args["data"] is data and args["turns_left"] == 3


# -- --turn on the command line ------------------------------------------------------------


def test_render_turn_len_plus_1_is_the_next_prompt():
    trace = turnpress.load_trace(PRODUCT)
    n = len(trace.turns) + 1
    result = invoke("render", PRODUCT, "--turn", str(n), "-f", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["turn"] == n and document["messages"] == trace.prompt(n)
    text = invoke("render", PRODUCT, "--turn", str(n))
    assert text.output.startswith(f"# trace product-research, turn {n} (the next prompt, "
                                  f"after {n - 1} turns), strategy price-scheduled\n")


@pytest.mark.parametrize("turn", ["0", "-1", "6"])
def test_render_bad_turn_is_one_line_naming_trace_and_range(turn):
    result = invoke("render", PRODUCT, "--turn", turn)
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert lines == [f"Error: --turn {turn}: trace product-research has 4 turns; turn must be "
                     f"from 1 to 5 (5 is the next prompt), got {turn}"]


def test_render_over_every_run_of_a_jsonl_file_checks_the_turn_before_printing(tmp_path):
    traces = [turnpress.load_trace(p) for p in example_trace_paths()]
    path = tmp_path / "all.jsonl"
    save_traces(traces, path)
    shortest = min(traces, key=lambda t: len(t.turns))
    turn = len(shortest.turns) + 2
    result = invoke("render", str(path), "--turn", str(turn))
    assert result.exit_code == 2
    assert result.stdout == ""  # nothing rendered before the error
    assert f"trace {shortest.name} has {len(shortest.turns)}" in result.stderr
    assert (f"nothing was rendered: --turn must suit each of the file's {len(traces)} runs"
            in result.stderr)
    ok = invoke("render", str(path), "--turn", "1")
    assert ok.exit_code == 0 and ok.output.count("# trace ") == len(traces)


def test_a_trace_without_turns_renders_turn_1_without_of_0(tmp_path):
    path = tmp_path / "empty.json"
    turnpress.save_trace(two_turn_trace(turns=(), name="empty"), path)
    result = invoke("render", str(path))
    assert result.exit_code == 0, result.output
    assert "turn 1 (the next prompt, after 0 turns)" in result.output
    assert "of 0" not in result.output


# -- bundled traces by name ----------------------------------------------------------------


def test_bundled_traces_have_names():
    by_path = invoke("render", PRODUCT)
    by_name = invoke("render", "product-research")
    assert by_name.exit_code == 0 and by_name.output == by_path.output
    shown = invoke("trace", "show", "product-research")
    assert shown.exit_code == 0 and "trace product-research: 4 of" in shown.output


def test_an_unknown_trace_name_says_where_bundled_traces_live():
    result = invoke("trace", "show", "no-such-run")
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert "no-such-run" in line and str(EXAMPLES_DIR) in line and "product-research" in line
    assert len(line.splitlines()) == 1


# -- one default, one resolution --------------------------------------------------------


def test_one_default_for_compression_everywhere():
    default = inspect.signature(render).parameters["compression"].default
    assert default is True
    assert Settings().compression is default
    assert Task(name="t", mission="m").compression is default
    assert inspect.signature(get_strategy).parameters["compression"].default is default
    assert inspect.signature(Trace.prompt).parameters["compression"].default is default


def test_compression_alias_is_exported_and_used_in_signatures():
    assert turnpress.Compression is compression.Compression
    assert inspect.signature(render).parameters["compression"].annotation == "Compression"


class Counting(Strategy):
    """Counts its instances: the agent must resolve its strategy once per run."""

    name = "counting"
    made = 0

    def __init__(self, *, limit: int = 3) -> None:
        type(self).made += 1
        self.limit = limit

    def to_messages(self, turns, memory, ctx):
        return [ctx.message("system", ctx.system_prompt),
                ctx.message("user", f"{ctx.mission} ({len(turns)} turns, {ctx.turns_left})")]


def test_the_agent_resolves_its_strategy_once_per_run():
    agent = Agent("Go", llm=ScriptedLLM(["(def a 1)", "(def b 2)", "(return 3)"]),
                  max_turns=5, compression=Counting)
    Counting.made = 0
    step = agent.run()
    assert step.success and len(step.turns) == 3
    assert Counting.made == 1
    assert step.messages[2][1]["content"] == "Go (2 turns, 3)"


def test_options_are_read_once_per_class(monkeypatch):
    calls = []
    real = inspect.signature

    def counting(obj, *a, **k):
        calls.append(obj)
        return real(obj, *a, **k)

    class Fresh(Counting):
        name = "fresh"

    monkeypatch.setattr(strategy_module.inspect, "signature", counting)
    trace = two_turn_trace()
    for _ in range(5):
        trace.prompt(2, (Fresh, {"limit": 4}))
        trace.prompt(2, Fresh(limit=2))
    assert calls.count(Fresh) == 1


# -- the per-run cache stays correct -----------------------------------------------------


def test_other_template_dirs_are_not_served_from_the_cache(tmp_path):
    trace = two_turn_trace()
    plain = trace.prompt(3)
    (tmp_path / "namespaces").mkdir()
    (tmp_path / "namespaces" / "tool.j2").write_text(";; TOOLS HERE\n")
    custom = trace.prompt(3, template_dirs=[tmp_path])
    assert ";; TOOLS HERE" in custom[1]["content"]
    assert ";; TOOLS HERE" not in plain[1]["content"]
    assert trace.prompt(3) == plain


def test_a_new_plugin_is_seen_by_the_next_render(fresh_registry):
    trace = two_turn_trace(data={"rows": (1, 2)})
    before = trace.prompt(1)[1]["content"]
    assert "data/rows                    ; list[2]" in before

    class Labels:
        @hookimpl
        def type_label(self, value):
            return "tuple-of-2" if isinstance(value, tuple) else None

        @hookimpl
        def register_namespace_renderers(self, register):
            register("notes/", lambda view: ";; === notes/ ===", 150)

    get_registry().register(Labels(), "labels")
    after = trace.prompt(1)[1]["content"]
    assert "data/rows                    ; tuple-of-2" in after and ";; === notes/ ===" in after


def test_replacing_a_data_value_is_seen_by_the_next_render():
    data = {"rows": [1, 2, 3]}
    kwargs = {"mission": "m", "tools": {}, "turns_left": 3}
    assert "list[3]" in render([], data=data, **kwargs)[1]["content"]
    data["rows"] = [1]
    assert "list[1]" in render([], data=data, **kwargs)[1]["content"]
    data["more"] = "x"
    assert "data/more" in render([], data=data, **kwargs)[1]["content"]


def test_the_stable_sections_are_rendered_once_per_run():
    calls = []
    trace = two_turn_trace(data={"fresh": [1, 2]})
    regs = get_registry().namespace_renderers()
    data_reg = next(r for r in regs if r.name == "data/")
    real = data_reg.value

    def counting(view):
        calls.append(view)
        return real(view)

    object.__setattr__(data_reg, "value", counting)
    try:
        for n in (1, 2, 3, 1, 2, 3):
            trace.prompt(n)
    finally:
        object.__setattr__(data_reg, "value", real)
    assert len(calls) == 1


def test_the_readme_cites_documents_that_exist():
    """The README cites docs/ pages, not specs that are not in the repository."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    assert "DESIGN §" not in readme and "spec 05" not in readme and "spec 01" not in readme
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert "docs/format.md" in links and "docs/tasks.md" in links
    for link in links:
        assert (root / link).is_file(), link


def test_a_resolved_strategy_is_not_shared_between_callers():
    first = get_strategy("rolling-window:window=3")
    first.window = 9
    again = get_strategy("rolling-window:window=3")
    assert again is not first and again.window == 3


def test_the_text_cache_of_a_run_stays_bounded():
    ctx = compression.RenderContext(mission="m", system_prompt="", tools={}, data={"z": 1},
                                    turns_left=3)
    for i in range(500):
        assert ctx.turns_left_line(i + 2) == f"Turns left: {i + 2}"
        ctx.template("history/output.j2", prints=["x" * 5000, str(i)], max_chars=None)
    cache = ctx.run_cache
    assert len(cache.texts) <= run_cache.MAX_TEXTS
    assert cache.text_chars <= run_cache._MAX_TEXT_CHARS
    big = "y" * run_cache._MAX_TEXT_CHARS
    ctx.template("history/output.j2", prints=[big], max_chars=None)
    assert all(big not in text for text, _size in cache.texts.values())


def test_per_turn_values_are_made_once_per_turn_and_key_and_stay_bounded(monkeypatch):
    """RenderContext.per_turn: a strategy's rendering of one turn, reused by the later
    prompts of the run; another key, another turn or another run makes it again."""
    ctx = compression.RenderContext(mission="m", system_prompt="", tools={}, data={"p": 1},
                                    turns_left=3)
    first = Turn.succeeded(1, "p", 1, memory={})
    twin = Turn.succeeded(1, "p", 1, memory={})  # equal, but another turn object
    made = []

    def make(tag):
        return lambda: made.append(tag) or f"value {tag}"

    assert ctx.per_turn(first, ("s", 1), make("a")) == "value a"
    assert ctx.per_turn(first, ("s", 1), make("b")) == "value a"
    assert ctx.per_turn(first, ("s", 2), make("c")) == "value c"
    assert ctx.per_turn(twin, ("s", 1), make("d")) == "value d"
    other_run = compression.RenderContext(mission="m", system_prompt="", tools={},
                                          data={"q": 2}, turns_left=3)
    assert other_run.per_turn(first, ("s", 1), make("e")) == "value e"
    assert made == ["a", "c", "d", "e"]
    monkeypatch.setattr(render_context, "_MAX_PER_TURN", 3)
    for i in range(10):
        ctx.per_turn(first, ("bound", i), make(i))
    assert len(ctx.run_cache.per_turn) <= 3


@pytest.mark.parametrize("strategy", ["full-history", "observation-masking",
                                      "progressive-batch", "single-user-coalesced"])
def test_changing_a_rendered_prompt_changes_no_later_prompt_and_no_turn(strategy):
    """Strategies reuse message dicts from one prompt to the next (and a transcript
    turn's own messages): render() hands out copies, so a caller that marks the last
    message for caching, or edits a content block, changes nothing else."""
    call = {"id": "c1", "type": "function",
            "function": {"name": "ls", "arguments": "{}"}}
    chat = [{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1",
             "content": [{"type": "text", "text": "a.txt"}]},
            {"role": "assistant", "content": "done"}, {"role": "user", "content": "ok"}]
    from turnpress.plugins.readers.openai_chat import trace_from_messages

    trace = trace_from_messages(chat)
    before = json.dumps([t.messages for t in trace.turns])
    args = trace.prompt_arguments(len(trace.turns) + 1)
    first = render(**args, compression=strategy)
    again = render(**args, compression=strategy)
    for message in first:
        message["cache_control"] = {"type": "ephemeral"}
        if isinstance(message.get("content"), list):
            message["content"][0]["text"] = "changed"
        for c in message.get("tool_calls") or []:
            c["function"]["name"] = "changed"
    assert render(**args, compression=strategy) == again
    assert json.dumps([t.messages for t in trace.turns]) == before
    compressor = turnpress.Compressor(strategy)
    compressor.extend(chat)
    sent = compressor.messages()
    sent[-1]["content"] = "changed"
    assert compressor.messages() != sent

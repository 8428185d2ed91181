"""The turnpress command: render, plugins and trace show (a thin layer over the library)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from turnpress import load_trace
from turnpress.cli import main
from turnpress.core.providers import format_text
from turnpress.examples import example_trace_paths

PRODUCT = str(next(p for p in example_trace_paths() if p.stem == "product-research"))


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_render_text_matches_the_library() -> None:
    result = run("render", PRODUCT, "--turn", "4")
    assert result.exit_code == 0, result.output
    trace = load_trace(PRODUCT)
    assert result.output == (f"# trace product-research, turn 4 of 4, strategy "
                             f"price-scheduled\n\n{format_text(trace.prompt(4))}\n")


def test_render_json_and_openai() -> None:
    doc = json.loads(run("render", PRODUCT, "-s", "single-user-coalesced:errors=pairs",
                         "-t", "4", "-f", "json").output)
    assert doc["strategy"] == "single-user-coalesced" and doc["turn"] == 4
    assert doc["options"]["errors"] == "pairs"
    trace = load_trace(PRODUCT)
    assert doc["messages"] == trace.prompt(4, "single-user-coalesced:errors=pairs")
    openai = json.loads(run("render", PRODUCT, "-f", "openai").output)
    assert openai == {"messages": trace.prompt(4)}


def test_render_without_a_trace_renders_the_default_example() -> None:
    """ux-a item 18: `render` takes one TRACE; without one it renders product-research (the
    example `run` runs), not every bundled trace's prompt one after another."""
    result = run("render", "--strategy", "full-history")
    assert result.exit_code == 0
    assert result.output == run("render", PRODUCT, "--strategy", "full-history").output
    assert result.output.count("# trace ") == 1
    assert result.output.startswith("# trace product-research, turn 4 of 4, ")
    doc = json.loads(run("render", "-f", "json").output)
    assert doc["trace"] == "product-research"
    help_text = " ".join(run("render", "--help").output.split())
    assert "several traces" not in help_text and "default: product-research" in help_text


def test_none_is_the_full_history_in_every_command_that_takes_s() -> None:
    """ux-a item 13: `-s none` means full-history in render and trace show, as in run, and
    --help says what -t is in each command."""
    for args in (["render", PRODUCT, "-t", "3"], ["render", PRODUCT, "-f", "json"],
                 ["trace", "show", PRODUCT, "--view", "compressed"],
                 ["compare", PRODUCT, "-s", "aggressive"]):
        none = run(*args, "-s", "none")
        assert none.exit_code == 0, none.output
        assert none.output == run(*args, "-s", "full-history").output
    assert run("render", PRODUCT, "-s", "NONE").exit_code == 0
    # with options it is full-history's (it was "unknown strategy 'none'")
    bad = run("render", PRODUCT, "-s", "none:foo=1")
    assert bad.exit_code == 2 and "strategy 'full-history' has no option 'foo'" in bad.output
    render_help = " ".join(run("render", "--help").output.split())
    assert "-t, --turn" in render_help and "(In compare, -t is --tokenizer.)" in render_help
    assert "none: the full history" in " ".join(run("trace", "show", "--help").output.split())


@pytest.mark.parametrize(("args", "message"), [
    (["render", "missing.json"], "Error: missing.json: cannot read trace file"),
    (["render", PRODUCT, "--strategy", "nope"], "Error: unknown strategy 'nope'"),
    (["render", PRODUCT, "--strategy", "single-user-coalesced:bogus=1"],
     "has no option 'bogus'"),
    (["render", PRODUCT, "--turn", "9"], "turn must be from 1 to 5 (5 is the next prompt), got 9"),
    (["trace", "show", "missing.json"], "Error: missing.json: cannot read trace file"),
])
def test_bad_input_is_one_clear_line_and_exit_2(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output and len(result.output.strip().split("\n")) == 1


def test_broken_trace_file_names_the_field(tmp_path) -> None:
    data = json.loads(open(PRODUCT).read())
    data["turns"][1]["prints"] = [1]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = run("render", str(bad))
    assert result.exit_code == 2
    assert "bad.json: turn 2: field 'prints[0]': expected a string" in result.output


def test_plugins_table_lists_builtins() -> None:
    result = CliRunner().invoke(main, ["plugins"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for name in ("single_user_coalesced", "full_history", "namespaces", "type_labels"):
        assert name in result.output
    assert "turnpress (built-in)" in result.output
    doc = json.loads(run("plugins", "--json").output)
    by_name = {p["name"]: p for p in doc["plugins"]}
    assert by_name["namespaces"]["registers"]["namespace"] == ["tool/", "data/", "user/"]


def test_trace_show_full_view() -> None:
    """DBG-005: debugging uses the full turns: every program, output and error."""
    result = run("trace", "show", PRODUCT)
    assert result.exit_code == 0
    trace = load_trace(PRODUCT)
    for turn in trace.turns:
        assert turn.program in result.output
    assert "--- turn 3: FAILED (undefined_symbol) ---" in result.output
    assert "error: undefined symbol 'in-stok'" in result.output
    assert "Reviews: Customer Review Summary" in result.output
    raw = run("trace", "show", PRODUCT, "--raw").output
    assert "First I collect the electronics" in raw and "system prompt:" in raw


def test_trace_show_compressed_view() -> None:
    """DBG-004: the LLM prompt is the compression strategy's rendering of the turns."""
    result = run("trace", "show", PRODUCT, "--view", "compressed")
    assert result.exit_code == 0
    trace = load_trace(PRODUCT)
    user = trace.prompt(4)[1]["content"]
    assert user in result.output
    assert "(system prompt; --raw shows it)" in result.output
    raw = run("trace", "show", PRODUCT, "--view", "compressed", "--raw").output
    assert trace.system_prompt in raw


def test_trace_show_strategy_implies_the_compressed_view() -> None:
    """QA-b item 16: ``trace show -s aggressive`` without ``--view compressed`` showed the
    full view, ignoring -s without a word. -s now means the compressed view; with an
    explicit ``--view full`` it is one error line."""
    implied = run("trace", "show", PRODUCT, "-s", "aggressive")
    assert implied.exit_code == 0, implied.output
    assert implied.output == run("trace", "show", PRODUCT, "--view", "compressed", "-s",
                                 "aggressive").output
    assert implied.output != run("trace", "show", PRODUCT).output
    assert load_trace(PRODUCT).prompt(4, "aggressive")[1]["content"] in implied.output
    both = run("trace", "show", PRODUCT, "--view", "full", "-s", "aggressive")
    assert both.exit_code == 2
    assert both.output == ("Error: -s/--strategy chooses the prompts of --view compressed; "
                           "--view full shows the turns as they ran: drop one of them\n")


def test_help_lists_every_command() -> None:
    result = run("--help")
    for command in ("render", "plugins", "trace", "templates"):
        assert command in result.output


def test_strategies_lists_each_option_with_what_its_docstring_says() -> None:
    """`turnpress strategies`: an option's line is the docstring clause that defines it,
    names plain (a default once, beside the name), whole words, nothing cut inside a
    parenthesis, and a word split across docstring lines joined again."""
    out = run("strategies", "checkpoint-coalesced", "price-scheduled", "rolling-window")
    assert out.exit_code == 0, out.output
    lines = {ln.split()[0]: ln for ln in out.output.splitlines() if ln.startswith("  ")}
    assert lines["delta_chars=24000"].split(None, 1)[1].startswith(
        "a checkpoint as soon as the deltas since the last one reach this many characters")
    assert lines["max_tokens=200000"].endswith(
        "a prompt that could pass this many tokens (about four characters each) rebuilds")
    assert "output_lines (>= 1) and key_lines (>= 0) cut a long output" in lines["key_lines=4"]
    assert "single-user-coalesced" in lines["println_limit=15"]  # not "single-user- ..."
    assert "``" not in out.output and "(24000" not in out.output
    for line in lines.values():
        assert line.count("(") == line.count(")") or line.endswith("...")



def test_strategies_shows_each_default_as_s_takes_it() -> None:
    """`turnpress strategies` shows a default the way ``-s NAME:option=value`` reads it
    (``start_on=human``, ``clear_tool_inputs=false``; it showed Python reprs, which -s
    refused: ``got "'human'"``): every default shown, given back with -s, makes the
    default strategy."""
    from turnpress.core.compression import get_strategy

    out = run("strategies")
    assert out.exit_code == 0, out.output
    assert "start_on=human " in out.output and "clear_tool_inputs=false " in out.output
    assert "='" not in out.output and "=False" not in out.output
    name = ""
    for line in out.output.splitlines():
        if line and not line.startswith(" "):
            name = line.split(":")[0]
        elif line.startswith("  ") and "=" in line.split()[0]:
            option = line.split()[0]
            assert get_strategy(f"{name}:{option}") == get_strategy(name), (name, option)


def test_render_anthropic_of_a_part_it_has_no_block_for_is_one_line(audio_chat) -> None:
    """An OpenAI-only part (input_audio) in a transcript: -f anthropic says which trace,
    turn and part have no Anthropic block (it was a traceback); -f openai carries it."""
    path = audio_chat
    out = run("render", str(path), "-s", "full-history", "-f", "anthropic")
    assert out.exit_code == 2 and out.output.count("\n") == 1, out.output
    assert "-f anthropic: message 0: content part type 'input_audio' has no Anthropic" \
        in out.output
    assert run("render", str(path), "-s", "full-history", "-f", "openai").exit_code == 0


def test_strategies_shows_no_description_for_a_strategy_without_a_docstring(
        fresh_registry) -> None:
    """A plugin strategy with no docstring of its own: `turnpress strategies` says so (it
    showed the base Strategy class's docstring as the strategy's description)."""
    from plugin_helpers import register_strategies

    from turnpress import Strategy

    class NoDoc(Strategy):
        name = "qa-nodoc"

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("user", ctx.mission)]

    register_strategies("qa-nodoc-plugin", NoDoc)
    out = run("strategies", "qa-nodoc")
    assert out.exit_code == 0, out.output
    assert out.output == "qa-nodoc: (no description)\n  (no options)\n"

"""The HTML report of ``turnpress compare --html``, loaded in a real headless Chromium.

Needs Debian's ``chromium`` package (``/usr/bin/chromium``) and Playwright's Python
package; it never downloads a browser (no ``playwright install``). Without them the
browser tests are skipped with a message saying what is missing.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from turnpress import Turn, load_trace
from turnpress.cli import main
from turnpress.compare import compare_traces, html_report, write_html_report
from turnpress.compare.engine import NothingCompared
from turnpress.compare.pricing import get_price
from turnpress.compare.results import ComparisonResult
from turnpress.core.compression import strategy_names
from turnpress.examples import short_example_trace_paths

SHORT = short_example_trace_paths()  # the long bundled runs would only slow these tests

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run"]


def chromium_path() -> str | None:
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser():
    executable = chromium_path()
    if executable is None:
        pytest.skip("Chromium is not installed: `apt-get install -y chromium` (Debian) is "
                    "needed for the HTML report browser test")
    sync_api = pytest.importorskip(
        "playwright.sync_api",
        reason="Playwright's Python package is not installed: pip install -e '.[test]'")
    with sync_api.sync_playwright() as pw:
        instance = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


def open_page(browser, path: Path, width: int = 1280, height: int = 1000):
    """Load ``path``; return (page, problems) where problems collects console errors and
    warnings, page errors, failed loads and any request that is not the file itself."""
    page = browser.new_page(viewport={"width": width, "height": height})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
    url = path.resolve().as_uri()
    page.on("request", lambda r: problems.append(f"request: {r.url}") if r.url != url else None)
    page.goto(url)
    page.wait_for_load_state("load")
    return page, problems


def result_of(path) -> list[dict]:
    """The strategies of the JSON document a report page draws from."""
    text = path.read_text(encoding="utf-8")
    start = text.index('<script id="report-data" type="application/json">')
    body = text[text.index(">", start) + 1:text.index("</script>", start)]
    return json.loads(body)["strategies"]


@pytest.mark.slow
def test_report_in_chromium(browser, tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["compare", *map(str, SHORT), "--cache", "anthropic",
                                       "--html", str(out)])
    assert result.exit_code == 0, result.output
    page, problems = open_page(browser, out)
    n = len(strategy_names())
    assert page.title() == "turnpress compare"
    assert page.locator("#summary-table tbody tr").count() == n
    assert page.locator("#summary-table").inner_text().count("$") == n
    chart = page.locator("#tokens-chart")
    assert chart.is_visible()
    assert chart.locator("polyline").count() == n
    assert page.locator("#cache-chart rect").count() >= 1
    # ux-a item 10: with every trace, the cache chart gives the table's totals
    assert "Totals over all 3 traces" in page.locator("#cache-scope").inner_text()
    for s in result_of(out):
        assert f"{s['input_tokens']:,} · " in page.locator("#cache-chart").text_content()
    assert page.locator("#prompts article").count() == n
    page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    assert (tmp_path / "report.png").stat().st_size > 10_000

    def last_point_of_first_line() -> float:
        points = chart.locator("polyline").first.get_attribute("points").split()
        return float(points[-1].split(",")[1])

    # cumulative values only grow: the line ends higher (a smaller y) than per prompt
    per_prompt = last_point_of_first_line()
    page.check("input[name=mode][value=cumulative]")
    assert last_point_of_first_line() <= per_prompt
    # pick one trace, then a turn of the side-by-side prompts, hide a strategy
    page.select_option("#series-select", index=1)
    assert chart.locator("polyline").count() == n
    assert page.locator("#cache-scope").inner_text().startswith("Trace ")
    page.select_option("#prompt-trace", index=1)
    page.select_option("#prompt-turn", "1")
    assert "Turns left" in page.locator("#prompts").inner_text()
    page.locator("#legend button").first.click()
    assert chart.locator("polyline").count() == n - 1
    page.locator("#prompt-strategies input").first.uncheck()
    assert page.locator("#prompts article").count() == n - 1
    assert problems == []


@pytest.mark.slow
def test_hostile_text_stays_text(browser, tmp_path):
    """Prompt text with markup is shown as text and does not break the page."""
    trace = load_trace(next(p for p in short_example_trace_paths() if p.stem == "phone-campaign"))
    evil = "</script><script>window.pwned = 1</script><!-- & \u2028"
    first = trace.turns[0]
    turns = (Turn.succeeded(1, first.program, first.result, memory=first.memory,
                            prints=[evil], tool_calls=first.tool_calls), *trace.turns[1:])
    trace = dataclasses.replace(trace, mission=f"{trace.mission} {evil}", turns=turns)
    result = compare_traces([trace], ["full-history", "single-user-coalesced"],
                            tokenizer="chars4", keep_prompts=1)
    out = write_html_report(result, tmp_path / "evil.html")
    page, problems = open_page(browser, out)
    assert page.evaluate("window.pwned === undefined")
    page.select_option("#prompt-turn", "2")
    assert evil.replace("\u2028", "") in page.locator("#prompts").inner_text().replace(
        "\u2028", "")
    assert problems == []


@pytest.mark.slow
def test_one_trace_and_no_turns(browser, tmp_path):
    trace = load_trace(short_example_trace_paths()[0])
    empty = dataclasses.replace(trace, turns=(), name="empty")
    # a run with no turn is skipped by default (issue 20); the report of such a run,
    # compared under --strict's opposite, is drawn from a result without prompts
    with pytest.raises(NothingCompared):
        compare_traces([empty], ["aggressive"], keep_prompts=1)
    result = ComparisonResult("o200k_base", "openai", get_price(None))
    out = write_html_report(result, tmp_path / "empty.html")
    page, problems = open_page(browser, out)
    assert "no prompts" in page.locator("#tokens-chart").inner_html()
    assert problems == []


def test_report_is_self_contained():
    html = html_report(compare_traces(SHORT, ["single-user-coalesced", "full-history"],
                                      tokenizer="chars4", keep_prompts=3))
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)
    assert "<link rel=\"stylesheet\"" not in html and "@import" not in html
    assert 'id="summary-table"' in html and 'id="tokens-chart"' in html
    data = html[html.index('id="report-data"'):]
    assert "</script" not in data[: data.index("</script>")]


def test_texts_are_stored_once():
    from turnpress.compare.html import report_data

    result = compare_traces(SHORT, tokenizer="chars4", keep_prompts=3)
    data = report_data(result)
    assert len(data["texts"]) == len(set(data["texts"]))
    system = load_trace(short_example_trace_paths()[0]).system_prompt
    assert data["texts"].count(system) == 1


# -- issue 9 item 4, issue 11 item 5 ---------------------------------------------------


def _transcripts():
    from test_compare import transcript

    long = transcript(name="long")
    short = dataclasses.replace(transcript(name="short"), turns=long.turns[:2])
    return long, short


def test_series_mean_over_running_traces_has_no_cliff():
    """The default chart is the mean over the traces still running, not a sum that drops
    where the shorter trace ends."""
    from turnpress.compare.html import report_data

    long, short = _transcripts()
    result = compare_traces([long, short], ["full-history"])
    everything = report_data(result)["series"][0]
    assert everything["running"] == [2, 2, 1, 1]
    rows = {(t.trace, t.turn): t.input_tokens for t in result.strategies[0].per_turn()}
    assert everything["input"][0][3] == rows[("long", 4)]
    assert everything["input"][0][1] == (rows[("long", 2)] + rows[("short", 2)]) / 2
    assert everything["billed"][3] == long.turns[3].usage.prompt_tokens
    assert report_data(result)["meta"]["as_run"]["prompts"] == 6


@pytest.mark.slow
def test_as_run_cost_and_folded_prompts_in_chromium(browser, tmp_path):
    long, short = _transcripts()
    result = compare_traces([long, short], ["full-history", "observation-masking",
                                            "aggressive"], keep_prompts=2)
    out = write_html_report(result, tmp_path / "transcripts.html")
    page, problems = open_page(browser, out)
    assert page.locator("#as-run-row").count() == 1
    assert "as run (billed)" in page.locator("#summary-table").inner_text()
    assert page.locator("#recommended").count() == 1
    chart = page.locator("#tokens-chart")
    assert chart.locator("#as-run-line").count() == 1
    assert page.locator("#as-run-key").count() == 1
    page.check("input[name=mode][value=cost]")
    assert "cumulative cost" in chart.inner_html()
    assert "$" in chart.text_content()
    assert chart.locator("#as-run-line").count() == 1
    page.locator("#as-run-key").click()
    assert chart.locator("#as-run-line").count() == 0
    # the long system prompt common to every column is folded once, above the columns
    page.select_option("#prompt-turn", "3")
    common = page.locator("#common-messages")
    assert common.count() == 1
    assert "common to all" in common.locator("summary").inner_text()
    assert "You are a coding agent." in common.text_content()
    assert "You are a coding agent." not in page.locator("#prompts").inner_text()
    assert problems == []


def test_report_of_a_comparison_with_a_failed_strategy(fresh_registry):
    """The prompts of the strategies that ran stay in their columns when one fails."""
    from turnpress import Strategy, hookimpl
    from turnpress.compare.html import report_data
    from turnpress.core.registry import get_registry

    class Late(Strategy):
        name = "late-failure"

        def to_messages(self, turns, memory, ctx):
            if len(turns) >= 2:
                raise RuntimeError("broken at turn 3")
            return [ctx.message("user", "late " + ctx.mission)]

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(Late)

    get_registry().register(Plugin(), "late-plugin")
    trace = load_trace(short_example_trace_paths()[0])
    result = compare_traces([trace], ["late-failure", "aggressive"], keep_prompts=1,
                            tokenizer="chars4")
    data = report_data(result)
    assert [s["label"] for s in data["strategies"]] == ["aggressive"]
    last = data["prompts"][0]["turns"][-1]
    assert len(last) == 1
    assert data["texts"][last[0][-1][1]] == trace.prompt(len(trace.turns),
                                                         "aggressive")[-1]["content"]
    html = html_report(result)
    assert "late-failure" in html and "broken at turn 3" in html


# -- the billed line where only some runs carry usage ----------------------------------


def _some_billed():
    """Two runs without usage (the second shorter) and one with usage, its first turn
    without (per-trace: usage on some turns only)."""
    from test_compare import transcript

    plain = transcript(usage=False, name="plain")
    system = {"role": "system", "content": "You are a coding agent."}  # a shorter prompt
    plain = dataclasses.replace(plain, system_prompt=system["content"],
                                preamble=(system, *plain.preamble[1:]))
    short = dataclasses.replace(plain, name="short", turns=plain.turns[:2])
    billed = transcript(name="billed")
    billed = dataclasses.replace(billed, turns=(dataclasses.replace(billed.turns[0],
                                                                    usage=None),
                                                *billed.turns[1:]))
    return [plain, short, billed]


def test_billed_line_beside_full_history_on_the_same_runs():
    """With usage on some runs only, the billed line is the mean over those runs and the
    series has full-history's mean over the same prompts beside it, so the chart's
    billed-to-full-history ratio is the table's as-run ratio."""
    from turnpress.compare.html import report_data

    traces = _some_billed()
    result = compare_traces(traces, ["aggressive", "full-history"], tokenizer="chars4")
    data = report_data(result)
    everything = data["series"][0]
    assert everything["running"] == [3, 3, 2, 2]
    assert everything["billed_runs"] == 1
    usage = [t.usage for t in traces[2].turns]
    assert everything["billed"] == [None, *(u.prompt_tokens for u in usage[1:])]
    rows = {(t.trace, t.turn): t.input_tokens
            for t in result.strategy("full-history").per_turn()}
    assert everything["billed_ref"] == [None, *(rows[("billed", n)] for n in (2, 3, 4))]
    # the mean over every run is not what the billed line is compared with
    assert everything["input"][1][1] != everything["billed_ref"][1]
    billed = sum(v for v in everything["billed_cost"] if v is not None)
    reference = sum(v for v in everything["billed_ref_cost"] if v is not None)
    assert billed / reference == pytest.approx(result.as_run.cost_ratio, rel=1e-6)
    # the run with usage on some turns has its own line of full-history on those turns
    one = data["series"][3]
    assert one["name"] == "billed" and one["billed_runs"] == 1
    assert one["billed_ref"] == everything["billed_ref"]
    assert all("billed_ref" not in s for s in data["series"][1:3])
    # without full-history there is nothing on the same prompts to draw
    alone = report_data(compare_traces(traces, ["aggressive"], tokenizer="chars4"))
    assert alone["series"][0]["billed_runs"] == 1
    assert alone["series"][0]["billed_ref"] is None and alone["series"][3]["billed_ref"] is None


def test_billed_line_where_every_prompt_has_usage_is_as_before():
    from turnpress.compare.html import report_data

    long, short = _transcripts()
    data = report_data(compare_traces([long, short], ["full-history"]))
    assert all(not {"billed_runs", "billed_ref", "billed_ref_cost"} & set(s)
               for s in data["series"])


@pytest.mark.slow
def test_billed_line_of_some_runs_in_chromium(browser, tmp_path):
    result = compare_traces(_some_billed(), ["full-history", "aggressive"], tokenizer="chars4")
    out = write_html_report(result, tmp_path / "some.html")
    page, problems = open_page(browser, out)
    chart = page.locator("#tokens-chart")
    assert chart.locator("#as-run-line").count() == 1
    assert chart.locator("#as-run-reference").count() == 1
    assert "1 of 3 runs with usage" in chart.locator("#as-run-note").text_content()
    assert "as run (billed, 1 of 3 runs)" in page.locator("#as-run-key").inner_text()
    page.check("input[name=mode][value=cost]")
    assert chart.locator("#as-run-reference").count() == 1
    page.locator("#as-run-key").click()
    assert chart.locator("#as-run-reference").count() == 0
    assert chart.locator("#as-run-note").count() == 0
    page.locator("#as-run-key").click()
    page.select_option("#series-select", index=1)  # a run without usage: no billed line
    assert chart.locator("#as-run-line").count() == 0
    page.select_option("#series-select", index=3)  # usage on turns 2-4 only
    assert chart.locator("#as-run-reference").count() == 1
    assert "turns with usage" in chart.locator("#as-run-note").text_content()
    assert problems == []
    # where every prompt has usage, no reference line and no note
    long, short = _transcripts()
    out = write_html_report(compare_traces([long, short], ["full-history"]),
                            tmp_path / "all.html")
    page, problems = open_page(browser, out)
    assert page.locator("#tokens-chart #as-run-line").count() == 1
    assert page.locator("#tokens-chart #as-run-reference").count() == 0
    assert page.locator("#tokens-chart #as-run-note").count() == 0
    assert page.locator("#as-run-key").inner_text().strip() == "as run (billed)"
    assert problems == []

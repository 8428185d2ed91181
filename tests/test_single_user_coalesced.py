"""single-user-coalesced, the default strategy: exact format rules of spec 02 / DESIGN §4."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scenarios import (
    docstrings,
    exploration,
    failed_in_a_row,
    failed_once,
    failed_then_recovered,
    final_turn,
    first_turn,
    many_prints,
    many_tool_calls,
    nil_and_empty,
    println_mode,
    redefinition_across_turns,
    redefinition_same_turn,
    side_effects,
)
from turn_strategies import History, breakpoints_hold, histories

from turnpress import Failure, Fn, Keyword, Tool, ToolCall, Turn, render

FINAL = "FINAL TURN - you must call (return result) or (fail reason) now."


#: the seed's strategy, by name (since issue 18 the default is price-scheduled)
NAME = "single-user-coalesced"


def user_message(scenario, **options) -> str:
    messages = render(scenario.turns, compression=("single-user-coalesced", options),
                      **scenario.render_kwargs())
    return messages[1]["content"]


def lines(scenario, **options) -> list[str]:
    return user_message(scenario, **options).split("\n")


# -- namespaces -------------------------------------------------------------------------


def test_fmt_001_and_fmt_004_tool_section() -> None:
    """NS-001 / FMT-001 / FMT-004: tools are shown in the tool/ namespace, `;; === tool/
    ===`, then `(tool/NAME P1 P2)      ; P1:T1, P2:T2
    -> RET - DESCRIPTION` (6 spaces), `(tool/NAME)` without params."""
    tools = {"search": Tool("search", {"query": "string", "limit": "integer"}, "list",
                            "Search products"),
             "get-inventory": Tool("get-inventory", {}, "string", "Warehouse inventory"),
             "ping": Tool("ping")}
    content = render([], mission="m", tools=tools, turns_left=3)[1]["content"]
    assert content.split("\n\n")[1] == "\n".join([
        ";; === tool/ ===",
        "(tool/search query limit)      ; query:string, limit:integer -> list - Search products",
        "(tool/get-inventory)      ; -> string - Warehouse inventory",
        "(tool/ping)      ; -> any",
    ])


def test_fmt_002_fmt_005_and_ns_008_data_section() -> None:
    """NS-002 / FMT-002 / FMT-005 / NS-008: input data keys are shown in `;; === data/ ===` with
    `data/NAME` + 20 spaces + `; TYPE, sample: SAMPLE`; nil and empty values show none."""
    content = user_message(nil_and_empty())
    section = content.split("\n\n")[2]
    assert section.split("\n")[0] == ";; === data/ ==="
    assert section.split("\n")[1].startswith(
        'data/products                    ; list[7], sample: [{:name "Laptop" :price 1200 ')
    assert section.split("\n")[2:] == ["data/discounts                    ; list[0]",
                                       "data/config                    ; nil"]


def test_fmt_003_and_ns_011_user_section_shows_accumulated_definitions() -> None:
    """FMT-003 / NS-011 / NS-003: turn N+1 shows the agent's definitions under
    `;; === user/ (your prelude) ===`."""
    content = user_message(exploration())
    assert ";; === user/ (your prelude) ===\nelectronics                         ; = list[4]" \
        in content


def test_ns_010_turn_one_has_no_user_section() -> None:
    """NS-010: on turn 1 the user/ section is omitted."""
    content = user_message(first_turn())
    assert "user/" not in content and "Tool calls" not in content
    assert content.endswith("\n\nTurns left: 5")


def test_ns_012_tool_and_data_sections_are_stable() -> None:
    """NS-012: tool/ and data/ are the same on every turn; only later sections change."""
    sc = exploration()
    before = user_message(first_turn())
    after = user_message(sc)
    head = "\n\n".join(before.split("\n\n")[:3])
    assert after.startswith(head + "\n\n;; === user/")


def test_fmt_006_to_fmt_008_functions() -> None:
    """FMT-006 / FMT-007 / FMT-008: `(name [params])` + 11 spaces + `; "doc" -> type`;
    the return type only once called; a bare line without doc."""
    content = lines(docstrings())
    assert '(fetch-users [category])           ; "Fetches users by category returns list of ' \
           'user maps" -> list[5]' in content
    assert '(helper [x])           ; "Doubles x simple"' in content
    assert "(bare [x])" in content


def test_fmt_009_and_fmt_010_values() -> None:
    """FMT-009 / FMT-010: `name` + 25 spaces + `; = type, sample: ...` or `; = type`."""
    assert "flag                         ; = boolean, sample: true" in lines(docstrings())
    assert "reviews                         ; = string" in lines(println_mode())


def test_functions_come_before_values_in_definition_order() -> None:
    """DEF-009: functions first, then values, each group in order of first definition."""
    content = lines(redefinition_across_turns())
    start = content.index(";; === user/ (your prelude) ===")
    assert content[start + 1:start + 5] == [
        '(double [x])           ; "Doubles x" -> integer',
        "threshold                         ; = integer, sample: 250",
        'label                         ; = string, sample: "cheap"',
        "picked                         ; = integer, sample: 6",
    ]


# -- definitions -------------------------------------------------------------------------


def test_def_001_redefinition_within_a_turn_shows_final_value() -> None:
    """DEF-001: (def x 1) (def x 2) in one turn shows only x = 2."""
    content = user_message(redefinition_same_turn())
    assert content.count("\nx ") == 1
    assert "x                         ; = integer, sample: 2" in content


def test_def_002_redefinition_across_turns_latest_wins() -> None:
    """DEF-002: turn 2 redefining turn 1's symbol overwrites it."""
    content = user_message(redefinition_across_turns())
    assert "threshold                         ; = integer, sample: 250" in content
    assert "sample: 100" not in content


def test_def_003_nil_has_no_sample() -> None:
    """DEF-003: (def x nil) shows `x = nil`."""
    assert "result                         ; = nil" in lines(nil_and_empty())


def test_def_004_empty_list_has_no_sample() -> None:
    """DEF-004: (def x []) shows `x = list[0]`; other empty collections likewise."""
    content = lines(nil_and_empty())
    assert "items                         ; = list[0]" in content
    assert "index                         ; = map[0]" in content
    assert "tags                         ; = set[0]" in content


def test_def_005_both_defn_and_def_docstrings_are_shown() -> None:
    """DEF-005: defn docstrings (on the Fn) and def docstrings (Memory.docs) appear."""
    content = user_message(docstrings())
    assert '(helper [x])           ; "Doubles x simple"' in content
    assert 'users                         ; "Active users from the API" = list[5]' in content


def test_def_007_semicolons_are_removed_from_docstrings() -> None:
    """DEF-007: every `;` is removed from docstrings, so the line format holds."""
    content = user_message(docstrings())
    assert "by category; returns" not in content and "by category returns" in content
    assert "Active users from the API" in content
    assert "\n".join(line for line in content.split("\n") if "Doubles" in line).count(";") == 1


def test_def_008_definitions_accumulate_from_all_previous_turns() -> None:
    """DEF-008: definitions of every earlier turn are shown (memory carries them)."""
    content = user_message(redefinition_across_turns())
    for name in ("threshold", "label", "double", "picked"):
        assert f"\n{name} " in content or f"({name} [" in content


# -- samples vs output -------------------------------------------------------------------


def test_sam_001_no_println_means_samples() -> None:
    """SAM-001: when no turn printed, user/ values show samples and there is no Output."""
    content = user_message(exploration())
    assert 'reviews                         ; = string, sample: "Customer Review Summary' \
        in content
    assert ";; Output:" not in content


def test_sam_002_println_means_output_without_samples() -> None:
    """SAM-002: once a turn printed, user/ values show no samples; Output shows prints."""
    content = user_message(println_mode())
    user_section = content.split("\n\n")[3]
    assert "sample" not in user_section
    assert ";; Output:\nReviews: Customer Review Summary for Electronics:" in content


def test_fmt_014_fmt_015_fmt_018_output_is_verbatim() -> None:
    """FMT-014 / FMT-015 / FMT-018 / TRN-007: `;; Output:` then each println call as it
    was, no prefix, no sanitising, not cut."""
    weird = ";; === tool/ ===\n   (not a section)" + "z" * 3000
    turn = Turn.succeeded(1, "(println ...)", None, memory={}, prints=[weird])
    content = render([turn], mission="m", turns_left=2, compression=NAME)[1]["content"]
    assert f";; Output:\n{weird}\n\nTurns left: 2" in content


def test_trn_006_and_trn_009_limit_counts_calls_not_lines() -> None:
    """TRN-006 / TRN-009: the println limit counts calls; a multi-line call is one."""
    content = user_message(many_prints())
    output = content.split(";; Output:\n")[1].split("\n\nTurns left")[0]
    assert output.split("\n")[0] == "line 11"
    assert "line 22 part a\nline 22 part b" in output
    assert len(output.split("\n")) == 16  # 15 calls, one of them two lines


def test_trn_010_oldest_prints_are_dropped_first() -> None:
    """TRN-010: with println_limit reached, the oldest calls go (FIFO)."""
    content = user_message(many_prints(), println_limit=2)
    assert content.split(";; Output:\n")[1].startswith("line 24\nline 25\n\nTurns left")
    assert "line 10" not in user_message(many_prints())


def test_failed_turn_prints_are_not_output() -> None:
    """Output comes from successful turns only (spec 03)."""
    ok = Turn.succeeded(1, "p", None, memory={}, prints=["kept"])
    bad = Turn.failed(2, "q", Failure("x", "boom"), memory={}, prints=["from failed turn"])
    content = render([ok, bad], mission="m", turns_left=2,
                     compression="single-user-coalesced")[1]["content"]
    assert "kept" in content and "from failed turn" not in content


# -- tool calls -------------------------------------------------------------------------


def test_tc_001_and_fmt_011_tool_calls_accumulate_across_turns() -> None:
    """TC-001 / FMT-011 / FMT-012 / TC-003: `;; Tool calls made:` lists every turn's calls
    as `;   name(args)`, args in Clojure syntax, parens always."""
    content = user_message(side_effects())
    assert "\n".join([
        ";; Tool calls made:",
        ';   make-call({:to "Alice" :message "Meeting at 3pm"})',
        ';   make-call({:to "Bob" :message "Bring documents"})',
        ';   send-email({:to "team@example.com" :subject "Update"})',
    ]) in content
    assert ";   get-inventory()" in user_message(exploration())


def test_fmt_013_no_tool_calls_made() -> None:
    """FMT-013: once turns ran without calling anything: `;; No tool calls made`."""
    assert ";; No tool calls made" in user_message(redefinition_same_turn())
    assert "No tool calls" not in user_message(first_turn())


def test_tc_002_and_tc_007_limit_keeps_the_newest_calls() -> None:
    """TC-002 / TC-007: tool_call_limit keeps the 20 most recent calls, dropping the
    oldest first."""
    content = user_message(many_tool_calls())
    calls = [line for line in content.split("\n") if line.startswith(";   lookup(")]
    assert len(calls) == 20
    assert calls[0] == ';   lookup("item-11" 11)' and calls[-1] == ';   lookup("item-30" 30)'
    assert len([x for x in lines(many_tool_calls(), tool_call_limit=3)
                if x.startswith(";   ")]) == 3


def test_tc_004_results_are_not_in_the_tool_call_list() -> None:
    """TC-004: the list shows names and arguments, never results."""
    content = user_message(exploration())
    calls = content.split(";; Tool calls made:\n")[1].split("\n\n")[0]
    assert calls == ';   search-reviews("Electronics")\n;   get-inventory()'


def test_tc_005_and_tc_006_results_reach_the_prompt_through_definitions() -> None:
    """TC-005 / TC-006: a tool call carries name, args and result; a result stored with
    def appears in user/ (with a sample when nothing was printed)."""
    call = ToolCall("fetch", ("users",), [{"id": 1}, {"id": 2}])
    assert (call.name, call.args, call.result) == ("fetch", ("users",), [{"id": 1}, {"id": 2}])
    turn = Turn.succeeded(1, '(def users (tool/fetch "users"))', None,
                          memory={"users": call.result}, tool_calls=[call])
    content = render([turn], mission="m", turns_left=2, compression=NAME)[1]["content"]
    assert "users                         ; = list[2], sample: [{:id 1} {:id 2}]" in content


def test_failed_turns_tool_calls_are_listed() -> None:
    """Tool calls of failed turns are listed: their side effects happened."""
    content = user_message(failed_in_a_row())
    assert ';   fetch-data("orders" [1 2 3 ...] (5 items, showing first 3))' in content


# -- messages -------------------------------------------------------------------------


def test_msg_001_and_msg_002_single_user_message() -> None:
    """MSG-001 / MSG-002 / CMP-001: all successful turns accumulate into one USER message:
    [SYSTEM, USER]; the LLM adds the ASSISTANT message."""
    for scenario in (exploration(), println_mode(), many_prints(), failed_then_recovered()):
        messages = render(scenario.turns, compression=NAME, **scenario.render_kwargs())
        assert [m["role"] for m in messages] == ["system", "user"]


def test_cmp_001_old_code_is_not_repeated() -> None:
    """CMP-001: successful turns are compressed to a summary; their code is gone."""
    sc = exploration()
    content = user_message(sc)
    assert "(def electronics" not in content and "filter" not in content


def test_msg_003_msg_004_mission_first_then_blank_line() -> None:
    """MSG-003 / MSG-004: the mission comes first, then one blank line."""
    content = user_message(exploration())
    assert content.startswith("Find well-reviewed products in stock\n\n;; === tool/ ===")


def test_msg_005_turns_left_and_final_turn() -> None:
    """MSG-005: `Turns left: N` at the end, the final-turn warning when N == 1."""
    assert user_message(exploration()).endswith("\n\nTurns left: 4")
    assert user_message(final_turn()).endswith("\n\n" + FINAL)


def test_msg_006_system_prompt_unchanged() -> None:
    """MSG-006: the SYSTEM message is the system prompt as given."""
    sc = failed_then_recovered()
    assert render(sc.turns, **sc.render_kwargs())[0] == {"role": "system",
                                                         "content": sc.system_prompt}


@pytest.mark.parametrize("options", [{}, {"errors": "pairs"}, {"println_limit": 0,
                                                               "tool_call_limit": 0}])
def test_msg_007_mission_is_never_removed(options: dict) -> None:
    """MSG-007: the mission is never removed, whatever the history."""
    for scenario in (first_turn(), many_prints(), many_tool_calls(), failed_in_a_row(),
                     final_turn()):
        assert user_message(scenario, **options).startswith(scenario.mission + "\n\n")


def test_fmt_016_section_order() -> None:
    """FMT-016: tool/ -> data/ -> user/ -> Tool calls -> Output, empty ones omitted."""
    content = user_message(final_turn())
    marks = [";; === tool/ ===", ";; === data/ ===", ";; === user/", ";; Tool calls made:",
             ";; Output:", "FINAL TURN"]
    positions = [content.index(m) for m in marks]
    assert positions == sorted(positions)


def test_fmt_017_one_consolidated_list() -> None:
    """FMT-017: summaries are consolidated across turns: one list, not per-turn blocks."""
    content = user_message(side_effects())
    assert content.count(";; Tool calls made:") == 1
    assert user_message(many_prints()).count(";; Output:") == 1


# -- errors -------------------------------------------------------------------------


def test_err_003_last_failed_attempt_is_shown() -> None:
    """ERR-003 / CMP-002: a failed turn's full code and error message appear."""
    content = user_message(failed_once())
    assert content.endswith("\n".join([
        "---", "Your previous attempt:", "```clojure", "(def x (broken-code))", "```", "",
        "Error: undefined symbol 'broken-code'", "---", "", "Turns left: 3"]))


def test_err_001_failed_turns_are_not_compressed_but_collapse_after_recovery() -> None:
    """ERR-001: a failed turn is kept in full while the agent is still failing; once it
    recovered, only its effects remain (spec 03's conditional collapsing)."""
    assert "Your previous attempt" in user_message(failed_once())
    content = user_message(failed_then_recovered())
    assert "broken-code" not in content and "Your previous attempt" not in content


def test_only_the_most_recent_failure_is_shown_by_default() -> None:
    content = user_message(failed_in_a_row())
    assert content.count("Your previous attempt") == 1
    assert "broken-code" not in content
    assert "Error: tool 'fetch-data' failed: takes 1 argument, got 2" in content


def test_err_002_and_cmp_003_pairs_keep_every_failed_turn() -> None:
    """ERR-002 / CMP-003: with errors="pairs" each failed turn keeps its full
    ASSISTANT/USER pair after the USER message, with its own turns-left line."""
    sc = failed_in_a_row()
    messages = render(sc.turns, compression=("single-user-coalesced", {"errors": "pairs"}),
                      **sc.render_kwargs())
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user",
                                             "assistant", "user"]
    assert messages[1]["content"].endswith("\n\nTurns left: 4")
    assert messages[2]["content"] == sc.turns[1].raw_response
    assert messages[3]["content"] == "Error: undefined symbol 'broken-code'\n\nTurns left: 3"
    assert messages[4]["content"] == sc.turns[2].raw_response
    assert messages[5]["content"].endswith("got 2\n\nTurns left: 2")
    assert "Your previous attempt" not in messages[1]["content"]


def test_cmp_004_compression_happens_at_render_time() -> None:
    """CMP-004: turns are stored in full; each render compresses them anew, so the same
    turns render differently under another strategy or limit."""
    sc = many_prints()
    assert sc.turns[0].prints == ("line 1", "line 2", "line 3", "line 4", "line 5")
    assert "line 1\n" not in user_message(sc)
    assert "line 1\n" in user_message(sc, println_limit=25)


def test_final_turn_in_pairs_mode() -> None:
    sc = failed_once()
    messages = render(sc.turns, compression="single-user-coalesced:errors=pairs",
                      **{**sc.render_kwargs(), "turns_left": 1})
    assert messages[-1]["content"].endswith(FINAL)


def test_keyword_and_function_values_in_user_section() -> None:
    turn = Turn.succeeded(1, "p", None, memory={"status": Keyword("active"),
                                                "f": Fn(("a", "b"), None, "map[2]")})
    content = render([turn], mission="m", turns_left=2, compression=NAME)[1]["content"]
    assert "(f [a b])           ; -> map[2]" in content
    assert "status                         ; = keyword, sample: :active" in content


def test_pairs_mode_after_a_recovery_ends_with_the_current_turns_left() -> None:
    """Issue 12 item 7 / DESIGN §4: pairs show only the trailing streak of failures; after
    a recovery the prompt ends with the USER message and the current turns left."""
    sc = failed_then_recovered()
    messages = render(sc.turns, compression="single-user-coalesced:errors=pairs",
                      **sc.render_kwargs())
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"].endswith(f"\n\nTurns left: {sc.turns_left}")
    assert "broken-code" not in messages[1]["content"]


def test_pairs_mode_shows_only_the_trailing_streak() -> None:
    """A failure before a success is history; the failures after it stay as pairs."""
    sc = failed_then_recovered()
    extra = Turn.failed(4, "(oops)", Failure("undefined_symbol", "undefined symbol 'oops'"),
                        memory=sc.turns[-1].memory)
    messages = render([*sc.turns, extra], compression="single-user-coalesced:errors=pairs",
                      **{**sc.render_kwargs(), "turns_left": 3})
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"].endswith("Turns left: 4")
    assert messages[3]["content"] == "Error: undefined symbol 'oops'\n\nTurns left: 3"
    assert "broken-code" not in "".join(m["content"] for m in messages)


@settings(max_examples=40, deadline=None)
@given(histories(min_turns=1), st.sampled_from(["last", "pairs"]))
def test_stable_head_first_and_its_breakpoints_are_repeated(history: History,
                                                             errors: str) -> None:
    """DESIGN §11: system prompt, mission, tool/ and data/ come first; the breakpoints at
    the end of the system prompt and of that head are repeated by the next prompt."""
    spec = ("single-user-coalesced", {"errors": errors})
    for n in range(len(history.turns)):
        assert breakpoints_hold(history, n, spec)
        messages = history.prompt(n + 1, spec)
        assert messages[0]["content"] == history.system_prompt
        assert messages[1]["content"].startswith(history.mission.rstrip("\n"))

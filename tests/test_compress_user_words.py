"""compress() on tool-calling transcripts: the user's own words, non-text parts, and the
turns-left line (ux-b items 2, 3, 5 and 14; DESIGN §10 mapping).

A user (or system) message among a turn's feedback, once the run made a tool call, is
the user's own words: never shown as tool output, cut or dropped; the newest ones follow
a coalesced view as sent. Transcripts without tool calls (mini-swe-agent: observations
come as user messages) keep their rendering.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from turnpress import Compressor, Strategy, compress
from turnpress.core.compression import strategy_names


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


#: a pasted 100-line file plus a question: longer than any head + tail cut
LONG = "\n".join(f"line {k} of the pasted config: key_{k} = {k}" for k in range(100)) + (
    "\nWhich key is wrong in this config?")
NEWEST = "Thanks! Now what is in notes.txt?"
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
AUDIO = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a shell agent."},
    {"role": "user", "content": [{"type": "text", "text": "Count the files in /tmp."}, IMAGE]},
    {"role": "assistant", "content": "Let me look.",
     "tool_calls": [call("c1", "bash", command="ls /tmp | wc -l")]},
    {"role": "tool", "tool_call_id": "c1", "content": "<returncode>0</returncode>\n42"},
    {"role": "user", "content": LONG},
    {"role": "assistant", "content": None, "tool_calls": [call("c2", "bash", command="cat x")]},
    {"role": "tool", "tool_call_id": "c2", "content": "out\n" * 80},
    {"role": "assistant", "content": None, "tool_calls": [call("c3", "bash", command="ls")]},
    {"role": "tool", "tool_call_id": "c3", "content": "a\nb\nc"},
    {"role": "assistant", "content": "There are 42 files."},
    {"role": "user", "content": NEWEST},
]

#: every built-in strategy, plus the option sets that compact or mask the newest turn
STRATEGIES = [*strategy_names(), "observation-masking:window=0,step=1",
              "progressive-batch:min_preserved=0,batch_size=1",
              "progressive-batch:min_preserved=1,batch_size=1",
              "rolling-window:window=1,step=1", "rolling-window:window=0,step=1",
              "checkpoint-coalesced:every=1", "checkpoint-coalesced:every=2,turn_lines=0",
              "clear-tool-uses:trigger=0,keep=1", "single-user-coalesced:errors=pairs"]


def texts(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
        out.append(content or "")
    return out


def output_sections(text: str) -> list[str]:
    """The bodies of the ``;; Output:`` / ``;; Output by turn:`` sections of a view."""
    return [m.group(1) for m in re.finditer(r";; Output[^\n]*:\n(.*?)(?=\n\n;; |\Z)", text,
                                            re.S)]


@pytest.mark.parametrize("name", STRATEGIES)
def test_user_words_are_never_output_cut_or_dropped(name: str) -> None:
    """ux-b item 2: a mid-run user message stays whole, outside any Output section, and the
    newest request (after the last assistant message) is the last message, as sent."""
    out = compress(CHAT, strategy=name)
    assert out[-1] == CHAT[-1], name
    assert any(LONG in t for t in texts(out)), f"{name}: the long user message was cut/dropped"
    for text in texts(out):
        for section in output_sections(text):
            assert "Which key is wrong" not in section, name
            assert NEWEST not in section, name


@pytest.mark.parametrize("name", ["single-user-coalesced", "aggressive",
                                  "checkpoint-coalesced:every=1"])
def test_coalesced_view_labels_the_users_messages(name: str) -> None:
    """ux-b item 2: the coalesced view says who spoke and when; the newest request follows
    the view as its own USER message."""
    out = compress(CHAT, strategy=name)
    assert [m["role"] for m in out] == ["system", "user", "user"]
    view = texts(out)[1]  # its text (the mission's image follows it, as a part)
    assert ";; User messages:\n;; user, after turn 1:\n" + LONG in view
    assert NEWEST not in view


def test_mid_run_system_message_is_labelled_as_system() -> None:
    """ux-b item 2: a mid-run system message is not a tool output either."""
    chat = [*CHAT[:4], {"role": "system", "content": "Budget: 2 more calls."}, *CHAT[5:]]
    view = texts(compress(chat, strategy="single-user-coalesced"))[1]
    assert ";; system, after turn 1:\nBudget: 2 more calls." in view
    assert all("Budget" not in s for s in output_sections(view))


@pytest.mark.parametrize("strategy", ["single-user-coalesced", "aggressive"])
def test_mid_run_developer_message_is_the_users_words_too(strategy) -> None:
    """OpenAI's `developer` role is its newer `system` (the readers read it so): mid-run it
    was shown as tool output, where a system message was not."""
    chat = [*CHAT[:4], {"role": "developer", "content": "Budget: 2 more calls."}, *CHAT[5:]]
    view = texts(compress(chat, strategy=strategy))[1]
    assert ";; developer, after turn 1:\nBudget: 2 more calls." in view
    assert all("Budget" not in s for s in output_sections(view))


@pytest.mark.parametrize("strategy", strategy_names())
def test_a_leading_developer_message_stays_the_system_prompt(strategy) -> None:
    """OpenAI's `developer` role at the start is the system prompt (README "How a
    transcript becomes turns"): every strategy keeps it first, as its own message with
    its role, as it keeps a `system` one (the coalesced views folded it into the user
    message)."""
    for role in ("system", "developer"):
        chat = [{"role": role, "content": "You are a shell agent."}, *CHAT[1:]]
        head = compress(chat, strategy=strategy)[0]
        assert (head["role"], head["content"]) == (role, "You are a shell agent."), role


def test_anthropic_text_beside_tool_results_is_the_users_words() -> None:
    """ux-b items 2 and 6: Anthropic text blocks sent next to tool_results ("Also check
    /var.") are the user's words: kept by progressive-batch recaps and the default view."""
    system = "You are a shell agent."
    messages = [
        {"role": "user", "content": "Count files in /tmp."},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": "x\n" * 40},
                                     {"type": "text", "text": "Also check /var."}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t2", "name": "bash", "input": {"command": "ls /var"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2",
                                      "content": "y\n" * 40}]},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "Thanks."},
    ]
    for name in ("progressive-batch:min_preserved=1,batch_size=1", "single-user-coalesced",
                 "observation-masking:window=0,step=1", "checkpoint-coalesced"):
        _, out = compress((system, messages), strategy=name, format="anthropic")
        dumped = json.dumps(out)
        assert "Also check /var." in dumped, name
        assert "Thanks." in dumped, name


def test_transcripts_without_tool_calls_keep_their_rendering() -> None:
    """ux-b item 2: mini-swe-agent style (no tool_calls; observations come as user
    messages): a long observation is still cut and shown as output."""
    obs = "\n".join(f"row {k}" for k in range(100))
    chat = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"},
            {"role": "assistant", "content": "```bash\nls\n```"},
            {"role": "user", "content": obs}]
    view = texts(compress(chat, strategy="single-user-coalesced"))[1]
    assert ";; Output:\nrow 0\n" in view and "lines elided" in view
    assert ";; User messages:" not in view
    assert len(compress(chat, strategy="single-user-coalesced")) == 2
    masked = compress([*chat, {"role": "assistant", "content": "ok"},
                       {"role": "user", "content": "done"}],
                      strategy="observation-masking:window=0,step=1")
    assert masked[3]["content"].startswith("[output of turn 1 omitted")


def test_words_before_the_first_tool_call_read_as_before() -> None:
    """A turn's reading depends only on the turns up to it (earlier turns render the same
    as the run grows): before the first tool call a user message is feedback."""
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "List /tmp."},
            {"role": "assistant", "content": None, "tool_calls": [call("c1", "ls")]},
            {"role": "tool", "tool_call_id": "c1", "content": "a"},
            {"role": "user", "content": "And /var?"}]
    out = compress(chat, strategy="single-user-coalesced")
    assert out[-1] == chat[-1]
    assert ";; Output:\nList /tmp.\na" in out[0]["content"]


# -- item 3: non-text parts --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["single-user-coalesced", "aggressive", "checkpoint-coalesced",
                                  "rolling-window:window=1,step=1"])
def test_coalesced_views_mark_non_text_parts(name: str) -> None:
    """ux-b item 3: an image in the mission and an audio-only request are not dropped
    silently: the view shows [image] / [audio] where they were, and the mission's image
    itself follows the view's text (it is what the user gave)."""
    out = compress(CHAT, strategy=name)
    assert "Count the files in /tmp.\n[image]" in texts(out)[1]
    assert IMAGE in out[1]["content"]
    audio_only = [*CHAT[:3], CHAT[3], {"role": "user", "content": [AUDIO]},
                  {"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    out = compress(audio_only, strategy=name)
    # in the view as a marker, or (a recent turn kept as sent) the part itself
    assert "[audio]" in texts(out)[1] or any(
        isinstance(m["content"], list) and AUDIO in m["content"] for m in out), name


@pytest.mark.parametrize("name", ["full-history", "observation-masking:window=0,step=1",
                                  "per-turn-summary", "rolling-window", "clear-tool-uses"])
def test_strategies_keeping_messages_keep_the_parts(name: str) -> None:
    """ux-b item 3: strategies that keep original messages keep the parts themselves."""
    assert IMAGE in compress(CHAT, strategy=name)[1]["content"]


def test_newest_request_keeps_its_image() -> None:
    """ux-b item 3: the newest request follows the view as sent, image included."""
    ask = {"role": "user", "content": [{"type": "text", "text": "What is this?"}, IMAGE]}
    out = compress([*CHAT[:-1], ask])
    assert out[-1] == ask


# -- items 5 and 14: tools and turns_left ------------------------------------------------------


class Echo(Strategy):
    """Shows what a plugin strategy gets: tools, turns left."""

    name = "echo-ctx"

    def to_messages(self, turns, memory, ctx):
        line = ctx.turns_left_line(ctx.turns_left)
        return [ctx.message("user", f"{sorted(ctx.tools)}|{ctx.turns_left_known}|{line}")]


def test_no_turns_left_given_prints_no_turns_left_line() -> None:
    """ux-b item 14: without turns_left, ctx.turns_left_line gives "" (never
    "Turns left: 0"), from compress() and from Compressor.messages()."""
    assert compress(CHAT, strategy=Echo) == [{"role": "user", "content": "[]|False|"}]
    compressor = Compressor(Echo)
    compressor.extend(CHAT)
    assert compressor.messages() == [{"role": "user", "content": "[]|False|"}]
    assert compressor.messages(turns_left=1)[0]["content"].startswith("[]|True|FINAL TURN")
    assert compress(CHAT, strategy=Echo, turns_left=0)[0]["content"] == "[]|True|Turns left: 0"


@pytest.mark.parametrize("name", STRATEGIES)
def test_no_builtin_strategy_prints_turns_left_zero(name: str) -> None:
    """ux-b item 14, built-in strategies (progressive-batch used to close a fully compacted
    transcript with "Turns left: 0")."""
    cut = CHAT[:9]  # ends with a tool result: no request to close the prompt
    for messages in (CHAT, cut):
        assert "Turns left" not in json.dumps(compress(messages, strategy=name)), name


def test_progressive_batch_closes_with_a_line_asking_to_continue() -> None:
    """ux-b item 14: every turn compacted and no turns_left: a USER line, not a count."""
    out = compress(CHAT[:9], strategy="progressive-batch:min_preserved=0,batch_size=1")
    assert out[-1] == {"role": "user", "content": "Continue from the recaps above."}
    out = compress(CHAT[:9], strategy="progressive-batch:min_preserved=0,batch_size=1",
                   turns_left=4)
    assert out[-1] == {"role": "user", "content": "Turns left: 4"}


def test_tools_reach_plugin_strategies_and_change_no_builtin_one() -> None:
    """ux-b item 5: what the docstring says: ``tools`` is ctx.tools for a plugin strategy;
    built-in strategies render a transcript the same with or without it."""
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {}}}]
    assert compress(CHAT, strategy=Echo, tools=tools)[0]["content"].startswith("['bash']|")
    for name in strategy_names():
        assert compress(CHAT, strategy=name, tools=tools) == compress(CHAT, strategy=name)

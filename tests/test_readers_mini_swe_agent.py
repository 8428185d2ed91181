"""The mini-swe-agent reader: extra left out, billed usage, return codes, the exit message."""

from __future__ import annotations

import json

from click.testing import CliRunner
from transcripts_helpers import data, load_json, sent_before_each_assistant

from turnpress import Failure, load_trace
from turnpress.cli import main
from turnpress.core.model import Usage
from turnpress.core.providers import to_openai
from turnpress.plugins.readers.mini_swe_agent import EXIT_REASON, detect

REL = "mini/fix-typo.traj.json"


def test_mapping_usage_and_failures():
    trace = load_trace(data(REL))
    assert trace.source == "mini-swe-agent" and trace.name == "demo__fix-typo"
    assert trace.mission.startswith("<pr_description>")
    assert len(trace.turns) == trace.max_turns == 3
    # usage: OpenAI cached_tokens when present, else DeepSeek prompt_cache_hit_tokens
    assert [t.usage for t in trace.turns] == [Usage(900, 640), Usage(980, 896),
                                              Usage(1060, 960)]
    assert trace.turns[0].success
    assert trace.turns[1].result == Failure("nonzero_returncode",
                                            "return code 127: bash: codespell: command not found")
    assert trace.turns[2].tool_calls[0].result is None  # the exit message answers nothing


def test_extra_is_not_sent_and_every_other_key_is_kept():
    trace = load_trace(data(REL))
    first = trace.turns[0].messages[0]
    assert "extra" not in first
    assert first["function_call"] is None and first["tool_calls"][0]["index"] == 0


def test_exit_message_is_skipped_with_its_reason_and_trace_show_says_so():
    raw = load_json(REL)
    trace = load_trace(data(REL))
    assert trace.skipped == ({"index": 7, "reason": EXIT_REASON, "message": raw["messages"][7]},)
    result = CliRunner().invoke(main, ["trace", "show", str(data(REL))])
    assert result.exit_code == 0, result.output
    assert f"skipped message 7 (exit): {EXIT_REASON}" in result.output
    assert "--- turn 2: FAILED (nonzero_returncode) ---" in result.output


def test_full_history_replays_each_prompt_exactly():
    """Every message as sent, less what is no field of an OpenAI message: extra, and
    (issue 19) LiteLLM's provider_specific_fields, which the trace keeps."""
    sent = [{k: v for k, v in m.items() if k not in ("extra", "provider_specific_fields")}
            for m in load_json(REL)["messages"] if m["role"] != "exit"]
    assert "provider_specific_fields" in load_trace(data(REL)).turns[0].messages[0]
    trace = load_trace(data(REL))
    for n, prefix in enumerate(sent_before_each_assistant(sent), 1):
        assert json.dumps(to_openai(trace.prompt(n, "full-history"))) == json.dumps(prefix)


def test_detect(tmp_path):
    assert detect({"trajectory_format": "mini-swe-agent-1.1", "messages": []}, None)
    assert not detect({"trajectory_format": "swe-agent", "messages": []}, None)
    assert detect({"info": {}, "messages": []}, tmp_path / "x.traj.json")
    assert not detect({"info": {}, "messages": []}, tmp_path / "x.json")


def test_exception_info_fails_the_turn(tmp_path):
    raw = load_json(REL)
    raw["messages"][3]["extra"]["exception_info"] = "TimeoutExpired: took longer than 60s"
    path = tmp_path / "t.traj.json"
    path.write_text(json.dumps(raw))
    assert load_trace(path).turns[0].result == Failure(
        "exception", "TimeoutExpired: took longer than 60s")


def test_text_based_trajectory_observations_are_user_feedback(tmp_path):
    """mini-swe-agent 1.0 without tool calls: the command is in the text, the observation
    a user message (its output becomes the turn's prints; a return code still counts)."""
    raw = {"trajectory_format": "mini-swe-agent-1", "info": {}, "messages": [
        {"role": "system", "content": "S"}, {"role": "user", "content": "task"},
        {"role": "assistant", "content": "THOUGHT\n```bash\nfalse\n```"},
        {"role": "user", "content": "<returncode>1</returncode>\n<output>\n</output>"},
        {"role": "assistant", "content": "```bash\necho done\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\ndone\n</output>"}]}
    path = tmp_path / "old.traj.json"
    path.write_text(json.dumps(raw))
    first, second = load_trace(path).turns
    assert first.result == Failure("nonzero_returncode", "return code 1")
    assert first.prints == ("<returncode>1</returncode>\n<output>\n</output>",)
    assert second.success and second.tool_calls == ()

"""Issue 20 item 6 (memory of a large transcript): reading a run keeps what its trace
holds, not the whole parsed file (the provider metadata around each message)."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

from turnpress.core.trace import iter_traces


def _metadata_heavy_run(path: Path, turns: int = 150) -> int:
    """A mini-swe-agent run whose file is almost all provider metadata (``extra``, as
    in the real runs); returns the file's size."""
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "Fix the typo in README."}]
    for k in range(turns):
        response = {"id": f"resp-{k}", "model": "deepseek-chat",
                    "usage": {"prompt_tokens": 100 + k, "completion_tokens": 5,
                              "prompt_tokens_details": {"cached_tokens": 64}},
                    "choices": [{"index": i, "logprobs": {"tokens": [f"t{k}-{i}-{j}"
                                                                     for j in range(40)]}}
                                for i in range(8)]}
        messages.append({"role": "assistant", "content": f"THOUGHT {k}\n```bash\nls\n```",
                         "extra": {"response": response, "cost": 0.001}})
        messages.append({"role": "user", "content": f"<returncode>0</returncode>\n{k}",
                         "extra": {"raw_output": f"{k}", "timestamp": 1.5 * k}})
    path.write_text(json.dumps({"trajectory_format": "mini-swe-agent-1.1", "info": {},
                                "messages": messages}), encoding="utf-8")
    return path.stat().st_size


def test_the_parsed_file_is_not_kept_while_its_trace_is_used(tmp_path):
    path = tmp_path / "heavy.traj.json"
    size = _metadata_heavy_run(path)
    _metadata_heavy_run(tmp_path / "warm.traj.json", turns=1)
    next(iter_traces(tmp_path / "warm.traj.json"))  # plugins loaded before measuring
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        traces = iter_traces(path)  # as a comparison reads a file: the generator is alive
        trace = next(traces)        # while its trace is compared
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(trace.turns) == 150 and trace.turns[0].usage is not None
    assert "extra" not in trace.turns[0].messages[0]
    # the parsed metadata alone is several times the file; the trace is a fraction of it
    assert held < size / 2, f"{held} bytes held for a {size}-byte file"
    traces.close()

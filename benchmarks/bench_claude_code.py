"""Claude Code logs: the reader and the anthropic cache model on real runs (not a test).

Reads ``../shared/corpus/claude-code/*.jsonl`` (or ``/work/shared/corpus/claude-code/``;
skipped with a message when absent): two real ``claude -p --output-format
stream-json`` runs billed with Anthropic's usage fields. For each run it prints:

- **reader check**: the usage counted once per ``message.id`` on the main thread
  against the final ``result`` line's usage (they must be equal);
- **billed** cached share: ``cache_read_input_tokens`` over the whole prompt
  (``input_tokens`` + read + written), summed over the main thread's calls;
- **modelled** cached share of ``full-history`` under ``--cache anthropic``, twice:
  on the log as it is, and with the prefix Claude Code does not log (its system
  prompt and tool definitions) put back as a system prompt of the same size, N =
  the first call's billed prompt minus the first logged prompt's tokens (o200k
  tokens stand in for Claude's own, so the size is approximate).

Run: ``python benchmarks/bench_claude_code.py [CORPUS_DIR]``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from turnpress.compare import compare_traces
from turnpress.core.tokens import get_tokenizer, prompt_text
from turnpress.core.trace import iter_traces

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = (ROOT.parent / "shared" / "corpus" / "claude-code",
              Path("/work/shared/corpus/claude-code"))


def result_usage(path: Path) -> dict[str, int]:
    """The final ``result`` line's input usage."""
    for line in path.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("type") == "result":
            u = event["usage"]
            return {k: u.get(k, 0) for k in ("input_tokens", "cache_read_input_tokens",
                                              "cache_creation_input_tokens")}
    return {}


def modelled_share(trace) -> float:
    """The cached share of full-history under the anthropic cache model."""
    row = compare_traces([trace], ["full-history"], cache="anthropic",
                         price="anthropic-sonnet-4").to_json()["strategies"][0]
    return row["cached_tokens"] / row["input_tokens"] if row["input_tokens"] else 0.0


def main(directory: str | None = None) -> None:
    """Print the reader check and the calibration of each run."""
    paths = []
    for candidate in ([Path(directory)] if directory else CANDIDATES):
        paths = sorted(candidate.glob("*.jsonl"))
        if paths:
            break
    if not paths:
        print("skipped: no Claude Code corpus (../shared/corpus/claude-code/)")
        return
    tokens = get_tokenizer("o200k_base")
    for path in paths:
        [trace] = list(iter_traces(path))
        usages = [t.usage for t in trace.turns if t.usage is not None]
        prompt = sum(u.prompt_tokens for u in usages)
        read = sum(u.cached_tokens for u in usages)
        written = sum(u.cache_write_tokens for u in usages)
        final = result_usage(path)
        total = sum(final.values())
        check = "equal" if (prompt, read, written) == (
            total, final["cache_read_input_tokens"],
            final["cache_creation_input_tokens"]) else "DIFFERENT"
        first = tokens.count(prompt_text(trace.prompt(1, "full-history")))
        unlogged = max(usages[0].prompt_tokens - first, 0)
        filler = {"role": "system", "content": " word" * unlogged}
        restored = replace(trace, system_prompt=filler["content"],
                           preamble=(filler, *trace.preamble))
        print(f"{path.name[:60]}: {len(trace.turns)} calls; usage per message.id "
              f"{prompt}/{read}/{written} vs result line {total}/"
              f"{final['cache_read_input_tokens']}/{final['cache_creation_input_tokens']} "
              f"({check})")
        print(f"  billed cached share {read / prompt:.1%}; modelled full-history: "
              f"{modelled_share(trace):.1%} as logged, {modelled_share(restored):.1%} with "
              f"the unlogged prefix (~{unlogged} tokens) restored")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)

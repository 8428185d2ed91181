"""``turnpress compare`` at scale: --jobs speed-up and flat memory (not a test).

1. Builds, in a temporary directory, a JSONL corpus of N (default 1,000) traces the
   size of the bundled ones: the bundled traces in turn, each with its own mission
   so that no two traces share their prompts.
2. Times ``turnpress compare CORPUS --jobs 1`` and ``--jobs 2`` (the real command,
   each in a fresh process, default strategies, tokenizer and cache model) in the
   same run and prints the ratio.
3. Prints the peak RSS of ``turnpress compare`` (``--jobs 1``: everything in one
   process) on the first 100 traces and on all of them: streaming keeps it flat.

Run: ``python benchmarks/bench_compare.py [N [ROUNDS]]`` (ROUNDS of interleaved timings).
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from turnpress import load_trace
from turnpress.core.trace import save_traces
from turnpress.examples import example_trace_paths

RSS_CODE = """
import resource, sys
from turnpress.cli import main
try:
    main(["compare", sys.argv[1], "--jobs", "1"], standalone_mode=False)
finally:
    sys.stdout.flush()
    print("maxrss_kb", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
"""


def build_corpus(directory: Path, n: int) -> Path:
    """A JSONL file of ``n`` distinct bundled-size traces."""
    bundled = [load_trace(p) for p in example_trace_paths()]
    traces = (dataclasses.replace(bundled[i % len(bundled)],
                                  mission=f"{bundled[i % len(bundled)].mission} (run {i + 1})",
                                  name=f"run-{i + 1:04d}")
              for i in range(n))
    path = directory / f"corpus-{n}.jsonl"
    save_traces(traces, path)
    return path


def time_compare(path: Path, jobs: int) -> float:
    """Wall seconds of ``turnpress compare PATH --jobs JOBS`` in a fresh process."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "turnpress", "compare", str(path), "--jobs",
                    str(jobs)], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def peak_rss_mb(path: Path) -> float:
    """Peak RSS (MB) of one ``turnpress compare PATH --jobs 1`` process."""
    done = subprocess.run([sys.executable, "-c", RSS_CODE, str(path)], check=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    line = next(ln for ln in done.stderr.splitlines() if ln.startswith("maxrss_kb"))
    return int(line.split()[1]) / 1024


def main(n: int = 1000, rounds: int = 1) -> None:
    """Build the corpus, time both --jobs settings, measure memory, print the results."""
    with tempfile.TemporaryDirectory(prefix="turnpress-bench-") as tmp:
        directory = Path(tmp)
        corpus = build_corpus(directory, n)
        small = build_corpus(directory, max(n // 10, 1))
        size = corpus.stat().st_size / 1e6
        print(f"corpus: {n} traces, {size:.1f} MB JSONL; {os.cpu_count()} CPUs", flush=True)
        for _ in range(rounds):  # interleaved, so machine noise hits both alike
            one = time_compare(corpus, 1)
            two = time_compare(corpus, 2)
            print(f"--jobs 1: {one:.1f} s   --jobs 2: {two:.1f} s   "
                  f"speed-up (jobs 1 / jobs 2): {one / two:.2f}x", flush=True)
        rss_small, rss_big = peak_rss_mb(small), peak_rss_mb(corpus)
        print(f"peak RSS, --jobs 1: {max(n // 10, 1)} traces {rss_small:.0f} MB, "
              f"{n} traces {rss_big:.0f} MB (ratio {rss_big / rss_small:.2f})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000,
         int(sys.argv[2]) if len(sys.argv) > 2 else 1)

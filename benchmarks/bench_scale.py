"""``turnpress compare`` at scale: 1,000 real-shaped runs, local pool and Dask (not a test).

Issue 20 item 7. The runs are the shared corpus of real mini-swe-agent runs
(``../shared/corpus/mini-swe-agent/`` from the repository root, or
``/work/shared/corpus/mini-swe-agent/``; skipped with a message when absent),
repeated under new names, each copy's messages varied (a line naming the copy is
added to every message), so that no cache of the tokenizer, of the renders or of
the cache model can serve one copy from another.

Each comparison runs in a child process, so the peak memory is that of one
comparison's driver (sampled from ``/proc/self/status`` while it compares; the
forked pool's or the Dask workers' memory is theirs, not the driver's). Printed: runs
per second, peak driver memory at the small and the large size, their ratio
(target: at most 1.2x from 100 to 1,000 runs), and whether the ``--json`` documents
of the local pool and of Dask are equal (a SHA-256 of each).

Run: ``python benchmarks/bench_scale.py [--runs 1000] [--small 100] [--jobs 2]
[--strategy NAME ...] [--tokenizer o200k_base] [--no-dask]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CANDIDATES = (ROOT.parent / "shared" / "corpus" / "mini-swe-agent",
              Path("/work/shared/corpus/mini-swe-agent"))
DEFAULT_STRATEGIES = ("full-history", "rolling-window", "single-user-coalesced")


def corpus_paths() -> list[Path]:
    """The corpus's ``*.traj.json`` runs (empty when the folder is absent)."""
    for candidate in CANDIDATES:
        paths = sorted(candidate.glob("*.traj.json"))
        if paths:
            return paths
    return []


def write_runs(sources: list[Path], n: int, directory: Path) -> list[Path]:
    """``n`` copies of the corpus runs under new names, each message marked with its
    copy, so no two copies share a message text."""
    originals = [json.loads(p.read_text(encoding="utf-8")) for p in sources]
    out = []
    for i in range(n):
        data = json.loads(json.dumps(originals[i % len(originals)]))
        for message in data.get("messages", ()):
            if isinstance(message.get("content"), str):
                message["content"] += f"\n[scale copy {i}]"
        if "instance_id" in data:
            data["instance_id"] = f"{data['instance_id']}-copy{i}"
        path = directory / f"run-{i:05d}.traj.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        out.append(path)
    return out


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def child(args: argparse.Namespace) -> None:
    """One comparison; prints ``{"seconds", "peak_mb", "sha256", "runs"}``."""
    from turnpress.compare import compare_traces

    paths = sorted(Path(args.dir).glob("run-*.traj.json"))[:args.child_runs]
    peak = [_rss_mb()]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], _rss_mb())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    result = compare_traces(paths, list(args.strategy), tokenizer=args.tokenizer,
                            jobs=args.jobs, executor=args.executor)
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    peak[0] = max(peak[0], _rss_mb())
    digest = hashlib.sha256(result.dumps().encode()).hexdigest()
    print(json.dumps({"seconds": seconds, "peak_mb": peak[0], "sha256": digest,
                      "runs": len(result.traces), "skipped": len(result.skipped)}))


def measure(args: argparse.Namespace, directory: Path, runs: int, executor: str) -> dict:
    """Run one comparison in a child process and return what it printed."""
    command = [sys.executable, __file__, "--child-runs", str(runs), "--dir", str(directory),
               "--executor", executor, "--jobs", str(args.jobs), "--tokenizer",
               args.tokenizer, *[x for s in args.strategy for x in ("--strategy", s)]]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the comparison failed ({executor}, {runs} runs):\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    """Parse the options; run as the benchmark or as one child comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--small", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--strategy", action="append", default=None)
    parser.add_argument("--tokenizer", default="o200k_base")
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--child-runs", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--executor", default="local", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.strategy = args.strategy or list(DEFAULT_STRATEGIES)
    if args.child_runs:
        child(args)
        return
    sources = corpus_paths()
    if not sources:
        print("skipped: the shared corpus (../shared/corpus/mini-swe-agent/) is absent")
        return
    executors = ["local"]
    if not args.no_dask:
        try:
            import distributed  # noqa: F401 -- optional dependency: only to know it is there
            executors.append("dask")
        except ImportError:
            print("dask: skipped (pip install 'turnpress[dask]')")
    print(f"{args.runs} runs ({len(sources)} corpus runs repeated, varied), strategies "
          f"{', '.join(args.strategy)}, tokenizer {args.tokenizer}, --jobs {args.jobs}")
    with tempfile.TemporaryDirectory(prefix="turnpress-scale-") as tmp:
        directory = Path(tmp)
        started = time.perf_counter()
        write_runs(sources, args.runs, directory)
        print(f"wrote the runs in {time.perf_counter() - started:.1f} s")
        found: dict[tuple[str, int], dict] = {}
        for executor in executors:
            for runs in (args.small, args.runs):
                m = found[executor, runs] = measure(args, directory, runs, executor)
                print(f"{executor:>5} {runs:>5} runs: {m['seconds']:7.1f} s, "
                      f"{m['runs'] / m['seconds']:6.2f} runs/s, peak driver memory "
                      f"{m['peak_mb']:7.1f} MB", flush=True)
        for executor in executors:
            ratio = found[executor, args.runs]["peak_mb"] / found[executor, args.small]["peak_mb"]
            verdict = "ok" if ratio <= 1.2 else "over the 1.2x target"
            print(f"{executor}: peak driver memory {args.runs} runs / {args.small} runs = "
                  f"{ratio:.2f}x ({verdict})")
        if len(executors) > 1:
            for runs in (args.small, args.runs):
                same = found["local", runs]["sha256"] == found["dask", runs]["sha256"]
                print(f"--json of local and dask at {runs} runs: "
                      f"{'equal' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()

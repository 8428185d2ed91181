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
of the local pool and of Dask are equal (a SHA-256 of each). The driver's time and
memory include writing the ``--json`` document (to a hash, as the CLI writes it to
stdout), since that is where a comparison's per-prompt numbers end up.

``--large MB [MB ...]`` measures issue 20 item 6 instead: memory at most 3x the
largest file plus a constant. One run of about MB megabytes is built from the corpus
runs, per size: their turns one after the other (``--large-turns`` of them, each
copy's ids and messages marked with its number), each tool output grown with real
tool output text of the corpus taken at a moving offset (so lines recur, as files
read again do, but no two messages are equal): a file that is almost all message
text. ``--large-turns 0`` grows nothing and takes as many turns as make the size
instead: a long run of the corpus's own shape (its files are about 80% metadata: the
provider's responses). Each is compared alone with ``--jobs 1`` (everything in one
process), as is the first corpus run; printed: each file's size and the process's
peak memory (``VmHWM``), the peak as a multiple of the largest file (for
information: it includes the constant, about 100 MB of interpreter and tokenizer),
the growth of the peak over the growth of the file between each two sizes, and the
smallest constant with which the peak is at most 3x the file at every size. The
target's figure is the growth between the two largest files (with one size: from
the small run to it): the caches are bounded (two generations of a few million
characters each of texts, lines and facts), so the growth between smaller sizes
includes them filling up, a constant; past them, the growth that goes on as files
grow is the last one. It is printed with MET or MISSED. The driver-memory ratio of
the scale run is printed with MET or MISSED against its 1.2x target likewise.

Run: ``python benchmarks/bench_scale.py [--runs 1000] [--small 100] [--jobs 2]
[--strategy NAME ...] [--tokenizer o200k_base] [--no-dask] [--only local|dask]``, or
``python benchmarks/bench_scale.py --large 24 48 96 --large-turns 0``.

``--long TURNS [TURNS ...]`` measures the time of one long run instead: a real-shaped
run of TURNS turns (as ``--large-turns 0`` builds, the corpus's turns one after the
other), compared alone in this process under ``full-history`` and under each
``--strategy``; printed: CPU seconds and milliseconds per prompt at each length (a
per-prompt cost that grows with the run shows as the latter growing). For example
``python benchmarks/bench_scale.py --long 500 1000 2000 --strategy clear-tool-uses``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
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


def _status_mb(field: str = "VmRSS") -> float:
    """A memory figure of this process in MB of 10^6 bytes, the unit of the file sizes
    (``/proc`` gives kB of 1024 bytes; MiB against MB would flatter the growth ratio by
    about 5%)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024 / 1e6
    return 0.0


def _rss_mb() -> float:
    return _status_mb("VmRSS")


def _groups(data: dict) -> tuple[list[dict], list[list[dict]]]:
    """A mini-swe-agent run's leading messages (system, task) and its turns: each an
    assistant message and the tool / user messages that answer it."""
    messages = [m for m in data["messages"] if m.get("role") != "exit"]
    first = next(i for i, m in enumerate(messages) if m.get("role") == "assistant")
    groups: list[list[dict]] = []
    for m in messages[first:]:
        if m.get("role") == "assistant" or not groups:
            groups.append([])
        groups[-1].append(m)

    def answered(group: list[dict]) -> bool:  # the run's last call may have no answer
        asked = {c.get("id") for c in group[0].get("tool_calls") or ()}
        return asked <= {m.get("tool_call_id") for m in group}

    return messages[:first], [g for g in groups if answered(g)]


def write_large_run(sources: list[Path], megabytes: float, turns: int,
                    directory: Path) -> Path:
    """One run of about ``megabytes`` MB and ``turns`` turns made of the corpus runs'
    turns (see the module's docstring)."""
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sources]
    head, _ = _groups(runs[0])
    groups = [g for data in runs for g in _groups(data)[1]]
    pool = "\n".join(m["content"] for g in groups for m in g
                     if m.get("role") == "tool" and isinstance(m.get("content"), str))
    if not turns:  # real-shaped: as many turns as make the size, nothing grown
        sizes = [len(json.dumps(g)) for g in groups]
        total, turns = len(json.dumps(runs[0])), 0
        while total < megabytes * 1e6:
            total += sizes[turns % len(groups)]
            turns += 1
    picked = [groups[k % len(groups)] for k in range(turns)]
    plain = len(json.dumps(runs[0])) + sum(len(json.dumps(g)) for g in picked)
    outputs = sum(1 for g in picked for m in g if m.get("role") == "tool")
    grow = max(0, int((megabytes * 1e6 - plain) / max(outputs, 1)))
    offset = 0
    messages = [json.loads(json.dumps(m)) for m in head]
    for k, group in enumerate(picked):
        for original in group:
            m = json.loads(json.dumps(original))
            for call in m.get("tool_calls") or ():
                call["id"] = f"{call.get('id')}-{k}"
            if "tool_call_id" in m:
                m["tool_call_id"] = f"{m['tool_call_id']}-{k}"
            if isinstance(m.get("content"), str):
                m["content"] += f"\n[turn copy {k}]"
                if m.get("role") == "tool" and grow:
                    start = offset % max(len(pool) - grow, 1)
                    m["content"] += "\n" + pool[start:start + grow]
                    offset += grow // 3 + 7919
            messages.append(m)
    data = dict(runs[0], messages=messages, instance_id="large-run")
    path = directory / "large.traj.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def child(args: argparse.Namespace) -> None:
    """One comparison (and its ``--json`` document); prints ``{"seconds", "peak_mb",
    "sha256", "runs", "skipped"}``."""
    from turnpress.compare import compare_traces

    if args.child_file:
        paths = [Path(args.child_file)]
    else:
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
    digest = hashlib.sha256()
    pieces = getattr(result, "iter_json", None)  # as the CLI writes --json (older: dumps)
    for piece in pieces() if pieces is not None else [result.dumps()]:
        digest.update(piece.encode())
    seconds = time.perf_counter() - start
    stop.set()
    sampler.join()
    peak[0] = max(peak[0], _rss_mb(), _status_mb("VmHWM"))
    print(json.dumps({"seconds": seconds, "peak_mb": peak[0], "sha256": digest.hexdigest(),
                      "runs": len(result.traces), "skipped": len(result.skipped)}))


def measure(args: argparse.Namespace, directory: Path, runs: int, executor: str,
            file: Path | None = None, jobs: int | None = None) -> dict:
    """Run one comparison in a child process and return what it printed (``file``: of
    that one file instead of ``runs`` runs of ``directory``)."""
    where = ["--child-file", str(file)] if file is not None else ["--dir", str(directory)]
    command = [sys.executable, __file__, "--child-runs", str(runs), *where,
               "--executor", executor, "--jobs", str(jobs or args.jobs), "--tokenizer",
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
    parser.add_argument("--only", choices=("local", "dask"), default=None,
                        help="measure one executor only")
    parser.add_argument("--large", type=float, nargs="+", default=None, metavar="MB",
                        help="measure the memory of one run of about MB megabytes instead "
                             "(several sizes: the growth between each two)")
    parser.add_argument("--large-turns", type=int, default=400)
    parser.add_argument("--long", type=int, nargs="+", default=None, metavar="TURNS",
                        help="measure the CPU time of comparing one real-shaped run of "
                             "TURNS turns instead, per strategy (several lengths: how it grows)")
    parser.add_argument("--child-runs", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--child-file", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--executor", default="local", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.strategy = args.strategy or list(DEFAULT_STRATEGIES)
    if args.child_runs or args.child_file:
        child(args)
        return
    sources = corpus_paths()
    if not sources:
        print("skipped: the shared corpus (../shared/corpus/mini-swe-agent/) is absent")
        return
    if args.large is not None:
        large(args, sources)
        return
    if args.long is not None:
        long_runs(args, sources)
        return
    executors = [] if args.only == "dask" else ["local"]
    if not args.no_dask and args.only != "local":
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
        print("target (issue 20 item 7): driver memory at the large size within 1.2x of "
              "that at the small size")
        for executor in executors:
            ratio = found[executor, args.runs]["peak_mb"] / found[executor, args.small]["peak_mb"]
            print(f"{executor}: peak driver memory {args.runs} runs / {args.small} runs = "
                  f"{ratio:.2f}x: {_verdict(ratio, 1.2)}")
        if len(executors) > 1:
            for runs in (args.small, args.runs):
                same = found["local", runs]["sha256"] == found["dask", runs]["sha256"]
                print(f"--json of local and dask at {runs} runs: "
                      f"{'equal' if same else 'DIFFERENT'}")


def _verdict(ratio: float, target: float) -> str:
    """``MET (at most 1.2x)`` or ``MISSED (over 1.2x)``."""
    return (f"MET (at most {target:g}x)" if ratio <= target
            else f"MISSED (over {target:g}x)")


def large(args: argparse.Namespace, sources: list[Path]) -> None:
    """Issue 20 item 6: the peak memory of comparing one large run, against its size,
    at each size of ``--large`` (and of the first corpus run)."""
    shape = f"{args.large_turns} turns" if args.large_turns else "real-shaped"
    sizes = sorted(args.large)
    print(f"one run of about {', '.join(f'{mb:g}' for mb in sizes)} MB ({shape}) against "
          f"the first corpus run; strategies {', '.join(args.strategy)}, tokenizer "
          f"{args.tokenizer}, --jobs 1")
    found = [("small", sources[0])]
    with tempfile.TemporaryDirectory(prefix="turnpress-large-") as tmp:
        points = []
        for mb in sizes:
            started = time.perf_counter()
            (Path(tmp) / f"{mb:g}").mkdir()
            path = write_large_run(sources, mb, args.large_turns, Path(tmp) / f"{mb:g}")
            print(f"wrote {path.stat().st_size / 1e6:.1f} MB in "
                  f"{time.perf_counter() - started:.1f} s", flush=True)
            found.append((f"{mb:g} MB", path))
        for name, path in found:
            m = measure(args, Path(tmp), 1, "local", file=path, jobs=1)
            m["file_mb"] = path.stat().st_size / 1e6
            points.append(m)
            print(f"{name:>8}: file {m['file_mb']:7.1f} MB, {m['seconds']:7.1f} s, peak memory "
                  f"{m['peak_mb']:7.1f} MB", flush=True)
    small, big = points[0], points[-1]
    print(f"peak memory / largest file = {big['peak_mb'] / big['file_mb']:.2f}x (not the "
          f"target's figure: it includes the constant, {small['peak_mb']:.1f} MB for the "
          f"small run: the interpreter, the tokenizer, the bounded caches)")
    for a, b in itertools.pairwise(points):
        growth = (b["peak_mb"] - a["peak_mb"]) / (b["file_mb"] - a["file_mb"])
        print(f"growth of the peak / growth of the file, {a['file_mb']:.1f} to "
              f"{b['file_mb']:.1f} MB: {growth:.2f}x")
    constant = max(m["peak_mb"] - 3 * m["file_mb"] for m in points)
    print(f"peak <= 3x the file + {constant:.1f} MB at every size measured")
    # the caches are bounded (two generations of a few million characters each: texts,
    # lines, facts), so they fill up on the way: the growth that goes on is the last
    # one, that of the two largest sizes (the loop's last ``growth``)
    which = "the two largest files" if len(points) > 2 else "the small run to the large one"
    print(f"target (issue 20 item 6): peak <= 3x the largest file + a constant; growth of "
          f"the peak / growth of the file from {which} = {growth:.2f}x: "
          f"{_verdict(growth, 3.0)}")


def long_runs(args: argparse.Namespace, sources: list[Path]) -> None:
    """The CPU seconds of comparing one long run (``write_large_run`` with nothing
    grown: the corpus's own shape) at each length of ``--long``, per strategy, in this
    process (``full-history`` alone first: every strategy's time includes it, as the
    reference of retention). Per-prompt work that grows with the run shows as the time
    per prompt growing with the length."""
    from turnpress import load_trace
    from turnpress.compare import compare_traces

    names = ["full-history", *(s for s in args.strategy if s != "full-history")]
    print(f"one real-shaped run of {', '.join(map(str, args.long))} turns; strategies "
          f"{', '.join(names)}, tokenizer {args.tokenizer}, CPU seconds (ms per prompt)")
    compare_traces([load_trace(sources[0])], names, tokenizer=args.tokenizer)  # warm up
    with tempfile.TemporaryDirectory(prefix="turnpress-long-") as tmp:
        for turns in sorted(args.long):
            (Path(tmp) / str(turns)).mkdir()
            trace = load_trace(write_large_run(sources, 0.001, turns, Path(tmp) / str(turns)))
            cells = []
            for name in names:
                started = time.process_time()
                compare_traces([trace], [name], tokenizer=args.tokenizer)
                seconds = time.process_time() - started
                cells.append(f"{name} {seconds:.1f} s ({1000 * seconds / turns:.1f})")
            print(f"{turns:>6} turns: " + ", ".join(cells), flush=True)


if __name__ == "__main__":
    main()

"""The golden check: digests of every prompt turnpress renders, to prove a refactor
changes no behaviour (issue 21 item 6).

Not a test (it reads the real runs of ``../shared/corpus/`` when they exist). Run::

    python scripts/golden.py -o before.txt                # write a manifest
    python scripts/golden.py --check before.txt           # IDENTICAL, or the differences
    python scripts/golden.py --src ../other-tree -o x.txt # that tree's turnpress package

For every trace it can read (the bundled examples, and the runs under
``<corpus>/mini-swe-agent*/``), every registered strategy with its defaults plus a
few option variants (``VARIANTS``), and every turn ``n`` (1 to turns + 1), it renders
``trace.prompt(n, strategy)`` (the one "prompt of turn n" path) and writes one line
``trace <TAB> strategy+options <TAB> turn <TAB> shape <TAB> digest`` per shape: plain
text, the OpenAI shape and the Anthropic shape (with its cache breakpoints). A
strategy that cannot render a trace gives the digest of its error. Then it runs
``turnpress compare --json`` on the same traces under ``--cache openai`` and
``--cache anthropic`` and writes the digest of each JSON document with its timing
fields removed. Last, ``compress()`` of a few prefixes of each imported transcript's
messages, under every strategy, in the OpenAI and the Anthropic shape. Lines are
sorted, so ``--jobs`` does not change the manifest; ``--only`` picks sections.
Run it under ``nice``: it takes minutes on the corpus.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpus"
SHAPES = ("text", "openai", "anthropic")
CACHES = ("openai", "anthropic")
#: option variants per strategy, beside each registered strategy's defaults
VARIANTS: dict[str, tuple[dict[str, Any], ...]] = {
    "aggressive": ({"println_limit": 1, "tool_call_limit": 2}, {"output_chars": 60}),
    "checkpoint-coalesced": ({"every": 5}, {"every": 1, "turn_lines": 0},
                             {"errors": "pairs", "delta_chars": 2000},
                             {"output_lines": 3, "line_chars": 20, "key_lines": 0}),
    "clear-tool-uses": ({"trigger": 2000, "keep": 1}, {"trigger": 500, "keep": 0,
                                                        "clear_tool_inputs": True,
                                                        "clear_at_least": 300}),
    "observation-masking": ({"window": 1, "step": 1}, {"window": 5, "step": 3}),
    "per-turn-summary": ({"println_limit": 2, "tool_call_limit": 3},),
    "progressive-batch": ({"min_preserved": 1, "batch_size": 1},
                          {"min_preserved": 6, "batch_size": 8}),
    "rolling-window": ({"window": 1}, {"window": 4}, {"errors": "pairs"},
                       {"window": 0, "step": 1}, {"window": 3, "step": 2,
                                                  "println_limit": 2}),
    "single-user-coalesced": ({"errors": "pairs"}, {"println_limit": 2,
                                                    "tool_call_limit": 3}),
}
#: keys of compare's JSON that measure time, not behaviour
TIMING_KEYS = ("seconds", "elapsed", "time", "duration", "ms")
#: how many message prefixes of each transcript go through compress()
COMPRESS_CUTS = 4
SECTIONS = ("render", "compare", "compress")


def _digest(data: Any) -> str:
    if not isinstance(data, (bytes, str)):
        data = json.dumps(data, sort_keys=True, ensure_ascii=False, default=repr)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:20]


def trace_files(corpus: Path | None) -> list[Path]:
    """The bundled example traces, then the corpus's mini-swe-agent runs (if any)."""
    from turnpress.examples import example_trace_paths

    files = [Path(p) for p in example_trace_paths()]
    if corpus is not None and corpus.is_dir():
        for folder in sorted(corpus.glob("mini-swe-agent*")):
            files += sorted(p for p in folder.iterdir() if p.is_file())
    return files


def _label(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def variants() -> list[tuple[str, dict[str, Any]]]:
    """``(strategy, options)`` for every registered strategy: defaults, then VARIANTS."""
    from turnpress.core.compression import strategy_names

    out: list[tuple[str, dict[str, Any]]] = []
    for name in strategy_names():
        out.append((name, {}))
        out += [(name, dict(options)) for options in VARIANTS.get(name, ())]
    return out


def _variant_label(name: str, options: dict[str, Any]) -> str:
    return name + "".join(f":{k}={v}" for k, v in sorted(options.items()))


def _render_lines(path: str, name: str, options: dict[str, Any]) -> list[str]:
    """Every manifest line of one trace file under one strategy variant."""
    from turnpress import get_strategy
    from turnpress.core.providers import (
        format_text,
        prompt_with_breakpoints,
        to_anthropic,
        to_openai,
    )
    from turnpress.core.trace import iter_traces

    lines: list[str] = []
    label = _variant_label(name, options)
    try:
        traces = list(iter_traces(path))
    except Exception as exc:
        return [f"{_label(Path(path))}\t{label}\t-\tload\terror:{_digest(repr(exc))}"]
    for index, trace in enumerate(traces):
        where = f"{_label(Path(path))}#{index}:{trace.name}"
        strategy = get_strategy((name, options))
        for n in range(1, len(trace.turns) + 2):
            shapes: dict[str, str] = {}
            try:
                messages = trace.prompt(n, strategy)
                shapes["text"] = _digest(format_text(messages))
                shapes["openai"] = _digest(to_openai(messages))
            except Exception as exc:
                shapes["text"] = shapes["openai"] = "error:" + _digest(
                    f"{type(exc).__name__}: {exc}")
            try:
                messages, breakpoints = prompt_with_breakpoints(trace, n, strategy)
                shapes["anthropic"] = _digest(list(to_anthropic(messages, breakpoints)))
            except Exception as exc:
                shapes["anthropic"] = "error:" + _digest(f"{type(exc).__name__}: {exc}")
            lines += [f"{where}\t{label}\t{n}\t{shape}\t{shapes[shape]}" for shape in SHAPES]
    return lines


def _task(args: tuple[str, str, dict[str, Any]]) -> list[str]:
    return _render_lines(*args)


def _compress_lines(path: str) -> list[str]:
    """``compress()`` digests of a transcript's message prefixes (a few per run), every
    strategy, OpenAI shape and Anthropic shape (the Anthropic input is the prefix as
    ``full-history`` gives it in that shape)."""
    from turnpress import compress
    from turnpress.core.compression import strategy_names
    from turnpress.core.trace import iter_traces

    lines: list[str] = []
    for index, trace in enumerate(iter_traces(path)):
        if not trace.preamble:  # a PTC-Lisp run: no provider messages to compress
            continue
        where = f"{_label(Path(path))}#{index}:{trace.name}"
        messages = [dict(m) for m in trace.preamble]
        messages += [dict(m) for turn in trace.turns for m in turn.messages]
        step = max(1, (len(messages) - len(trace.preamble)) // COMPRESS_CUTS)
        cuts = sorted({*range(len(trace.preamble), len(messages) + 1, step), len(messages)})
        for cut in cuts:
            try:
                system, body = compress(messages[:cut], strategy="full-history",
                                        format="anthropic")
            except Exception as exc:  # the error is the behaviour
                system, body = "", [{"error": f"{type(exc).__name__}: {exc}"}]
            for name in strategy_names():
                for shape in ("openai", "anthropic"):
                    try:
                        out = (compress(messages[:cut], strategy=name) if shape == "openai"
                               else compress({"system": system, "messages": body},
                                             strategy=name, format="anthropic"))
                    except Exception as exc:  # the error is the behaviour
                        out = f"error:{type(exc).__name__}: {exc}"
                    lines.append(f"{where}\tcompress:{name}\t{cut}\t{shape}\t{_digest(out)}")
    return lines


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items()
                if not any(t in k.lower() for t in TIMING_KEYS)}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def compare_lines(files: Sequence[Path], jobs: int) -> Iterator[str]:
    """``compare --json`` digests: bundled traces, then all of them, per cache model.

    The ``compare`` subprocess imports the turnpress package this process imported
    (``--src``, or wherever it came from): it runs in that package's source tree with
    the tree first on ``PYTHONPATH`` (``python -m`` puts its working directory first on
    ``sys.path``, so run from another tree it would import that tree's package)."""
    import turnpress

    tree = Path(turnpress.__file__).resolve().parent.parent
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])
    probe = subprocess.run([sys.executable, "-c", "import turnpress; print(turnpress.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tree)
    seen = Path(probe.stdout.strip()).resolve().parent.parent if probe.returncode == 0 else None
    if seen != tree:
        raise SystemExit(f"golden.py: the compare subprocess imports turnpress from {seen}, "
                         f"not {tree}: check PYTHONPATH")
    groups = {"bundled": [], "all": [str(f.resolve()) for f in files]}
    for group, paths in groups.items():
        for cache in CACHES:
            command = [sys.executable, "-m", "turnpress", "compare", "--json",
                       "--cache", cache, "--jobs", str(jobs), *paths]
            done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tree)
            if done.returncode != 0:
                yield (f"compare\t{group}\t{cache}\texit {done.returncode}\t"
                       f"{_digest(done.stderr)}")
                continue
            doc = _without_timing(json.loads(done.stdout))
            yield f"compare\t{group}\t{cache}\tjson\t{_digest(doc)}"


def build_manifest(corpus: Path | None, jobs: int,
                   sections: Sequence[str] = SECTIONS) -> list[str]:
    """Every line of the manifest (of ``sections``), sorted."""
    files = trace_files(corpus)
    tasks = [(str(f), name, options) for f in files for name, options in variants()]
    lines: list[str] = []
    with ProcessPoolExecutor(jobs) as pool:
        if "render" in sections:
            for chunk in pool.map(_task, tasks, chunksize=1):
                lines += chunk
        if "compress" in sections:
            for chunk in pool.map(_compress_lines, [str(f) for f in files], chunksize=1):
                lines += chunk
    if "compare" in sections:
        lines += compare_lines(files, jobs)
    return sorted(lines)


def check(manifest: Sequence[str], expected_path: Path, shown: int = 20) -> int:
    """Print IDENTICAL (return 0) or the first differences (return 1)."""
    expected = expected_path.read_text(encoding="utf-8").splitlines()
    if list(manifest) == expected:
        print(f"IDENTICAL ({len(expected)} lines)")
        return 0
    old, new = set(expected), set(manifest)
    gone = [line for line in expected if line not in new]
    added = [line for line in manifest if line not in old]
    print(f"DIFFERENT: {len(gone)} lines only in {expected_path}, {len(added)} only now")
    for line in gone[:shown]:
        print(f"- {line}")
    for line in added[:shown]:
        print(f"+ {line}")
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write a manifest (-o) and/or compare with one (--check)."""
    parser = argparse.ArgumentParser(
        description="Digest every rendered prompt (text/OpenAI/Anthropic, every strategy "
                    "and option variant, every turn of the bundled traces and the corpus) "
                    "and compare --json under both cache models; write or check a manifest.")
    parser.add_argument("-o", "--output", type=Path, help="write the manifest to this file")
    parser.add_argument("--check", type=Path, metavar="MANIFEST",
                        help="compare with MANIFEST: print IDENTICAL or the first differences")
    parser.add_argument("--jobs", "-j", type=int, default=2, help="worker processes (2)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                        help=f"corpus folder (default {DEFAULT_CORPUS}; a missing one is "
                             "skipped)")
    parser.add_argument("--no-corpus", action="store_true", help="bundled traces only")
    parser.add_argument("--only", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run (default: {','.join(SECTIONS)})")
    parser.add_argument("--src", type=Path, default=None,
                        help="import turnpress from this source tree instead")
    args = parser.parse_args(argv)
    if args.output is None and args.check is None:
        parser.error("give -o MANIFEST, --check MANIFEST, or both")
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    if not sections or set(sections) - set(SECTIONS):
        parser.error(f"--only takes sections among {', '.join(SECTIONS)}, got {args.only!r}")
    if args.src is not None:
        sys.path.insert(0, str(args.src.resolve()))
        os.environ["PYTHONPATH"] = os.pathsep.join([str(args.src.resolve()),
                                                    os.environ.get("PYTHONPATH", "")])
    import turnpress

    print(f"turnpress from {Path(turnpress.__file__).parent}", file=sys.stderr)
    manifest = build_manifest(None if args.no_corpus else args.corpus, args.jobs, sections)
    if args.output is not None:
        args.output.write_text("\n".join(manifest) + "\n", encoding="utf-8")
        print(f"wrote {len(manifest)} lines to {args.output}", file=sys.stderr)
    return check(manifest, args.check) if args.check is not None else 0


if __name__ == "__main__":
    sys.exit(main())

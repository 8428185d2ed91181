"""PTC-Lisp interpreter speed: data tasks over N maps, as a ratio to plain CPython.

Not a test. Run ``python benchmarks/bench_lisp.py [--size 100000] [--repeat 3]``; it
prints one table (task, lisp s, python s, ratio), best of ``--repeat`` runs each.
The data has string keys, as JSON would, so every ``(:key m)`` also exercises the
keyword -> string-key fallback. Lisp times include reading and compiling the program.

``--adversarial`` instead runs every program of ``tests/lisp/adversarial_programs.py``,
each in a fresh process, and prints its outcome, wall time against ``timeout_s`` and
peak memory growth against ``max_memory``. Target (issue 13): every program ends
within ``timeout_s + 0.5`` s and within the memory budget.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from turnpress.lisp import Limits, run_program

CATEGORIES = ["books", "games", "garden", "kitchen", "music", "office", "sports", "toys"]


def make_products(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` product maps with string keys."""
    rnd = random.Random(seed)
    return [
        {"id": i, "name": f"product-{i}", "category": rnd.choice(CATEGORIES),
         "price": round(rnd.uniform(1, 500), 2), "stock": rnd.randint(0, 100)}
        for i in range(n)
    ]


def _py_filter(ps: list[dict[str, Any]]) -> Any:
    return len([p for p in ps if p["price"] > 100])


def _py_group_by(ps: list[dict[str, Any]]) -> Any:
    groups: dict[str, list[dict[str, Any]]] = {}
    for p in ps:
        groups.setdefault(p["category"], []).append(p)
    return {k: len(v) for k, v in groups.items()}


def _py_sort_by(ps: list[dict[str, Any]]) -> Any:
    return [p["id"] for p in sorted(ps, key=lambda p: p["price"])[:3]]


def _py_map_reduce(ps: list[dict[str, Any]]) -> Any:
    return sum(p["price"] * p["stock"] for p in ps)


def _py_loop(ps: list[dict[str, Any]]) -> Any:
    i, acc, n = 0, 0, len(ps)
    while i < n:
        acc += ps[i]["stock"]
        i += 1
    return acc


#: (task, PTC-Lisp program, equivalent Python function)
TASKS: list[tuple[str, str, Callable[[list[dict[str, Any]]], Any]]] = [
    ("filter", "(count (filter (fn [p] (> (:price p) 100)) data/products))", _py_filter),
    ("group-by", "(reduce-kv (fn [acc k v] (assoc acc k (count v))) {} "
                 "(group-by :category data/products))", _py_group_by),
    ("sort-by", "(map :id (take 3 (sort-by :price data/products)))", _py_sort_by),
    ("map+reduce", "(reduce + (map #(* (:price %) (:stock %)) data/products))",
     _py_map_reduce),
    ("loop/recur", "(let [ps data/products n (count ps)] (loop [i 0 acc 0] (if (< i n) "
                   "(recur (inc i) (+ acc (:stock (nth ps i)))) acc)))", _py_loop),
]


def _best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


_ADVERSARIAL = Path(__file__).resolve().parents[1] / "tests" / "lisp"
#: Slack allowed past ``timeout_s`` (issue 13's target).
_SLACK_S = 0.5


def _adversarial_module() -> Any:
    sys.path.insert(0, str(_ADVERSARIAL))
    import adversarial_programs

    return adversarial_programs


def run_one_adversarial(name: str) -> dict[str, Any]:
    """Run adversarial program ``name`` in this process; its outcome, time and memory."""
    from turnpress.lisp.memory import resident_bytes

    adv = _adversarial_module()
    program, expected = next((p, e) for n, p, e in adv.ADVERSARIAL_PROGRAMS if n == name)
    limits = adv.limits_for(name)
    base = resident_bytes() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    start = time.perf_counter()
    result = run_program(program, limits=limits)
    elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return {
        "name": name,
        "expected": expected,
        "reason": None if result.failure is None else result.failure.reason,
        "seconds": elapsed,
        "timeout_s": limits.timeout_s,
        "peak_mb": max(peak - base, 0) / 2**20,
        "budget_mb": limits.max_memory / 2**20,
    }


def adversarial_table() -> None:
    """Run every adversarial program in its own process and print the timing table."""
    adv = _adversarial_module()
    print("Adversarial programs: wall time vs timeout_s, peak memory growth vs max_memory")
    print(f"{'program':<26} {'outcome':<16} {'ok':<3} {'wall s':>7} {'limit s':>7} "
          f"{'peak MB':>8} {'budget':>7}")
    misses = 0
    for name, _, _ in adv.ADVERSARIAL_PROGRAMS:
        out = subprocess.run([sys.executable, __file__, "--adversarial-one", name],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            print(f"{name:<26} CRASHED: {out.stderr.strip().splitlines()[-1:]}")
            misses += 1
            continue
        row = json.loads(out.stdout)
        in_time = row["seconds"] <= row["timeout_s"] + _SLACK_S
        in_memory = row["peak_mb"] <= row["budget_mb"]
        as_expected = adv.ended_as_expected(row["reason"], row["expected"])
        ok = in_time and in_memory and as_expected
        misses += not ok
        print(f"{name:<26} {row['reason'] or 'success':<16} {'yes' if ok else 'NO':<3} "
              f"{row['seconds']:>7.2f} {row['timeout_s']:>7.1f} {row['peak_mb']:>8.1f} "
              f"{row['budget_mb']:>7.0f}")
    total = len(adv.ADVERSARIAL_PROGRAMS)
    print(f"{total - misses}/{total} within timeout_s + {_SLACK_S} s and the memory budget, "
          "with the expected outcome")


def main() -> None:
    """Run every task in PTC-Lisp and in Python and print the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="number of product maps")
    parser.add_argument("--repeat", type=int, default=3, help="runs per task (best is kept)")
    parser.add_argument("--adversarial", action="store_true",
                        help="time the adversarial programs instead (issue 13)")
    parser.add_argument("--adversarial-one", metavar="NAME", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.adversarial_one:
        print(json.dumps(run_one_adversarial(args.adversarial_one)))
        return
    if args.adversarial:
        adversarial_table()
        return
    products = make_products(args.size)
    data = {"products": products}
    limits = Limits(max_steps=10**9, timeout_s=600, max_collection=10**8)
    rows = []
    for task, program, py_fn in TASKS:

        def run_lisp(program: str = program, task: str = task) -> Any:
            result = run_program(program, data=data, limits=limits)
            if result.failure is not None:
                raise RuntimeError(f"{task}: {result.failure}")
            return result.value

        lisp_s, lisp_value = _best(run_lisp, args.repeat)
        py_s, py_value = _best(lambda fn=py_fn: fn(products), args.repeat)
        if lisp_value != py_value:
            raise AssertionError(f"{task}: lisp gave {lisp_value!r}, python {py_value!r}")
        rows.append((task, lisp_s, py_s, lisp_s / py_s))
    print(f"PTC-Lisp vs CPython, {args.size:,} maps, best of {args.repeat}")
    print(f"{'task':<12} {'lisp s':>9} {'python s':>9} {'ratio':>7}")
    for task, lisp_s, py_s, ratio in rows:
        print(f"{task:<12} {lisp_s:>9.4f} {py_s:>9.4f} {ratio:>6.1f}x")


if __name__ == "__main__":
    main()

"""Fuzz turnpress as an attacker and as a careless user would (issue 13 item 6).

Not a test (``tests/test_fuzz_smoke.py`` runs a few hundred of the same cases). Run::

    python scripts/fuzz.py [--n 100000] [--seed 1] [--kinds programs,traces,plugins]

Kinds of cases, ``--n`` of each:

* ``programs``: PTC-Lisp programs (the adversarial list of ``tests/lisp/
  adversarial_programs.py`` when present, the issue-13 repros, then random programs)
  run with ``run_program`` under small limits, then what the agent does next: render
  the next prompt with every registered strategy and save/load the run as a trace;
* ``traces``: the bundled example traces (and a small OpenAI-chat transcript),
  mutated (fields deleted, replaced, retyped; nesting deepened; huge numbers; bad
  tags; bad UTF-8; truncation), then loaded, and when they load, saved and loaded
  again and rendered;
* ``plugins``: in-process registries holding one deliberately broken plugin (hooks
  that raise, return junk, exit...), then everything a command does with plugins.

It prints the count of each outcome: ``ok``, ``clean error`` (TraceError, ValueError,
PluginError, a program Failure), and the bad ones, whose target is 0: ``traceback``
(any other exception; the first few are printed), ``over limit`` (a program ran past
its timeout + 0.5 s), ``escape`` (a program wrote a file, imported a module, opened a
socket or started a process), ``malformed accepted`` (a mutated trace that loads but
changes on save + load, or breaks rendering), ``unsaveable`` (a value a program made
that the trace cannot save and load back unchanged).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import random
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from turnpress.core.codec import same_value  # noqa: E402
from turnpress.core.model import Turn  # noqa: E402
from turnpress.core.registry import PluginError  # noqa: E402
from turnpress.core.trace import (  # noqa: E402
    Trace,
    TraceError,
    iter_traces,
    save_trace,
    trace_to_dict,
)

BAD = ("traceback", "over limit", "escape", "malformed accepted", "unsaveable")
OUTCOMES = ("ok", "clean error", *BAD)
KINDS = ("programs", "traces", "plugins")


@dataclass
class Report:
    """Counts by outcome, plus the first few examples of each bad outcome."""

    kind: str
    counts: Counter = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    keep: int = 3

    def add(self, outcome: str, detail: str = "") -> None:
        """Count one case."""
        self.counts[outcome] += 1
        if outcome in BAD and len(self.examples.setdefault(outcome, [])) < self.keep:
            self.examples[outcome].append(detail)

    @property
    def bad(self) -> int:
        """How many cases had a bad outcome."""
        return sum(self.counts[o] for o in BAD)

    def format(self) -> str:
        """The report as text."""
        lines = [f"{self.kind}: " + ", ".join(f"{o} {self.counts[o]}" for o in OUTCOMES)]
        for outcome, found in self.examples.items():
            for detail in found:
                lines.append(f"  [{outcome}] " + detail.strip().replace("\n", "\n    "))
        return "\n".join(lines)


def _tb(exc: BaseException, context: str) -> str:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-4:])
    return f"{context[:300]}\n{text}"


CLEAN = (TraceError, ValueError, PluginError)

# -- escape sentinel ---------------------------------------------------------------------


class Sentinel:
    """An audit hook that records file writes, sockets, processes and new imports
    while armed (audit hooks cannot be removed, so it is installed once)."""

    _installed: Sentinel | None = None

    def __init__(self) -> None:
        self.armed = False
        self.events: list[str] = []

    @classmethod
    def get(cls) -> Sentinel:
        """The one sentinel of this process."""
        if cls._installed is None:
            cls._installed = cls()
            sys.addaudithook(cls._installed.hook)
        return cls._installed

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.armed:
            return
        if event == "open" and len(args) > 1 and isinstance(args[1], str) and any(
                c in args[1] for c in "wax+"):
            self.events.append(f"open {args[0]!r} {args[1]}")
        elif event.startswith(("socket.", "subprocess.", "os.system", "os.exec", "os.spawn",
                               "os.fork", "os.remove", "os.rename", "shutil.")):
            self.events.append(event)
        elif event == "import" and args and not str(args[0]).startswith(
                ("turnpress", "encodings")):
            self.events.append(f"import {args[0]}")

    @contextlib.contextmanager
    def watch(self) -> Iterator[list[str]]:
        """Record escapes inside the block; yields the list of what happened."""
        self.events = []
        self.armed = True
        try:
            yield self.events
        finally:
            self.armed = False


# -- programs ----------------------------------------------------------------------------

#: issue 13's programs that bypassed the sandbox's limits (time, memory)
LIMIT_PROGRAMS = [
    "(loop [f inc i 0] (if (< i 23) (recur (juxt f f) (inc i)) (do (f 1) :done)))",
    "(def f (apply comp (repeat 999999 inc))) (dotimes [i 300] (f 1))",
    "(let [" + " ".join(f"a{i} {i}" for i in range(30000)) + "] a1)",
    '(def s (apply str (repeat 999999 "a"))) (def xs (for [i (range 300000)] (subs s 1)))',
    "(str (loop [x [] i 0] (if (< i 5000) (recur [x] (inc i)) x)))",
]
#: issue 13's values that the sandbox makes legally and that broke the host
VALUE_PROGRAMS = [
    "(def x (loop [x [] i 0] (if (< i 1000) (recur [x] (inc i)) x)))",
    "(def x (loop [x [1] i 0] (if (< i 22) (recur [x x] (inc i)) x)))",
    "(def x (loop [x [1] i 0] (if (< i 40) (recur [x x] (inc i)) x)))",
    "(def s #{#{1 2} {:a 1}}) (def m {{:a 1} 2 [1 2] 3})",
    "(def big (reduce * (repeat 5000 99)))",
    '(def s "\\ud800")',
    '(def r #"\\s+")',
]


def adversarial_programs(limits: bool = True) -> list[str]:
    """Issue 13's value repros, then (``limits``) the lisp-sandbox helper's adversarial
    list if present and issue 13's limit bypasses."""
    if not limits:
        return list(VALUE_PROGRAMS)
    path = ROOT / "tests" / "lisp" / "adversarial_programs.py"
    found: list[str] = []
    if path.exists():
        spec = importlib.util.spec_from_file_location("_adversarial_programs", path)
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception:
                module = None  # type: ignore[assignment]
            for name in ("ADVERSARIAL_PROGRAMS", "PROGRAMS", "ADVERSARIAL"):
                items = getattr(module, name, None)
                if items:
                    for item in items:
                        src = item if isinstance(item, str) else getattr(
                            item, "source", None) or (item[-1] if isinstance(item, tuple)
                                                      and isinstance(item[-1], str) else None)
                        if isinstance(src, str):
                            found.append(src)
                    break
    return VALUE_PROGRAMS + found + LIMIT_PROGRAMS


class ProgramGen:
    """Random PTC-Lisp programs: literals of every value type, definitions, loops that
    build deep or shared values, higher-order calls, printing and odd syntax."""

    FUNCS = ("inc", "dec", "str", "count", "first", "rest", "vec", "set", "keys", "vals",
             "reverse", "sort", "distinct", "frequencies", "identity", "keyword", "name",
             "type", "nil?", "seq", "empty?", "hash-map", "hash-set")
    BIN = ("+", "-", "*", "quot", "mod", "=", "<", "max", "min", "conj", "get", "concat",
           "merge", "assoc", "contains?", "nth", "take", "drop", "into", "cons", "str",
           "split", "join", "subs", "repeat", "range")
    HOF = ("map", "filter", "remove", "reduce", "mapv", "some", "every?", "group-by",
           "sort-by", "keep", "partition", "apply")

    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.names = ["x", "y"]

    def literal(self) -> str:
        r = self.rnd
        choice = r.randrange(14)
        if choice == 0:
            return str(r.randint(-5, 5))
        if choice == 1:
            return str(r.choice([2 ** 62, -(2 ** 63), 10 ** 30, 0]))
        if choice == 2:
            return r.choice(["1.5", "-0.0", "1e308", "##NaN", "##Inf", "##-Inf", "0.1"])
        if choice == 3:
            return r.choice(['"a"', '""', '"\\ud800"', '"\\udc00x"', '"a\\nb"', '"\\u00e9"',
                             '"\\"q\\""', '"' + "z" * r.randint(0, 300) + '"'])
        if choice == 4:
            return r.choice([":a", ":b", ":$kw", ":a/b", "nil", "true", "false"])
        if choice == 5:
            return r.choice(['#"\\s+"', '#","', '#"\\s*,\\s*"', '#",\\s*"', '#"[a-z]+"'])
        if choice == 6:
            return "[" + " ".join(self.expr(1) for _ in range(r.randint(0, 4))) + "]"
        if choice == 7:
            return "{" + " ".join(f"{self.expr(1)} {self.expr(1)}"
                                  for _ in range(r.randint(0, 3))) + "}"
        if choice == 8:
            return "#{" + " ".join(self.expr(1) for _ in range(r.randint(0, 3))) + "}"
        if choice == 9:
            return '{"$kw" 1 "$set" [1] "$graph" 2}'
        if choice == 10:
            return "{[1 2] :v #{:k} 2 {:m 1} 3}"
        if choice == 11:
            return r.choice(self.names)
        if choice == 12:
            return "(fn [a & more] (cons a more))"
        return "(quote (a b c))"

    def builder(self) -> str:
        r = self.rnd
        depth = r.choice([3, 10, 40, 200, 1500])
        shape = r.choice(["[x]", "[x x]", "{:l x :r x}", "#{x}", "(list x)", "{x 1}",
                          "[x [x] {:k x}]", "(conj x x)"])
        seed = r.choice(["[]", "[1]", "{}", '"s"', ":k", "nil", "#{}"])
        return (f"(loop [x {seed} i 0] (if (< i {depth}) (recur {shape} (inc i)) x))")

    def expr(self, depth: int = 0) -> str:
        r = self.rnd
        if depth > 3:
            return self.literal()
        choice = r.randrange(10)
        if choice < 3:
            return self.literal()
        if choice == 3:
            return f"({r.choice(self.FUNCS)} {self.expr(depth + 1)})"
        if choice == 4:
            return f"({r.choice(self.BIN)} {self.expr(depth + 1)} {self.expr(depth + 1)})"
        if choice == 5:
            fn = r.choice(["inc", "str", "identity", "(fn [v] [v v])", "(juxt str count)",
                           "(comp str inc)", "(partial + 1)", "keyword", "vector"])
            return f"({r.choice(self.HOF)} {fn} {self.expr(depth + 1)})"
        if choice == 6:
            return self.builder()
        if choice == 7:
            return f"(let [z {self.expr(depth + 1)}] [z z])"
        if choice == 8:
            return f"(if {self.expr(depth + 1)} {self.expr(depth + 1)} {self.expr(depth + 1)})"
        return f"(do (println {self.expr(depth + 1)}) {self.expr(depth + 1)})"

    def program(self) -> str:
        r = self.rnd
        forms = []
        for _ in range(r.randint(1, 4)):
            kind = r.randrange(6)
            if kind < 3:
                name = r.choice(["x", "y", "z", "w", "data", "$kw", "a-b?"])
                self.names.append(name)
                doc = r.choice(["", '"doc; with ; semis" ', '"\\ud800" '])
                forms.append(f"(def {name} {doc}{self.expr()})")
            elif kind == 3:
                forms.append(f"(defn f{r.randint(0, 3)} \"d\" [a b] (+ a b))")
            elif kind == 4:
                forms.append(f"(println {self.expr()})")
            else:
                forms.append(self.expr())
        text = "\n".join(forms)
        if r.random() < 0.05:  # odd syntax: truncation, stray brackets
            cut = r.randint(0, len(text))
            text = text[:cut] + r.choice(["", ")", "(", "]", "#", "\\", "\"", "#{{"])
        return text


def _strategies() -> list[str]:
    from turnpress.core.compression import strategy_names

    return strategy_names()


def fuzz_programs(n: int, seed: int = 1, timeout_s: float = 0.5,
                  report: Report | None = None, limit_programs: bool = True) -> Report:
    """Run ``n`` programs, then render and save/load what they leave behind.

    The first ones are the fixed adversarial programs (``limit_programs=False``: only
    issue 13's value repros, which are quick)."""
    from turnpress.core.compression import render
    from turnpress.lisp import Limits, run_program

    report = report or Report("programs")
    rnd = random.Random(seed)
    gen = ProgramGen(rnd)
    limits = Limits(timeout_s=timeout_s, max_steps=200_000, max_collection=100_000,
                    max_string=100_000)
    strategies = _strategies()
    sentinel = Sentinel.get()
    run_program("(+ 1 2)", limits=limits)  # warm up lazy imports before watching
    fixed = adversarial_programs(limit_programs)
    memory: Any = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        for i in range(n):
            source = fixed[i] if i < len(fixed) else gen.program()
            if rnd.random() < 0.3:
                memory = {}  # a new run
            start = time.perf_counter()
            try:
                with sentinel.watch() as escapes:
                    result = run_program(source, memory=memory, limits=limits,
                                         tools={"echo": lambda *a: list(a)})
            except BaseException as exc:
                report.add("traceback", _tb(exc, source))
                memory = {}
                continue
            elapsed = time.perf_counter() - start
            if escapes:
                report.add("escape", f"{source[:300]}\n{escapes[:5]}")
                continue
            if elapsed > timeout_s + 0.5:
                report.add("over limit", f"{elapsed:.1f}s: {source[:300]}")
                continue
            report.add(*_after_program(source, result, render, strategies, path))
            memory = result.memory
    return report


def _after_program(source: str, result: Any, render: Callable[..., Any],
                   strategies: list[str], path: Path) -> tuple[str, str]:
    """Render the next prompt with every strategy, then save and load the run."""
    if result.failure is not None:
        turn = Turn.failed(1, source, result.failure, memory=result.memory,
                           prints=result.prints, tool_calls=result.tool_calls)
    else:
        turn = Turn.succeeded(1, source, result.value, memory=result.memory,
                              prints=result.prints, tool_calls=result.tool_calls)
    trace = Trace(mission="fuzz", turns=(turn,), max_turns=3,
                  tools={"echo": {"description": "echo", "params": {"x": "any"}}})
    for name in strategies:
        try:
            messages = render(turns=trace.turns, mission=trace.mission, tools=trace.tools,
                              turns_left=2, compression=name)
            json.dumps(messages)
        except CLEAN:
            continue
        except Exception as exc:
            return "traceback", _tb(exc, f"render {name}: {source}")
    try:
        save_trace(trace, path)
    except TraceError as exc:
        return "unsaveable", f"{source[:300]}\n{exc}"
    except Exception as exc:
        return "unsaveable", _tb(exc, source)
    try:
        loaded = next(iter_traces(path))
    except Exception as exc:
        return "unsaveable", _tb(exc, f"load after save: {source}")
    back = loaded.turns[0]
    if not (same_value(back.result, turn.result) and same_value(
            dict(back.memory), dict(turn.memory)) and back.prints == turn.prints
            and dict(back.memory.docs) == dict(turn.memory.docs)):
        return "unsaveable", f"changed by save + load: {source[:300]}"
    return ("clean error" if result.failure is not None else "ok"), ""


# -- traces ------------------------------------------------------------------------------


def _seed_documents() -> list[tuple[str, Any]]:
    """Parsed JSON documents to mutate: each bundled trace in both versions, plus a
    small OpenAI-chat transcript."""
    from turnpress.core.trace import load_trace
    from turnpress.examples import example_trace_paths

    docs: list[tuple[str, Any]] = []
    for p in example_trace_paths():
        trace = load_trace(p)
        docs.append((".json", trace_to_dict(trace, 1)))
        docs.append((".json", trace_to_dict(trace, 2)))
        docs.append((".jsonl", trace_to_dict(trace, 2)))
    docs.append((".json", [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Count the files."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a\nb"},
        {"role": "assistant", "content": "2 files."}]))
    return docs


JUNK: list[Any] = [None, True, 0, -1, 10 ** 30, 1.5, "", "x", [], {}, [1, [2]], {"a": 1},
                   {"$kw": 5}, {"$kw": "k"}, {"$set": "abc"}, {"$set": [[1], [1]]},
                   {"$fn": {"params": "abc"}}, {"$fn": {"params": [1]}}, {"$float": True},
                   {"$float": "nan"}, {"$map": [[1]]}, {"$map": [[{"a": 1}, 2]]},
                   {"$map": "x"}, {"$fail": {"reason": 1}}, {"$int": "0xz"},
                   {"$int": "-0x" + "f" * 5000}, {"$str": [55296, "a"]}, {"$str": "x"},
                   {"$regex": 5}, {"$ref": 0}, {"$graph": []}, {"$graph": [[1], {"$ref": 0}]},
                   {"$graph": [{"$graph": [1]}]}, {"$unknown": 1}, {"properties": [1]},
                   {"parameters": {"properties": [1, 2]}}, {"params": {"x": 1}},
                   "\ud800", ["\udfff"], {"\ud800": 1}, 2 ** 64, -(2 ** 80)]


def _paths(obj: Any, limit: int = 4000) -> list[tuple[Any, Any]]:
    """(container, key) of every slot in a parsed JSON document (iteratively)."""
    out: list[tuple[Any, Any]] = []
    stack = [obj]
    while stack and len(out) < limit:
        v = stack.pop()
        if isinstance(v, dict):
            for k in v:
                out.append((v, k))
                stack.append(v[k])
        elif isinstance(v, list):
            for i in range(len(v)):
                out.append((v, i))
                stack.append(v[i])
    return out


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def mutate(doc: Any, rnd: random.Random) -> tuple[Any, list[Callable[[str], str]]]:
    """One to three random edits of a parsed document; also text-level edits to apply
    after serializing."""
    text_edits: list[Callable[[str], str]] = []
    for _ in range(rnd.randint(1, 3)):
        slots = _paths(doc)
        op = rnd.randrange(9)
        if op <= 5 and slots:
            container, key = rnd.choice(slots)
            if op == 0 and isinstance(container, dict):
                del container[key]
            elif op == 0:
                container.pop(key)
            elif op == 1:
                container[key] = json.loads(json.dumps(rnd.choice(JUNK)))
            elif op == 2:  # retype
                v = container[key]
                container[key] = (str(v) if not isinstance(v, str) else
                                  rnd.choice([[v], {"v": v}, len(v), None]))
            elif op == 3:
                depth = rnd.choice([5, 40, 200, 600, 1200, 5000, 100_000])
                if depth < 900:
                    container[key] = _nest(container[key], depth)
                else:  # too deep for json.dumps: spliced into the text
                    container[key] = "__DEEP__"
                    text_edits.append(lambda t, d=depth: t.replace(
                        '"__DEEP__"', "[" * d + "1" + "]" * d, 1))
            elif op == 4 and isinstance(container, dict):
                container[rnd.choice(["extra", "memry", "$kw", "version", "memory",
                                      "memory_set", "memory_removed", "docs"])] = \
                    json.loads(json.dumps(rnd.choice(JUNK)))
            elif op == 5 and isinstance(container, list):
                container.append(json.loads(json.dumps(rnd.choice(JUNK))))
        elif op == 6:
            text_edits.append(lambda t: t[: rnd.randint(0, len(t))])  # truncation
        elif op == 7:
            kind = rnd.choice(["big-int", "nan", "nested"])

            def edit(t: str, kind: str = kind) -> str:
                if kind == "big-int":
                    return t.replace("1", "9" * 5000, 1)
                if kind == "nan":
                    return t.replace("0", "NaN", 1)
                return t.replace("[]", "[" * 3000 + "]" * 3000, 1)
            text_edits.append(edit)
        elif op == 8 and rnd.random() < 0.5:
            bad = rnd.choice([b"\xff", b"\xed\xa0\x80", b"\xc3", b"\x80"])

            def byte_edit(t: str, bad: bytes = bad) -> str:
                return t + "\x00BYTES" + bad.decode("latin-1")  # applied in fuzz_traces
            text_edits.append(byte_edit)
        elif isinstance(doc, dict):
            doc["version"] = rnd.choice([1, 2, 3, True, "2", None, 2.0])
    return doc, text_edits


def fuzz_traces(n: int, seed: int = 1, report: Report | None = None) -> Report:
    """Load ``n`` mutated traces and transcripts; what loads must survive save + load."""
    report = report or Report("traces")
    rnd = random.Random(seed)
    seeds = _seed_documents()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n):
            suffix, original = rnd.choice(seeds)
            doc, edits = mutate(json.loads(json.dumps(original)), rnd)
            text = json.dumps(doc, ensure_ascii=rnd.random() < 0.5)
            bad_bytes = []
            for edit in edits:
                text = edit(text)
                if "\x00BYTES" in text:
                    text, _, bad = text.rpartition("\x00BYTES")
                    bad_bytes.append(bad.encode("latin-1"))
            data = text.encode("utf-8", "surrogatepass")
            for bad in bad_bytes:
                at = rnd.randint(0, len(data))
                data = data[:at] + bad + data[at:]
            path = Path(tmp) / f"case{i % 50}{suffix}"
            path.write_bytes(data)
            report.add(*_check_trace_file(path))
    return report


def _check_trace_file(path: Path) -> tuple[str, str]:
    try:
        traces = list(iter_traces(path))
    except TraceError:
        return "clean error", ""
    except Exception as exc:
        return "traceback", _tb(exc, f"load {path.read_bytes()[:200]!r}")
    copy = path.with_name("copy" + path.suffix)
    for trace in traces:
        try:
            save_trace(trace, copy)
            again = next(iter_traces(copy))
        except Exception as exc:
            return "malformed accepted", _tb(exc, "loaded, but save + load fails")
        if json.dumps(trace_to_dict(again)) != json.dumps(trace_to_dict(trace)):
            return "malformed accepted", "loaded, but changes on save + load"
        try:
            for n in {1, len(trace.turns)}:
                if n <= len(trace.turns) or n == 1:
                    json.dumps(trace.prompt(max(n, 1)))
        except CLEAN:
            pass
        except Exception as exc:
            return "malformed accepted", _tb(exc, "loaded, but rendering fails")
    return "ok", ""


# -- plugins -----------------------------------------------------------------------------


class _Boom(Exception):
    pass


def _raiser(exc: BaseException) -> Callable[..., Any]:
    def hook(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return hook


def _broken_plugin(rnd: random.Random) -> tuple[str, Any]:
    """A plugin object with one deliberately broken hook."""
    from turnpress.core.hookspecs import hookimpl

    failures: list[BaseException] = [_Boom("boom"), SystemExit(3), KeyboardInterrupt(),
                                      RecursionError("deep"), TypeError("t"),
                                      MemoryError(), GeneratorExit()]
    exc = rnd.choice(failures)
    kind = rnd.randrange(10)
    ns: dict[str, Any] = {}

    if kind == 0:
        ns["register_strategies"] = hookimpl(_raiser(exc))
    elif kind == 1:
        def register_strategies(register: Callable[..., Any]) -> Any:
            junk = rnd.choice([5, "x", None, object(), type("NoName", (), {})])
            register(junk)
            return [junk]
        ns["register_strategies"] = hookimpl(register_strategies)
    elif kind == 2:
        from turnpress.core.compression import Strategy

        class Broken(Strategy):
            name = f"broken-{rnd.randrange(1000)}"

            def to_messages(self, ctx: Any) -> Any:
                if rnd.random() < 0.5:
                    raise exc
                return rnd.choice([None, 5, [{"role": "x"}], "text", [1, 2]])

        def register_broken(register: Callable[..., Any]) -> None:
            register(Broken)
        ns["register_strategies"] = hookimpl(register_broken)
    elif kind == 3:
        def register_namespace_renderers(register: Callable[..., Any]) -> None:
            register(f"bad{rnd.randrange(9)}/", rnd.choice([_raiser(exc), lambda v: 5,
                                                            lambda v: ["x"]]), 250)
        ns["register_namespace_renderers"] = hookimpl(register_namespace_renderers)
    elif kind == 4:
        def type_label(value: Any) -> Any:
            choice = rnd.randrange(3)
            if choice == 0:
                raise exc
            return ["x"] if choice == 1 else 5
        ns["type_label"] = hookimpl(tryfirst=True)(type_label)
    elif kind == 5:
        def template_dirs() -> Any:
            return rnd.choice([5, ["/nonexistent/dir"], [5], None, "x"])
        ns["template_dirs"] = hookimpl(template_dirs)
    elif kind == 6:
        def register_tokenizers(register: Callable[..., Any]) -> None:
            register("bad-tok", _raiser(exc))
        ns["register_tokenizers"] = hookimpl(register_tokenizers)
    elif kind == 7:
        def register_trace_readers(register: Callable[..., Any]) -> None:
            register("bad-reader", lambda d, p: True, _raiser(exc))
        ns["register_trace_readers"] = hookimpl(register_trace_readers)
    elif kind == 8:
        ns["register_strategys"] = hookimpl(lambda register: None)  # misspelled hook
    else:
        ns["register_trace_readers"] = hookimpl(
            lambda register: register("junk-reader", lambda d, p: True, lambda d, w: 5))
    plugin = type("BrokenPlugin", (), {k: staticmethod(v) for k, v in ns.items()})
    return f"{sorted(ns)} {type(exc).__name__}", plugin


def fuzz_plugins(n: int, seed: int = 1, report: Report | None = None) -> Report:
    """Install ``n`` broken plugins one at a time; every command's work must still
    complete for the built-ins, and the broken plugin be reported cleanly."""
    from turnpress.core.compression import render
    from turnpress.core.registry import Registry, reset_registry
    from turnpress.core.trace import load_trace
    from turnpress.examples import example_trace_paths

    report = report or Report("plugins")
    rnd = random.Random(seed)
    example = example_trace_paths()[0]
    trace = load_trace(example)
    builtins = _strategies()
    turns = trace.turns[:2]
    for _ in range(n):
        desc, plugin = _broken_plugin(rnd)
        registry = Registry(entry_points=False)
        previous = reset_registry(registry)
        stderr = io.StringIO()
        try:
            with warnings.catch_warnings(), contextlib.redirect_stderr(stderr):
                warnings.simplefilter("ignore")
                report.add(*_exercise(registry, plugin, desc, render, builtins, turns,
                                      trace, example, load_trace))
        except BaseException as exc:
            report.add("traceback", _tb(exc, desc))
        finally:
            reset_registry(previous)
    return report


def _exercise(registry: Any, plugin: Any, desc: str, render: Callable[..., Any],
              builtins: list[str], turns: Any, trace: Trace, example: Path,
              load_trace: Callable[..., Any]) -> tuple[str, str]:
    from turnpress.core.labels import type_label
    from turnpress.core.tokens import get_tokenizer

    clean = False
    try:
        registry.register(plugin, "broken")
    except CLEAN:
        clean = True
    try:
        registry.load_all()
    except CLEAN:
        clean = True
    for name in sorted(registry.strategies()):
        try:
            out = render(turns=turns, mission=trace.mission, tools=trace.tools,
                         data=trace.data, turns_left=3, compression=name)
            if name in builtins and not (isinstance(out, list) and all(
                    isinstance(m, dict) and isinstance(m.get("content"), str) for m in out)):
                return "traceback", f"{desc}: built-in {name} returned junk"
        except CLEAN:
            clean = True
            if name in builtins and name != "broken":
                # a built-in must keep working unless the plugin is to blame by name
                pass
    for value in ([1, 2], "s", None):
        label = type_label(value)
        if not isinstance(label, str):
            return "traceback", f"{desc}: type_label gave {label!r}"
    try:
        get_tokenizer("bad-tok").count("hello")
    except CLEAN:
        clean = True
    try:
        load_trace(example)
    except CLEAN:
        clean = True
    return ("clean error" if clean or registry.errors else "ok"), ""


# -- command line ------------------------------------------------------------------------


def run(kinds: list[str], n: int, seed: int, timeout_s: float = 0.5,
        progress: bool = False, limit_programs: bool = True) -> list[Report]:
    """Fuzz each kind ``n`` times; return the reports."""
    reports = []
    for kind in kinds:
        start = time.perf_counter()
        if kind == "programs":
            report = fuzz_programs(n, seed, timeout_s, limit_programs=limit_programs)
        elif kind == "traces":
            report = fuzz_traces(n, seed)
        elif kind == "plugins":
            report = fuzz_plugins(n, seed)
        else:
            raise SystemExit(f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}")
        reports.append(report)
        if progress:
            print(report.format(), f"({time.perf_counter() - start:.0f} s)", flush=True)
    return reports


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, fuzz, print the counts; exit code 1 if anything bad happened."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="cases of each kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"comma-separated, from: {', '.join(KINDS)}")
    parser.add_argument("--timeout", type=float, default=0.5,
                        help="timeout_s of each program (over limit: +0.5 s)")
    parser.add_argument("--no-limit-programs", action="store_true",
                        help="skip issue 13's slow limit-bypass programs (for a sandbox "
                             "without those limits)")
    args = parser.parse_args(argv)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    reports = run(kinds, args.n, args.seed, args.timeout, progress=True,
                  limit_programs=not args.no_limit_programs)
    bad = sum(r.bad for r in reports)
    print(f"total bad outcomes: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Fuzz turnpress as an attacker and as a careless user would (issue 13 item 6).

Not a test (``tests/test_fuzz_script.py`` runs a few hundred of the same cases). Run::

    python scripts/fuzz.py                       # 100,000 cases of each kind
    python scripts/fuzz.py --n 2000 --seed 7 --kinds traces
    python scripts/fuzz.py --kinds traces --seed 7 --case 1234   # replay one case

Kinds of cases, ``--n`` of each (default 100,000):

* ``programs``: PTC-Lisp programs, each case a run of one to three turns sharing
  memory. The first cases are the adversarial list of
  ``tests/lisp/adversarial_programs.py`` (each with its own limits), the others random
  programs (hostile values: deep, shared, big, surrogates, regexes, maps as keys).
  After every turn, what the agent does next: render the next prompt with every
  registered strategy, then save the run as a trace, load it and compare;
* ``traces``: the bundled example traces (versions 1 and 2, JSON and JSONL) and a
  small OpenAI-chat transcript, mutated (fields deleted, replaced, retyped; nesting
  deepened; huge numbers; malformed tags; unknown fields; bad UTF-8; truncation), then
  loaded; what loads is saved, loaded again and rendered;
* ``plugins``: a registry holding one deliberately broken plugin (hooks that raise,
  exit, return junk, misspelled hooks...), then what a command does with plugins:
  render with every strategy, type labels, tokenizers, trace loading.

Every case is drawn from its own random generator, seeded by (kind, ``--seed``, case
number), so ``--case N`` replays case N alone, prints everything about it, and exits 1
if it is bad. ``--start S`` runs cases ``S..S+n-1``, so a long run can be split into
sessions; ``--progress K`` prints the counts every ``K`` cases, and Ctrl-C (SIGINT or
SIGTERM) stops the run and still prints them.

Seeds used so far (use a new one): 1 (the default), 3 and 7 (tests, examples), 27, 28,
4242 (issue 23), 2301-2303 (issue 23's follow-up runs).

Output: one line per kind with the count of each outcome: ``ok``, ``clean error`` (a
one-line TraceError, PluginError or ValueError, or a program's documented Failure), and
the bad ones, whose target is 0:

* ``traceback``: any other exception, or a Failure reason outside ``FAILURE_REASONS``;
* ``over limit``: a program ran past its ``timeout_s`` + 0.5 s (by the clock and by
  the CPU time it used), or a render or save/load after it did not end within
  ``--hang`` seconds;
* ``escape``: a program wrote a file, imported a module, opened a socket or started a
  process;
* ``malformed accepted``: a mutated trace that loads although the mutation made it
  invalid (bad UTF-8, a malformed tag, an unknown field, a bad version, nesting too
  deep), or that loads but changes on save + load, or breaks rendering;
* ``unsaveable``: a value a program made that cannot be saved and loaded back unchanged;
* ``isolation broken``: a broken plugin broke a built-in strategy, a type label, trace
  loading, or was not named;
* ``unclear error``: a trace refused with a message that is not one line starting
  with the file's name;
* ``locked out``: after a turn, a trivial program (:data:`PROBE`, run with the memory
  the turn left) failed: a value the run kept makes every later turn fail (issue 23);
* ``fuzzer error``: making the case itself failed (a bug of this script: the case
  is counted and the run goes on).

Each bad case (the first ``--keep`` of each outcome) is printed with its detail, the
command that replays it, and its input written to ``--out`` (a ``.lisp`` program, the
mutated ``.json``/``.jsonl`` file, or the broken plugin's description). The exit code
is 1 if any case was bad.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import io
import json
import random
import signal
import sys
import tempfile
import threading
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

from turnpress.core import codec  # noqa: E402
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

BAD = ("traceback", "over limit", "escape", "malformed accepted", "unsaveable",
       "isolation broken", "unclear error", "locked out", "fuzzer error")
OUTCOMES = ("ok", "clean error", *BAD)
KINDS = ("programs", "traces", "plugins")
#: seconds a render or a save/load may take before the case counts as hung
HANG_S = 60.0
CLEAN = (TraceError, ValueError, PluginError)


@dataclass
class Outcome:
    """What one case came to; ``repro`` is its input, written to a file if it is bad."""

    outcome: str
    detail: str = ""
    repro: bytes = b""
    suffix: str = ".txt"


@dataclass
class Report:
    """Counts by outcome of one kind, the first ``keep`` bad cases of each outcome (with
    their detail and input), and the number of every other bad case, so that each one has
    a replay command."""

    kind: str
    seed: int
    counts: Counter = field(default_factory=Counter)
    bad_cases: list[tuple[int, Outcome, Path | None]] = field(default_factory=list)
    #: (case, outcome) of the bad cases past ``keep``: named, not printed in full
    more_bad: list[tuple[int, str]] = field(default_factory=list)
    keep: int = 3
    out: Path | None = None
    seconds: float = 0.0
    stopped: str = ""

    def add(self, case: int, result: Outcome) -> None:
        """Count one case; keep (and write the input of) the first few bad ones."""
        self.counts[result.outcome] += 1
        if result.outcome not in BAD:
            return
        if sum(1 for _, o, _ in self.bad_cases if o.outcome == result.outcome) >= self.keep:
            self.more_bad.append((case, result.outcome))
            return
        path = None
        if self.out is not None:
            self.out.mkdir(parents=True, exist_ok=True)
            path = self.out / f"{self.kind}-seed{self.seed}-case{case}{result.suffix}"
            path.write_bytes(result.repro)
        self.bad_cases.append((case, result, path))

    @property
    def cases(self) -> int:
        """How many cases ran."""
        return sum(self.counts.values())

    @property
    def bad(self) -> int:
        """How many cases had a bad outcome."""
        return sum(self.counts[o] for o in BAD)

    def format(self) -> str:
        """The report as text: the counts line, then each kept bad case."""
        head = f"{self.kind}: {self.cases} cases in {self.seconds:.0f} s{self.stopped}: "
        lines = [head + ", ".join(f"{o} {self.counts[o]}" for o in OUTCOMES)]
        for case, result, path in self.bad_cases:
            lines.append(f"  BAD {self.kind} case {case} ({result.outcome}): "
                         + _indent(result.detail.strip()))
            lines.append(f"    replay: {self.replay(case)}")
            if path is not None:
                lines.append(f"    input: {path}")
        for case, outcome in self.more_bad:
            lines.append(f"  BAD {self.kind} case {case} ({outcome}, past --keep {self.keep}): "
                         f"replay: {self.replay(case)}")
        return "\n".join(lines)

    def replay(self, case: int) -> str:
        """The command that runs case ``case`` again, alone, with full detail."""
        return f"python scripts/fuzz.py --kinds {self.kind} --seed {self.seed} --case {case}"


def _indent(text: str) -> str:
    return text.replace("\n", "\n      ")


def _tb(exc: BaseException, context: str, full: bool = False) -> str:
    frames = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return f"{context[:300]}\n" + "".join(frames if full else frames[-4:])


def case_rng(kind: str, seed: int, case: int) -> random.Random:
    """The random generator of one case (so that any case can be replayed alone)."""
    return random.Random(f"{kind}/{seed}/{case}")


# -- time limits ---------------------------------------------------------------------------


class Hung(BaseException):
    """Raised by :func:`watchdog` in a case that runs too long (a BaseException, so
    that code under test catching ``Exception`` does not swallow it)."""


@contextlib.contextmanager
def watchdog(seconds: float) -> Iterator[None]:
    """Raise :class:`Hung` in the block after ``seconds`` (main thread, POSIX only;
    elsewhere a no-op)."""
    usable = (hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise Hung(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# -- escape sentinel -----------------------------------------------------------------------

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


# -- programs ------------------------------------------------------------------------------

#: The trivial program run after every turn (issue 23): it must always succeed.
PROBE = "(def fuzz-probe 1)"
#: issue 23: 1,500 nested sets (1.1M references, ~50 MB) locked out every later turn
ISSUE_23_PROGRAM = "(def a (loop [x #{} i 0] (if (< i 1500) (recur (conj x x) (inc i)) x)))"


#: issue 13's values that the sandbox makes legally and that broke the host (and issue 23's)
VALUE_PROGRAMS = [
    "(def x (loop [x [] i 0] (if (< i 1000) (recur [x] (inc i)) x)))",
    "(def x (loop [x [1] i 0] (if (< i 22) (recur [x x] (inc i)) x)))",
    "(def x (loop [x [1] i 0] (if (< i 40) (recur [x x] (inc i)) x)))",
    "(def s #{#{1 2} {:a 1}}) (def m {{:a 1} 2 [1 2] 3})",
    "(def big (reduce * (repeat 600 99)))",
    '(def s "\\ud800")',
    '(def r #"\\s+")',
    ISSUE_23_PROGRAM,
]


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



def _adversarial_module() -> Any:
    """``tests/lisp/adversarial_programs.py`` (the sandbox's list), or None."""
    path = ROOT / "tests" / "lisp" / "adversarial_programs.py"
    if not path.exists():
        return None
    spec = importlib.util.spec_from_file_location("_turnpress_adversarial", path)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class ProgramEnv:
    """What every program case shares: limits, strategies, the fixed programs."""

    limits: Any
    strategies: list[str]
    fixed: list[tuple[str, str, Any]]
    random_program: Callable[[random.Random], str] | None
    tmp: Path
    hang_s: float = HANG_S


def program_env(tmp: Path, timeout_s: float | None, fixed: bool = True,
                hang_s: float = HANG_S) -> ProgramEnv:
    """Limits (the sandbox list's ``ADVERSARIAL_LIMITS``, ``timeout_s`` if given), every
    strategy name, and (``fixed``) issue 13's value repros and the adversarial list."""
    from turnpress.core.compression import strategy_names
    from turnpress.lisp import Limits, run_program

    module = _adversarial_module()
    limits = getattr(module, "ADVERSARIAL_LIMITS", None) or Limits(
        max_steps=100_000, timeout_s=2.0)
    if timeout_s is not None:
        limits = dataclasses.replace(limits, timeout_s=timeout_s)
    programs: list[tuple[str, str, Any]] = []
    if fixed:
        programs = [(f"value-{i}", p, limits) for i, p in enumerate(VALUE_PROGRAMS)]
        for name, source, _ in getattr(module, "ADVERSARIAL_PROGRAMS", []):
            programs.append((name, source, module.limits_for(name)))
    run_program("(+ 1 2)", limits=limits)  # lazy imports happen before the sentinel
    return ProgramEnv(limits, strategy_names(), programs,
                      getattr(module, "random_program", None), tmp, hang_s)


def program_turns(env: ProgramEnv, seed: int, case: int) -> list[tuple[str, str, Any]]:
    """The (name, source, limits) of each turn of program case ``case``."""
    if case < len(env.fixed):
        return [env.fixed[case]]
    rnd = case_rng("programs", seed, case)
    gen = ProgramGen(rnd)
    turns = []
    for t in range(rnd.randint(1, 3)):
        if env.random_program is not None and rnd.random() < 0.4:
            source = env.random_program(rnd)
        else:
            source = gen.program()
        turns.append((f"turn {t + 1}", source, env.limits))
    return turns


def program_case(env: ProgramEnv, seed: int, case: int, full: bool = False) -> Outcome:
    """Run one case's turns, rendering and saving/loading the run after each."""
    from turnpress.lisp import FAILURE_REASONS, run_program

    turns = program_turns(env, seed, case)
    repro = "\n;; --- next turn (memory carried over) ---\n".join(s for _, s, _ in turns)
    bad = _program_outcome(repro)
    sentinel = Sentinel.get()
    memory: Any = {}
    done: list[Turn] = []
    failed = False
    for number, (name, source, limits) in enumerate(turns, 1):
        where = f"{name}, turn {number}: {source[:200]}"
        start, cpu_start = time.perf_counter(), time.process_time()
        try:
            with watchdog(limits.timeout_s + env.hang_s), sentinel.watch() as escapes:
                result = run_program(source, memory=memory, limits=limits,
                                     tools={"echo": lambda *a: list(a)})
        except Hung as exc:
            return bad("over limit", f"{where}\nrun_program {exc}")
        except (KeyboardInterrupt, Stopped):  # the run is stopped, not the case bad
            raise
        except BaseException as exc:
            return bad("traceback", _tb(exc, where, full))
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        if escapes:
            return bad("escape", f"{where}\n{escapes[:5]}")
        # judged by the CPU time: on a machine shared with other work, a run that the
        # sandbox stops in time can still end well past timeout_s by the clock
        if min(elapsed, cpu) > limits.timeout_s + 0.5:
            return bad("over limit", f"{where}\nran {elapsed:.2f} s ({cpu:.2f} s of CPU) "
                                     f"with timeout_s={limits.timeout_s:g}")
        if result.failure is not None:
            failed = True
            if result.failure.reason not in FAILURE_REASONS:
                return bad("traceback", f"{where}\nundocumented failure reason "
                                        f"{result.failure.reason!r}")
            turn = Turn.failed(number, source, result.failure, memory=result.memory,
                               prints=result.prints, tool_calls=result.tool_calls)
        else:
            turn = Turn.succeeded(number, source, result.value, memory=result.memory,
                                  prints=result.prints, tool_calls=result.tool_calls)
        done.append(turn)
        problem = _after_turn(env, tuple(done), len(turns) + 1, where, full,
                              save=number == len(turns))
        if problem is not None:
            return bad(*problem)
        memory = result.memory
        problem = _probe(memory, limits, where, env.hang_s)
        if problem is not None:
            return bad(*problem)
    return Outcome("clean error" if failed else "ok")


def _probe(memory: Any, limits: Any, where: str, hang_s: float) -> tuple[str, str] | None:
    """Run :data:`PROBE` with the memory a turn left: ``locked out`` if it fails."""
    from turnpress.lisp import run_program

    try:
        with watchdog(limits.timeout_s + hang_s):
            probe = run_program(PROBE, memory=memory, limits=limits)
    except Hung as exc:
        return "over limit", f"{where}\nthe probe {PROBE} after it: {exc}"
    if probe.failure is not None:
        return "locked out", (f"{where}\nafter this turn, {PROBE} failed: "
                              f"{probe.failure.reason}: {probe.failure.message}")
    return None


def _program_outcome(repro: str) -> Callable[[str, str], Outcome]:
    def bad(outcome: str, detail: str) -> Outcome:
        return Outcome(outcome, detail, repro.encode("utf-8", "surrogatepass"), ".lisp")
    return bad


def _after_turn(env: ProgramEnv, turns: tuple[Turn, ...], max_turns: int, where: str,
                full: bool, save: bool = True) -> tuple[str, str] | None:
    """Render the next prompt with every strategy; after the last turn (``save``), save
    the run as a trace, load it and compare, as the agent does."""
    trace = Trace(mission="fuzz", turns=turns, max_turns=max_turns,
                  tools={"echo": {"description": "echo", "params": {"x": "any"}}})
    step = "render"
    path = env.tmp / "run.json"
    try:
        with watchdog(env.hang_s):
            for name in env.strategies:
                step = f"render {name}"
                try:
                    json.dumps(trace.prompt(len(turns) + 1, compression=name))
                except CLEAN:
                    continue
            if not save:
                return None
            step = "save_trace"
            try:
                save_trace(trace, path)
            except TraceError as exc:
                return "unsaveable", f"{where}\n{exc}"
            step = "load_trace after save_trace"
            loaded = next(iter_traces(path))
            step = "comparing after load_trace"
            if not _same_run(trace, loaded, path):
                return "unsaveable", f"{where}\nchanged by save + load"
    except Hung as exc:
        return "over limit", f"{where}\n{step} {exc}"
    except (KeyboardInterrupt, Stopped):  # the run is stopped, not the case bad
        raise
    except BaseException as exc:
        kind = "traceback" if step.startswith("render") else "unsaveable"
        return kind, _tb(exc, f"{step}: {where}", full)
    return None


def _same_run(trace: Trace, loaded: Trace, path: Path) -> bool:
    """Whether the loaded run holds the same values (a function is stored as its
    signature, ``$fn``: then what is written again must be what was written)."""
    text = path.read_text(encoding="utf-8")
    if '"$fn"' in text:
        again, written = trace_to_dict(loaded), json.loads(text)
        if "name" not in written:  # a loaded trace is named after its file
            again.pop("name", None)
        return again == written
    for before, after in zip(trace.turns, loaded.turns, strict=True):
        if not (same_value(after.result, before.result)
                and same_value(dict(after.memory), dict(before.memory))
                and list(after.memory) == list(before.memory)
                and dict(after.memory.docs) == dict(before.memory.docs)
                and after.prints == before.prints and after.error == before.error):
            return False
    return len(trace.turns) == len(loaded.turns)


# -- traces --------------------------------------------------------------------------------


def _seed_documents() -> list[tuple[str, Any, bool]]:
    """(suffix, parsed JSON, is native) documents to mutate: each bundled trace in both
    versions and as JSONL, plus a small OpenAI-chat transcript."""
    from turnpress.core.trace import load_trace
    from turnpress.examples import example_trace_paths

    docs: list[tuple[str, Any, bool]] = []
    for p in example_trace_paths():
        trace = load_trace(p)
        docs.append((".json", trace_to_dict(trace, 1), True))
        docs.append((".json", trace_to_dict(trace, 2), True))
        docs.append((".jsonl", trace_to_dict(trace, 2), True))
    docs.append((".json", [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": "Count the files."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "ls", "arguments": "{\"path\": \".\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a\nb"},
        {"role": "assistant", "content": "2 files."}], False))
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


#: tags whose payload is wrong: a trace holding one in its data must be refused
MALFORMED_TAGS: list[Any] = [
    {"$kw": 5}, {"$set": "abc"}, {"$fn": {"params": "abc"}}, {"$fn": {"params": [1]}},
    {"$float": True}, {"$float": "nope"}, {"$map": [[1]]}, {"$map": "x"},
    {"$fail": {"reason": 1}}, {"$int": "0xz"}, {"$int": 5}, {"$str": "x"},
    {"$str": [55296.5]}, {"$regex": 5}, {"$ref": 0}, {"$graph": []},
    {"$graph": [{"$graph": [1]}]},
]
#: top-level fields no trace version has
UNKNOWN_FIELDS = ("extra", "memry", "turn", "Version")


def _copy(doc: Any) -> Any:
    return json.loads(json.dumps(doc))


def mutate(doc: Any, rnd: random.Random, native: bool
           ) -> tuple[Any, list[Callable[[str], str]], list[bytes], list[tuple[str, Any]]]:
    """One to three random edits of a parsed document. Returns the document, text edits
    to apply after serializing, bytes to insert in the encoded file, and the (key, tag)
    of each malformed tag put in the trace's data."""
    text_edits: list[Callable[[str], str]] = []
    bad_bytes: list[bytes] = []
    placed: list[tuple[str, Any]] = []
    for _ in range(rnd.randint(1, 3)):
        slots = _paths(doc)
        op = rnd.randrange(11)
        if op <= 5 and slots:
            container, key = rnd.choice(slots)
            if op == 0 and isinstance(container, dict):
                del container[key]
            elif op == 0:
                container.pop(key)
            elif op == 1:
                container[key] = _copy(rnd.choice(JUNK))
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
                    _copy(rnd.choice(JUNK))
            elif op == 5 and isinstance(container, list):
                container.append(_copy(rnd.choice(JUNK)))
        elif op == 6:
            at = rnd.random()
            text_edits.append(lambda t, at=at: t[: int(len(t) * at)])
        elif op == 7:
            kind = rnd.choice(["big-int", "nan", "nested"])

            def edit(t: str, kind: str = kind) -> str:
                if kind == "big-int":
                    return t.replace("1", "9" * 5000, 1)
                if kind == "nan":
                    return t.replace("0", "NaN", 1)
                return t.replace("[]", "[" * 3000 + "]" * 3000, 1)
            text_edits.append(edit)
        elif op == 8:
            bad_bytes.append(rnd.choice([b"\xff", b"\xed\xa0\x80", b"\xc3", b"\x80"]))
        elif op == 9 and native and isinstance(doc, dict) and isinstance(
                doc.get("data"), dict):
            key = rnd.choice(["x", *doc["data"]])
            tag = rnd.choice(MALFORMED_TAGS)
            doc["data"][key] = _copy(tag)
            placed.append((key, tag))  # not the placed object: a later edit may change it
        elif op == 10 and native and isinstance(doc, dict):
            doc[rnd.choice(UNKNOWN_FIELDS)] = 1
        elif isinstance(doc, dict):
            doc["version"] = rnd.choice([1, 2, 3, True, "2", None, 2.0, 0, -1])
    return doc, text_edits, bad_bytes, placed


def _text_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside strings in JSON text."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def must_reject(doc: Any, text: str, bad_bytes: list[bytes], placed: list[tuple[str, Any]],
                native: bool) -> list[str]:
    """Why the mutated file is invalid for sure (empty when it may still be valid)."""
    reasons = ["invalid UTF-8"] if bad_bytes else []
    if not native or not isinstance(doc, dict):
        return reasons
    if "version" in doc:
        v = doc["version"]
        if isinstance(v, (bool, float)) or v not in (1, 2):
            reasons.append(f"version {_dumps(v, ensure_ascii=True)}")
    reasons += [f"unknown field {k!r}" for k in UNKNOWN_FIELDS if k in doc]
    data = doc.get("data")
    for key, tag in placed:
        if isinstance(data, dict) and key in data and data[key] == tag:
            reasons.append(f"malformed tag {json.dumps(tag)} in data")
    if _text_depth(text) > codec.MAX_JSON_DEPTH:
        reasons.append(f"nested deeper than {codec.MAX_JSON_DEPTH}")
    return reasons


@dataclass
class TraceEnv:
    """What every trace case shares."""

    seeds: list[tuple[str, Any, bool]]
    tmp: Path
    hang_s: float = HANG_S


def trace_case(env: TraceEnv, seed: int, case: int, full: bool = False) -> Outcome:
    """Write one mutated trace or transcript and check what loading it does."""
    rnd = case_rng("traces", seed, case)
    suffix, original, native = rnd.choice(env.seeds)
    doc, edits, bad_bytes, placed = mutate(_copy(original), rnd, native)
    text = _dumps(doc, ensure_ascii=rnd.random() < 0.5)
    for edit in edits:
        text = edit(text)
    reasons = must_reject(doc, text, bad_bytes, placed, native)
    data = text.encode("utf-8", "surrogatepass")
    for bad in bad_bytes:
        at = rnd.randint(0, len(data))
        data = data[:at] + bad + data[at:]
    path = env.tmp / f"case{suffix}"
    path.write_bytes(data)
    try:
        with watchdog(env.hang_s):
            outcome, detail = _check_trace_file(path, reasons, full)
    except Hung as exc:
        outcome, detail = "over limit", f"loading, saving or rendering {exc}"
    return Outcome(outcome, detail, data, suffix)


def _dumps(doc: Any, ensure_ascii: bool) -> str:
    """``json.dumps``, with room for documents that several edits nested deeper than
    the recursion limit lets it write (the same text, so replays stay the same)."""
    try:
        return json.dumps(doc, ensure_ascii=ensure_ascii)
    except RecursionError:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, 20_000))
        try:
            return json.dumps(doc, ensure_ascii=ensure_ascii)
        finally:
            sys.setrecursionlimit(previous)


def _check_trace_file(path: Path, must_reject: list[str], full: bool) -> tuple[str, str]:
    try:
        traces = list(iter_traces(path))
    except TraceError as exc:
        message = str(exc).strip()
        if "\n" in message or not message.startswith(f"{path}: "):
            return "unclear error", f"not one line starting with the file name: {message}"
        return "clean error", message if full else ""
    except Exception as exc:
        return "traceback", _tb(exc, f"load_trace {path.read_bytes()[:200]!r}", full)
    if must_reject:
        return "malformed accepted", "loaded although: " + "; ".join(must_reject)
    copy = path.with_name("copy" + path.suffix)
    for trace in traces:
        try:
            save_trace(trace, copy)
            again = next(iter_traces(copy))
        except Exception as exc:
            return "malformed accepted", _tb(exc, "loaded, but save + load fails", full)
        if json.dumps(trace_to_dict(again)) != json.dumps(trace_to_dict(trace)):
            return "malformed accepted", "loaded, but changes on save + load"
        try:
            for n in sorted({1, len(trace.turns) + 1}):
                json.dumps(trace.prompt(n))
        except CLEAN:
            pass
        except Exception as exc:
            return "malformed accepted", _tb(exc, "loaded, but rendering fails", full)
    return "ok", ""


# -- plugins -------------------------------------------------------------------------------

class _Boom(Exception):
    pass


def _raiser(exc: BaseException) -> Callable[..., Any]:
    def hook(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return hook


def _broken_plugin(rnd: random.Random) -> tuple[str, Any]:
    """A plugin object with one deliberately broken hook."""
    from turnpress.core.hookspecs import hookimpl

    # raised while a hook runs (SystemExit and KeyboardInterrupt at import time are the
    # registry tests' business: in a hook, Ctrl-C must still stop the command)
    failures: list[BaseException] = [_Boom("boom"), RecursionError("deep"), TypeError("t"),
                                      MemoryError(), KeyError("k"), AttributeError("a")]
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

            def to_messages(self, turns: Any, memory: Any, ctx: Any) -> Any:
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



@dataclass
class PluginEnv:
    """What every plugin case shares: the built-in strategies and an example trace."""

    builtins: list[str]
    example: Path
    trace: Trace


def plugin_env() -> PluginEnv:
    """The built-in strategy names and the first bundled trace."""
    from turnpress.core.compression import strategy_names
    from turnpress.core.registry import Registry
    from turnpress.core.trace import load_trace
    from turnpress.examples import example_trace_paths

    example = example_trace_paths()[0]
    return PluginEnv(strategy_names(Registry(entry_points=False)), example,
                     load_trace(example))


def plugin_case(env: PluginEnv, seed: int, case: int, full: bool = False) -> Outcome:
    """Register one broken plugin in a fresh registry, then do what commands do."""
    from turnpress.core.registry import Registry, reset_registry

    rnd = case_rng("plugins", seed, case)
    desc, plugin = _broken_plugin(rnd)
    registry = Registry(entry_points=False)
    previous = reset_registry(registry)
    stderr = io.StringIO()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(stderr), \
                watchdog(HANG_S):
            warnings.simplefilter("ignore")
            outcome, detail = _exercise(registry, plugin, desc, env, full)
    except Hung as exc:
        outcome, detail = "over limit", f"{desc}: {exc}"
    except (KeyboardInterrupt, Stopped):  # the run is stopped, not the case bad
        raise
    except BaseException as exc:
        outcome, detail = "traceback", _tb(exc, desc, full)
    finally:
        reset_registry(previous)
    return Outcome(outcome, detail, f"{desc}\n{detail}\n".encode(), ".txt")


def _cli_render(env: PluginEnv, name: str, desc: str) -> tuple[str, str] | None:
    """``turnpress render EXAMPLE --turn 3 -s NAME``: a result or one clean line."""
    from click.testing import CliRunner

    from turnpress.cli import main

    result = CliRunner().invoke(main, ["render", str(env.example), "--turn", "3", "-s", name])
    text = result.output.strip()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        exc = result.exception
        return "traceback", _tb(exc, f"{desc}: turnpress render -s {name}")
    if "Traceback" in text or (result.exit_code != 0 and len(text.splitlines()) != 1):
        return "traceback", f"{desc}: turnpress render -s {name} printed:\n{text[-1500:]}"
    return None


def _exercise(registry: Any, plugin: Any, desc: str, env: PluginEnv,
              full: bool) -> tuple[str, str]:
    from turnpress.core.labels import type_label
    from turnpress.core.tokens import get_tokenizer
    from turnpress.core.trace import load_trace

    clean = False
    try:
        registry.register(plugin, "broken")
    except CLEAN:
        clean = True
    for name in sorted(registry.strategies()):
        if name not in env.builtins:  # a plugin's strategy: as `turnpress render` meets it
            problem = _cli_render(env, name, desc)
            if problem is not None:
                return problem
            continue
        try:
            out = env.trace.prompt(3, compression=name)
        except CLEAN as exc:
            return "isolation broken", f"{desc}: built-in {name} failed: {exc}"
        if not (isinstance(out, list) and all(isinstance(m, dict) and isinstance(
                m.get("content"), str) for m in out)):
            return "isolation broken", f"{desc}: {name} returned {out!r:.200}"
    for value in ([1, 2], "s", None, {"a": 1}):
        label = type_label(value)
        if not isinstance(label, str):
            return "isolation broken", f"{desc}: type_label gave {label!r:.200}"
    with contextlib.suppress(*CLEAN):
        get_tokenizer("bad-tok").count("hello")
    load_trace(env.example)
    if clean or registry.errors:
        return "clean error", "; ".join(str(e) for e in registry.errors)
    return "ok", ""


# -- command line --------------------------------------------------------------------------


def _runner(kind: str, tmp: Path, timeout_s: float | None, fixed: bool,
            hang_s: float) -> Callable[[int, int, bool], Outcome]:
    if kind == "programs":
        penv = program_env(tmp, timeout_s, fixed, hang_s)
        return lambda seed, case, full: program_case(penv, seed, case, full)
    if kind == "traces":
        tenv = TraceEnv(_seed_documents(), tmp, hang_s)
        return lambda seed, case, full: trace_case(tenv, seed, case, full)
    if kind == "plugins":
        plenv = plugin_env()
        return lambda seed, case, full: plugin_case(plenv, seed, case, full)
    raise SystemExit(f"fuzz.py: unknown kind {kind!r}; use --kinds with some of: "
                     f"{', '.join(KINDS)}")


class Stopped(BaseException):
    """Raised by SIGTERM while fuzzing, so that the counts so far are still printed."""


def _stop(signum: int, frame: Any) -> None:
    raise Stopped


def run(kinds: list[str], n: int, seed: int = 1, *, timeout_s: float | None = None,
        fixed: bool = True, max_seconds: float | None = None, out: Path | None = None,
        keep: int = 3, hang_s: float = HANG_S, progress: bool = False,
        cases: list[int] | None = None, start: int = 0,
        every: int | None = None) -> list[Report]:
    """Fuzz each kind with cases ``start..start+n-1`` (or just ``cases``); return the
    reports.

    ``max_seconds`` stops a kind early; ``out`` is where bad cases' inputs go; ``every``
    prints the counts every that many cases, and each bad case's replay command as it is
    found. Ctrl-C or SIGTERM stops the run (the
    counts so far are kept and printed)."""
    reports = []
    stopped = False
    for kind in kinds:
        if stopped:
            break
        with tempfile.TemporaryDirectory() as tmp:
            case_of = _runner(kind, Path(tmp), timeout_s, fixed, hang_s)
            report = Report(kind, seed, keep=keep, out=out)
            began = time.perf_counter()
            try:
                for case in (cases if cases is not None else range(start, start + n)):
                    try:
                        result = case_of(seed, case, cases is not None)
                    except (KeyboardInterrupt, Stopped):
                        raise
                    except Exception as exc:  # a bug of this script, not of turnpress
                        result = Outcome("fuzzer error", _tb(exc, f"making case {case}"))
                    report.add(case, result)
                    if every and result.outcome in BAD:  # named at once: a long run may be cut
                        print(f"[bad] {kind} case {case} ({result.outcome}): replay: "
                              f"{report.replay(case)}", flush=True)
                    if every and report.cases % every == 0:
                        report.seconds = time.perf_counter() - began
                        print(f"[progress] {report.format().splitlines()[0]}", flush=True)
                    if max_seconds is not None and time.perf_counter() - began > max_seconds:
                        report.stopped = f" (stopped at --max-seconds {max_seconds:g})"
                        break
            except (KeyboardInterrupt, Stopped):
                report.stopped = " (stopped by a signal)"
                stopped = True
            report.seconds = time.perf_counter() - began
        reports.append(report)
        if progress:
            print(report.format(), flush=True)
    return reports


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, fuzz, print the counts; exit code 1 if any case was bad."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="cases of each kind")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help=f"comma-separated, from: {', '.join(KINDS)}")
    parser.add_argument("--case", type=int, action="append",
                        help="replay only this case (repeatable); prints full detail")
    parser.add_argument("--timeout", type=float, default=None,
                        help="timeout_s of random programs (default: the sandbox "
                             "list's ADVERSARIAL_LIMITS)")
    parser.add_argument("--no-fixed", action="store_true",
                        help="random programs only, without the adversarial list")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="stop each kind after this many seconds")
    parser.add_argument("--hang", type=float, default=HANG_S,
                        help="seconds after which a case counts as hung")
    parser.add_argument("--keep", type=int, default=3,
                        help="bad cases of each outcome to print and write")
    parser.add_argument("--out", type=Path, default=Path("fuzz-failures"),
                        help="directory for the inputs of bad cases")
    parser.add_argument("--start", type=int, default=0,
                        help="first case number (to continue a run in another session)")
    parser.add_argument("--progress", type=int, default=None, metavar="K",
                        help="print the counts every K cases")
    args = parser.parse_args(argv)
    if args.n < 0:
        parser.error("--n must be 0 or more")
    if args.start < 0:
        parser.error("--start must be 0 or more")
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    for kind in kinds:
        if kind not in KINDS:
            parser.error(f"unknown kind {kind!r} in --kinds; choose from {', '.join(KINDS)}")
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        reports = run(kinds, args.n, args.seed, timeout_s=args.timeout,
                      fixed=not args.no_fixed, max_seconds=args.max_seconds, out=args.out,
                      keep=args.keep, hang_s=args.hang, progress=True, cases=args.case,
                      start=args.start, every=args.progress)
    finally:
        signal.signal(signal.SIGTERM, previous)
    bad = sum(r.bad for r in reports)
    print(f"total: {sum(r.cases for r in reports)} cases, {bad} bad")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

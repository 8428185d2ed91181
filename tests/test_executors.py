"""Issue 20 item 1: ``compare`` runs traces through an executor (``register_executors``).

The built-in ``local`` executor (the process pool of ``--jobs``), a plugin's executor
that hands results back out of order, and Dask distributed on its own local cluster
each give the JSON of ``--jobs 1``, byte for byte. A worker without a plugin the
driver has, and a scheduler out of reach, are one clear error each.
"""

from __future__ import annotations

import json
import operator
import os
import signal
import subprocess
import sys
import threading
import warnings
from collections import deque

import pytest
from click.testing import CliRunner

from turnpress import Strategy, hookimpl
from turnpress.cli import main
from turnpress.compare import compare_traces
from turnpress.core import executor as executor_module
from turnpress.core.errors import ExecutorError, PluginError
from turnpress.core.executor import (
    Executor,
    TaskResult,
    WorkerJob,
    executor_names,
    get_executor,
)
from turnpress.core.registry import PluginWarning, get_registry
from turnpress.examples import short_example_trace_paths
from turnpress.plugins.process_pool import InlineExecutor, ProcessPool

TRACES = [str(p) for p in short_example_trace_paths()]
STRATEGIES = ["full-history", "rolling-window:window=2", "single-user-coalesced"]


def run(*args: str):
    return CliRunner().invoke(main, ["compare", *args])


def one_job_json() -> str:
    return compare_traces(TRACES, STRATEGIES, tokenizer="chars4", jobs=1).dumps()


class Reversed(Executor):
    """Holds every task until the caller waits, then finishes them newest first: the
    opposite of submission order."""

    name = "reversed"
    slots = 3

    def __init__(self) -> None:
        self.queue: deque = deque()
        self.order: list[int] = []

    def start(self, job: WorkerJob) -> None:
        self.run = job.start("this test")

    def submit(self, key: int, task) -> None:
        self.queue.append((key, task))

    def done(self):
        key, task = self.queue.pop()
        self.order.append(key)
        return key, self.run(task)


def test_the_builtin_executors_are_registered_plugins(fresh_registry):
    assert {"local", "dask"} <= set(executor_names())
    owner = get_registry().executors()["local"].plugin
    assert owner.builtin and owner.registers["executor"] == ["local"]
    assert isinstance(get_executor(None, 1), InlineExecutor)
    assert isinstance(get_executor("local", 2), ProcessPool)


@pytest.mark.parametrize(("spec", "message"), [
    ("nope", "unknown executor 'nope'; registered executors: dask, local."),
    ("local:tcp://x:1", "executor 'local' takes no address (got 'tcp://x:1')"),
    ("dask:", "--executor dask: give the scheduler's address after the colon"),
])
def test_a_bad_executor_is_one_line_exit_2(spec, message):
    result = run(*TRACES, "-s", "full-history", "--executor", spec)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: " + message), result.output
    assert result.output.count("\n") == 1


def test_results_finishing_out_of_order_give_the_same_json():
    executor = Reversed()
    got = compare_traces(TRACES, STRATEGIES, tokenizer="chars4", executor=executor).dumps()
    assert got == one_job_json()
    assert executor.order != sorted(executor.order)  # they did finish out of order


def test_the_process_pool_gives_the_same_json():
    assert compare_traces(TRACES, STRATEGIES, tokenizer="chars4",
                          executor="local", jobs=2).dumps() == one_job_json()


def test_a_plugin_executor_is_used_by_name(fresh_registry):
    made = []

    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("backwards", lambda address, jobs: made.append(address) or Reversed())

    get_registry().register(Plugin(), "backwards-plugin")
    result = run(*TRACES, "-s", "full-history", "-s", "rolling-window:window=2", "-s",
                 "single-user-coalesced", "-t", "chars4", "--json", "--executor",
                 "backwards:anywhere")
    assert result.exit_code == 0, result.output
    assert result.stdout == one_job_json() + "\n"
    assert made == ["anywhere"]


def test_bad_registrations_and_factories_name_the_plugin(fresh_registry):
    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("Bad Name", lambda address, jobs: Reversed())
            register("not-one", lambda address, jobs: object())
            register("crashes", lambda address, jobs: 1 / 0)

    get_registry().register(Plugin(), "exec-plugin")
    with pytest.warns(PluginWarning, match="executor name 'Bad Name' must be lowercase"):
        names = executor_names()
    assert "not-one" in names and "Bad Name" not in names
    with pytest.raises(PluginError, match=r"executor 'not-one' of plugin 'exec-plugin'.*"
                                          r"returned object, not a"):
        get_executor("not-one")
    with pytest.raises(PluginError, match=r"executor 'crashes' of plugin 'exec-plugin'.*"
                                          r"failed to start: ZeroDivisionError"):
        get_executor("crashes")


class Breaks(Reversed):
    """A third-party executor that breaks the contract of ``done()`` in the way
    ``how`` names once, on the call after the first ``after`` (the others work)."""

    def __init__(self, how: str, after: int = 0) -> None:
        super().__init__()
        self.how, self.after, self.calls = how, after, 0

    def done(self):
        self.calls += 1
        if self.calls != self.after + 1:
            key, task = self.queue.popleft()
            return key, self.run(task)
        if self.how == "raises":
            raise RuntimeError("done boom")
        key, task = self.queue.popleft()
        if self.how == "bogus-key":
            return "bogus-key", self.run(task)
        if self.how == "not-a-result":
            return key, "not a result"
        return key, self.run(task)  # "fine": the task's own exception passes


def register_breaking(after: int = 0) -> None:
    class Plugin:
        @hookimpl
        def register_executors(self, register):
            for how in ("raises", "bogus-key", "not-a-result", "fine"):
                register(f"qa-{how}", lambda address, jobs, how=how: Breaks(how, after))

    get_registry().register(Plugin(), "qa_exe")


@pytest.mark.parametrize(("how", "problem"), [
    ("raises", "done() raised RuntimeError: done boom"),
    ("bogus-key", "done() returned the key 'bogus-key', which is not the key of a task "
                  "submitted and not yet returned; done() must return the key that "
                  "submit(key, task) was given, once"),
    ("not-a-result", "done() returned 'not a result' (str) as the result of task 0; the "
                     "result must be what the job's task function (job.start(where)) "
                     "returned for it, as it is"),
])
def test_an_executor_breaking_the_done_contract_is_one_line_naming_it(fresh_registry, how,
                                                                       problem):
    """A plugin's ``done()`` that raises, returns a key it was never given or a result
    that is not the task's: one ``Error:`` line naming the executor and its plugin, exit
    code 2 (before: a traceback naming neither)."""
    register_breaking()
    result = run(*TRACES, "-s", "full-history", "-t", "chars4", "--executor", f"qa-{how}")
    assert result.exit_code == 2, result.output
    assert result.output == (f"Error: executor 'qa-{how}' of plugin 'qa_exe' (distribution "
                             f"(registered in code)) failed: {problem}\n")
    with pytest.raises(PluginError) as caught:
        compare_traces(TRACES, ["full-history"], tokenizer="chars4", executor=f"qa-{how}")
    assert caught.value.plugin == "qa_exe"


def test_an_executor_given_as_an_object_is_named_by_its_class():
    with pytest.raises(PluginError, match=r"^executor 'reversed' \(test_executors\.Breaks\) "
                                          r"failed: done\(\) raised RuntimeError: done boom$"):
        compare_traces(TRACES, ["full-history"], tokenizer="chars4",
                       executor=Breaks("raises"))


def test_the_tasks_own_exceptions_pass_through_a_plugins_executor(fresh_registry, tmp_path):
    """What the task raises (a run that cannot be read under --strict, a failing
    tokenizer, Ctrl-C) comes out of a plugin's ``done()`` as it does out of the built-in
    executors: it is not the executor's fault."""
    register_breaking()

    class Tokenizers:
        @hookimpl
        def register_tokenizers(self, register):
            register("broken-tok", lambda text: (_ for _ in ()).throw(OSError("no vocab")))

    class Eager:  # runs each task in submit(): the task's exceptions come from there
        @hookimpl
        def register_executors(self, register):
            register("qa-eager", lambda address, jobs: FailsIn(None, eager=True))

    get_registry().register(Tokenizers(), "tok-plugin")
    get_registry().register(Eager(), "qa_eager")
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{oops")
    for executor in ("local", "qa-fine", "qa-eager"):
        strict = run(TRACES[0], str(garbled), "-s", "full-history", "-t", "chars4",
                     "--strict", "--executor", executor)
        assert strict.exit_code == 2 and strict.output.startswith(f"Error: {garbled}:")
        assert "qa-" not in strict.output and strict.output.count("\n") == 1
        broken = run(TRACES[0], "-s", "full-history", "-t", "broken-tok", "--executor",
                     executor)
        assert broken.exit_code == 1 and "OSError: no vocab" in broken.output
        assert "qa-" not in broken.output and broken.output.count("\n") == 1

    class Interrupted(Strategy):
        name = "interrupted"

        def to_messages(self, turns, memory, ctx):
            raise KeyboardInterrupt

    for executor in ("qa-fine", "qa-eager"):
        with pytest.raises(KeyboardInterrupt):
            compare_traces(TRACES, ["full-history", Interrupted], tokenizer="chars4",
                           executor=executor)


def test_what_finished_before_an_executor_broke_is_written(fresh_registry, tmp_path):
    """"Nothing good is thrown away": the traces whose results came back before (and
    after) the executor broke its contract are in the --per-trace file."""
    register_breaking(after=1)
    out = tmp_path / "per-trace.jsonl"
    result = run(*TRACES, "-s", "full-history", "-t", "chars4", "--executor", "qa-raises",
                 "--per-trace", str(out))
    assert result.exit_code == 2 and "done() raised RuntimeError" in result.output
    assert [json.loads(line)["file"] for line in out.read_text().splitlines()] == TRACES[:2]
    with pytest.raises(PluginError, match="bogus-key"):  # the second trace is lost
        compare_traces(TRACES, ["full-history"], tokenizer="chars4",
                       executor=Breaks("bogus-key", after=1), per_trace=tmp_path / "b.jsonl")
    lines = (tmp_path / "b.jsonl").read_text().splitlines()
    assert [json.loads(line)["file"] for line in lines] == [TRACES[0], TRACES[2]]


class FailsIn(Reversed):
    """A third-party executor whose ``method`` (``slots``, ``start``, ``submit``,
    ``done`` or ``close``) raises ``error(message)`` on its call after the first
    ``after`` (its other calls work; tasks finish first in, first out). With ``eager``
    it runs each task in ``submit()``, whose exceptions then come from there."""

    def __init__(self, method: str | None, after: int = 0, error=RuntimeError,
                 message: str = "boom", *, slots=1, eager: bool = False) -> None:
        super().__init__()
        self.method, self.after, self.error, self.message = method, after, error, message
        self.eager, self._slots = eager, slots
        self.calls: dict[str, int] = {}
        self.closed = False

    def _call(self, method: str) -> None:
        self.calls[method] = self.calls.get(method, 0) + 1
        if method == self.method and self.calls[method] == self.after + 1:
            raise self.error(self.message)

    @property
    def slots(self):
        self._call("slots")
        return self._slots

    def start(self, job: WorkerJob) -> None:
        self._call("start")
        super().start(job)

    def submit(self, key: int, task) -> None:
        self._call("submit")
        self.queue.append((key, self.run(task) if self.eager else task))

    def done(self):
        self._call("done")
        key, task = self.queue.popleft()
        return key, task if self.eager else self.run(task)

    def close(self) -> None:
        self._call("close")
        self.closed = True


FAULTS = {  # name: (FailsIn's arguments, the error's end)
    "qa-start": (("start",), "start() raised RuntimeError: boom"),
    "qa-submit": (("submit", 1, KeyError, "no room"), "submit() raised KeyError: 'no room'"),
    "qa-done-exits": (("done", 0, SystemExit, "3"), "done() raised SystemExit: 3"),
    "qa-slots": (("slots", 0, RuntimeError, ""), "slots raised RuntimeError"),
}


def register_faults(made: dict | None = None) -> None:
    """The executors of FAULTS, plus ``qa-slots-str`` (slots ``'4'``) and
    ``qa-submit-late`` (its fifth submit() raises), under plugin ``qa_exe``; ``made``
    gets each executor made, by name."""
    made = {} if made is None else made

    def factory(name, args, kwargs):
        def make(address, jobs):
            made[name] = FailsIn(*args, **kwargs)
            return made[name]
        return make

    class Plugin:
        @hookimpl
        def register_executors(self, register):
            for name, (args, _) in FAULTS.items():
                register(name, factory(name, args, {}))
            register("qa-close", factory("qa-close", ("close", 0, OSError, "cluster gone"),
                                         {}))
            register("qa-slots-str", factory("qa-slots-str", (None,), {"slots": "4"}))
            register("qa-submit-late", factory(
                "qa-submit-late", ("submit", 4, RuntimeError, "queue full"), {}))

    get_registry().register(Plugin(), "qa_exe")


@pytest.mark.parametrize(("name", "problem"), [
    *((name, problem) for name, (_, problem) in FAULTS.items()),
    ("qa-slots-str", "slots is '4' (str); it must be how many tasks the executor runs at "
                     "once, a whole number from 1"),
])
def test_an_executor_method_that_raises_is_one_line_naming_it(fresh_registry, name,
                                                              problem):
    """A plugin's executor whose start(), submit() or done() (sys.exit() too) raises, or
    whose slots raises or is no whole number: one ``Error:`` line naming the executor,
    its plugin, the method and the exception, exit code 2, and the same PluginError
    from compare_traces (before: a bare traceback from the engine)."""
    register_faults()
    result = run(*TRACES, "-s", "full-history", "-t", "chars4", "--executor", name)
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.output == (f"Error: executor {name!r} of plugin 'qa_exe' (distribution "
                             f"(registered in code)) failed: {problem}\n")
    with pytest.raises(PluginError) as caught:
        compare_traces(TRACES, ["full-history"], tokenizer="chars4", executor=name)
    assert str(caught.value).endswith(f"failed: {problem}")
    assert caught.value.plugin == "qa_exe"


def test_an_executor_object_whose_start_raises_is_named_by_its_class():
    with pytest.raises(PluginError, match=r"^executor 'reversed' \(test_executors\.FailsIn\) "
                                          r"failed: start\(\) raised ValueError: bad$"):
        compare_traces(TRACES, ["full-history"], tokenizer="chars4",
                       executor=FailsIn("start", 0, ValueError, "bad"))


def copies(tmp_path, n: int) -> list[str]:
    """``n`` runs in files of their own (the short examples, as many times as needed)."""
    out = []
    for i in range(n):
        path = tmp_path / f"run{i}.json"
        path.write_bytes(open(TRACES[i % len(TRACES)], "rb").read())
        out.append(str(path))
    return out


def test_what_finished_before_submit_failed_is_written(fresh_registry, tmp_path):
    """A submit() that raises midway (one slot: four traces in flight, the fifth
    submit() fails once the first has finished): the trace finished before it and the
    three in flight, let finish, are in the --per-trace file (before: a traceback, and
    only the first trace)."""
    register_faults()
    runs = copies(tmp_path, 6)
    out = tmp_path / "per-trace.jsonl"
    result = run(*runs, "-s", "full-history", "-t", "chars4", "--executor",
                 "qa-submit-late", "--per-trace", str(out))
    assert result.exit_code == 2, (result.output, result.exception)
    assert result.output.endswith("failed: submit() raised RuntimeError: queue full\n")
    assert result.output.count("\n") == 1
    assert [json.loads(line)["file"] for line in out.read_text().splitlines()] == runs[:4]
    eager = FailsIn("submit", 4, RuntimeError, "queue full", eager=True)
    with pytest.raises(PluginError, match="submit"):
        compare_traces(runs, ["full-history"], tokenizer="chars4", executor=eager,
                       per_trace=tmp_path / "eager.jsonl")
    lines = (tmp_path / "eager.jsonl").read_text().splitlines()
    assert [json.loads(line)["file"] for line in lines] == runs[:4]


def test_a_failing_close_keeps_what_finished_and_never_hides_the_first_error(
        fresh_registry, tmp_path):
    """close() raising after every trace finished: the comparison is printed, exit 0, and
    one warning line names the executor, its plugin and close()'s exception; every trace
    is in the --per-trace file, the executor closed once; compare_traces returns its
    result with a PluginWarning. When something failed before it (a run that cannot be
    read under --strict), that first failure is the error told, not close()'s (before: a
    traceback of close()'s exception in both cases)."""
    made: dict = {}
    register_faults(made)
    out = tmp_path / "per-trace.jsonl"
    result = run(*TRACES, "-s", "full-history", "-t", "chars4", "--executor", "qa-close",
                 "--per-trace", str(out), "--json")
    assert result.exit_code == 0, (result.output, result.exception)
    warning = ("Warning: executor 'qa-close' of plugin 'qa_exe' (distribution (registered "
               "in code)) failed: close() raised OSError: cluster gone; the comparison had "
               "finished, its results are kept\n")
    assert warning in result.output and result.output.count("close()") == 1
    assert '"strategies"' in result.output  # the comparison itself
    assert [json.loads(line)["file"] for line in out.read_text().splitlines()] == TRACES
    assert made["qa-close"].calls["close"] == 1
    with pytest.warns(PluginWarning, match=r"close\(\) raised OSError: cluster gone; the "
                                           r"comparison had finished"):
        compared = compare_traces(TRACES, ["full-history"], tokenizer="chars4",
                                  executor="qa-close")
    assert len(compared.traces) == len(TRACES)
    garbled = tmp_path / "garbled.json"
    garbled.write_text("{oops")
    strict = run(TRACES[0], str(garbled), "-s", "full-history", "-t", "chars4", "--strict",
                 "--executor", "qa-close")
    assert strict.exit_code == 2 and strict.output.startswith(f"Error: {garbled}:")
    assert "close()" not in strict.output and strict.output.count("\n") == 1
    assert made["qa-close"].calls["close"] == 1  # it was asked to close, all the same


class Stalls(Reversed):
    """A third-party executor whose ``done()`` waits ``seconds`` (blocked, as on a
    scheduler that never answers) before each of its first ``times`` results."""

    def __init__(self, seconds: float, times: int = 1) -> None:
        super().__init__()
        self.seconds, self.times = seconds, times

    def done(self):
        if self.times:
            self.times -= 1
            threading.Event().wait(self.seconds)
        key, task = self.queue.popleft()
        return key, self.run(task)


def test_a_done_that_returns_nothing_for_a_while_is_told_once(fresh_registry, monkeypatch,
                                                               capfd):
    """A ``done()`` that returns nothing for WAIT_NOTICE_SECONDS: one notice on stderr
    naming the executor and its plugin, and the comparison goes on (before: silence,
    however long it hung). Once per comparison; the alarm is put back as it was."""
    monkeypatch.setattr(executor_module, "WAIT_NOTICE_SECONDS", 0.2)

    class Plugin:
        @hookimpl
        def register_executors(self, register):
            register("qa-stalls", lambda address, jobs: Stalls(0.7, times=2))

    get_registry().register(Plugin(), "qa_exe")
    got = compare_traces(TRACES, STRATEGIES, tokenizer="chars4", executor="qa-stalls")
    assert got.dumps() == one_job_json()
    err = capfd.readouterr().err
    assert err == ("turnpress: still waiting for executor 'qa-stalls' of plugin 'qa_exe' "
                   "(distribution (registered in code)): no trace has finished for 0.2 s; "
                   "Ctrl-C stops\n")
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    compare_traces(TRACES, STRATEGIES, tokenizer="chars4", executor="local", jobs=2)
    assert capfd.readouterr().err == ""  # results coming back in time: nothing said


def test_a_built_in_executor_gets_no_wait_notice(monkeypatch, capfd):
    """The built-in pool waits on the runs' own time (one huge run can take minutes):
    no notice, however long a result takes; the alarm is never armed."""
    monkeypatch.setattr(executor_module, "WAIT_NOTICE_SECONDS", 0.01)
    armed = []
    real = signal.setitimer
    monkeypatch.setattr(signal, "setitimer", lambda *a: (armed.append(a), real(*a))[1])
    compare_traces(TRACES, STRATEGIES, tokenizer="chars4", executor="local", jobs=2)
    assert not armed and capfd.readouterr().err == ""


def test_the_wait_notice_leaves_another_alarm_alone(monkeypatch, capfd):
    """An application that uses the alarm signal itself keeps it: no notice then."""
    monkeypatch.setattr(executor_module, "WAIT_NOTICE_SECONDS", 0.1)
    rang = []
    previous = signal.signal(signal.SIGALRM, lambda *a: rang.append(1))
    try:
        compare_traces(TRACES, ["full-history"], tokenizer="chars4", executor=Stalls(0.3))
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL and not rang
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert capfd.readouterr().err == ""


class Tagged(Strategy):
    name = "tagged"

    def to_messages(self, turns, memory, ctx):
        return [{"role": "user", "content": ctx.mission}]


def test_a_worker_without_a_driver_plugin_is_named(fresh_registry):
    """The job checks the worker's plugins before it loads the settings: a plugin the
    driver has and the worker lacks is an error naming the worker and the plugin."""
    import pickle

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(Tagged)

    get_registry().register(Plugin(), "tagged-plugin")
    job = WorkerJob(operator.itemgetter, "x")
    sent = pickle.loads(pickle.dumps(job))  # as a worker receives it
    assert sent.start("worker A")({"x": 1}) == TaskResult(1)  # same plugins: fine
    from turnpress.core.registry import reset_registry

    reset_registry(None)  # the worker's own registry: built-ins only
    with pytest.raises(ExecutorError, match=r"worker A lacks 1 plugin\(s\) the driver has: "
                                            r"plugin 'tagged-plugin'"):
        sent.start("worker A")


#: a plugin that gets five things wrong, each a warning: a strategy name registered
#: twice (when the plugins load), and, the first time a prompt is rendered, template
#: directories that are not a list, a namespace renderer that raises and type labels
#: that are not strings
WARNING_PLUGIN = """
    from turnpress import Strategy, hookimpl

    class Plain(Strategy):
        name = "plain-twice"

        def to_messages(self, turns, memory, ctx):
            return [ctx.message("user", ctx.mission)]

    @hookimpl
    def register_strategies(register):
        register(Plain)
        register(Plain)

    @hookimpl
    def template_dirs():
        return 42

    @hookimpl
    def type_label(value):
        return 7

    def broken(view):
        raise RuntimeError("renderer boom")

    @hookimpl
    def register_namespace_renderers(register):
        register("env/", broken, 250)
"""

WARNINGS = ("name 'plain-twice' from plugin 'warns'", "template_dirs() returned 42",
            "namespace renderer 'env/' of plugin 'warns'", "type_label() returned 7")


def plugin_warnings(stderr: str) -> list[str]:
    lines = [line for line in stderr.splitlines() if "plugin 'warns'" in line]
    for what in WARNINGS:
        assert any(what in line for line in lines), (what, stderr)
    return lines


def test_with_jobs_each_plugin_warning_is_shown_once(site):
    """--jobs 2: the worker processes hold their plugin warnings back and send them with
    their results; the driver shows each once (before: once per worker), as --jobs 1."""
    from plugin_helpers import make_plugin

    make_plugin(site, "warns", WARNING_PLUGIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    env.pop("TURNPRESS_LOAD_PLUGINS", None)
    shown = {}
    for jobs in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-m", "turnpress", "compare", *TRACES, "-s", "full-history",
             "-s", "rolling-window:window=2", "-t", "chars4", "--json", "--jobs", jobs],
            env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        lines = plugin_warnings(done.stderr)
        assert len(lines) == len(set(lines)), done.stderr
        shown[jobs] = sorted(lines)
    assert shown["2"] == shown["1"]


def test_spawned_workers_send_their_warnings_to_the_driver(site, monkeypatch, capfd):
    """Spawned workers load the plugins again (each warning at load and at use, in
    every worker): the driver shows each once, and a worker writes none itself."""
    import multiprocessing

    from plugin_helpers import make_plugin

    from turnpress.plugins import process_pool

    make_plugin(site, "warns", WARNING_PLUGIN)
    monkeypatch.setattr(process_pool, "mp_context",
                        lambda: multiprocessing.get_context("spawn"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PluginWarning)
        compare_traces(TRACES, ["full-history", "plain-twice"], tokenizer="chars4",
                       executor="local", jobs=2)
    messages = [str(w.message) for w in caught if issubclass(w.category, PluginWarning)]
    assert len(messages) == len(set(messages)), messages
    plugin_warnings("\n".join(messages))
    assert "warns" not in capfd.readouterr().err  # nothing from the workers themselves


dask = pytest.importorskip("distributed", reason="extra turnpress[dask] not installed")


def test_dask_on_a_local_cluster_gives_the_same_json():
    from turnpress.plugins.dask_executor import DaskExecutor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        executor = DaskExecutor(None, 2, processes=False)
        got = compare_traces(TRACES, STRATEGIES, tokenizer="chars4", executor=executor)
    assert got.dumps() == one_job_json()


def test_dask_worker_processes_from_the_command_line():
    """``--executor dask`` starts a LocalCluster of --jobs worker processes: the same
    JSON as --jobs 1."""
    args = [*TRACES, "-s", "full-history", "-s", "rolling-window:window=2", "-s",
            "single-user-coalesced", "-t", "chars4", "--json"]
    result = run(*args, "--executor", "dask", "--jobs", "2")
    assert result.exit_code == 0, result.output
    assert result.stdout == run(*args, "--jobs", "1").stdout


def test_a_dask_worker_without_the_plugin_is_named(fresh_registry):
    """Worker processes load installed plugins only: a strategy registered in code on
    the driver is missing there, and the error names the Dask worker."""
    from turnpress.plugins.dask_executor import DaskExecutor

    class Plugin:
        @hookimpl
        def register_strategies(self, register):
            register(Tagged)

    get_registry().register(Plugin(), "tagged-plugin")
    with pytest.raises(ExecutorError, match=r"Dask worker tcp://127\.0\.0\.1:\d+ lacks 1 "
                                            r"plugin\(s\) the driver has: plugin "
                                            r"'tagged-plugin'"):
        compare_traces(TRACES[:1], ["tagged"], tokenizer="chars4",
                       executor=DaskExecutor(None, 1))


def test_an_unreachable_scheduler_is_one_line_exit_2(monkeypatch):
    from turnpress.plugins import dask_executor

    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT", 0.5)
    result = run(*TRACES, "-s", "full-history", "--executor", "dask:tcp://127.0.0.1:9")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("Error: --executor dask:tcp://127.0.0.1:9: cannot reach "
                                    "the Dask scheduler at tcp://127.0.0.1:9 ")
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_dask_driver_logs_are_bounded():
    """Issue 20 item 7: Dask's logs of recent messages (each holds a task's arguments)
    and transitions keep LOG_LENGTH entries in the driver, not 1,000: filling them made
    the driver's memory grow 1.22x from 100 to 1,000 runs."""
    from turnpress.plugins.dask_executor import LOG_LENGTH, DaskExecutor

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with DaskExecutor(None, 1, processes=False) as executor:
            scheduler = executor._cluster.scheduler
            assert executor._client.scheduler_comm.recent_message_log.maxlen == LOG_LENGTH
            assert scheduler.transition_log.maxlen == LOG_LENGTH
            got = compare_traces(TRACES, STRATEGIES, tokenizer="chars4", executor=executor)
            assert len(executor._client.scheduler_comm.recent_message_log) <= LOG_LENGTH
    assert got.dumps() == one_job_json()
    import dask

    assert dask.config.get("distributed.admin.low-level-log-length") == 1000  # restored

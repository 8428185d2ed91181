"""Where work runs: the :class:`Executor` that ``register_executors`` plugins provide.

A caller (``compare``) gives an executor a :class:`WorkerJob` (what every worker sets
up once: for ``compare``, the strategies, tokenizer and price), then submits tasks
one at a time and takes each result back as it finishes (:meth:`Executor.done`), in
any order. The caller bounds how many tasks are in flight, so its memory stays flat
however many tasks there are. :func:`get_executor` reads ``--executor
NAME[:ADDRESS]``. The core knows no engine: the local process pool and Dask are
plugins (``turnpress.plugins.process_pool``, ``turnpress.plugins.dask_executor``).

A worker checks, before it loads the job, that it has every plugin the driver has
(:meth:`WorkerJob.start`): a missing one is an :class:`ExecutorError` naming the
worker and the plugin, not an unknown strategy deep inside a task.

The caller uses an executor through :class:`TaskResults`, which holds a plugin's
executor to its contract: the task function (``job.start(where)``) hands back each
result as a :class:`TaskResult` and marks each exception it raises as the task's, so an
answer of ``done()`` that is not one of those (``done()`` itself raised, a key it was
never given, a result that is not the task's), an exception of ``start()``,
``submit()`` or ``close()`` that is not the task's, and a ``slots`` that is not a whole
number from 1 are the executor's own fault, a :class:`PluginError` naming it, its
plugin and the method; the task's exceptions pass as they are.
A worker process holds its plugin warnings back and the task function sends them
with each result (or exception), for the driver to show each once.
A plugin executor's ``done()`` that returns nothing for :data:`WAIT_NOTICE_SECONDS`
gets one notice on stderr (an alarm signal, no thread and no polling; see :meth:`TaskResults.take`).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
import uuid
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Container, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple, NoReturn

from turnpress.core.errors import (
    PLUGIN_FAULTS,
    ExecutorError,
    PluginError,
    PluginWarning,
    quote,
)
from turnpress.core.plugin_loading import (
    Registration,
    held_warnings,
    hold_warnings,
    short_repr,
)
from turnpress.core.registry import get_registry

__all__ = ["DEFAULT_EXECUTOR", "WAIT_NOTICE_SECONDS", "Executor", "ExecutorError",
           "TaskResult", "TaskResults", "WorkerJob", "describe_executor", "executor_names",
           "get_executor", "plugin_set"]

DEFAULT_EXECUTOR = "local"
"""The executor used without ``--executor``: the built-in local process pool."""

WAIT_NOTICE_SECONDS = 30.0
"""Seconds one wait for a result (``done()``) may last before :class:`TaskResults` says
once on stderr that it is still waiting (a notice only: the wait goes on)."""


#: this process, as a worker tells it from the driver's (a forked worker has the driver's
#: token and another pid; a process elsewhere, another token)
_TOKEN = uuid.uuid4().hex


def _this_process() -> tuple[str, int]:
    return _TOKEN, os.getpid()


def plugin_set() -> dict[str, str]:
    """The plugins loaded in this process (name: how ``turnpress plugins`` names them),
    the ones that failed to load left out."""
    return {name: info.source for name, info in get_registry().plugins.items()
            if info.error is None}


class WorkerJob:
    """What each worker sets up once before its tasks: ``setup(settings)`` returns the
    function a task is given to (``run(task) -> result``).

    The settings travel pickled; a worker unpickles them only after it checked it has
    the driver's plugins (:meth:`start`). In the driver's own process (an executor
    that runs tasks in place) they are used as they are. A worker in another process
    holds its plugin warnings back: they go to the driver with the results.
    """

    def __init__(self, setup: Callable[[Any], Callable[[Any], Any]], settings: Any) -> None:
        self.token = uuid.uuid4().hex
        self.driver = _this_process()
        self.plugins = plugin_set()
        self.payload: bytes | None = None
        self._local: tuple[Callable[[Any], Callable[[Any], Any]], Any] | None = (setup,
                                                                                   settings)

    def __getstate__(self) -> dict[str, Any]:
        """The job as sent to a worker: the settings pickled apart (once), so that the
        worker checks its plugins before it unpickles them."""
        if self.payload is None:
            self.payload = pickle.dumps(self._local)
        state = dict(self.__dict__)
        state["_local"] = None
        return state

    def start(self, where: str) -> Callable[[Any], Any]:
        """The task function of this job on the worker described by ``where`` (``worker
        tcp://10.0.0.5:40001``): an :class:`ExecutorError` naming it when it lacks a
        plugin the driver has, or cannot load the settings."""
        if self.driver != _this_process():  # a worker process (forked: the job as it is)
            hold_warnings()  # before its plugins load (spawned)
        if self._local is not None:
            setup, settings = self._local
            return _Task(setup(settings))
        here = plugin_set()
        missing = [source for name, source in self.plugins.items() if name not in here]
        if missing:
            raise ExecutorError(f"{where} lacks {len(missing)} plugin(s) the driver has: "
                                f"{'; '.join(missing)}. Install the same plugins on every "
                                f"worker as on the driver (or check TURNPRESS_LOAD_PLUGINS "
                                f"there).")
        try:
            setup, settings = pickle.loads(self.payload or b"")
        except Exception as exc:
            raise ExecutorError(f"{where} cannot load the job the driver sent: "
                                f"{type(exc).__name__}: {exc}. Install the same turnpress "
                                f"and plugins on every worker as on the driver.") from None
        return _Task(setup(settings))


class TaskResult(NamedTuple):
    """What the task function of a job (``job.start(where)``) returns: the result of the
    task, and the plugin warnings the worker held back (``(message, plugin)``; see
    :func:`~turnpress.core.plugin_loading.hold_warnings`); an executor's ``done()`` hands
    it back as it is."""

    value: Any
    warnings: tuple[tuple[str, str | None], ...] = ()


#: the attribute the task function sets on each exception the task raises, so that the
#: driver tells it from an exception of the executor's own code (it travels pickled):
#: the plugin warnings the worker held back, as in :class:`TaskResult`
TASK_MARK = "turnpress_task_warnings"


class _Task:
    """A job's task function as a worker gets it: ``run``, its result wrapped in a
    :class:`TaskResult`, its exceptions marked (:data:`TASK_MARK`) and raised as they are."""

    def __init__(self, run: Callable[[Any], Any]) -> None:
        self.run = run

    def __call__(self, task: Any) -> TaskResult:
        try:
            value = self.run(task)
        except PLUGIN_FAULTS as exc:  # sys.exit() too: the task's, not the executor's
            try:
                setattr(exc, TASK_MARK, held_warnings())
            except Exception:  # pragma: no cover - an exception that takes no attribute
                pass
            raise
        return TaskResult(value, held_warnings())


class Executor(ABC):
    """Runs a :class:`WorkerJob`'s tasks somewhere and hands back results as they finish.

    Use: :meth:`start` once, then :meth:`submit` and :meth:`done` as often as needed
    (``done`` only while a submitted task has not been returned), then :meth:`close`
    (or use it as a context manager). ``slots`` is how many tasks it runs at once; a
    caller keeps a few times that many in flight.
    """

    #: the registered name (``local``, ``dask``...)
    name: str = ""
    #: how many tasks run at once (workers x threads)
    slots: int = 1
    #: its registration: the name it was selected by and its plugin (set by
    #: :func:`get_executor`; None for an executor given as an object)
    registered_by: Registration | None = None

    @abstractmethod
    def start(self, job: WorkerJob) -> None:
        """Get the workers ready to run ``job``'s tasks."""

    @abstractmethod
    def submit(self, key: int, task: Any) -> None:
        """Queue ``task``; :meth:`done` hands its result back with ``key``."""

    @abstractmethod
    def done(self) -> tuple[int, Any]:
        """Wait for a submitted task to finish (any of them) and return ``(key, result)``:
        the key :meth:`submit` was given and what the task function returned, as it is;
        the task's exception is raised here, as raised on the worker."""

    def close(self) -> None:  # noqa: B027 -- optional: nothing to release by default
        """Release the workers (and a cluster the executor started itself)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def executor_names() -> list[str]:
    """The names of the registered executors, sorted."""
    return sorted(get_registry().executors())


def get_executor(spec: str | Executor | None = None, jobs: int = 1) -> Executor:
    """The executor for ``NAME[:ADDRESS]`` (None: ``local``) with ``jobs`` workers, or an
    :class:`Executor` given as it is. An unknown name or a bad address raises
    ``ValueError``; an engine that cannot be reached, :class:`ExecutorError`."""
    if isinstance(spec, Executor):
        return spec
    if spec is None:
        spec = DEFAULT_EXECUTOR
    if not isinstance(spec, str):
        raise ValueError(f"executor must be a name (NAME[:ADDRESS]) or an Executor, got "
                         f"{spec!r}")
    name, colon, address = spec.strip().partition(":")
    registry = get_registry()
    found = registry.executors().get(name)
    if found is None:
        raise ValueError(f"unknown executor {name!r}; registered executors: "
                         f"{', '.join(executor_names())}.{registry.failure_note()}")
    executor = found.value(address if colon else None, jobs)
    if not isinstance(executor, Executor):
        raise PluginError(f"executor {name!r} of {found.plugin.source} returned "
                          f"{type(executor).__name__}, not a turnpress.core.executor.Executor",
                          plugin=found.plugin.name, distribution=found.plugin.distribution,
                          entry_point=found.plugin.entry_point)
    if not executor.name:
        executor.name = name
    executor.registered_by = found
    return executor


def describe_executor(executor: Executor) -> str:
    """``executor 'x' of plugin 'p' (distribution ...)``, for a message; an executor
    given as an object is named by its class."""
    found = executor.registered_by
    if found is not None:
        return f"executor {found.name!r} of {found.plugin.source}"
    cls = type(executor)
    return f"executor {executor.name!r} ({cls.__module__}.{cls.__qualname__})"


class TaskResults:
    """The caller's side of an executor: every call the caller makes of it, guarded.
    :attr:`slots`, :meth:`start`, :meth:`submit`, :meth:`take` (``done()``, its answer
    checked against the contract) and :meth:`close`; as a context manager it closes the
    executor on the way out.

    The task's own exceptions (marked by the task function), an
    :class:`ExecutorError` and ``KeyboardInterrupt`` pass as they are. A plugin's
    executor whose ``slots`` is not a whole number from 1, whose ``start()``,
    ``submit()``, ``done()`` or ``close()`` raises anything else (``sys.exit()``
    included), or whose ``done()`` returns a key it was not given or a result that is
    not the task's raises a :class:`PluginError` naming the executor, its plugin and the
    method (a built-in executor's exceptions pass as they are, like those of its
    factory).
    """

    def __init__(self, executor: Executor, what: str = "task") -> None:
        self.executor = executor
        self.what = what  # what a task is, for the notice ("trace")
        self.noticed = False
        self._slots: int | None = None

    @property
    def slots(self) -> int:
        """The executor's ``slots``, read once: how many tasks it runs at once."""
        if self._slots is None:
            slots = self._guarded("slots", getattr, self.executor, "slots")
            if not self._builtin() and (isinstance(slots, bool) or not isinstance(slots, int)
                                        or slots < 1):
                raise self._fault(f"slots is {short_repr(slots)}; it must be how many tasks "
                                  f"the executor runs at once, a whole number from 1")
            self._slots = slots
        return self._slots

    def start(self, job: WorkerJob) -> None:
        """``executor.start(job)``, guarded."""
        self._guarded("start()", self.executor.start, job)

    def submit(self, key: int, task: Any) -> None:
        """``executor.submit(key, task)``, guarded (an executor that runs the task right
        there raises the task's own exceptions as they are)."""
        self._guarded("submit()", self.executor.submit, key, task)

    def close(self) -> None:
        """``executor.close()``, guarded."""
        self._guarded("close()", self.executor.close)

    def _guarded(self, method: str, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)``, the executor's ``method``: an :class:`ExecutorError` passes
        as it is, any other fault goes through :meth:`_plugin_fault`."""
        try:
            return call(*args)
        except ExecutorError:
            raise
        except PLUGIN_FAULTS as exc:
            self._plugin_fault(method, exc)

    def __enter__(self) -> TaskResults:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        """Close the executor. A ``close()`` that fails once the work has finished is a
        :class:`PluginWarning` (the results are kept); when something else already stops
        the caller, it is left unsaid (that first failure is the one to tell)."""
        if kind is None:  # the comparison finished: its results are not thrown away
            try:
                self.close()
            except PluginError as fault:
                warnings.warn(f"{fault}; the comparison had finished, its results are "
                              f"kept", PluginWarning, stacklevel=2)
            return
        try:
            self.close()
        except PLUGIN_FAULTS:
            pass

    def take(self, given: Container[int]) -> tuple[int, Any]:
        """The next finished task's ``(key, result)``; ``given`` holds the keys of the
        tasks submitted and not yet returned.

        When a plugin's ``done()`` returns nothing for :data:`WAIT_NOTICE_SECONDS`, one
        line on stderr says so (once per instance; the wait goes on). The clock is an alarm
        signal armed for the call (``setitimer``: no thread, no polling, nothing to do
        while results come back), so only in the main thread of a process whose alarm
        nobody else uses, and not on Windows (there is no alarm: no notice).
        """
        with self._waiting():
            answer = self._guarded("done()", self.executor.done)
        if type(answer) is not tuple or len(answer) != 2:
            raise self._fault(f"done() returned {short_repr(answer)}; it must return a "
                              f"(key, result) pair")
        key, result = answer
        try:
            known = key in given
        except TypeError:  # unhashable
            known = False
        if not known:
            raise self._fault(f"done() returned the key {quote(key)}, which is not the key "
                              f"of a task submitted and not yet returned; done() must "
                              f"return the key that submit(key, task) was given, once")
        if type(result) is not TaskResult:
            raise self._fault(f"done() returned {short_repr(result)} as the result of task "
                              f"{key!r}; the result must be what the job's task function "
                              f"(job.start(where)) returned for it, as it is")
        if result.warnings:
            get_registry().relay(result.warnings)
        return key, result.value

    @contextmanager
    def _waiting(self) -> Iterator[None]:
        """The notice's alarm, armed while ``done()`` runs (when it can be), for a plugin's
        executor only: a built-in one waits on tasks whose time is the runs' (one huge
        run can take minutes), not on a plugin's code."""
        if self.noticed or self._builtin() or not _alarm_free():
            yield
            return
        previous = signal.signal(signal.SIGALRM, self._notice)
        try:
            signal.setitimer(signal.ITIMER_REAL, WAIT_NOTICE_SECONDS)
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def _notice(self, signum: int, frame: Any) -> None:
        self.noticed = True
        try:
            sys.stderr.write(f"turnpress: still waiting for {describe_executor(self.executor)}"
                             f": no {self.what} has finished for {WAIT_NOTICE_SECONDS:g} s; "
                             f"Ctrl-C stops\n")
            sys.stderr.flush()
        except Exception:  # pragma: no cover - stderr closed, or busy in this thread
            pass

    def _builtin(self) -> bool:
        found = self.executor.registered_by
        return found is not None and found.plugin.builtin

    def _plugin_fault(self, method: str, exc: BaseException) -> NoReturn:
        """Raise ``exc``, raised by the executor's ``method``, as it is when it is the
        task's own (its held warnings relayed first) or the executor is built in; else a
        :class:`PluginError` naming the executor, its plugin and ``method``. Called in
        the ``except`` clause that caught ``exc``."""
        held = getattr(exc, TASK_MARK, None)
        if held is not None:  # the task's own exception
            if held:
                get_registry().relay(held)
            raise exc
        if self._builtin():
            raise exc
        try:
            message = " ".join(str(exc).split())
        except Exception:  # a plugin's exception with a broken __str__
            message = ""
        raise self._fault(f"{method} raised {type(exc).__name__}"
                          + (f": {message}" if message else "")) from None

    def _fault(self, what: str) -> PluginError:
        found = self.executor.registered_by
        info = found.plugin if found is not None else None
        return PluginError(f"{describe_executor(self.executor)} failed: {what}",
                           plugin=info.name if info else None,
                           distribution=info.distribution if info else None,
                           entry_point=info.entry_point if info else None)


def _alarm_free() -> bool:
    """Whether this thread may use the alarm signal: the main thread, on a system with
    ``setitimer``, with no handler of someone else's and no alarm running."""
    return (hasattr(signal, "setitimer")
            and threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)
            and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0))

"""Built-in plugin: the ``local`` executor, a pool of worker processes on this machine.

``--executor local`` (the default) with ``--jobs N``: with one job the tasks run in
this process, one after the other; with more, in a process pool, forked on Linux
while this process runs a single thread (workers then see plugins registered in
code) and spawned otherwise (workers then load installed plugins only; a script must
guard its entry point with ``if __name__ == "__main__":``). Registered through
``register_executors`` exactly like a third-party executor.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from turnpress.core.executor import Executor, WorkerJob
from turnpress.core.hookspecs import hookimpl

__all__ = ["InlineExecutor", "ProcessPool", "local_executor", "register_executors"]


class InlineExecutor(Executor):
    """Runs each task in this process when :meth:`done` asks for it (``--jobs 1``)."""

    name = "local"
    slots = 1

    def __init__(self) -> None:
        self._run: Callable[[Any], Any] | None = None
        self._queue: deque[tuple[int, Any]] = deque()

    def start(self, job: WorkerJob) -> None:
        """Set the job up in this process."""
        self._run = job.start("this process")

    def submit(self, key: int, task: Any) -> None:
        """Queue ``task`` (it runs when :meth:`done` is called)."""
        self._queue.append((key, task))

    def done(self) -> tuple[int, Any]:
        """Run the oldest queued task and return ``(key, result)``."""
        assert self._run is not None, "start() first"
        key, task = self._queue.popleft()
        return key, self._run(task)


_TASK: Callable[[Any], Any] | None = None


def _init_process(job: WorkerJob) -> None:
    global _TASK
    _TASK = job.start(f"local worker process {os.getpid()}")


def _run_task(task: Any) -> Any:
    assert _TASK is not None
    return _TASK(task)


def mp_context() -> multiprocessing.context.BaseContext:
    """``fork`` on Linux while this process has a single thread (fast, and workers see
    plugins registered in code), else ``spawn`` (safe everywhere)."""
    if sys.platform == "linux" and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


class ProcessPool(Executor):
    """``jobs`` worker processes on this machine; results come back as they finish."""

    name = "local"

    def __init__(self, jobs: int) -> None:
        self.slots = jobs
        self._pool: ProcessPoolExecutor | None = None
        self._pending: dict[Future[Any], int] = {}
        self._finished: deque[Future[Any]] = deque()

    def start(self, job: WorkerJob) -> None:
        """Start the pool; each process sets the job up once."""
        self._pool = ProcessPoolExecutor(self.slots, mp_context=mp_context(),
                                         initializer=_init_process, initargs=(job,))

    def submit(self, key: int, task: Any) -> None:
        """Send ``task`` to the pool."""
        assert self._pool is not None, "start() first"
        self._pending[self._pool.submit(_run_task, task)] = key

    def done(self) -> tuple[int, Any]:
        """The next finished task's ``(key, result)``; its error as raised in the worker,
        without the worker's traceback chained to it."""
        if not self._finished:
            finished, _ = wait(self._pending, return_when=FIRST_COMPLETED)
            # several at once: hand them back in the order they were submitted
            self._finished.extend(f for f in self._pending if f in finished)
        future = self._finished.popleft()
        key = self._pending.pop(future)
        try:
            return key, future.result()
        except Exception as exc:
            raise exc from None

    def close(self) -> None:
        """Stop the pool (tasks not started are cancelled)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def local_executor(address: str | None, jobs: int) -> Executor:
    """The ``local`` executor's factory: ``jobs`` processes (1: this process)."""
    if address is not None:
        raise ValueError(f"executor 'local' takes no address (got {address!r}); use "
                         f"--executor local --jobs N, or a distributed executor such as "
                         f"dask:ADDRESS")
    return InlineExecutor() if jobs <= 1 else ProcessPool(jobs)


@hookimpl
def register_executors(register: Callable[..., None]) -> None:
    """Register the ``local`` executor."""
    register("local", local_executor)

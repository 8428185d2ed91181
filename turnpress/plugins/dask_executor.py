"""Built-in plugin: the ``dask`` executor, on Dask distributed (extra ``turnpress[dask]``).

``--executor dask:ADDRESS`` connects to a running scheduler (``tcp://host:8786``, as
``dask scheduler`` prints it); ``--executor dask`` starts a ``LocalCluster`` of
``--jobs`` worker processes on this machine. Each task is one whole trace; the job
(strategies, tokenizer, price) is sent to every worker once, results come back as
they finish (``distributed.as_completed``). ``distributed`` is imported only when
the executor starts, so the plugin loads without the extra.

The driver's memory stays flat in the number of runs: Dask's developer logs of the
messages each comm sent (the client's to the scheduler, and with a local cluster, in
this process too, the scheduler's to the client and the workers) and of the
scheduler's transitions keep ``distributed.admin.low-level-log-length`` entries, 1,000
by default: each message holds a task (a trace's arguments), and filling them took the
driver from 62 MB at 100 runs to 75.5 MB at 1,000 (1.22x). The executor creates its
client (and cluster) with at most :data:`LOG_LENGTH` of them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from turnpress.core.errors import ExecutorError
from turnpress.core.executor import Executor, WorkerJob
from turnpress.core.hookspecs import hookimpl

__all__ = ["CONNECT_TIMEOUT", "DaskExecutor", "dask_executor", "register_executors"]

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for the scheduler at ``dask:ADDRESS`` before giving up."""

LOG_LENGTH = 50
"""Entries of Dask's low-level logs (recent messages, transitions) kept by the client and
the local cluster this executor creates (Dask's default: 1,000), unless configured
lower."""

_started = threading.local()  # per worker thread: job token -> its task function


def _run_task(job: WorkerJob, task: Any) -> Any:
    """A task on a Dask worker: the job is set up once per worker thread."""
    jobs = getattr(_started, "jobs", None)
    if jobs is None:
        jobs = _started.jobs = {}
    run = jobs.get(job.token)
    if run is None:
        from distributed import get_worker  # optional dependency (turnpress[dask])

        try:
            where = f"Dask worker {get_worker().address}"
        except ValueError:
            where = "a Dask worker"
        jobs.clear()  # a worker keeps one job at a time
        run = jobs[job.token] = job.start(where)
    return run(task)


class DaskExecutor(Executor):
    """Tasks on a Dask cluster: the one at ``address``, or a ``LocalCluster`` of
    ``jobs`` workers (``processes=False``: threads of this process, for tests)."""

    name = "dask"

    def __init__(self, address: str | None = None, jobs: int = 1, *,
                 processes: bool = True) -> None:
        try:
            import distributed  # optional dependency (turnpress[dask])
        except ImportError:
            raise ExecutorError("executor 'dask' needs Dask distributed: pip install "
                                "'turnpress[dask]'") from None
        import dask  # installed with distributed

        self._distributed = distributed
        self.address = address
        self._cluster: Any = None
        key = "distributed.admin.low-level-log-length"
        logs = min(LOG_LENGTH, dask.config.get(key, LOG_LENGTH))
        with dask.config.set({key: logs}):  # read when the comms and scheduler are made
            if address is None:
                self._cluster = distributed.LocalCluster(
                    n_workers=jobs, threads_per_worker=1, processes=processes,
                    dashboard_address=":0", silence_logs=logging.ERROR)
                self._client = distributed.Client(self._cluster)
            else:
                try:
                    self._client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
                except (OSError, TimeoutError, ValueError) as exc:
                    raise ExecutorError(
                        f"--executor dask:{address}: cannot reach the Dask scheduler at "
                        f"{address} ({type(exc).__name__}: {' '.join(str(exc).split())}). "
                        f"Start one with 'dask scheduler' (and workers with 'dask worker "
                        f"{address}'), or use --executor dask for a local cluster."
                    ) from None
        threads = self._client.nthreads()
        self.slots = max(1, sum(threads.values()) if threads else jobs)
        self._job: Any = None
        self._done = distributed.as_completed()
        self._keys: dict[Any, int] = {}

    def start(self, job: WorkerJob) -> None:
        """Send the job to every worker once."""
        self._job = self._client.scatter(job, broadcast=True, hash=False)

    def submit(self, key: int, task: Any) -> None:
        """Submit one task (a whole trace)."""
        future = self._client.submit(_run_task, self._job, task, pure=False)
        self._keys[future] = key
        self._done.add(future)

    def done(self) -> tuple[int, Any]:
        """The next finished task's ``(key, result)``; its error as raised on the worker."""
        future = next(self._done)
        key = self._keys.pop(future)
        try:
            result = future.result()
        except Exception as exc:
            raise exc from None
        finally:
            future.release()
        return key, result

    def close(self) -> None:
        """Close the client, and the local cluster if this executor started it."""
        try:
            self._client.close()
        finally:
            if self._cluster is not None:
                self._cluster.close()


def dask_executor(address: str | None, jobs: int) -> Executor:
    """The ``dask`` executor's factory: the scheduler at ``address``, or a local
    cluster of ``jobs`` worker processes."""
    if address is not None and not address.strip():
        raise ValueError("--executor dask: give the scheduler's address after the colon "
                         "(dask:tcp://host:8786), or none for a local cluster")
    return DaskExecutor(address, jobs)


@hookimpl
def register_executors(register: Callable[..., None]) -> None:
    """Register the ``dask`` executor."""
    register("dask", dask_executor)

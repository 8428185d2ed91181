"""Issue 20 item 1: ``compare`` runs traces through an executor (``register_executors``).

The built-in ``local`` executor (the process pool of ``--jobs``), a plugin's executor
that hands results back out of order, and Dask distributed on its own local cluster
each give the JSON of ``--jobs 1``, byte for byte. A worker without a plugin the
driver has, and a scheduler out of reach, are one clear error each.
"""

from __future__ import annotations

import warnings
from collections import deque

import pytest
from click.testing import CliRunner

from turnpress import Strategy, hookimpl
from turnpress.cli import main
from turnpress.compare import compare_traces
from turnpress.core.errors import ExecutorError, PluginError
from turnpress.core.executor import Executor, WorkerJob, executor_names, get_executor
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
    job = WorkerJob(dict, {"x": 1})
    sent = pickle.loads(pickle.dumps(job))  # as a worker receives it
    assert sent.start("worker A") == {"x": 1}  # same plugins: fine
    from turnpress.core.registry import reset_registry

    reset_registry(None)  # the worker's own registry: built-ins only
    with pytest.raises(ExecutorError, match=r"worker A lacks 1 plugin\(s\) the driver has: "
                                            r"plugin 'tagged-plugin'"):
        sent.start("worker A")


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

"""``turnpress run``: run an agent task and show every turn.

Without ``--llm`` the task's scripted replies are used, so the bundled tasks run
offline; every step of the command is a library call (``load_task``,
``Task.build_agent``, ``Agent.run``, ``Step.to_trace``, ``save_trace``).
Exit codes: 0 the agent returned, 1 the run ended failed (any failure reason:
``fail``, ``max_turns``, ``llm_error``, ``render_error``: the last also as one
``Error:`` line on stderr), 2 bad input (one ``Error:`` line).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from turnpress.agent.agent import INHERIT
from turnpress.agent.display import RetryNotes, RunView
from turnpress.agent.llm import (
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT,
    PROVIDERS,
    LLMError,
    MissingAPIKeyError,
    MissingDependencyError,
    llm_from_spec,
    unknown_provider,
)
from turnpress.agent.loop import RENDER_ERROR
from turnpress.agent.mission import expand_mission
from turnpress.agent.system_prompt import system_prompt
from turnpress.agent.tasks import DEFAULT_TASK, TaskError, bundled_task_names, load_task
from turnpress.cli import CLIError, echo
from turnpress.core.compression import normalize
from turnpress.core.errors import PluginError
from turnpress.core.strategy_lookup import baseline_spec
from turnpress.core.template_check import check_templates
from turnpress.core.trace import TraceError, append_jsonl, is_trace_file, save_trace

__all__ = ["run"]


class _OneLineErrors(click.Command):
    """Reports bad options as one ``Error: ...`` line (exit code 2), without usage text."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise CLIError(exc.format_message()) from None


def _list_tasks(console: Console) -> None:
    console.print("Bundled tasks (run one with `turnpress run NAME`):")
    for name in bundled_task_names():
        task = load_task(name)
        mark = " (default)" if name == DEFAULT_TASK else ""
        console.print(f"  {name}{mark}: {task.description}", soft_wrap=True)


def _compression(spec: str | None) -> Any:
    if spec is None:
        return INHERIT
    if baseline_spec(spec) != spec:  # none, off, false: the uncompressed full history
        return False
    return spec


def _strategy_option(strategy: str | None, compression: str | None) -> str | None:
    """``-s/--strategy``, or the deprecated ``--compression`` alias (with a note)."""
    if compression is None:
        return strategy
    click.echo("Note: --compression is deprecated; use -s/--strategy (it takes the same "
               "values).", err=True)
    if strategy is not None and strategy != compression:
        raise CLIError(f"--strategy {strategy} and --compression {compression} disagree; "
                       f"give only --strategy")
    return compression


def check_trace_destination(path: str, *, force: bool) -> bool:
    """Refuse, before the run starts, a ``--save-trace`` path the run could not write;
    return whether the run will replace the file rather than append to it.

    A ``.jsonl`` file gets the run appended (it is created if missing) when it is a
    turnpress trace file (:func:`~turnpress.core.trace.is_trace_file`, the check
    ``turnpress import -o`` makes); any other existing file, and an existing ``.json``
    file (it holds one run), is replaced only with ``--force``.
    """
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise CLIError(f"--save-trace {path}: is a directory; give a file name "
                       f"(run.json, or runs.jsonl to append runs)")
    if not parent.is_dir():
        raise CLIError(f"--save-trace {path}: directory {str(parent)!r} does not exist; "
                       f"create it first or choose another path")
    if not target.exists():
        if not os.access(parent, os.W_OK):
            raise CLIError(f"--save-trace {path}: directory {str(parent)!r} is not writable")
        return False
    if not os.access(target, os.W_OK):
        raise CLIError(f"--save-trace {path}: the file is not writable")
    if not _appends(target):
        if not force:
            raise CLIError(f"--save-trace {path}: the file already exists; add --force to "
                           f"overwrite it, or save to a .jsonl file to append runs")
        return True
    try:
        if is_trace_file(target):
            return False
    except TraceError as exc:
        raise CLIError(f"--save-trace {exc}") from None
    if not force:
        raise CLIError(f"--save-trace {path}: the file exists and is not a turnpress trace "
                       f"file, so the run would not be appended to it; choose another file, "
                       f"or add --force to replace it")
    return True


def _appends(path: Any) -> bool:
    return path.suffix.lower() in (".jsonl", ".ndjson")


def write_run(trace: Any, path: str, *, replace: bool = False) -> None:
    """Save ``trace``: appended as one line to a ``.jsonl`` file, else written as JSON;
    ``replace``: the file is replaced by the run (one line for a ``.jsonl`` file)."""

    target = Path(path)
    if not _appends(target) or replace:
        save_trace(trace, target)
        return
    with tempfile.TemporaryDirectory() as tmp:
        line = Path(tmp) / "run.jsonl"
        save_trace(trace, line)  # the trace-file format, one line
        with line.open("rb") as new_run:
            append_jsonl(target, new_run)


def _build_llm(spec: str, task: Any, base_url: str | None, timeout: float | None,
               retries: int | None) -> tuple[Any, str]:
    try:
        if spec == "scripted":
            given = [o for o, v in (("--base-url", base_url), ("--timeout", timeout),
                                    ("--retries", retries)) if v is not None]
            if given:
                raise CLIError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} "
                               f"for a real model (the server, how long it is waited for); "
                               f"give {'it' if len(given) == 1 else 'them'} with --llm "
                               f"openai:MODEL or anthropic:MODEL")
            llm = task.scripted_llm()
            return llm, f"scripted ({len(llm.replies)} replies)"
        if spec.partition(":")[0] not in PROVIDERS:
            raise CLIError(unknown_provider(spec, "scripted"))
        timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        retries = DEFAULT_RETRIES if retries is None else retries
        llm = llm_from_spec(spec, base_url=base_url, timeout=timeout, max_retries=retries)
    except MissingAPIKeyError as exc:
        raise CLIError(f"no API key: set the {exc.env_var} environment variable, or give "
                       f"--base-url for a server that needs none") from None
    except (ValueError, TaskError, LLMError, MissingDependencyError) as exc:
        raise CLIError(str(exc)) from None
    where = f" at {base_url}" if base_url else ""
    tries = f"{retries} retr{'y' if retries == 1 else 'ies'}"
    return llm, f"{spec}{where} (timeout {timeout:g} s, {tries})"


@click.command(cls=_OneLineErrors)
@click.argument("task", required=False, metavar="[EXAMPLE|TASK.toml]")
@click.option("--llm", "llm_spec", default="scripted", show_default=True,
              metavar="scripted|openai:MODEL|anthropic:MODEL",
              help="Where replies come from: the task's scripted replies, or a real model.")
@click.option("--base-url", help="API base URL (an OpenAI-compatible server, a proxy...).")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), metavar="SECONDS",
              help=f"How long to wait for the model's answer, per attempt (default "
                   f"{DEFAULT_TIMEOUT:g}). Only with --llm openai:/anthropic:.")
@click.option("--retries", type=click.IntRange(min=0), metavar="N",
              help=f"How many times a call that timed out or failed on the server's side "
                   f"is retried (default {DEFAULT_RETRIES}). Only with --llm openai:/anthropic:.")
@click.option("--max-turns", type=click.IntRange(min=1), help="Override the task's max_turns.")
@click.option("--strategy", "-s", "strategy", metavar="NAME[:k=v,...]|none",
              help="History strategy, e.g. single-user-coalesced:println_limit=5; "
                   "none for the full history. Default: the task's.")
@click.option("--compression", hidden=True, metavar="NAME[:k=v,...]|none",
              help="Deprecated alias of --strategy.")
@click.option("--save-trace", type=click.Path(dir_okay=False), metavar="FILE",
              help="Save the run as a trace: appended to a .jsonl file (one run a line), "
                   "or written to a .json file. Checked before the run starts.")
@click.option("--force", is_flag=True,
              help="Let --save-trace replace an existing .json file, or a .jsonl file that "
                   "is not a turnpress trace file.")
@click.option("--show-system", is_flag=True, help="Print the full system prompt each turn.")
@click.option("--list", "list_only", is_flag=True, help="List the bundled tasks and exit.")
@click.option("--templates", "template_dirs", multiple=True,
              type=click.Path(file_okay=False), help="Template override directory.")
def run(task: str | None, llm_spec: str, base_url: str | None, timeout: float | None,
        retries: int | None, max_turns: int | None,
        strategy: str | None, compression: str | None, save_trace: str | None, force: bool,
        show_system: bool, list_only: bool, template_dirs: tuple[str, ...]) -> None:
    """Run an agent task and show each turn: the prompt sent, the reply, what ran.

    TASK is a bundled example (see --list; product-research when omitted) or a
    TASK.toml file. With the default --llm scripted it runs offline.

    -s takes a strategy (`turnpress plugins` lists them) or none, the same as
    full-history (the uncompressed history), as in every command that takes -s.

    \b
    Exit status:
      0  the agent returned (return ...)
      1  the run ended failed, whatever the reason: the program's (fail ...),
         max_turns, llm_error (the LLM call failed, the scripted replies
         ran out) or render_error (a template or a plugin strategy failed
         after turns ran); the trace is still saved with --save-trace
      2  bad input (one Error: line); nothing was run
    """
    console = Console(highlight=False, soft_wrap=True)
    if list_only:
        _list_tasks(console)
        return
    spec = _strategy_option(strategy, compression)
    replace = check_trace_destination(save_trace, force=force) if save_trace else False
    try:
        loaded = load_task(task)
    except TaskError as exc:
        raise CLIError(str(exc)) from None
    llm, llm_label = _build_llm(llm_spec, loaded, base_url, timeout, retries)
    try:
        agent = loaded.build_agent(llm, max_turns=max_turns,
                                   compression=_compression(spec),
                                   template_dirs=template_dirs)
        check_templates(agent.template_dirs)  # before the header: nothing runs
        prompt = system_prompt(agent.template_dirs)
        mission = expand_mission(agent.mission, agent.data)
        effective = agent.settings()
        strategy_name = normalize(effective.compression)[0]
    except (ValueError, TaskError) as exc:
        raise CLIError(str(exc)) from None
    view = RunView(console, max_turns=effective.max_turns, show_system=show_system)
    where = "bundled task" if loaded.bundled else str(loaded.source)
    view.header(title=f"turnpress run {loaded.name} ({where})", mission=mission,
                llm=llm_label, strategy=strategy_name, system_prompt=prompt)
    try:
        with RetryNotes(view).attached():
            step = agent.run(system_prompt=prompt, on_turn=view.turn)
    except (ValueError, PluginError) as exc:  # found before the first LLM call
        raise CLIError(str(exc)) from None
    view.outcome(step)
    if save_trace:
        try:
            write_run(step.to_trace(name=loaded.name), save_trace, replace=replace)
        except (OSError, ValueError) as exc:
            raise CLIError(f"cannot save the trace to {save_trace}: {exc}") from None
        verb = "appended to" if _appends(Path(save_trace)) and not replace else "saved to"
        console.print(f"trace {verb} {save_trace}", soft_wrap=True)
    if step.failure is not None and step.failure.reason == RENDER_ERROR:
        echo(f"Error: {step.failure.message}", err=True)  # as render and compare say it
    if not step.success:
        click.get_current_context().exit(1)

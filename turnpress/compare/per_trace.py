"""Per-trace results as they finish (``--per-trace FILE.jsonl``), and resuming from them.

:class:`PerTraceWriter` writes one JSON line per trace and strategy as soon as a
trace is done: where it came from (``file``, ``line``), its ``trace`` name and
``turns``, the ``strategy`` and its ``status``, the trace's tokens, cost, cost ratio,
retention and needed-fact recall, and what the provider billed for it
(``as_run_cost_usd``), flat, so ``pandas.read_json(FILE, lines=True)`` gives a table.
Each line also carries the settings it was computed with and, under ``resume``,
the trace's per-prompt numbers, so that :class:`ResumeIndex` rebuilds the trace's
outcome exactly: a resumed comparison prints the same JSON as one that was never
interrupted (only the HTML report lacks the prompts of the traces it did not render).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from turnpress.compare.pricing import Price, cost_usd
from turnpress.compare.results import AsRun, Row, TraceInfo, TraceOutcome
from turnpress.compare.retention import Fact

__all__ = ["PerTraceWriter", "ResumeIndex", "TraceKey", "outcome_lines"]

TraceKey = tuple[str, "int | None"]
"""``(file, line)`` of a trace (line None for a JSON file)."""


def _settings(tokenizer: str, cache: str, price: Price) -> dict[str, Any]:
    return {"tokenizer": tokenizer, "cache": cache, "price": price.to_json()}


def _setting_text(value: Any) -> str:
    """A setting of a per-trace line as the command line writes it: a price as
    ``in=2,cached=0.5,out=8`` (as ``--price`` takes it), anything else as it is."""
    if isinstance(value, dict):
        try:
            return str(Price(value["input"], value["cached"], value["write"],
                             output=value["output"], min_cached=value.get("min_cached")))
        except (KeyError, TypeError, ValueError):
            return json.dumps(value)
    return str(value)


def _info_json(info: TraceInfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(info):
        value = getattr(info, f.name)
        if isinstance(value, AsRun):
            value = dataclasses.asdict(value)
        out[f.name] = value
    return out


def _info_from_json(data: dict[str, Any]) -> TraceInfo:
    data = dict(data)
    if data.get("as_run") is not None:
        data["as_run"] = AsRun(**data["as_run"])
    data["billed"] = tuple(None if b is None else tuple(b) for b in data.get("billed", ()))
    return TraceInfo(**data)


def outcome_lines(key: TraceKey | None, outcome: TraceOutcome, labels: Sequence[str],
                  tokenizer: str, cache: str, price: Price) -> list[dict[str, Any]]:
    """The per-trace lines of one trace's outcome, one per strategy (``labels``)."""
    info = outcome.info
    settings = _settings(tokenizer, cache, price)
    info_json = _info_json(info)
    lines = []
    for label, rows, dropped, status in zip(labels, outcome.rows, outcome.dropped,
                                            outcome.status, strict=True):
        tokens = sum(r[1] for r in rows)
        cost = sum(cost_usd(price, r[1], r[2], r[3]) for r in rows)
        needed = sum(r[5] for r in rows)
        shown = sum(r[6] for r in rows)
        ok = status is None
        lines.append({
            "file": key[0] if key else None,
            "line": key[1] if key else None,
            "trace": info.name,
            "turns": info.turns,
            "strategy": label,
            "status": None if ok else status[0],
            "reason": None if ok else status[1],
            "input_tokens": tokens if ok else None,
            "cached_tokens": sum(r[2] for r in rows) if ok else None,
            "written_tokens": sum(r[3] for r in rows) if ok else None,
            "cost_usd": cost if ok else None,
            "baseline_tokens": info.baseline_tokens,
            "baseline_cost_usd": info.baseline_cost_usd,
            "cost_ratio": (cost / info.baseline_cost_usd if info.baseline_cost_usd else 1.0)
            if ok else None,
            "retention": (sum(r[4] for r in rows) / len(rows) if rows else 1.0)
            if ok else None,
            "needed": needed if ok else None,
            "needed_shown": shown if ok else None,
            "needed_fact_recall": (shown / needed if needed else 1.0) if ok else None,
            "as_run_cost_usd": info.as_run.cost_usd if info.as_run else None,
            **settings,
            "resume": {"info": info_json, "rows": rows,
                       "dropped": [[turn, f.kind, f.value, list(f.leaves), *times]
                                   for turn, f, *times in dropped]},
        })
    return lines


class PerTraceWriter:
    """Appends each finished trace's lines to ``path`` and flushes, so that whatever
    stops the comparison, every trace already done is in the file. A new file
    (``append`` False) that exists already is a ``ValueError``: it may hold the
    results of an interrupted comparison, which ``--resume`` goes on with."""

    def __init__(self, path: str | os.PathLike[str], labels: Sequence[str], tokenizer: str,
                 cache: str, price: Price, *, append: bool = False) -> None:
        self.path = Path(path)
        self.labels = list(labels)
        self.tokenizer, self.cache, self.price = tokenizer, cache, price
        try:
            if not append and self.path.is_file() and self.path.stat().st_size:
                raise ValueError(f"--per-trace {path}: the file exists; --resume {path} "
                                 f"goes on with the comparison it holds; to start again, "
                                 f"delete it or name another file")
            self._handle: IO[str] = self.path.open("a" if append else "w", encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"--per-trace {path}: cannot write: "
                             f"{exc.strerror or exc}") from None

    def write(self, key: TraceKey | None, outcome: TraceOutcome) -> None:
        """Write the lines of one trace (all its strategies in one write)."""
        lines = outcome_lines(key, outcome, self.labels, self.tokenizer, self.cache,
                              self.price)
        self._handle.write("".join(json.dumps(line, ensure_ascii=False) + "\n"
                                   for line in lines))
        self._handle.flush()

    def close(self) -> None:
        """Close the file."""
        self._handle.close()


#: how every line :class:`PerTraceWriter` writes starts (``json.dumps`` keeps the order)
LINE_START = b'{"file": '


class ResumeIndex:
    """Where, in a per-trace file, each complete trace's lines are (their offsets only, so
    memory stays small); :meth:`outcome` reads them back when the trace's turn comes.

    A trace counts as done when the file has a line for each of this comparison's
    strategies (the last such line wins); one that lacks a strategy is compared again
    and its new lines go after the others, which stay. A line computed with another
    tokenizer, cache model or price, or that is not a per-trace line, is a
    ``ValueError`` naming it. Only what a kill cut short is dropped: a last line that
    starts as every per-trace line does and has no line break, and the lines before
    it of the same trace when they are some of this comparison's strategies (a
    trace's lines are written at once); :attr:`end` is where the rest ends, the only
    part of the file ever cut off, before new lines go on.
    """

    def __init__(self, path: str | os.PathLike[str], labels: Sequence[str], tokenizer: str,
                 cache: str, price: Price) -> None:
        self.path = Path(path)
        self.labels = list(labels)
        self._real: dict[str, str] = {}  # file as written -> its real path
        wanted = set(labels)
        settings = _settings(tokenizer, cache, price)
        # trace -> strategy -> (offset, line number) of its last line
        seen: dict[TraceKey, dict[str, tuple[int, int]]] = {}
        # the last trace's key, where its lines start and their strategies
        last_key: TraceKey | None = None
        last_start, last_labels = 0, set[str]()
        cut = False  # the file ends in a line cut short
        self.end = 0
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            self.done: dict[TraceKey, dict[str, tuple[int, int]]] = {}
            return
        except OSError as exc:
            raise ValueError(f"--resume {path}: cannot read: {exc.strerror or exc}") from None
        with handle:
            offset = 0
            for lineno, raw in enumerate(handle, 1):
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                try:
                    line = json.loads(raw)
                    key = (line["file"], line["line"])
                    label = line["strategy"]
                    theirs = {k: line[k] for k in settings}
                    if not isinstance(line["resume"], dict):
                        raise TypeError("its 'resume' is not an object")
                except (ValueError, KeyError, TypeError) as exc:
                    if not raw.endswith(b"\n") and raw.startswith(LINE_START):
                        cut = True
                        break  # the last line, cut short by an interruption
                    raise ValueError(f"--resume {path}: line {lineno} is not a per-trace "
                                     f"result of turnpress compare ({type(exc).__name__}: "
                                     f"{exc}); pass the file --per-trace wrote") from None
                if theirs != settings:
                    now = {"tokenizer": tokenizer, "cache": cache, "price": str(price)}
                    diff = "; ".join(f"{k}: {_setting_text(theirs[k])} in the file, {now[k]} "
                                     f"now" for k in settings if theirs[k] != settings[k])
                    raise ValueError(f"--resume {path}: line {lineno} was computed with "
                                     f"other settings than now: {diff}; resume with the "
                                     f"same --tokenizer, --cache and --price, or write to "
                                     f"another file")
                key = self._same_file(key)
                if key[0] is not None and label in wanted:
                    seen.setdefault(key, {})[label] = (start, lineno)
                if key != last_key:
                    last_key, last_start, last_labels = key, start, set()
                last_labels.add(label)
                self.end = offset
        self.done = {k: v for k, v in seen.items() if len(v) == len(wanted)}
        if cut and last_key not in self.done and last_labels < wanted:
            # the last trace's lines, written at once, cut short by a kill: the trace
            # is compared again, its lines written anew
            self.end = last_start

    def _same_file(self, key: TraceKey) -> TraceKey:
        """``key`` with its file as an absolute path, symbolic links resolved (once per
        file): the same trace named ``runs/a.json``, ``./runs/a.json`` or by its full
        path is found again (from the same working directory)."""
        file, line = key
        if not isinstance(file, str):
            return key
        real = self._real.get(file)
        if real is None:
            real = self._real[file] = os.path.realpath(file)
        return real, line

    def prepare_append(self) -> None:
        """Cut off a last line cut short (everything past :attr:`end`) and end the file
        with a line break, so that new lines can be appended."""
        if not self.path.is_file():
            return
        if self.path.stat().st_size > self.end:
            os.truncate(self.path, self.end)
        if self.end:
            with self.path.open("rb+") as handle:
                handle.seek(self.end - 1)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and self._same_file(key) in self.done

    def __len__(self) -> int:
        return len(self.done)

    def outcome(self, key: TraceKey, index: int) -> TraceOutcome:
        """The outcome of trace ``key`` as the file has it (no rendered prompts)."""
        places = self.done[self._same_file(key)]
        rows: list[list[Row]] = []
        dropped: list[list[tuple[int, Fact, int]]] = []
        status: list[tuple[str, str] | None] = []
        info = None
        with self.path.open("rb") as handle:
            for label in self.labels:
                offset, lineno = places[label]
                handle.seek(offset)
                try:
                    line = json.loads(handle.readline())
                    if info is None:
                        info = _info_from_json(line["resume"]["info"])
                    rows.append([_row(r) for r in line["resume"]["rows"]])
                    # [turn, kind, value, leaves, prompts] (files of earlier versions:
                    # one entry per prompt, without the count)
                    dropped.append([(int(turn), Fact(kind, value, tuple(leaves)),
                                     int(times[0]) if times else 1)
                                    for turn, kind, value, leaves, *times
                                    in line["resume"]["dropped"]])
                    status.append(None if line["status"] is None
                                  else (str(line["status"]), str(line["reason"])))
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    raise ValueError(
                        f"--resume {self.path}: line {lineno} ({label} on "
                        f"{key[0]}) cannot be read back ({type(exc).__name__}: {exc}); "
                        f"it was changed after --per-trace wrote it: delete the trace's "
                        f"lines to compare it again") from None
        assert info is not None
        # where the trace is read now (the file may be named otherwise than it was)
        info = dataclasses.replace(info, file=key[0], line=key[1])
        return TraceOutcome(index, info, rows, dropped, status, None)


def _row(raw: Any) -> Row:
    """One prompt's row as a per-trace line holds it (a list of seven numbers)."""
    if not isinstance(raw, list) or len(raw) != 7:
        raise TypeError(f"a prompt's row is not a list of 7 numbers: {raw!r:.60}")
    return tuple(raw)  # type: ignore[return-value]

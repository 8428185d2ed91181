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
    stops the comparison, every trace already done is in the file."""

    def __init__(self, path: str | os.PathLike[str], labels: Sequence[str], tokenizer: str,
                 cache: str, price: Price, *, append: bool = False) -> None:
        self.path = Path(path)
        self.labels = list(labels)
        self.tokenizer, self.cache, self.price = tokenizer, cache, price
        try:
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


class ResumeIndex:
    """Where, in a per-trace file, each complete trace's lines are (their offsets only, so
    memory stays small); :meth:`outcome` reads them back when the trace's turn comes.

    A trace counts as done when the file has a line for each of this comparison's
    strategies (the last such line wins). A line computed with another tokenizer,
    cache model or price is a ``ValueError``; a last line cut short (the comparison
    was killed while writing it) is ignored, and :attr:`end` is where the last
    complete trace's lines end (what follows is cut off before new lines go on).
    """

    def __init__(self, path: str | os.PathLike[str], labels: Sequence[str], tokenizer: str,
                 cache: str, price: Price) -> None:
        self.path = Path(path)
        self.labels = list(labels)
        wanted = set(labels)
        settings = _settings(tokenizer, cache, price)
        seen: dict[TraceKey, dict[str, int]] = {}
        ends: dict[TraceKey, int] = {}
        self.end = 0
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            self.done: dict[TraceKey, dict[str, int]] = {}
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
                except (ValueError, KeyError, TypeError) as exc:
                    if not raw.endswith(b"\n"):
                        break  # the last line, cut short by an interruption
                    raise ValueError(f"--resume {path}: line {lineno} is not a per-trace "
                                     f"result of turnpress compare ({type(exc).__name__}: "
                                     f"{exc}); pass the file --per-trace wrote") from None
                if theirs != settings:
                    diff = ", ".join(f"{k} {theirs[k]} (now {settings[k]})" for k in settings
                                     if theirs[k] != settings[k])
                    raise ValueError(f"--resume {path}: line {lineno} was computed with "
                                     f"{diff}; resume with the same --tokenizer, --cache "
                                     f"and --price, or write to another file")
                if key[0] is not None and label in wanted:
                    seen.setdefault(key, {})[label] = start
                ends[key] = offset
        self.done = {k: v for k, v in seen.items() if len(v) == len(wanted)}
        # lines of a trace cut short by an interruption (at the end) are dropped too
        self.end = max((ends[k] for k in self.done), default=0)

    def __contains__(self, key: object) -> bool:
        return key in self.done

    def __len__(self) -> int:
        return len(self.done)

    def outcome(self, key: TraceKey, index: int) -> TraceOutcome:
        """The outcome of trace ``key`` as the file has it (no rendered prompts)."""
        offsets = self.done[key]
        lines = []
        with self.path.open("rb") as handle:
            for label in self.labels:
                handle.seek(offsets[label])
                lines.append(json.loads(handle.readline()))
        info = _info_from_json(lines[0]["resume"]["info"])
        rows: list[list[Row]] = []
        dropped: list[list[tuple[int, Fact, int]]] = []
        status: list[tuple[str, str] | None] = []
        for line in lines:
            rows.append([tuple(r) for r in line["resume"]["rows"]])  # type: ignore[misc]
            # [turn, kind, value, leaves, prompts] (files of earlier versions: one
            # entry per prompt, without the count)
            dropped.append([(turn, Fact(kind, value, tuple(leaves)), times[0] if times else 1)
                            for turn, kind, value, leaves, *times
                            in line["resume"]["dropped"]])
            status.append(None if line["status"] is None else (line["status"],
                                                                line["reason"]))
        return TraceOutcome(index, info, rows, dropped, status, None)

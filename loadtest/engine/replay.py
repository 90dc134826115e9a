"""Reading a run's history file back into the run's result, to judge it again.

Owns ``replay``: a history file (``loadtest.engine.recording``'s, in
``loadtest.model.history.journal``'s format) made into the plan and the
``RunResult`` the run had. Each variant run is judged from its records by the
same builder the run used (``variant_result``); a closed history gives exactly
the run's result, a history cut short (the harness killed) gives what was
measured up to its last whole record, marked incomplete and cut short (an
absence is not judged), with where it was cut. A deployed variant run without
its end record (cut, or stopped by an error or Ctrl-C before it was written) is
rebuilt from the observation lines and dead letters it drained, by the run's
own collector (``loadtest.deploy.collect``). Bad bytes raise
``HistoryFileError`` (exit 2) naming the file and the byte offset.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loadtest.aws import clients as aws
from loadtest.deploy.collect import Collector
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.engine.deployed import noticed
from loadtest.engine.results import RunResult, VariantRun
from loadtest.engine.variant_result import variant_result
from loadtest.errors import InputError, LoadtestError
from loadtest.model.figures.cost import Prices
from loadtest.model.figures.metrics import latencies
from loadtest.model.history import journal
from loadtest.model.history.frames import (
    decode_ack,
    decode_dead_letter,
    decode_invocation,
    decode_sent,
)
from loadtest.model.history.log import FRAME_RECORDS, EndState, History
from loadtest.model.judging import judge
from loadtest.model.plan import RunPlan
from loadtest.model.scenario.model import parse_scenario


class HistoryFileError(InputError):
    """A file that is not a history this loadtest reads, or one corrupt in the middle."""


@dataclass(frozen=True)
class Replayed:
    """A history file read back: what the run was asked to do and what it measured."""

    plan: RunPlan
    result: RunResult
    command: str | None
    closed: bool
    """The run ended and wrote its close record: the result is the run's own."""
    meta: dict[str, Any]
    """The run's meta record: the loadtest version and commit, when it started, ..."""


@dataclass
class _Run:
    start: dict[str, Any]
    rows: list[list[tuple[Any, ...]]] = field(default_factory=lambda: [[] for _ in journal.LOGS])
    end: dict[str, Any] | None = None
    clocks: tuple[int, int, bool] = (0, 0, False)
    lines: list[str] = field(default_factory=list)
    """A deployed run's observation lines, in the order it drained them."""
    dead_letters: list[tuple[str, int, int]] = field(default_factory=list)
    """A deployed run's dead letters: message id, receive count, seen (monotonic ns)."""


def _fail(path: Path, message: str, offset: int) -> HistoryFileError:
    return HistoryFileError(f"{str(path)!r} at byte {offset}: {message}")


def _take(rows: list[tuple[Any, ...]], first: int, found: Sequence[tuple[Any, ...]]) -> None:
    """Keep each row once, by its index in its log (``F`` and ``R`` may overlap)."""
    if first <= len(rows):
        rows.extend(found[len(rows) - first :])


def replay(path: Path, thresholds: Sequence[str] = ()) -> Replayed:
    """The plan and result of the run whose history ``path`` holds; ``thresholds`` add to
    the run's own. ``HistoryFileError`` for a file that cannot be read as a history."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HistoryFileError(f"cannot read history {str(path)!r}: {exc.strerror or exc}") from exc
    try:
        scanned = journal.scan(data)
        return _replayed(path, scanned, thresholds)
    except journal.JournalError as exc:
        raise _fail(path, str(exc), exc.offset) from exc


def _replayed(path: Path, scanned: journal.Scan, thresholds: Sequence[str]) -> Replayed:
    entries = scanned.entries
    if not entries or entries[0].kind != journal.META:
        at = entries[0].offset if entries else len(journal.HEADER)
        raise journal.JournalError("the history has no meta record", at)
    meta = entries[0].values()
    target: aws.Target | None = None
    runs: dict[int, _Run] = {}
    closed: dict[str, Any] | None = None
    checkpoint: dict[str, Any] | None = None
    for entry in entries[1:]:
        try:
            if entry.kind in (journal.FRAME, journal.ROWS):
                run, log, index, found = entry.log_rows()
                first = index * FRAME_RECORDS if entry.kind == journal.FRAME else index
                _take(runs[run].rows[log], first, found)
            elif entry.kind == journal.VARIANT:
                start = entry.values()
                runs[start["run"]] = _Run(start)
            elif entry.kind == journal.ENDED:
                end = entry.values()
                runs[end["run"]].end = end
            elif entry.kind == journal.CHECKPOINT:
                checkpoint = entry.values()
                for run, clocks in checkpoint["runs"].items():
                    started_ns, ended_ns, timed_out = clocks
                    runs[run].clocks = (started_ns, ended_ns, timed_out)
            elif entry.kind == journal.BACKEND:
                found_target = entry.values()
                target = aws.Target(
                    aws.BackendKind(found_target["kind"]), found_target["endpoint_url"], ""
                )
            elif entry.kind == journal.CLOSED:
                closed = entry.values()
            elif entry.kind == journal.LINES:
                drained = entry.values()
                runs[drained["run"]].lines.extend(str(line) for line in drained["lines"])
            elif entry.kind == journal.DEAD_LETTER:
                dead = entry.values()
                runs[dead["run"]].dead_letters.append(
                    (str(dead["message_id"]), int(dead["receive_count"]), int(dead["seen_ns"]))
                )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, journal.JournalError):
                raise
            raise journal.JournalError(
                f"record {entry.kind!r} is not well formed: {exc}", entry.offset
            ) from exc
    try:
        plan = _plan(meta, thresholds)
    except (KeyError, TypeError) as exc:
        raise journal.JournalError(
            f"the meta record is not well formed: {exc}", entries[0].offset
        ) from exc
    except LoadtestError as exc:
        raise journal.JournalError(
            f"the run's plan does not load: {exc}", entries[0].offset
        ) from exc
    if target is None:
        target = aws.Target(aws.BackendKind.EMBEDDED, None, "")
    last = entries[-1]
    cut = None if closed is not None else _cut_reason(scanned, last.offset, checkpoint, meta)
    # Why a run without its end record stopped: the cut, or what the close says.
    unended = cut or (closed or {}).get("incomplete") or "the run closed without its end record"
    results = [
        r
        for index in sorted(runs)
        # A closed history's runs are those the run ended (a run that measured nothing
        # has no end record) and the deployed ones it collected from; a cut one's also
        # those the cut left open.
        if closed is None or runs[index].end is not None or "collect" in runs[index].start
        if (r := _variant_run(plan, runs[index], checkpoint, unended)) is not None
    ]
    incomplete = closed["incomplete"] if closed is not None else cut
    return Replayed(
        plan,
        RunResult(plan.scenario, target, results, incomplete=incomplete),
        meta.get("command"),
        closed is not None,
        meta,
    )


def _plan(meta: dict[str, Any], thresholds: Sequence[str]) -> RunPlan:
    scenario = parse_scenario(
        meta["scenario"], source=meta["scenario_source"], default_name=meta["scenario_name"]
    )
    prices = Prices(**meta["prices"]) if meta["prices"] is not None else None
    return RunPlan.of(
        scenario,
        [*meta["thresholds"], *thresholds],
        cells=meta["cells"],
        prices=prices,
        repeat=meta["repeat"],
    )


def _cut_reason(
    scanned: journal.Scan, last: int, checkpoint: dict[str, Any] | None, meta: dict[str, Any]
) -> str:
    where = (
        f"a torn record at byte {scanned.torn_at}"
        if scanned.torn_at is not None
        else f"its last record, at byte {last}"
    )
    if checkpoint is not None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(checkpoint["at_s"]))
        when = f", written at {stamp}"
        started_s = meta.get("created_s")
        if isinstance(started_s, int | float):
            when += f", {checkpoint['at_s'] - started_s:.1f} s after the run started"
    else:
        when = ", before its first checkpoint"
    return (
        f"cut short: the history ends at {where}{when} (the run was killed or its machine stopped)"
    )


def _variant_run(
    plan: RunPlan, run: _Run, checkpoint: dict[str, Any] | None, unended: str
) -> VariantRun | None:
    start, end = run.start, run.end
    ref = HandlerRef(start["variant"], start["module"], start["path"], start["function"])
    names = aws.ResourceNames(**start["resources"])
    cell = plan.cells[start["cell"]]
    sent, invocations, acks, dead = run.rows
    collect = start.get("collect")
    if end is None and collect is not None:
        # A deployed run builds these logs from its lines once it has them all: what the
        # file holds of them may be a part. Rebuilt from the lines, as the run does.
        invocations, acks, dead = [], [], []
    history = History(
        [decode_sent(r) for r in sent],
        [decode_invocation(r) for r in invocations],
        [decode_ack(r) for r in acks],
        [decode_dead_letter(r) for r in dead],
    )
    said: list[str] = []
    cold_starts = end["cold_starts"] if end is not None else 0
    if end is not None:
        history.started_ns, history.ended_ns = end["started_ns"], end["ended_ns"]
        history.timed_out = end["timed_out"]
        end_state = journal.decode_end_state(end["end_state"])
        cut_short = bool(end["cut_short"])
        incomplete = end["incomplete"]
    else:
        started_ns, ended_ns, timed_out = run.clocks
        if not started_ns and history.sent:
            started_ns = history.sent[0].intended_ns
        if not started_ns:
            return None  # nothing of this run was measured (as a salvage keeps none)
        history.started_ns = started_ns
        history.ended_ns = ended_ns or (checkpoint["at_ns"] if checkpoint else started_ns)
        history.timed_out = timed_out
        end_state = EndState(0, 0, 0, {})
        cut_short = True
        incomplete = unended
        if collect is not None:
            collector = Collector(
                partial=bool(collect["partial"]), wall_offset_ns=int(collect["wall_offset_ns"])
            )
            for line in run.lines:
                collector.add(line)
            for message_id, receive_count, seen_ns in run.dead_letters:
                collector.add_dead_letter(message_id, receive_count, seen_ns)
            collector.build(history, ended_ns=history.ended_ns)
            cold_starts = collector.environments()
            said = noticed(collector.unreadable, collector.orphans())
    variant_run = variant_result(
        cell.scenario,
        ref,
        names,
        history,
        end_state,
        check=judge(cell.scenario, history, end_state, cut_short=cut_short),
        latency=latencies(history),
        cold_starts=cold_starts,
        cleanup_problems=end["cleanup_problems"] if end is not None else (),
        incomplete=incomplete,
        backlog_peak=end["backlog_peak"] if end is not None else 0,
        stopped_early=end["stopped_early"] if end is not None else None,
        noticed=said,
    )
    if end is not None:
        variant_run.warnings = list(end["warnings"])
        variant_run.sqs_requests_served = end["sqs_requests_served"]
    variant_run.cell = dict(cell.overrides)
    return variant_run


__all__ = ["HistoryFileError", "Replayed", "replay"]

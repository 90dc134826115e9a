"""The collector: rebuilds a run's history from what a deployed function reported.

A deployed function cannot be watched the way a local execution environment
is, so the observer layer's handler (``loadtest.observer.lambda_entry``)
reports instead: a line when an invocation starts (its records: messageId,
ApproximateReceiveCount, SentTimestamp), every write decision as the observer
makes it, and a line when it ends (outcome, the partial batch response, how
many observation lines it sent). From those lines and the dead-letter queue
this module builds the same ``History`` records the local runner writes:
invocations, acknowledgements (what the mapping deletes after a success),
redeliveries and dead letters; an invocation that never reported its end
timed out or crashed.

Owns the line protocol's invocation half and the rebuild; pure (no I/O, no
clock: the wall-to-monotonic offset is passed in). The draining lives in
``loadtest.deploy.remote_run``.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TypeVar

from loadtest.model.history.log import (
    Ack,
    DeadLetter,
    EffectRecord,
    History,
    Invocation,
    InvocationOutcome,
    ReadRecord,
    Record,
    WorkLeft,
    WriteRecord,
)
from loadtest.model.history.observation import Observation, collect, decode, left_work_of
from loadtest.observer.lambda_entry import INVOKE_TAG, INVOKED_TAG

NEVER_ENDED = "no end reported: the invocation timed out or its environment crashed"


@dataclass(frozen=True)
class InvocationStart:
    """An invocation's first line: its request id, environment and records (wall-clock ns)."""

    request_id: str
    environment: str
    records: tuple[tuple[str, int, int], ...]
    """(messageId, ApproximateReceiveCount, SentTimestamp in ms) per record."""
    started_ns: int


@dataclass(frozen=True)
class InvocationEnd:
    """An invocation's last line; ``lines`` observations were sent before it."""

    request_id: str
    outcome: str
    """``ok``, ``batchItemFailures`` or ``exception``."""
    failed: tuple[str, ...]
    error: str | None
    ended_ns: int
    lines: int
    missing: tuple[str, ...] = ()
    """The observer's lines for calls refused for what the run does not provide."""
    left_work: tuple[WorkLeft, ...] = ()
    """The threads, pool calls and asyncio tasks the handler left running when it returned."""
    ended_work: tuple[str, ...] = ()
    """The ids of work earlier invocations left running that had finished by then."""


Line = InvocationStart | InvocationEnd | Observation


def parse(line: str) -> Line:
    """One line the function sent; raises ValueError on one that is not loadtest's."""
    body = json.loads(line)
    if not isinstance(body, dict):
        raise ValueError("a line is a JSON object")
    tag = body.get("t")
    if tag == INVOKE_TAG:
        return InvocationStart(
            request_id=str(body["request_id"]),
            environment=str(body.get("env", "")),
            records=tuple(
                (str(r["message_id"]), int(r["receive_count"]), int(r.get("sent_ms", 0)))
                for r in body.get("records", [])
            ),
            started_ns=int(body["started_ns"]),
        )
    if tag == INVOKED_TAG:
        left, ended = left_work_of(body)
        return InvocationEnd(
            request_id=str(body["request_id"]),
            outcome=str(body["outcome"]),
            failed=tuple(str(f) for f in body.get("failed", [])),
            error=body.get("error"),
            ended_ns=int(body["ended_ns"]),
            lines=int(body.get("lines", 0)),
            missing=tuple(str(m) for m in body.get("missing", [])),
            left_work=left,
            ended_work=ended,
        )
    return decode(line)


def acked_ids(start: InvocationStart, end: InvocationEnd, *, partial: bool) -> list[str]:
    """What the mapping deletes after this invocation.

    A success deletes the batch. With ``ReportBatchItemFailures`` (``partial``)
    the records it names stay; a name that is not in the batch makes Lambda
    treat the whole batch as failed. Without it the response is ignored.
    An exception deletes nothing.
    """
    ids = [message_id for message_id, _, _ in start.records]
    if end.outcome == "exception":
        return []
    if end.outcome == "batchItemFailures" and partial:
        if not set(end.failed) <= set(ids):
            return []
        return [i for i in ids if i not in set(end.failed)]
    return ids


@dataclass
class Collector:
    """Accumulates a run's lines and dead letters; ``build`` writes the history."""

    partial: bool
    """The mapping reports batch item failures (``ReportBatchItemFailures``)."""
    wall_offset_ns: int
    """``time.time_ns() - time.monotonic_ns()`` on this machine: wall-clock lines to the
    history's monotonic timeline."""
    starts: dict[str, InvocationStart] = field(default_factory=dict)
    ends: dict[str, InvocationEnd] = field(default_factory=dict)
    observations: dict[str, list[Observation]] = field(default_factory=dict)
    dead: dict[str, DeadLetter] = field(default_factory=dict)
    acked: dict[str, int] = field(default_factory=dict)
    """First acknowledgement per messageId (monotonic ns)."""
    unreadable: int = 0
    """Lines on the channel that were not loadtest's (counted, never guessed at)."""
    _resent: list[str] = field(default_factory=list)
    """Message ids the function sent to its own queue, not yet taken (``take_resent``)."""

    def add(self, line: str) -> list[str]:
        """Take one line; return the messageIds it newly acknowledged."""
        try:
            parsed = parse(line)
        except (ValueError, KeyError, TypeError):
            self.unreadable += 1
            return []
        if isinstance(parsed, InvocationStart):
            self.starts.setdefault(parsed.request_id, parsed)
        elif isinstance(parsed, InvocationEnd):
            self.ends.setdefault(parsed.request_id, parsed)
        else:
            self.observations.setdefault(parsed.request_id, []).append(parsed)
            if not isinstance(parsed, EffectRecord):
                return []
            if parsed.resent:
                self._resent.append(parsed.resent)
            deleted = parsed.deleted
            if deleted and deleted not in self.acked:
                # The function deleted a message it was given itself: acknowledged now,
                # whatever its invocation does next.
                self.acked[deleted] = self.local_ns(parsed.ended_ns)
                return [deleted]
            return []
        return self._settle(parsed.request_id)

    def take_resent(self) -> list[str]:
        """The ids of the messages the function sent to the queue that feeds it (work it
        deferred) seen since the last call: the run waits for them as for its own."""
        resent, self._resent = self._resent, []
        return resent

    def _settle(self, request_id: str) -> list[str]:
        start, end = self.starts.get(request_id), self.ends.get(request_id)
        if start is None or end is None:
            return []
        newly: list[str] = []
        for message_id in acked_ids(start, end, partial=self.partial):
            if message_id not in self.acked:
                self.acked[message_id] = self.local_ns(end.ended_ns)
                newly.append(message_id)
        return newly

    def add_dead_letter(self, message_id: str, receive_count: int, seen_ns: int) -> bool:
        """Record a message found in the DLQ; True the first time it is seen."""
        if message_id in self.dead:
            return False
        self.dead[message_id] = DeadLetter(message_id, receive_count, seen_ns)
        return True

    def local_ns(self, wall_ns: int) -> int:
        return wall_ns - self.wall_offset_ns

    def settled(self) -> set[str]:
        return set(self.acked) | set(self.dead)

    def missing_lines(self) -> int:
        """Observation lines ended invocations said they sent and that have not arrived."""
        return sum(
            max(0, end.lines - len(self.observations.get(request_id, [])))
            for request_id, end in self.ends.items()
        )

    def orphans(self) -> int:
        """Invocations with observations but no start line (the wrapper lost it)."""
        return len(set(self.observations) - set(self.starts))

    def never_ended(self) -> list[str]:
        return [r for r in self.starts if r not in self.ends]

    def environments(self) -> int:
        """Distinct execution environments seen (each one a cold start)."""
        return len({start.environment for start in self.starts.values()})

    def build(self, history: History, *, ended_ns: int) -> None:
        """Append the invocations, acknowledgements and dead letters to ``history``.

        ``ended_ns`` (monotonic) closes what never ended and the writes that
        were begun without an answer (indeterminate).
        """
        business = {m.message_id: m.business_id for m in history.sent if m.message_id}
        environments: dict[str, int] = {}
        starts = dict(self.starts)
        for request_id, observations in self.observations.items():
            if request_id not in starts:
                # Writes of an invocation whose start line never came (a wrapper that
                # lost it): kept, with no records, so no write is ever dropped.
                first = min((_started(o) for o in observations), default=0)
                starts[request_id] = InvocationStart(request_id, "", (), first)
        for request_id, start in sorted(starts.items(), key=lambda kv: kv[1].started_ns):
            end = self.ends.get(request_id)
            started = self.local_ns(start.started_ns)
            ended = self.local_ns(end.ended_ns) if end is not None else ended_ns
            # Observations carry wall-clock times: close unanswered writes on that clock too.
            observed = collect(
                self.observations.get(request_id, []), ended_ns=ended + self.wall_offset_ns
            )
            error: str | None = None
            if end is None:
                outcome, error = InvocationOutcome.TIMEOUT, NEVER_ENDED
            elif end.outcome == "exception":
                outcome, error = InvocationOutcome.ERROR, end.error
            else:
                outcome = InvocationOutcome.SUCCESS
            history.invocations.append(
                Invocation(
                    request_id=request_id,
                    environment=environments.setdefault(start.environment, len(environments)),
                    records=tuple(
                        Record(message_id, count, business.get(message_id))
                        for message_id, count, _ in start.records
                    ),
                    received_ns=started,
                    started_ns=started,
                    ended_ns=ended,
                    outcome=outcome,
                    error=error,
                    writes=tuple(_local(w, self.wall_offset_ns) for w in observed.writes),
                    failed_message_ids=end.failed if end is not None else (),
                    reads=tuple(_local(r, self.wall_offset_ns) for r in observed.reads),
                    unobserved=tuple(observed.unobserved),
                    observer_faults=tuple(observed.faults),
                    side_writes=tuple(observed.side),
                    effects=tuple(observed.effects),
                    log_tail="".join(f"{m}\n" for m in end.missing) if end is not None else "",
                    left_work=end.left_work if end is not None else (),
                    ended_work=end.ended_work if end is not None else (),
                )
            )
        history.acks.extend(Ack(m, ns) for m, ns in sorted(self.acked.items(), key=_by_time))
        history.dead_letters.extend(self.dead.values())


def _by_time(item: tuple[str, int]) -> int:
    return item[1]


def _started(observation: Observation) -> int:
    return int(getattr(observation, "started_ns", 0))


_Timed = TypeVar("_Timed", WriteRecord, ReadRecord)


def _local(record: _Timed, offset_ns: int) -> _Timed:
    return dataclasses.replace(
        record, started_ns=record.started_ns - offset_ns, ended_ns=record.ended_ns - offset_ns
    )

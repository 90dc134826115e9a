"""What the explorer keeps about one schedule: its settings, messages, deliveries and result.

The records ``loadtest.emulation.explore.explorer`` fills while it runs a schedule, the
``Execution`` it hands back, and what is read off a delivery's record: the SQS
record it is handed, its invocation as the history keeps it, the items it
touched; plus the stream that routes a delivery's prints to its own log. No
scheduling here.
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from loadtest.emulation.explore.steps import Step
from loadtest.model.explore.points import LOCAL, Access, Delivery, Fault, Option, Point
from loadtest.model.history.log import (
    Ack,
    DeadLetter,
    Invocation,
    InvocationOutcome,
    ReadRecord,
    Record,
    SentMessage,
    TypedItem,
    WriteRecord,
)
from loadtest.model.history.observation import Observation, collect

NS_PER_S = 1_000_000_000


LOG_TAIL_CHARS = 2000


class ThreadOutput(io.TextIOBase):
    """``sys.stdout``/``sys.stderr`` while exploring: a delivery's prints go to its own log
    (as a Lambda invocation's go to its log stream), every other thread's where they went."""

    def __init__(self, local: threading.local, original: Any) -> None:
        self.local = local
        self.original = original

    def write(self, text: str) -> int:
        run: Run | None = getattr(self.local, "run", None)
        if run is None:
            return int(self.original.write(text))
        run.log.append(text)
        return len(text)

    def flush(self) -> None:
        if getattr(self.local, "run", None) is None:
            self.original.flush()


class Abandon(BaseException):
    """The execution is abandoned: unwinds a parked delivery's thread."""


class Killed(BaseException):
    """The environment dies at this point (a crash or a timeout fault)."""


@dataclass(frozen=True)
class ExploreSettings:
    """What the explorer needs of the scenario: the queue's and the function's rules."""

    visibility_timeout_s: float
    function_timeout_s: float
    max_receive_count: int
    faults: tuple[Fault, ...] = ()
    max_faults: int = 1
    clock_jump_s: float = 0.0
    """How far a ``clock`` fault moves time (in seconds)."""


@dataclass
class Message:
    copy: int
    message_id: str
    body: str
    business_id: str | None
    receives: int = 0
    live: int = 0
    acked: bool = False
    dead: bool = False


def _held() -> threading.Lock:
    """A lock already taken: whoever waits on it waits for another thread's release."""
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass
class Run:
    """One delivery's invocation, in its thread."""

    delivery: Delivery
    message: Message
    environment: int
    request_id: str
    received_ns: int
    wake_ns: int
    point: Point | None = None
    access: Access = LOCAL
    instruction: str | None = None
    done: bool = False
    settled: bool = False
    abandoned: bool = False
    ack_lost: bool = False
    stopped: str | None = None
    """Why the delivery's thread is unwinding: crash, timeout or abandon."""
    started: bool = False
    started_ns: int = 0
    ended_ns: int = 0
    outcome: InvocationOutcome = InvocationOutcome.SUCCESS
    error: str | None = None
    result: Any = None
    observations: list[Observation] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    go: threading.Lock = field(default_factory=lambda: _held())
    """Released by the scheduler to let the delivery go from its point."""
    report: threading.Lock = field(default_factory=lambda: _held())
    """Released by the delivery when it has parked again or ended."""

    def deadline_ns(self, timeout_ns: int) -> int:
        return self.started_ns + timeout_ns if self.started else 1 << 62


@dataclass
class Execution:
    """One schedule as run: its decisions, its history's parts and its printed steps."""

    taken: list[tuple[int, Option, Option]]
    """Each decision: (index, option taken, default option)."""
    sent: list[SentMessage]
    invocations: list[Invocation]
    acks: list[Ack]
    dead_letters: list[DeadLetter]
    steps: list[Step]
    ended_ns: int
    abandoned: bool
    deliveries: int
    faults: int
    keys: dict[str, TypedItem]
    """Items of the watched table the schedule's calls named, by ``key_string`` (to read
    back at the end)."""
    unscheduled: int = 0
    """DynamoDB calls made outside every delivery's thread: no point stopped them, so the
    search cannot claim to have covered where they fall."""


def sqs_record(run: Run) -> dict[str, Any]:
    m = run.message
    return {
        "messageId": m.message_id,
        "receiptHandle": f"{m.message_id}-{run.delivery.receive}",
        "body": m.body,
        "attributes": {
            "ApproximateReceiveCount": str(run.delivery.receive),
            "SentTimestamp": "1767225600000",
            "SenderId": "loadtest",
            "ApproximateFirstReceiveTimestamp": "1767225600000",
        },
        "messageAttributes": {},
        "md5OfBody": "",
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:000000000000:loadtest-explore",
        "awsRegion": "us-east-1",
    }


def observed_keys(run: Run) -> list[TypedItem]:
    return [o.key for o in run.observations if isinstance(o, WriteRecord | ReadRecord)]


def invocation_of(run: Run) -> Invocation:
    observed = collect(run.observations, ended_ns=run.ended_ns)
    return Invocation(
        request_id=run.request_id,
        environment=run.environment,
        records=(Record(run.message.message_id, run.delivery.receive, run.message.business_id),),
        received_ns=run.received_ns,
        started_ns=run.started_ns,
        ended_ns=run.ended_ns,
        outcome=run.outcome,
        error=run.error,
        writes=tuple(observed.writes),
        result=run.result,
        reads=tuple(observed.reads),
        unobserved=tuple(observed.unobserved),
        observer_faults=tuple(observed.faults),
        side_writes=tuple(observed.side),
        effects=tuple(observed.effects),
        log_tail="".join(run.log)[-LOG_TAIL_CHARS:],
    )


@contextlib.contextmanager
def capturing(local: threading.local) -> Iterator[None]:
    """Route the deliveries' prints to their invocations' logs for the block."""
    saved = sys.stdout, sys.stderr
    sys.stdout = ThreadOutput(local, saved[0])
    sys.stderr = ThreadOutput(local, saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved

"""The scenario's settings: what the producer sends, the event source mapping, the faults, the run.

Frozen values with their defaults, units and the ranges a scenario file or an
override may give them (``LIMITS``). Each field offered on the command line
carries an ``Override`` in its metadata. Parsing lives in ``loadtest.model.scenario.loading``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from loadtest.model.scenario.body_template import BodyTemplate
from loadtest.model.scenario.envelopes import Envelope, MessageAttribute

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Override:
    """How a scenario field is offered as a command-line override (``--NAME``).

    The option's name is the field's without its unit suffix
    (``visibility_timeout_s`` -> ``--visibility-timeout``).
    """

    help: str
    metavar: str | None = None
    sweep_help: str | None = None
    """Set when ``loadtest sweep`` takes the field as a comma-separated axis."""


OVERRIDE = "loadtest.override"
"""The dataclass field metadata key holding a field's ``Override``."""


def _override(
    help: str, metavar: str | None = None, sweep_help: str | None = None
) -> dict[str, Override]:
    return {OVERRIDE: Override(help, metavar, sweep_help)}


class Arrival(StrEnum):
    """How the producer spaces messages in time."""

    BURST = "burst"
    """Everything at once."""
    RATE = "rate"
    """Open loop at ``rate_per_s``: sent on schedule whatever the consumer does."""
    RAMP = "ramp"
    """Open loop, the rate rising linearly from ``ramp_from_per_s`` to ``rate_per_s``."""


class Order(StrEnum):
    """How copies of one business id are ordered in the send schedule."""

    GROUPED = "grouped"
    SHUFFLED = "shuffled"


class CopySpacing(StrEnum):
    """How far apart the copies of one business id are sent."""

    AT_ONCE = "at-once"
    SPREAD = "spread"
    """Evenly over ``copy_spread_s`` seconds after the first copy."""
    AFTER_COMPLETION = "after-completion"
    """Only once the first copy was acknowledged or dead-lettered."""


class MessageGroup(StrEnum):
    """How a FIFO producer picks each message's ``MessageGroupId``."""

    BUSINESS_ID = "business-id"
    """One group per business id: the copies of an id are delivered in order, one at a time."""
    FIXED = "fixed"
    """``message_groups`` groups, business ids spread over them by a stable hash."""


class Deduplication(StrEnum):
    """How a FIFO producer sets each message's ``MessageDeduplicationId``."""

    PER_MESSAGE = "per-message"
    """A fresh id per send: the queue drops nothing (a producer that mints ids per attempt)."""
    BUSINESS_ID = "business-id"
    """The business id: resends of an id inside the deduplication window are dropped."""
    CONTENT = "content"
    """No id sent; the queue's ContentBasedDeduplication hashes the body (identical bodies
    inside the window are dropped, a resend with different details is not)."""


@dataclass(frozen=True)
class ExplicitMessage:
    """A literal message body, sent ``copies`` times in a row."""

    body: JsonObject
    copies: int = 1
    poison: bool = False
    """A record every consumer is expected to refuse (dead-lettering it is no failure)."""


@dataclass(frozen=True)
class Workload:
    """What the producer sends, and when."""

    distinct_ids: int = field(default=100, metadata=_override("Generated business ids."))
    """Number of generated business ids (ignored when ``messages`` is given)."""
    copies: int = field(
        default=3, metadata=_override("Messages per business id (producer resends).")
    )
    """Messages per generated id: the original plus producer resends."""
    id_prefix: str = "order"
    order: Order = Order.GROUPED
    copy_spacing: CopySpacing = CopySpacing.AT_ONCE
    copy_spread_s: float = 0.0
    """Seconds over which ``spread`` copies are sent."""
    conflict_fraction: float = field(
        default=0.0,
        metadata=_override("Fraction of resends carrying different details (0..1).", "F"),
    )
    """Fraction of resends that carry different details for the same id (0..1)."""
    poison_fraction: float = 0.0
    """Fraction of ids whose messages no consumer accepts (quantity 0): retried, then dead-lettered."""
    arrival: Arrival = Arrival.BURST
    rate_per_s: float = field(
        default=0.0,
        metadata=_override(
            "Open-loop arrival rate in messages per second (sets arrival = rate).", "PER_S"
        ),
    )
    """Messages per second for ``rate``; the final rate for ``ramp``."""
    ramp_from_per_s: float = 1.0
    """The starting rate of a ``ramp`` (messages per second)."""
    messages: tuple[ExplicitMessage, ...] = ()
    """Explicit bodies; when present they replace the generated ids."""
    body: BodyTemplate | None = None
    """The template generated messages are made from (``loadtest.model.scenario.body``); ``None``:
    ``{"id": ..., "quantity": ...}``."""
    envelope: Envelope = field(default_factory=Envelope)
    """What wraps each body on the queue: nothing, an SNS notification or an EventBridge event."""
    attributes: tuple[MessageAttribute, ...] = ()
    """SQS message attributes sent with every message (in an SNS envelope: its
    ``MessageAttributes``)."""
    message_group: MessageGroup = field(
        default=MessageGroup.BUSINESS_ID,
        metadata=_override("FIFO: MessageGroupId per 'business-id' or 'fixed' groups.", "HOW"),
    )
    """FIFO only: how each message's ``MessageGroupId`` is chosen."""
    message_groups: int = field(
        default=1, metadata=_override("FIFO: number of groups for message_group = fixed.", "N")
    )
    """FIFO only: the number of message groups when ``message_group`` is ``fixed``."""
    deduplication: Deduplication = field(
        default=Deduplication.PER_MESSAGE,
        metadata=_override(
            "FIFO: MessageDeduplicationId 'per-message', per 'business-id' or 'content'.", "HOW"
        ),
    )
    """FIFO only: how each message's ``MessageDeduplicationId`` is set."""


@dataclass(frozen=True)
class ConsumerSettings:
    """The event source mapping and the function configuration."""

    batch_size: int = field(
        default=1, metadata=_override("Records per invocation (1-10).", None, "Batch sizes to try.")
    )
    """Records per invocation: 1..10, or up to 10000 with a batching window of 1 s or more."""
    batching_window_s: float = field(
        default=0.0,
        metadata=_override(
            "Seconds a poller gathers a batch (MaximumBatchingWindowInSeconds).",
            "S",
            "Batching windows (seconds).",
        ),
    )
    """MaximumBatchingWindowInSeconds: how long a poller gathers a batch (0..300 s)."""
    visibility_timeout_s: int = field(
        default=30,
        metadata=_override(
            "Queue visibility timeout in seconds.", None, "Visibility timeouts (seconds)."
        ),
    )
    """Queue visibility timeout (in seconds, 0..43200)."""
    concurrency: int = field(
        default=4,
        metadata=_override(
            "Execution environments (concurrent invocations).", None, "Execution environments."
        ),
    )
    """Execution environments, each running one invocation at a time."""
    max_receive_count: int = field(
        default=3, metadata=_override("Receives before a message goes to the DLQ.")
    )
    """Receives before the redrive policy moves a message to the DLQ."""
    function_timeout_s: int = 30
    """Function timeout (in seconds); the invocation is stopped after it."""
    memory_mb: int = 128
    report_batch_item_failures: bool = field(
        default=False, metadata=_override("Partial batch responses (batchItemFailures).")
    )
    fifo: bool = field(
        default=False,
        metadata=_override("A FIFO queue (.fifo) and the event source mapping's FIFO rules."),
    )
    """A FIFO queue and DLQ: messages carry a group and a deduplication id; the mapping
    keeps each group in order with at most one batch of it in flight."""


POINT_FAULTS: dict[str, str] = {
    "crash": "per call",
    "timeout": "per call",
    "redeliver": "per call",
    "ack-lost": "per successful invocation",
    "throttle": "per call",
}
"""The point faults a load run can draw (``explore``'s, but ``clock``), each with where."""


def parse_point_fault(text: str) -> tuple[str, float]:
    """``redeliver:0.05`` -> ``("redeliver", 0.05)``; bad input raises ``ValueError`` saying
    what is allowed."""
    name, sep, value = text.partition(":")
    name = name.strip()
    if name not in POINT_FAULTS:
        raise ValueError(
            f"point fault {text!r}: {name!r} is not one; allowed: {', '.join(POINT_FAULTS)}"
        )
    try:
        probability = float(value) if sep else 1.0
    except ValueError:
        raise ValueError(
            f"point fault {text!r}: the probability {value!r} is not a number (0..1)"
        ) from None
    if not 0 <= probability <= 1:
        raise ValueError(f"point fault {text!r}: the probability must be 0..1")
    return name, probability


def point_faults(given: dict[str, float]) -> tuple[tuple[str, float], ...]:
    """The point faults given (nonzero), in ``POINT_FAULTS`` order."""
    return tuple((name, given[name]) for name in POINT_FAULTS if given.get(name))


@dataclass(frozen=True)
class Faults:
    """Opt-in faults, labelled in every report. All off by default."""

    handler_duration_ms: int = field(
        default=0,
        metadata=_override(
            "Fault: extra handler time in milliseconds.", "MS", "Fault: handler durations (ms)."
        ),
    )
    """Extra processing time (in milliseconds), spent just before the invocation's first
    write to the orders table (or at its end, if it writes nothing): slow work between
    what a handler checked and what it writes."""
    handler_jitter_ms: int = field(
        default=0, metadata=_override("Fault: plus a random 0..MS milliseconds.", "MS")
    )
    """A uniform random 0..jitter milliseconds added to ``handler_duration_ms``."""
    race_window_ms: int = field(
        default=0,
        metadata=_override(
            "Fault: pause after each read of the orders table.", "MS", "Fault: race windows (ms)."
        ),
    )
    """Pause (in milliseconds) after every read of the orders table, before the handler goes on."""
    crash_after_write: float = field(
        default=0.0,
        metadata=_override("Fault: probability of a crash after the writes, before the ack.", "P"),
    )
    """Probability (0..1) that an invocation's environment crashes after the handler
    returned — its writes made — and before the messages are acknowledged."""
    crash_mid_handler: float = field(
        default=0.0,
        metadata=_override(
            "Fault: probability of a crash right after each write is answered.",
            "P",
            "Fault: crash-mid-handler probabilities.",
        ),
    )
    """Probability (0..1), drawn at each write to the orders table, that the execution
    environment is killed right after the write is answered and before the handler sees
    the answer: the invocation fails between two writes, its messages come back after
    the visibility timeout. Injected by the observer, locally and in the deployed layer."""

    point: tuple[tuple[str, float], ...] = ()
    """Point faults, ``(name, probability)`` in ``POINT_FAULTS`` order (``[faults] point =
    { redeliver = 0.05 }``, ``--point-fault redeliver:0.05``): the faults ``explore`` injects
    at chosen points, drawn here at random in every local execution environment. Drawn at
    each call to the orders table: ``throttle`` before it is sent (the call is answered with
    a throttling error instead), ``crash``, ``timeout`` and ``redeliver`` once it is answered,
    before the handler sees the answer; ``ack-lost`` once per invocation that succeeded."""

    dedup_window_s: float = field(
        default=0.0,
        metadata=_override(
            "Fault: shorten FIFO deduplication to S seconds (embedded backend only).", "S"
        ),
    )
    """Fault, FIFO on the embedded backend only: the deduplication window (in seconds)
    instead of SQS's five minutes, so a resend after the window runs in seconds. 0: SQS's."""

    @property
    def active(self) -> bool:
        return any(getattr(self, f.name) for f in dataclasses.fields(self))

    def describe(self) -> str:
        parts = []
        if self.handler_duration_ms or self.handler_jitter_ms:
            parts.append(f"handler +{self.handler_duration_ms}±{self.handler_jitter_ms} ms")
        if self.race_window_ms:
            parts.append(f"race window {self.race_window_ms} ms")
        if self.crash_after_write:
            parts.append(f"crash after write {self.crash_after_write:.0%}")
        if self.crash_mid_handler:
            parts.append(f"crash mid-handler {self.crash_mid_handler:.0%} per write")
        for name, probability in self.point:
            parts.append(f"point fault {name} {probability:.0%} {POINT_FAULTS[name]}")
        if self.dedup_window_s:
            parts.append(
                f"FIFO deduplication window shortened to {self.dedup_window_s:g} s "
                f"(SQS: {DEDUP_WINDOW_S} s)"
            )
        return ", ".join(parts) or "none"


@dataclass(frozen=True)
class RunSettings:
    deadline_s: float = field(
        default=120.0, metadata=_override("Stop after this many seconds and report.")
    )
    """Wall time (in seconds) after which the run stops and reports what is unfinished."""
    max_backlog: int = field(
        default=0,
        metadata=_override(
            "Stop sending once N sent messages wait unsettled; what was sent is judged, "
            "the run is reported as stopped early (exit 4 unless it failed).",
            metavar="N",
        ),
    )
    """Stop sending once this many sent messages wait unsettled (0: no limit); what was
    sent is still consumed and judged, and the run is reported as stopped early."""
    producers: int = field(
        default=1,
        metadata=_override(
            "Producer processes splitting the schedule (each keeps the intended send times).",
            metavar="N",
        ),
    )
    """Processes that send the scheduled messages (1: the harness itself); more lift the
    producer's own ceiling of a few thousand messages per second per core."""


DEDUP_WINDOW_S = 300
"""SQS FIFO's deduplication interval (in seconds): five minutes, even after a delete."""
FIFO_BATCH_MAX = 10
"""The largest batch an event source mapping takes from a FIFO queue."""

LIMITS: dict[str, tuple[float, float]] = {
    "seed": (0, 2**63 - 1),
    "distinct_ids": (1, 1_000_000),
    "copies": (1, 1000),
    "copy_spread_s": (0, 3600),
    "conflict_fraction": (0, 1),
    "poison_fraction": (0, 1),
    "rate_per_s": (0, 100_000),
    "ramp_from_per_s": (0.1, 100_000),
    "batch_size": (1, 10_000),
    "batching_window_s": (0, 300),
    "visibility_timeout_s": (0, 43_200),
    "concurrency": (1, 1000),
    "max_receive_count": (1, 1000),
    "function_timeout_s": (1, 900),
    "memory_mb": (128, 10_240),
    "handler_duration_ms": (0, 900_000),
    "handler_jitter_ms": (0, 900_000),
    "race_window_ms": (0, 60_000),
    "crash_after_write": (0, 1),
    "crash_mid_handler": (0, 1),
    "dedup_window_s": (0, DEDUP_WINDOW_S),
    "message_groups": (1, 100_000),
    "deadline_s": (1, 86_400),
    "max_backlog": (0, 100_000_000),
    "producers": (1, 64),
}

"""The run's history: plain records of what was sent, delivered and written.

Pure data, produced by the adapters (producer, runner, execution
environments) and consumed by the checker and the report. Timestamps are
``time.monotonic_ns()`` readings (system-wide on Linux and macOS, so the
parent and the execution-environment processes share one timeline); they are
passed in, never read here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

TypedItem = dict[str, Any]
"""A DynamoDB item in its typed wire form: ``{"id": {"S": "x"}, ...}``."""


class WriteOutcome(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    """Rejected by its condition (ConditionalCheckFailed): the item is unchanged."""
    ERROR = "error"


class InvocationOutcome(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    """The handler raised."""
    TIMEOUT = "timeout"
    """The function timeout passed; the environment was stopped and replaced."""
    CRASH = "crash"
    """The environment's process died during the invocation."""


@dataclass(frozen=True)
class SentMessage:
    """One message the producer sent (or tried to)."""

    index: int
    """Position in the seeded send schedule."""
    business_id: str | None
    """The ``id`` in the body, or None when the body has none (a poison message)."""
    body: str
    intended_ns: int
    """When the schedule meant to send it; end-to-end latency starts here."""
    sent_ns: int
    message_id: str | None
    """SQS messageId, or None when the send failed."""
    send_error: str | None = None


@dataclass(frozen=True)
class WriteRecord:
    """One DynamoDB write the consumer made to the orders table, as observed."""

    operation: str
    """PutItem, UpdateItem, DeleteItem, or TransactWriteItems/BatchWriteItem parts."""
    key: TypedItem
    condition: str | None
    outcome: WriteOutcome
    item_before: TypedItem | None
    """The item the write replaced (from the returned old image); None if absent."""
    item_after: TypedItem | None
    """The item the write stored; None for a delete or when not observable."""
    before_known: bool
    """Whether ``item_before`` was observed (an old image was returned)."""
    started_ns: int
    ended_ns: int
    error_code: str | None = None


@dataclass(frozen=True)
class ReadRecord:
    """One GetItem of the orders table by the consumer, as observed."""

    key: TypedItem
    found: TypedItem | None
    """The item the read returned; None when it saw "absent"."""
    consistent: bool
    started_ns: int
    ended_ns: int


@dataclass(frozen=True)
class Record:
    """One SQS record of an invocation: a delivery of one message."""

    message_id: str
    receive_count: int
    """ApproximateReceiveCount at this delivery (1 = first delivery)."""
    business_id: str | None


@dataclass(frozen=True)
class Invocation:
    """One handler invocation in one execution environment."""

    request_id: str
    environment: int
    records: tuple[Record, ...]
    received_ns: int
    started_ns: int
    ended_ns: int
    outcome: InvocationOutcome
    error: str | None
    writes: tuple[WriteRecord, ...]
    failed_message_ids: tuple[str, ...] = ()
    """Records named in a partial batch response (report_batch_item_failures)."""
    result: Any = None
    log_tail: str = ""
    reads: tuple[ReadRecord, ...] = ()


@dataclass(frozen=True)
class Ack:
    message_id: str
    acked_ns: int
    requested_ns: int | None = None
    """When the DeleteMessageBatch call that acknowledged it started."""


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    receive_count: int
    seen_ns: int


@dataclass(frozen=True)
class EndState:
    """What the backend held when the run ended."""

    queue_visible: int
    queue_in_flight: int
    dlq_messages: int
    table_items: dict[str, TypedItem]
    """Stored items by their ``id`` string."""


@dataclass
class History:
    """Everything a variant run produced; appended to by the engine only."""

    sent: list[SentMessage] = field(default_factory=list)
    invocations: list[Invocation] = field(default_factory=list)
    acks: list[Ack] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    started_ns: int = 0
    ended_ns: int = 0
    timed_out: bool = False
    """The run's deadline passed before every message was settled."""

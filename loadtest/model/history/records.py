"""The records of a run's history: plain frozen values of what was sent, delivered and written.

Pure data, produced by the producer, the runner and the execution
environments, and consumed by the checker and the report; and the one text form of
an SNS or SQS message's attributes (``attribute_texts``), which the observer's records
and the sinks' reads share. Timestamps are
``time.monotonic_ns()`` readings (system-wide on Linux and macOS, so the
parent and the execution-environment processes share one timeline); they are
passed in, never read here. How the records are kept while a run goes on is
``history_frames``; the run's whole history is ``history.History``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from loadtest.model.pickled import field_state

TypedItem = dict[str, Any]
"""A DynamoDB item in its typed wire form: ``{"id": {"S": "x"}, ...}``."""


IDEMPOTENCY_WINDOW_NS = 600 * 1_000_000_000
"""How long after a TransactWriteItems call completed its ClientRequestToken makes an
identical call a no-op (DynamoDB: 10 minutes)."""


class WriteOutcome(StrEnum):
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    """Rejected by its condition (ConditionalCheckFailed, or a PartiQL INSERT of an
    existing key): the item is unchanged."""
    ERROR = "error"
    INDETERMINATE = "indeterminate"
    """Sent, but the environment died or timed out before the answer came back:
    the write may or may not have happened."""


class InvocationOutcome(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    """The handler raised."""
    TIMEOUT = "timeout"
    """The function timeout passed; the environment was stopped and replaced."""
    CRASH = "crash"
    """The environment's process died during the invocation."""
    CUT_OFF = "cut-off"
    """The run ended (its deadline) during the invocation; the environment was stopped."""


@field_state
@dataclass(frozen=True, slots=True)
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
    poison: bool = False
    """A planted poison record: every consumer is expected to refuse it."""


@field_state
@dataclass(frozen=True, slots=True)
class WriteRecord:
    """One DynamoDB write the consumer made to the watched table, as observed.

    A call that writes several items (BatchWriteItem, TransactWriteItems,
    BatchExecuteStatement, ExecuteTransaction) gives one record per item, all
    with the same ``call_id``.
    """

    operation: str
    """The API and, for multi-item calls, the part: ``PutItem``, ``UpdateItem``,
    ``DeleteItem``, ``BatchWriteItem.Put``, ``TransactWriteItems.Update``,
    ``ExecuteStatement.INSERT``, ``ExecuteTransaction.UPDATE``, ..."""
    key: TypedItem
    condition: str | None
    outcome: WriteOutcome
    item_before: TypedItem | None
    """The item before the write (from the write's own old image); None if absent."""
    item_after: TypedItem | None
    """The item after the write (what a put stored, an update computed from the
    request and the old image); None for a delete, a rejection's unchanged item
    is its ``item_before``."""
    before_known: bool
    """Whether ``item_before`` was observed (an old image was returned, or the
    write could only succeed on an absent item)."""
    started_ns: int
    ended_ns: int
    error_code: str | None = None
    call_id: str = ""
    """Identifies the API call; the parts of one transaction share it."""
    requested: TypedItem | None = None
    """What the handler asked to store (a put's item, an update's result on the
    old image): kept for rejected writes too, beside the item that stopped it."""
    after_known: bool = True
    """Whether ``item_after`` is exact (an update without an old image is not)."""
    noop_when_present: bool = False
    """The write cannot change an item that already exists (every action is
    ``SET p = if_not_exists(p, v)``), whatever that item holds."""
    request_id: str = ""
    """The invocation that made it."""
    idempotency: str = ""
    """For a TransactWriteItems or ExecuteTransaction call with a ClientRequestToken: the
    token and a digest of the whole request. DynamoDB answers a repeat of a completed call within
    ``IDEMPOTENCY_WINDOW_NS`` as it answered the first, and writes nothing."""
    record_id: str = ""
    """The messageId of the record the handler was on when it made the call (the last
    record whose body or messageId the calling thread or task read), or "" when the
    execution environment could not tell."""
    replaces: bool = False
    """What it stores comes from the request alone (a put; an update whose every action is
    ``SET p = :v`` or ``REMOVE p``): whatever the item held before is replaced, not added
    to, so a value the handler computed from an earlier read of the item undoes what
    others wrote since (``ADD``, ``SET p = p + :q`` would not)."""

    @property
    def deletes(self) -> bool:
        return self.operation.endswith(("DeleteItem", ".Delete", ".DELETE"))

    @property
    def adds(self) -> bool:
        """It is an update that adds to what its item held (``ADD``, ``SET p = p + :q``,
        ``list_append``) rather than replacing it: made again, it changes the item again."""
        return (
            self.operation.endswith(("UpdateItem", ".Update", ".UPDATE"))
            and not self.replaces
            and not self.noop_when_present
        )


@field_state
@dataclass(frozen=True, slots=True)
class UnobservedCall:
    """A call the observer could not interpret (evidence missing): to the watched table, or
    a send downstream the run cannot read back (``UNJUDGED_REASON``)."""

    operation: str
    reason: str
    request_id: str = ""


UNJUDGED_REASON = (
    "it sends downstream, where loadtest does not read (it judges DynamoDB, SNS, SQS, "
    "EventBridge, S3, Step Functions' StartExecution and Lambda's Invoke): whether each "
    "order was sent there once is unknown"
)
"""An ``UnobservedCall``'s reason for a send the run cannot judge (a Kinesis record, an
e-mail: ``loadtest.observer.effects.UNJUDGED_SENDS``)."""


@field_state
@dataclass(frozen=True, slots=True)
class SideWrite:
    """Items an accepted call wrote to one of the consumer's extra tables (``[[tables]]``):
    side writes by construction (idempotency records, locks, stock), never an outcome.

    A call that writes one item (PutItem, UpdateItem, DeleteItem) says which and what it did
    to it, as the observer reads the write's own old image: the checker's rule on repeated
    side changes (``loadtest.model.checker.side_changes``) reads it. A call of several items
    is counted only (``key`` None)."""

    operation: str
    table: str
    items: int
    request_id: str = ""
    key: TypedItem | None = None
    """The item's key, for a call that writes one item."""
    before: str = ""
    """A digest of the item before the write (``item_digest``; ``ABSENT``: there was none),
    or "" when unknown."""
    after: str = ""
    """A digest of the item after it, or "" when unknown."""
    changed: bool | None = None
    """Whether the write changed the item: its images differ, or it adds to what the item
    held (``adds``); None when neither tells."""
    record_id: str = ""
    """The messageId of the record the handler was on when it made the call, or ""."""
    adds: bool = False
    """It is an update that adds to what the item held (``ADD``, ``SET p = p + :q``,
    ``list_append``) rather than replacing it: made again, it changes the item again."""
    moves: dict[str, str] | None = None
    """What it did to the item's numbers (``numeric_moves``: attribute -> after minus
    before), whatever the call's form: a put of a stock level computed from a read moves it
    as an ``ADD`` would. None when no number moved or an image is unknown."""


@field_state
@dataclass(frozen=True, slots=True)
class ObserverFault:
    """The observer itself failed on a call (loadtest's own error, not the handler's)."""

    operation: str
    error: str
    request_id: str = ""


class EffectKind(StrEnum):
    """The kinds of sink a consumer's effects reach (what a placeholder creates)."""

    TOPIC = "topic"
    """An SNS topic (``Publish``, ``PublishBatch``)."""
    QUEUE = "queue"
    """An SQS queue other than the one that feeds the function (``SendMessage``,
    ``SendMessageBatch``)."""
    BUS = "bus"
    """An EventBridge bus (``PutEvents``)."""
    BUCKET = "bucket"
    """An S3 bucket (``PutObject``, ``CopyObject``, ``DeleteObject``)."""
    STATE_MACHINE = "state_machine"
    """A Step Functions state machine (``StartExecution``)."""
    FUNCTION = "function"
    """Another Lambda function (``Invoke``)."""
    SOURCE = "source"
    """The queue that feeds the function itself (``SendMessage``, ``SendMessageBatch``):
    work the consumer sends itself to do later (a retry with ``DelaySeconds``). Never an
    effect: the run delivers it like any other message, and the entry's ``key`` is the
    message id the queue answered, so the run knows what it still has to settle. Its
    ``DeleteMessage`` and ``DeleteMessageBatch`` too: a message the consumer deletes
    itself (before Lambda does, or instead of it when the invocation then fails) is
    acknowledged by that delete; the entry's ``key`` is the deleted message's id."""
    DEAD_LETTER = "dead_letter"
    """The dead-letter queue of the queue that feeds the function (``SendMessage``,
    ``SendMessageBatch``): a record the consumer parks there itself, as the queue's redrive
    would. Never an effect: the record the handler was on is dead-lettered by it."""


SOURCE_SENDS = frozenset({"SQS.SendMessage", "SQS.SendMessageBatch"})
"""The operations by which a consumer sends work to the queue that feeds it."""
SOURCE_DELETES = frozenset({"SQS.DeleteMessage", "SQS.DeleteMessageBatch"})
"""The operations by which a consumer deletes (acknowledges) a message it was given."""


@field_state
@dataclass(frozen=True, slots=True)
class EffectRecord:
    """One effect a consumer sent beyond the table (one entry of a batch call), as observed.

    Recorded when its call is answered, so it survives the invocation dying after the
    answer; ``accepted`` is the sink's own answer for this entry (a batch call's
    ``Failed`` entry, or an error answer, is not sent).
    """

    operation: str
    """The service's API: ``SNS.Publish``, ``SNS.PublishBatch``, ``SQS.SendMessage``,
    ``SQS.SendMessageBatch``, ``EventBridge.PutEvents``, ``S3.PutObject``,
    ``S3.CopyObject``, ``S3.DeleteObject``, ``StepFunctions.StartExecution``,
    ``Lambda.Invoke``."""
    kind: EffectKind
    sink: str
    """The sink as the call named it: a topic's or state machine's ARN, a queue's URL, a
    bus's name (``default`` when the entry named none), a bucket's name, a function's
    name or ARN."""
    payload: str
    """What the entry carried, as text: SNS ``Message``, SQS ``MessageBody``,
    EventBridge ``Detail``, the S3 object's bytes (UTF-8, else base64 with the prefix
    ``base64:``; "" for a delete), Step Functions ``input``, Lambda ``Payload``."""
    accepted: bool
    started_ns: int
    ended_ns: int
    key: str = ""
    """What names the entry inside its sink: an S3 object's key, an execution's name, a
    copy's source (``bucket/key``) is in ``payload``; for a send to the source queue
    (``EffectKind.SOURCE``), the message id the queue answered; "" when there is none."""
    dedup_id: str = ""
    """A FIFO ``MessageDeduplicationId`` the call gave ("" when none)."""
    group_id: str = ""
    """A FIFO ``MessageGroupId`` the call gave ("" when none)."""
    error_code: str | None = None
    """The sink's error for this entry, when it was refused (or ``NoAnswer``)."""
    call_id: str = ""
    """Identifies the API call; the entries of one batch call share it."""
    request_id: str = ""
    """The invocation that made it."""
    record_id: str = ""
    """The messageId of the record the handler was on when it made the call (as for a
    ``WriteRecord``), or "" when the execution environment could not tell."""
    message_attributes: tuple[tuple[str, str], ...] = ()
    """The entry's SNS or SQS ``MessageAttributes``, by name, as ``attribute_texts`` gives
    them (() when it carried none)."""
    subject: str = ""
    """An SNS entry's ``Subject`` ("" when it gave none)."""

    @property
    def resent(self) -> str:
        """The id of the message it sent to the queue that feeds the function and that the
        queue took; "" for any other entry."""
        ok = self.kind is EffectKind.SOURCE and self.accepted and self.operation in SOURCE_SENDS
        return self.key if ok else ""

    @property
    def deleted(self) -> str:
        """The id of the message of the function's own queue it deleted; "" for any other
        entry."""
        ok = self.kind is EffectKind.SOURCE and self.accepted and self.operation in SOURCE_DELETES
        return self.key if ok else ""

    @property
    def parked(self) -> bool:
        """Whether it is a record the consumer put on its own dead-letter queue, and the
        queue took it."""
        return self.kind is EffectKind.DEAD_LETTER and self.accepted


@field_state
@dataclass(frozen=True, slots=True)
class SinkMessage:
    """One thing a sink really held at the end of the run (read by the run, never assumed)."""

    payload: str
    """A message's body as delivered (an SNS or EventBridge message as its subscriber
    receives it, unwrapped to the ``Message`` or ``detail`` the consumer sent), an
    object's bytes (as ``EffectRecord.payload``), an execution's input."""
    key: str = ""
    """An object's key, an execution's name ("" for a message)."""
    attributes: tuple[tuple[str, str], ...] = ()
    """What the sink says of it: ``MessageDeduplicationId``, ``MessageGroupId``,
    ``ETag``, an execution's ``status``, ..."""
    message_attributes: tuple[tuple[str, str], ...] = ()
    """The message attributes it was delivered with (a topic's from the notification's
    ``MessageAttributes``, a queue's from the message's), as ``attribute_texts`` gives
    them."""
    subject: str = ""
    """A topic's message's ``Subject``, from its notification ("" when it had none)."""


def attribute_texts(attributes: Any) -> tuple[tuple[str, str], ...]:
    """SNS or SQS message attributes as ``EffectRecord.message_attributes`` and
    ``SinkMessage.message_attributes`` keep them: ``(name, value)`` sorted by name, each
    value as text, a binary one as ``base64:`` and its base64. Takes the form a call sends
    and SQS delivers (``{"DataType", "StringValue" | "BinaryValue"}``) and the form an SNS
    notification carries (``{"Type", "Value"}``, a binary value already in base64);
    anything else, or a value of neither form, is left out."""
    if not isinstance(attributes, dict) or not attributes:
        return ()
    out = []
    for name, value in attributes.items():
        if not isinstance(value, dict):
            continue
        kind = str(value.get("DataType") or value.get("Type") or "")
        if "StringValue" in value:
            text = str(value["StringValue"])
        elif "BinaryValue" in value:
            data = value["BinaryValue"]
            raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
            text = "base64:" + base64.b64encode(raw).decode("ascii")
        elif "Value" in value:
            text = str(value["Value"])
            if kind.startswith("Binary"):
                text = "base64:" + text
        else:
            continue
        out.append((str(name), text))
    return tuple(sorted(out))


@field_state
@dataclass(frozen=True, slots=True)
class SinkContents:
    """What one sink held at the end of the run: the messages its capture queue (or the
    queue itself) received, the bucket's objects, the state machine's executions."""

    name: str
    """The sink's label in the scenario (the NAME of ``{topic:NAME}``)."""
    kind: EffectKind
    address: str
    """Its ARN, URL or name, as the consumer was told it."""
    messages: tuple[SinkMessage, ...] = ()
    complete: bool = True
    """Whether everything it held was read (False: the read was cut short, and what it
    did not read is not counted as lost)."""
    fifo: bool = False
    deduplicated: str = ""
    """What the sink deduplicates by itself, in words ("" when nothing): a FIFO topic's
    or queue's deduplication id within five minutes, an S3 key, an execution name."""
    delayed: int = 0
    """Messages a queue sink still held back when the read ended (sent with
    ``DelaySeconds`` and not yet visible): held, but not read (``complete`` is False)."""


@field_state
@dataclass(frozen=True, slots=True)
class ReadRecord:
    """One key lookup of the watched table (GetItem, a PartiQL SELECT by key), as observed."""

    key: TypedItem
    found: TypedItem | None
    """The item the read returned; None when it saw "absent"."""
    consistent: bool
    started_ns: int
    ended_ns: int
    request_id: str = ""


@field_state
@dataclass(frozen=True, slots=True)
class WorkLeft:
    """Work the handler started and left running when its invocation returned: a thread it
    started, or a call it handed to a thread pool, not finished yet
    (``loadtest.observer.left_work``). Lambda freezes it with the execution environment: it
    runs on only while the environment is invoked again, and ends unfinished when the
    environment is retired."""

    work_id: str
    """Names it within the run (``Invocation.ended_work`` names it again once finished)."""
    record_id: str
    """The messageId of the record the handler was on when it started it, or ""."""
    what: str
    """``thread 'NAME'``, or the function handed to a pool."""


@dataclass(frozen=True, slots=True)
class Record:
    """One SQS record of an invocation: a delivery of one message."""

    message_id: str
    receive_count: int
    """ApproximateReceiveCount at this delivery (1 = first delivery)."""
    business_id: str | None


@field_state
@dataclass(frozen=True, slots=True)
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
    unobserved: tuple[UnobservedCall, ...] = ()
    observer_faults: tuple[ObserverFault, ...] = ()
    side_writes: tuple[SideWrite, ...] = ()
    """Accepted writes to the consumer's extra tables."""
    effects: tuple[EffectRecord, ...] = ()
    """What it sent beyond the table (published, sent, put, started, invoked)."""
    left_work: tuple[WorkLeft, ...] = ()
    """The work it started and left running when it returned."""
    ended_work: tuple[str, ...] = ()
    """The ``work_id`` of work earlier invocations of its environment left running that
    had finished by the time it returned."""


@field_state
@dataclass(frozen=True, slots=True)
class InvocationRef:
    """What a judged write keeps of its invocation: who ran it, what it carried and read.

    The checker holds one per invocation that wrote, instead of the whole
    ``Invocation`` (its result, log tail and errors stay in the history).
    """

    request_id: str
    environment: int
    records: tuple[Record, ...]
    reads: tuple[ReadRecord, ...] = ()

    @classmethod
    def of(cls, invocation: Invocation) -> InvocationRef:
        return cls(
            invocation.request_id, invocation.environment, invocation.records, invocation.reads
        )


@field_state
@dataclass(frozen=True, slots=True)
class Ack:
    message_id: str
    acked_ns: int
    requested_ns: int | None = None
    """When the DeleteMessageBatch call that acknowledged it started."""


@field_state
@dataclass(frozen=True, slots=True)
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
    table_items: dict[str, TypedItem] = field(repr=False)
    """Stored items by their key (``key_string``); left out of the repr, which
    must stay short whatever the table holds."""
    side_tables: tuple[tuple[str, int], ...] = ()
    """Items each of the consumer's extra tables (``[[tables]]``) holds at the end, by name:
    what the handler stored besides outcomes (idempotency records, locks)."""
    sinks: tuple[SinkContents, ...] = ()
    """What each of the run's sinks (``{topic:NAME}``, ``{queue_url:NAME}``, ...) held at
    the end; empty for a run without sinks."""

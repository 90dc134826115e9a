"""The run's history: plain records of what was sent, delivered and written.

Pure data, produced by the producer, the runner and the execution
environments) and consumed by the checker and the report. Timestamps are
``time.monotonic_ns()`` readings (system-wide on Linux and macOS, so the
parent and the execution-environment processes share one timeline); they are
passed in, never read here.

Also owns how a run's records are kept (``RecordLog``, ``InvocationLog``):
what was sent, the settled invocations, the acknowledgements and dead letters
leave the Python heap as compressed frames while the run goes on, handed to a
``FrameStore`` the caller chooses (a list in memory, or a run's file), so a
run's memory does not grow with its messages, and every reader streams them
back one frame at a time.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import marshal
import operator
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar, overload

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

    @property
    def deletes(self) -> bool:
        return self.operation.endswith(("DeleteItem", ".Delete", ".DELETE"))


@dataclass(frozen=True, slots=True)
class UnobservedCall:
    """A call to the watched table the observer could not interpret (evidence missing)."""

    operation: str
    reason: str
    request_id: str = ""


@dataclass(frozen=True, slots=True)
class SideWrite:
    """Items an accepted call wrote to one of the consumer's extra tables (``[[tables]]``):
    side writes by construction (idempotency records, locks), never an outcome."""

    operation: str
    table: str
    items: int
    request_id: str = ""


@dataclass(frozen=True, slots=True)
class ObserverFault:
    """The observer itself failed on a call (loadtest's own error, not the handler's)."""

    operation: str
    error: str
    request_id: str = ""


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


@dataclass(frozen=True, slots=True)
class Record:
    """One SQS record of an invocation: a delivery of one message."""

    message_id: str
    receive_count: int
    """ApproximateReceiveCount at this delivery (1 = first delivery)."""
    business_id: str | None


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


_T = TypeVar("_T")

FRAME_RECORDS = 512
"""Records per compressed frame of a ``RecordLog``: the newest, unframed ones stay objects."""


class FrameStore(Protocol):
    """Where a ``RecordLog`` keeps its compressed frames: a ``list`` (in memory) will do.

    A run's logs get a store whose frames leave the process's memory (the engine's
    ``loadtest.spool``): this module does no I/O.
    """

    def append(self, frame: bytes, /) -> None: ...

    def __getitem__(self, index: int, /) -> bytes: ...

    def __len__(self) -> int: ...


FrameStores = Callable[[], FrameStore]
"""Makes the store of one log (``list`` keeps the frames in memory)."""


class RecordLog(Sequence[_T]):
    """An append-only sequence of frozen records, kept mostly as compressed frames.

    Every ``FRAME_RECORDS`` appended records are encoded into plain tuples of
    JSON-shaped values (what the records hold: strings, numbers, items,
    results), marshalled as one frame (a value shared by identity, such as an
    item the observer shares, is stored once per frame), compressed and handed
    to the log's ``FrameStore``. ``marshal`` rather than ``pickle``: this module
    ships in the observer's layer, where every import is a cold start's cost.
    Iterating decodes one frame at a time, so a reader never holds every record
    at once; records appended while an iteration runs are included. Records
    are frozen, so the decoded copies are equal to what was appended; a log
    equals any sequence of equal records in the same order.
    """

    def __init__(
        self,
        encode: Callable[[_T], tuple[Any, ...]],
        decode: Callable[[tuple[Any, ...]], _T],
        records: Iterable[_T] = (),
        frames: FrameStores = list,
    ) -> None:
        self._encode = encode
        self._decode = decode
        self._frames: FrameStore = frames()
        self._tail: list[_T] = []
        self.extend(records)

    def append(self, record: _T) -> None:
        self._tail.append(record)
        if len(self._tail) >= FRAME_RECORDS:
            frame = marshal.dumps([self._encode(r) for r in self._tail])
            self._frames.append(zlib.compress(frame, 1))
            self._tail = []

    def extend(self, records: Iterable[_T]) -> None:
        for record in records:
            self.append(record)

    def __len__(self) -> int:
        return len(self._frames) * FRAME_RECORDS + len(self._tail)

    def _frame(self, index: int) -> list[_T]:
        if index < len(self._frames):
            decode = self._decode
            return [decode(row) for row in marshal.loads(zlib.decompress(self._frames[index]))]
        return list(self._tail)

    def _from(self, start: int) -> Iterator[_T]:
        done = start
        while done < len(self):
            index, offset = divmod(done, FRAME_RECORDS)
            for record in self._frame(index)[offset:]:
                yield record
                done += 1

    def __iter__(self) -> Iterator[_T]:
        return self._from(0)

    def rows(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[Any, ...]]:
        """The records (from ``start``, before ``stop``) as the plain tuples they are kept
        as, not decoded: for the owner of the encoding, to read a few fields of each record
        without building them all."""
        stop = len(self) if stop is None else min(stop, len(self))
        first, offset = divmod(start, FRAME_RECORDS)
        position = first * FRAME_RECORDS
        for index in range(first, len(self._frames)):
            if position >= stop:
                return
            frame = marshal.loads(zlib.decompress(self._frames[index]))
            yield from frame[offset : stop - position]
            position += FRAME_RECORDS
            offset = 0
        for record in list(self._tail)[offset : max(0, stop - position)]:
            yield self._encode(record)

    @overload
    def __getitem__(self, index: int) -> _T: ...

    @overload
    def __getitem__(self, index: slice) -> list[_T]: ...

    def __getitem__(self, index: int | slice) -> _T | list[_T]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1 or stop <= start:
                return [self[i] for i in range(start, stop, step)]
            return list(itertools.islice(self._from(start), stop - start))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("record index out of range")
        frame, offset = divmod(index, FRAME_RECORDS)
        return self._frame(frame)[offset]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordLog | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list is


_WRITE_OUTCOMES = {o.value: o for o in WriteOutcome}
_INVOCATION_OUTCOMES = {o.value: o for o in InvocationOutcome}


def encode_write(w: WriteRecord) -> tuple[Any, ...]:
    """A write as the plain tuple a frame keeps (``decode_write`` reads it back)."""
    return (
        w.operation,
        w.key,
        w.condition,
        w.outcome.value,
        w.item_before,
        w.item_after,
        w.before_known,
        w.started_ns,
        w.ended_ns,
        w.error_code,
        w.call_id,
        w.requested,
        w.after_known,
        w.noop_when_present,
        w.request_id,
        w.idempotency,
        w.record_id,
    )


def write_outline(row: tuple[Any, ...]) -> tuple[int, int, WriteOutcome]:
    """The start, end (``_ns``) and outcome of a write kept as ``encode_write``'s tuple."""
    return row[7], row[8], _WRITE_OUTCOMES[row[3]]


def decode_write(row: tuple[Any, ...]) -> WriteRecord:
    fields = list(row)
    fields[3] = _WRITE_OUTCOMES[fields[3]]
    return WriteRecord(*fields)


def encode_records(records: Iterable[Record]) -> tuple[Any, ...]:
    """An invocation's records as the plain tuples a frame keeps (``decode_records``)."""
    return tuple([(r.message_id, r.receive_count, r.business_id) for r in records])


def decode_records(rows: Iterable[tuple[Any, ...]]) -> tuple[Record, ...]:
    return tuple([Record(*r) for r in rows])


def encode_reads(reads: Sequence[ReadRecord]) -> tuple[Any, ...]:
    """An invocation's reads as the plain tuples a frame keeps (``decode_reads``)."""
    # Most invocations read nothing: no generator for those.
    if not reads:
        return ()
    return tuple(
        [(r.key, r.found, r.consistent, r.started_ns, r.ended_ns, r.request_id) for r in reads]
    )


def decode_reads(rows: Sequence[tuple[Any, ...]]) -> tuple[ReadRecord, ...]:
    return tuple([ReadRecord(*r) for r in rows]) if rows else ()


def _encode_invocation(inv: Invocation) -> tuple[Any, ...]:
    return (
        inv.request_id,
        inv.environment,
        encode_records(inv.records),
        inv.received_ns,
        inv.started_ns,
        inv.ended_ns,
        inv.outcome.value,
        inv.error,
        tuple([encode_write(w) for w in inv.writes]),
        inv.failed_message_ids,
        inv.result,
        inv.log_tail,
        encode_reads(inv.reads),
        tuple([(u.operation, u.reason, u.request_id) for u in inv.unobserved])
        if inv.unobserved
        else (),
        tuple([(f.operation, f.error, f.request_id) for f in inv.observer_faults])
        if inv.observer_faults
        else (),
        tuple([(w.operation, w.table, w.items, w.request_id) for w in inv.side_writes])
        if inv.side_writes
        else (),
    )


def _decode_invocation(row: tuple[Any, ...]) -> Invocation:
    (
        request_id,
        environment,
        records,
        received_ns,
        started_ns,
        ended_ns,
        outcome,
        error,
        writes,
        failed,
        result,
        log_tail,
        reads,
        unobserved,
        faults,
        side,
    ) = row
    # Most invocations read nothing and meet no unobserved call: no generator for those.
    return Invocation(
        request_id,
        environment,
        decode_records(records),
        received_ns,
        started_ns,
        ended_ns,
        _INVOCATION_OUTCOMES[outcome],
        error,
        tuple([decode_write(w) for w in writes]),
        failed,
        result,
        log_tail,
        decode_reads(reads),
        tuple([UnobservedCall(*u) for u in unobserved]) if unobserved else (),
        tuple([ObserverFault(*f) for f in faults]) if faults else (),
        tuple([SideWrite(*w) for w in side]) if side else (),
    )


class InvocationLog(RecordLog[Invocation]):
    """A run's invocations, in the order they were recorded (see ``RecordLog``)."""

    def __init__(self, invocations: Iterable[Invocation] = (), frames: FrameStores = list) -> None:
        super().__init__(_encode_invocation, _decode_invocation, invocations, frames)


@dataclass(frozen=True, slots=True)
class Ack:
    message_id: str
    acked_ns: int
    requested_ns: int | None = None
    """When the DeleteMessageBatch call that acknowledged it started."""


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


def _plain_fields(cls: type[_T]) -> Callable[[_T], tuple[Any, ...]]:
    """The encoder of a record whose fields hold plain values: its fields, in their order
    (so a field added to the record is kept without a list to update)."""
    return operator.attrgetter(*(f.name for f in dataclasses.fields(cls)))  # type: ignore[arg-type]


_encode_sent = _plain_fields(SentMessage)
_encode_ack = _plain_fields(Ack)
_encode_dead_letter = _plain_fields(DeadLetter)


def _decode_sent(row: tuple[Any, ...]) -> SentMessage:
    return SentMessage(*row)


def _decode_ack(row: tuple[Any, ...]) -> Ack:
    return Ack(*row)


def _decode_dead_letter(row: tuple[Any, ...]) -> DeadLetter:
    return DeadLetter(*row)


class History:
    """Everything a variant run produced; appended to by the engine only.

    ``sent``, ``invocations``, ``acks`` and ``dead_letters`` are ``RecordLog`` logs
    (``invocations`` an ``InvocationLog``): append-only sequences whose framed
    records leave the Python heap as the run goes, kept where ``frames`` says
    (in memory by default; a run's engine passes a store on disk, so a run's
    memory does not grow with its messages). Assigning any iterable of records
    to one of them stores the records in a new log.
    """

    def __init__(
        self,
        sent: Iterable[SentMessage] = (),
        invocations: Iterable[Invocation] = (),
        acks: Iterable[Ack] = (),
        dead_letters: Iterable[DeadLetter] = (),
        started_ns: int = 0,
        ended_ns: int = 0,
        timed_out: bool = False,
        frames: FrameStores = list,
    ) -> None:
        self.frames = frames
        """Makes each log's frame store."""
        self.sent = sent
        self.invocations = invocations
        self.acks = acks
        self.dead_letters = dead_letters
        self.started_ns = started_ns
        self.ended_ns = ended_ns
        self.timed_out = timed_out
        """The run's deadline passed before every message was settled."""

    @property
    def sent(self) -> RecordLog[SentMessage]:
        return self._sent

    @sent.setter
    def sent(self, sent: Iterable[SentMessage]) -> None:
        self._sent = RecordLog(_encode_sent, _decode_sent, sent, self.frames)

    @property
    def invocations(self) -> InvocationLog:
        return self._invocations

    @invocations.setter
    def invocations(self, invocations: Iterable[Invocation]) -> None:
        self._invocations = (
            invocations
            if isinstance(invocations, InvocationLog)
            else InvocationLog(invocations, self.frames)
        )

    @property
    def acks(self) -> RecordLog[Ack]:
        return self._acks

    @acks.setter
    def acks(self, acks: Iterable[Ack]) -> None:
        self._acks = RecordLog(_encode_ack, _decode_ack, acks, self.frames)

    @property
    def dead_letters(self) -> RecordLog[DeadLetter]:
        return self._dead_letters

    @dead_letters.setter
    def dead_letters(self, dead_letters: Iterable[DeadLetter]) -> None:
        self._dead_letters = RecordLog(
            _encode_dead_letter, _decode_dead_letter, dead_letters, self.frames
        )

    def __repr__(self) -> str:
        # Short whatever the run's size: asyncio formats a finished task's
        # result with repr() (a SIGINT check in Runner.run), and reprlib only
        # truncates the string after building all of it.
        return (
            f"History(sent={len(self.sent)}, invocations={len(self.invocations)}, "
            f"acks={len(self.acks)}, dead_letters={len(self.dead_letters)}, "
            f"timed_out={self.timed_out})"
        )


def key_string(key: TypedItem) -> str:
    """A stored item's key as one string: the value of a one-attribute key
    (the lab's ``id``), or the values joined by ``|`` in attribute order."""
    parts = []
    for value in key.values():
        if isinstance(value, dict) and len(value) == 1:
            parts.append(str(next(iter(value.values()))))
        else:
            parts.append(str(value))
    return "|".join(parts)


@dataclass(frozen=True)
class OutcomeKey:
    """Where a message's outcome lives: the key of its outcome item, one template per key attribute.

    The lab's default is the item keyed ``id = "{id}"``; a scenario may declare
    ``pk = "ORDER#{id}"`` (and a range key such as ``sk = "ORDER"``).
    ``{id}`` stands for the message's business id.
    """

    templates: tuple[tuple[str, str], ...] = (("id", "{id}"),)
    declared: bool = field(default=False, compare=False)
    """The scenario said where outcomes live (``[outcome] key``), even if it said the
    default: the checker takes its word instead of looking for outcomes elsewhere."""
    fields: tuple[str, ...] = ()
    """What a complete outcome holds (``[outcome] fields``): the names every finished
    outcome item stores a value under (an attribute, or a name inside one of its maps or
    JSON strings). An outcome item without one of them is not an outcome yet."""

    @functools.cached_property
    def key_names(self) -> tuple[str, ...]:
        # Cached: ``canonical`` reads it for every write a run judges.
        return tuple(name for name, _ in self.templates)

    def key_for(self, business_id: str) -> TypedItem:
        return {
            name: {"S": template.replace("{id}", business_id)} for name, template in self.templates
        }

    def describe(self) -> str:
        return ", ".join(f"{name} = {template!r}" for name, template in self.templates)

    def canonical(self, key: TypedItem) -> str:
        """``key_string`` of the key's attributes in this key's order (callers may order them
        otherwise); a key of other attributes (a table keyed otherwise, ``[table] key``) as it is."""
        names = self.key_names
        if not all(name in key for name in names):
            return key_string(key)
        return key_string({name: key[name] for name in names})

"""How a run's records are kept: compressed frames and the codec of each record type.

Owns ``RecordLog`` (and ``InvocationLog``): what was sent, the settled
invocations, the acknowledgements and dead letters leave the Python heap as
compressed frames while the run goes on, handed to a ``FrameStore`` the caller
chooses (a list in memory, or a run's file), so a run's memory does not grow
with its messages, and every reader streams them back one frame at a time.
Also owns the encoding of each record (``history_records``) as the plain
tuple a frame keeps, and its decoding.
"""

from __future__ import annotations

import dataclasses
import itertools
import marshal
import operator
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar, overload

from loadtest.model.history.records import (
    Ack,
    DeadLetter,
    EffectKind,
    EffectRecord,
    Invocation,
    InvocationOutcome,
    ObserverFault,
    ReadRecord,
    Record,
    SentMessage,
    SideWrite,
    UnobservedCall,
    WorkLeft,
    WriteOutcome,
    WriteRecord,
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

    The first ``kept_frames`` frames, once decoded, are kept decoded (0 by default): a
    log read by several passes (a run's invocations, by the check's passes and the
    report's) decodes them once, and what it keeps is bounded however long the run.
    """

    kept_frames = 0
    """How many of the first frames stay decoded once read (shared by every reader)."""

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
        self._decoded: dict[int, list[_T]] = {}
        self.extend(records)

    def __getstate__(self) -> dict[str, Any]:
        # The decoded frames are a cache of the frames: a pickled log carries its frames.
        state = self.__dict__.copy()
        state["_decoded"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({"_decoded": {}, **state})

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
        """Frame ``index``'s records (the caller must not change the list)."""
        if index < len(self._frames):
            kept = self._decoded.get(index)
            if kept is not None:
                return kept
            decode = self._decode
            records = [decode(row) for row in marshal.loads(zlib.decompress(self._frames[index]))]
            if index < self.kept_frames:
                self._decoded[index] = records
            return records
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
        w.replaces,
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


def encode_invocation(inv: Invocation) -> tuple[Any, ...]:
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
        tuple([_encode_side(w) for w in inv.side_writes]) if inv.side_writes else (),
        *_encode_tail(inv),
    )


def _encode_side(write: SideWrite) -> tuple[Any, ...]:
    """A side write's fields, the last ones left off when they hold nothing (a call counted
    only keeps the four it always had)."""
    if write.key is None and not write.record_id:
        return (write.operation, write.table, write.items, write.request_id)
    return (
        write.operation,
        write.table,
        write.items,
        write.request_id,
        write.key,
        write.before,
        write.after,
        write.changed,
        write.record_id,
        write.adds,
        *((write.moves,) if write.moves else ()),
    )


def _encode_tail(inv: Invocation) -> tuple[Any, ...]:
    """The optional last fields of an invocation's row, left off when empty: its effects,
    then the work it left running and the work it saw end."""
    effects = tuple([encode_effect(e) for e in inv.effects])
    if not inv.left_work and not inv.ended_work:
        return (effects,) if effects else ()
    return (effects, tuple([_encode_work(w) for w in inv.left_work]), inv.ended_work)


def decode_invocation(row: tuple[Any, ...], *, writes_too: bool = True) -> Invocation:
    """An invocation kept as ``encode_invocation``'s tuple; with ``writes_too=False``, its
    writes left out (``writes`` empty), for a reader of the rest."""
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
        *tail,
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
        tuple([decode_write(w) for w in writes]) if writes_too else (),
        failed,
        result,
        log_tail,
        decode_reads(reads),
        tuple([UnobservedCall(*u) for u in unobserved]) if unobserved else (),
        tuple([ObserverFault(*f) for f in faults]) if faults else (),
        tuple([SideWrite(*w) for w in side]) if side else (),
        tuple([decode_effect(e) for e in tail[0]]) if tail else (),
        tuple([WorkLeft(*w) for w in tail[1]]) if len(tail) > 1 else (),
        tuple(tail[2]) if len(tail) > 2 else (),
    )


def encode_effect(e: EffectRecord) -> tuple[Any, ...]:
    """An effect as a row of plain values (its kind as its text; its message attributes,
    then its subject, last, and only when it has them, so a row without them is what it
    always was)."""
    row = (
        e.operation,
        e.kind.value,
        e.sink,
        e.payload,
        e.accepted,
        e.started_ns,
        e.ended_ns,
        e.key,
        e.dedup_id,
        e.group_id,
        e.error_code,
        e.call_id,
        e.request_id,
        e.record_id,
    )
    if e.subject:
        return (*row, e.message_attributes, e.subject)
    return (*row, e.message_attributes) if e.message_attributes else row


_EFFECT_KINDS: dict[str, EffectKind] = {kind.value: kind for kind in EffectKind}
"""Each kind by its value: a dict lookup instead of the enum's call machinery, for every
effect of every pass over the history (``EffectKind(value)`` still raises for a value that
is no kind)."""


def decode_effect(row: Sequence[Any]) -> EffectRecord:
    operation, kind, *rest = row
    return EffectRecord(operation, _EFFECT_KINDS.get(kind) or EffectKind(kind), *rest)


class InvocationLog(RecordLog[Invocation]):
    """A run's invocations, in the order they were recorded (see ``RecordLog``).

    The check's passes and the report's read them several times over: the first
    ``kept_frames`` frames are decoded once for all of them.
    """

    kept_frames = 8
    """4,096 invocations: a burst of a few thousand messages is decoded once; a longer run
    keeps its first 4,096 decoded (a few MB) and decodes the rest in each pass."""

    def __init__(self, invocations: Iterable[Invocation] = (), frames: FrameStores = list) -> None:
        super().__init__(encode_invocation, decode_invocation, invocations, frames)

    def without_writes(self) -> Iterator[Invocation]:
        """The invocations with their writes left out (``writes`` empty): for a reader of
        what they received, sent and answered, without decoding every write again (a frame
        kept decoded is copied, not read again)."""
        for index in range(len(self._frames)):
            kept = self._decoded.get(index)
            if kept is not None:
                yield from (_writeless(invocation) for invocation in kept)
                continue
            for row in self.rows(index * FRAME_RECORDS, (index + 1) * FRAME_RECORDS):
                yield decode_invocation(row, writes_too=False)
        for invocation in list(self._tail):
            yield dataclasses.replace(invocation, writes=())

    def reading_and_writing(self) -> Iterator[Invocation]:
        """The invocations that both read and wrote, the others not decoded: for a reader
        of those alone (most invocations read nothing; a frame kept decoded is not read
        again)."""
        for index in range(len(self._frames)):
            kept = self._decoded.get(index)
            if kept is not None:
                yield from (i for i in kept if i.writes and i.reads)
                continue
            for row in self.rows(index * FRAME_RECORDS, (index + 1) * FRAME_RECORDS):
                if row[8] and row[12]:  # its writes and its reads (``encode_invocation``)
                    yield decode_invocation(row)
        for invocation in list(self._tail):
            if invocation.writes and invocation.reads:
                yield invocation


_INVOCATION_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(Invocation)))
_WRITES_FIELD = [f.name for f in dataclasses.fields(Invocation)].index("writes")


def _writeless(invocation: Invocation) -> Invocation:
    """``dataclasses.replace(invocation, writes=())``, without its keyword arguments built
    for every field (it is one per invocation per pass)."""
    if not invocation.writes:
        return invocation
    fields = list(_INVOCATION_FIELDS(invocation))
    fields[_WRITES_FIELD] = ()
    return Invocation(*fields)


def _plain_fields(cls: type[_T]) -> Callable[[_T], tuple[Any, ...]]:
    """The encoder of a record whose fields hold plain values: its fields, in their order
    (so a field added to the record is kept without a list to update)."""
    return operator.attrgetter(*(f.name for f in dataclasses.fields(cls)))  # type: ignore[arg-type]


encode_sent = _plain_fields(SentMessage)
encode_ack = _plain_fields(Ack)
encode_dead_letter = _plain_fields(DeadLetter)
_encode_work = _plain_fields(WorkLeft)


def decode_sent(row: tuple[Any, ...]) -> SentMessage:
    return SentMessage(*row)


def decode_ack(row: tuple[Any, ...]) -> Ack:
    return Ack(*row)


def decode_dead_letter(row: tuple[Any, ...]) -> DeadLetter:
    return DeadLetter(*row)

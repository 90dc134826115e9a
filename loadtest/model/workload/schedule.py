"""The key schedule: the seeded list of messages a scenario sends, and when.

Pure and deterministic: the same workload and seed give the same bodies, ids,
order and intended send times, so every variant of a comparison — and every
rerun of the printed command — gets the same workload. A ``Schedule`` keeps
them as arrays of ints and rebuilds each ``PlannedMessage`` when read, so the
schedule a run holds from start to end stays small whatever its messages.
"""

from __future__ import annotations

import json
import math
import random
import zlib
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from loadtest.model.scenario.body import envelop, message_values, render_message
from loadtest.model.scenario.envelopes import EnvelopeKind
from loadtest.model.scenario.loading import (
    Arrival,
    CopySpacing,
    Deduplication,
    ExplicitMessage,
    MessageGroup,
    Order,
    Workload,
)

MIN_QUANTITY = 1
MAX_QUANTITY = 10
NS_PER_S = 1_000_000_000
POISON_QUANTITY = 0
"""Outside the lab's 1..10: every built-in consumer refuses it."""


@dataclass(frozen=True, slots=True)
class PlannedMessage:
    index: int
    business_id: str | None
    body: str
    offset_ns: int
    """Intended send time relative to the start of the run."""
    copy: int = 0
    """0 for the first message of a business id, 1.. for its resends."""
    after_first: bool = False
    """Send only once the first copy of this id was acknowledged or dead-lettered."""
    conflicting: bool = False
    """A resend whose details differ from the first copy's."""
    poison: bool = False
    """A planted poison record: every consumer is expected to refuse it."""
    group_id: str = ""
    """The ``MessageGroupId`` a FIFO queue is sent (ignored by a standard queue)."""
    deduplication_id: str | None = None
    """The ``MessageDeduplicationId`` a FIFO queue is sent; ``None`` leaves it to the queue's
    content-based deduplication."""
    attributes: tuple[tuple[str, str, str], ...] = ()
    """SQS message attributes to send, each ``(name, data type, value as text)`` (a
    ``Binary`` value base64)."""


def _other_quantity(quantity: int, rng: random.Random) -> int:
    return rng.choice([q for q in range(MIN_QUANTITY, MAX_QUANTITY + 1) if q != quantity])


def _arrival_offsets(count: int, workload: Workload) -> list[int]:
    """Intended send offsets for ``count`` messages in send order."""
    if workload.arrival is Arrival.BURST:
        return [0] * count
    rate = workload.rate_per_s
    r0 = workload.ramp_from_per_s
    if workload.arrival is Arrival.RATE or math.isclose(r0, rate):
        return [round(i / rate * NS_PER_S) for i in range(count)]
    # A ramp: the rate rises linearly from r0 to r1 over the whole schedule,
    # so message i is due when the area under the rate reaches i:
    # r0 t + (r1 - r0) t^2 / (2 D) = i, with D = 2 N / (r0 + r1).
    duration = 2 * count / (r0 + rate)
    slope = (rate - r0) / duration
    return [
        round((-r0 + math.sqrt(r0 * r0 + 2 * slope * i)) / slope * NS_PER_S) for i in range(count)
    ]


_CONFLICTING = 1
_POISON = 2


@dataclass(frozen=True)
class Schedule(Sequence[PlannedMessage]):
    """A workload's planned messages in send order, kept as arrays of ints.

    Each ``PlannedMessage`` is rebuilt when read (its business id from the id
    number, its body from the id and the quantity sent, its FIFO ids from the
    workload's strategies), so a schedule costs a few dozen bytes per message
    however long the run, and pickles small for producer processes.
    """

    workload: Workload
    indexes: array[int]
    """Each message's ``PlannedMessage.index`` (its position before the sort by send time)."""
    offsets_ns: array[int]
    """Each message's intended send time relative to the start of the run (in nanoseconds)."""
    sources: array[int]
    """The generated id's number (1..), or the explicit message's position in the workload."""
    copies: array[int]
    quantities: array[int]
    """The quantity a generated message's body carries (unused for explicit messages)."""
    flags: array[int]
    """``_CONFLICTING`` and ``_POISON`` bits."""
    seed: int = 0
    """The run's seed: what a body's ``{uuid}`` and ``{timestamp}`` and an envelope's ids
    are derived from."""

    def __len__(self) -> int:
        return len(self.indexes)

    @overload
    def __getitem__(self, position: int) -> PlannedMessage: ...

    @overload
    def __getitem__(self, position: slice) -> list[PlannedMessage]: ...

    def __getitem__(self, position: int | slice) -> PlannedMessage | list[PlannedMessage]:
        if isinstance(position, slice):
            return [self._message(p) for p in range(*position.indices(len(self)))]
        if position < 0:
            position += len(self)
        if not 0 <= position < len(self):
            raise IndexError("schedule position out of range")
        return self._message(position)

    def __iter__(self) -> Iterator[PlannedMessage]:
        return map(self._message, range(len(self)))

    def _message(self, position: int) -> PlannedMessage:
        workload = self.workload
        source, copy, flags = self.sources[position], self.copies[position], self.flags[position]
        business_id: str | None
        index = self.indexes[position]
        offset_ns = self.offsets_ns[position]
        attributes: tuple[tuple[str, str, str], ...] = ()
        plain = workload.envelope.kind is EnvelopeKind.NONE and not workload.attributes
        if workload.messages:
            explicit = workload.messages[source]
            business_id, body = _explicit(explicit)
            if not plain:
                values = message_values(business_id or "", 0, copy, index, self.seed, offset_ns)
                body, attributes = envelop(
                    workload, explicit.body, values, seed=self.seed, offset_ns=offset_ns
                )
        else:
            width = max(5, len(str(workload.distinct_ids)))
            business_id = f"{workload.id_prefix}-{source:0{width}d}"
            quantity = self.quantities[position]
            if plain and workload.body is None:
                # What json.dumps({"id": ..., "quantity": ...}, separators=(",", ":")) writes.
                body = f'{{"id":{json.dumps(business_id)},"quantity":{quantity}}}'
            else:
                values = message_values(business_id, quantity, copy, index, self.seed, offset_ns)
                body, attributes = render_message(
                    workload, workload.body, values, seed=self.seed, offset_ns=offset_ns
                )
        group_id, deduplication_id = fifo_ids(business_id, index, workload)
        return PlannedMessage(
            index=index,
            business_id=business_id,
            body=body,
            offset_ns=offset_ns,
            copy=copy,
            after_first=self.waits(position),
            conflicting=bool(flags & _CONFLICTING),
            poison=bool(flags & _POISON),
            group_id=group_id,
            deduplication_id=deduplication_id,
            attributes=attributes,
        )

    def waits(self, position: int) -> bool:
        """Whether the message waits for its id's first copy to settle (``_waits``),
        read from the arrays without building the message."""
        workload = self.workload
        if workload.copy_spacing is not CopySpacing.AFTER_COMPLETION or not self.copies[position]:
            return False
        return (
            not workload.messages
            or _explicit(workload.messages[self.sources[position]])[0] is not None
        )


@dataclass(frozen=True)
class Part(Sequence[PlannedMessage]):
    """Some of a schedule's messages, by their positions in it (what ``split`` gives, and
    what one producer process sends): small to hold and to hand to another process."""

    planned: Sequence[PlannedMessage]
    positions: array[int]

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, index: int) -> PlannedMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[PlannedMessage]: ...

    def __getitem__(self, index: int | slice) -> PlannedMessage | list[PlannedMessage]:
        if isinstance(index, slice):
            return [self.planned[p] for p in self.positions[index]]
        return self.planned[self.positions[index]]

    def __iter__(self) -> Iterator[PlannedMessage]:
        return map(self.planned.__getitem__, self.positions)

    def offsets_ns(self) -> Iterator[int]:
        """Each message's ``offset_ns``, from a schedule's arrays without building it."""
        if isinstance(self.planned, Schedule):
            return map(self.planned.offsets_ns.__getitem__, self.positions)
        return (m.offset_ns for m in self)


def _waits(m: PlannedMessage) -> bool:
    """A resend sent once its id's first copy settled, not on schedule."""
    return m.after_first and m.business_id is not None


def split(planned: Sequence[PlannedMessage]) -> tuple[Part, Part]:
    """The messages sent on schedule, and the resends that wait for their id's first copy
    (in schedule order both); for a ``Schedule`` without building a message."""
    base: Sequence[PlannedMessage] = planned
    positions: Sequence[int] = range(len(planned))
    if isinstance(planned, Part):
        base, positions = planned.planned, planned.positions
    waits = base.waits if isinstance(base, Schedule) else (lambda p: _waits(base[p]))
    on_schedule, waiting = array("q"), array("q")
    for p in positions:
        (waiting if waits(p) else on_schedule).append(p)
    return Part(base, on_schedule), Part(base, waiting)


def _explicit(message: ExplicitMessage) -> tuple[str | None, str]:
    """An explicit message's business id (its body's string ``id``) and its body."""
    raw_id = message.body.get("id")
    return (raw_id if isinstance(raw_id, str) else None), json.dumps(
        message.body, separators=(",", ":")
    )


def plan(workload: Workload, seed: int) -> Schedule:
    """Build the send schedule for a workload.

    The seeded draws come in a fixed order (per id: its quantity, whether it is
    poison, then per resend whether it conflicts and with which quantity; then the
    shuffle of the ids and, for ``shuffled``, of every message): changing that
    order changes every workload already run.
    """
    rng = random.Random(seed)
    # Per message in index order: the id number (or explicit position), the copy,
    # the quantity sent and the flags.
    source, copies_of, quantity, flags = array("q"), array("q"), array("b"), array("B")
    # What an id's copies are spaced from: its number, or an explicit body's id.
    keys: Sequence[object]
    if workload.messages:
        for position, explicit in enumerate(workload.messages):
            for copy in range(explicit.copies):
                source.append(position)
                copies_of.append(copy)
                quantity.append(0)
                flags.append(_POISON if explicit.poison else 0)
        ids = [_explicit(explicit)[0] for explicit in workload.messages]
        keys = [ids[s] for s in source]
    else:
        copies = workload.copies
        drawn_quantity, drawn_flags = array("b"), array("B")
        for _ in range(workload.distinct_ids):
            q = rng.randint(MIN_QUANTITY, MAX_QUANTITY)
            if workload.poison_fraction and rng.random() < workload.poison_fraction:
                q = POISON_QUANTITY
            for copy in range(copies):
                conflicting = (
                    copy > 0
                    and q != POISON_QUANTITY
                    and workload.conflict_fraction > 0
                    and rng.random() < workload.conflict_fraction
                )
                drawn_quantity.append(_other_quantity(q, rng) if conflicting else q)
                drawn_flags.append(
                    (_CONFLICTING if conflicting else 0) | (_POISON if q == POISON_QUANTITY else 0)
                )
        # Shuffling the id numbers draws exactly what shuffling the ids' messages did.
        numbers = list(range(workload.distinct_ids))
        rng.shuffle(numbers)
        drawn = [n * copies + copy for n in numbers for copy in range(copies)]
        if workload.order is Order.SHUFFLED:
            rng.shuffle(drawn)
        for d in drawn:
            number, copy = divmod(d, copies)
            source.append(number + 1)
            copies_of.append(copy)
            quantity.append(drawn_quantity[d])
            flags.append(drawn_flags[d])
        keys = source

    offsets = _arrival_offsets(len(source), workload)
    if workload.copy_spacing is CopySpacing.SPREAD:
        copies = max(workload.copies, max((m.copies for m in workload.messages), default=1))
        step_ns = round(workload.copy_spread_s * NS_PER_S / max(1, copies - 1))
        first_offset: dict[object, int] = {}
        for i, copy in enumerate(copies_of):
            if copy == 0:
                first_offset[keys[i]] = offsets[i]
            else:
                offsets[i] = first_offset.get(keys[i], offsets[i]) + copy * step_ns
    # By send time, then index: a stable sort of the indexes by send time alone.
    order: Sequence[int] = range(len(offsets))
    if any(offsets[i] > offsets[i + 1] for i in range(len(offsets) - 1)):
        order = sorted(order, key=offsets.__getitem__)
    return Schedule(
        workload=workload,
        indexes=array("q", order),
        offsets_ns=array("q", [offsets[i] for i in order]),
        sources=array("q", [source[i] for i in order]),
        copies=array("q", [copies_of[i] for i in order]),
        quantities=array("b", [quantity[i] for i in order]),
        flags=array("B", [flags[i] for i in order]),
        # Kept only where it shapes the bytes sent: schedules equal in every message compare equal.
        seed=seed if _seeded(workload) else 0,
    )


def _seeded(workload: Workload) -> bool:
    """Whether the seed shapes a message's bytes beyond what the arrays hold (a template's
    ``{uuid}`` and ``{timestamp}``, an envelope's ids, attributes' placeholders)."""
    return (
        workload.body is not None
        or bool(workload.attributes)
        or workload.envelope.kind is not EnvelopeKind.NONE
    )


NO_ID_GROUP = "no-id"
"""The group of messages without a business id (explicit bodies with no ``id``)."""


def fifo_ids(business_id: str | None, index: int, workload: Workload) -> tuple[str, str | None]:
    """The FIFO group and deduplication ids the workload's strategies give a message."""
    key = business_id if business_id is not None else NO_ID_GROUP
    if workload.message_group is MessageGroup.FIXED:
        # A stable hash (not Python's salted one): the same id lands in the same group
        # in every run and every variant.
        group = f"group-{zlib.crc32(key.encode()) % workload.message_groups}"
    else:
        group = key
    dedup: str | None
    if workload.deduplication is Deduplication.BUSINESS_ID:
        dedup = key
    elif workload.deduplication is Deduplication.CONTENT:
        dedup = None
    else:
        dedup = f"message-{index}"
    return group, dedup

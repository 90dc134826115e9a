"""Repeated side changes: an item beside the outcomes that two deliveries of one business id
each added to.

Owns the rule (documented in docs/verdict-and-counts.md, ``duplicate_side_writes``). An item
that holds no outcome (stock per SKU, a running count; in the outcome table or in an extra
table, ``[[tables]]``) may be added to by a message's delivery: an update that adds to
what the item held (``ADD``, ``SET p = p + :q``, ``list_append``) rather than replacing
it, which, made again, changes the item again. A delivery that succeeded (its invocation
returned and did not report its record failed) and whose writes added to an item and left
it other than they found it (the item before its first write differs from the item after
its last: stock reserved then released again changed nothing) changed it for its business
id. So did a delivery whose writes, of any form, moved the item's numbers by what another
successful delivery of the id moved them by (``numeric_moves``, clock readings left out: a
stock level read, then put back less the order's units), or made a number another such
delivery moved (the first copy made the level, the next took from it). A second such
delivery of the same id is a duplicate side write: stock reserved twice, a total counted
twice, the side effect the guard on the outcome did not cover (it came before the guard, or
beside it).

Not counted: a write that replaces what an item held without moving a number as another
delivery's did (a lock or lease taken again, a stamp rewritten, an idempotency record
completed leave the item as one delivery would), what a failed delivery half did (taken
over by the delivery that finishes the work, as for an outcome), a repeat of an accepted transaction's
ClientRequestToken (DynamoDB wrote nothing), and a write tied to no one record (an
invocation of several records whose handler never read the one it was on). Items whose
key changes per delivery (a row per delivery) are each changed once and never repeat.

Pure; it holds one small entry per delivery and side item added to or whose numbers moved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from decimal import Decimal, InvalidOperation

from loadtest.model.checker.roles import is_replay
from loadtest.model.checker.shared import record_made_for
from loadtest.model.checker.verdict import OUTCOME_TABLE, RepeatedChange
from loadtest.model.dynamodb.attribute_values import CREATED, item_digest, numeric_moves
from loadtest.model.history.records import (
    InvocationRef,
    Record,
    SideWrite,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)


def key_text(key: TypedItem | None) -> str:
    """A key as the reasons show it: ``sku=widget`` (several: ``pk=a,sk=b``)."""
    parts = []
    for name, value in sorted((key or {}).items()):
        shown = next(iter(value.values())) if isinstance(value, dict) and len(value) == 1 else value
        parts.append(f"{name}={shown}")
    return ",".join(parts)


class _Delivery:
    """One delivery's writes of one side item: the item's digest before the first write
    followed and after the last, whether a write added to it, and the sum of its writes'
    moves of the item's numbers."""

    __slots__ = ("added", "after", "before", "created", "moves")

    def __init__(self, before: str, after: str) -> None:
        self.before = before
        self.after = after
        self.added = False
        self.moves: dict[str, Decimal] = {}
        self.created: set[str] = set()
        """The numbers its writes made (``CREATED``): no amount to compare."""

    def move(self, moves: Mapping[str, str] | None) -> None:
        for name, text in (moves or {}).items():
            if text == CREATED:
                self.created.add(name)
                continue
            try:
                self.moves[name] = self.moves.get(name, Decimal(0)) + Decimal(text)
            except InvalidOperation:
                continue

    def net(self) -> frozenset[tuple[str, Decimal]]:
        """The numbers this delivery's writes moved, and by how much (none: moved nothing)."""
        return frozenset((name, amount) for name, amount in self.moves.items() if amount)


class SideChanges:
    """What each delivery did to each side item, for the business id it was made for."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], dict[tuple[str, str], _Delivery]] = {}
        """By (business id, table, key): per delivery (request id, message id) that added to
        the item or moved its numbers, what it did (``_Delivery``)."""
        self._applied: dict[tuple[str, str], int] = {}
        """(a transaction's token and request, the item's key) -> when the write DynamoDB
        applied ended (``roles.is_replay``)."""

    def _entry(self, item: tuple[str, str, str], delivery: tuple[str, str]) -> _Delivery | None:
        per_delivery = self._seen.get(item)
        return None if per_delivery is None else per_delivery.get(delivery)

    def add(
        self,
        item: tuple[str, str, str],
        delivery: tuple[str, str],
        before: str,
        after: str,
        added: bool,
        moves: Mapping[str, str] | None = None,
    ) -> None:
        """One write of ``item`` (business id, table, key) by a delivery, in the order its
        invocation made them: the item's digests before and after it ("": unknown), whether
        it added to the item and changed it, and what it did to the item's numbers
        (``numeric_moves``). A delivery is followed from its first write that adds or moves a
        number (a lock or an idempotency record no write adds to costs nothing)."""
        entry = self._entry(item, delivery)
        if entry is None:
            if not (added or moves):
                return
            entry = self._seen.setdefault(item, {})[delivery] = _Delivery(before, after)
        entry.after = after
        entry.added = entry.added or added
        entry.move(moves)

    def add_side_writes(self, records: tuple[Record, ...], writes: Iterable[SideWrite]) -> None:
        """An invocation's writes to the extra tables (those of one item only)."""
        for write in writes:
            if write.key is None:
                continue
            record = record_made_for(records, write.record_id)
            if record is None or record.business_id is None:
                continue
            self.add(
                (record.business_id, write.table, key_text(write.key)),
                (write.request_id, record.message_id),
                write.before,
                write.after,
                write.adds and write.changed is not False,
                write.moves,
            )

    def add_write(self, write: WriteRecord, ref: InvocationRef, record: Record | None) -> None:
        """A write of an item of the outcome table that holds no outcome, made for
        ``record`` (None: for no one record)."""
        if (
            record is None
            or record.business_id is None
            or write.outcome is not WriteOutcome.ACCEPTED
        ):
            return
        key = key_text(write.key)
        item = (record.business_id, OUTCOME_TABLE, key)
        delivery = (ref.request_id, record.message_id)
        moves = (
            numeric_moves(write.item_before, write.item_after)
            if write.before_known and write.after_known
            else None
        )
        if not (write.adds or moves) and self._entry(item, delivery) is None:
            return  # nothing to follow: no digest made
        if write.idempotency:
            call = (write.idempotency, key)
            if is_replay(write, self._applied.get(call)):
                return  # DynamoDB answered it as the first and wrote nothing
            self._applied[call] = write.ended_ns
        before = item_digest(write.item_before) if write.before_known else ""
        after = item_digest(write.item_after) if write.after_known else ""
        self.add(item, delivery, before, after, write.adds and _left_changed(before, after), moves)

    def repeated(self, failed: Collection[tuple[str, str]]) -> list[RepeatedChange]:
        """The items changed by more than one delivery of an id that succeeded (``failed``:
        the deliveries that did not, as (request id, message id)), by business id.

        A delivery changed an item for its id when its writes added to it and left it other
        than they found it, when they moved its numbers by what another successful delivery
        of the id moved them by (stock taken again by a put computed from a read), or when
        they made a number another such delivery moved, or moved one another made (the
        first copy made the stock level, the next took from it)."""
        out = []
        for (business_id, table, key), per_delivery in self._seen.items():
            done = [
                (entry, entry.net())
                for delivery, entry in per_delivery.items()
                if delivery not in failed
            ]
            nets = Counter(net for _, net in done)
            moved = Counter(name for _, net in done for name, _ in net)
            made = Counter(name for entry, _ in done for name in entry.created)
            changing = 0
            for entry, net in done:
                names = {name for name, _ in net}
                changing += bool(
                    (entry.added and _left_changed(entry.before, entry.after))
                    or (net and nets[net] > 1)
                    or any(moved[name] > (name in names) for name in entry.created)
                    or any(made[name] > (name in entry.created) for name in names)
                )
            if changing > 1:
                out.append(RepeatedChange(business_id, table, key, changing))
        out.sort(key=lambda r: (r.business_id, r.table, r.key))
        return out

    def __bool__(self) -> bool:
        return bool(self._seen)


def _left_changed(before: str, after: str) -> bool:
    """Whether an item's digests before and after say it changed (unknown: it may have)."""
    return not (before and after and before == after)

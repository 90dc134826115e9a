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
id. A second such delivery of the same id is a duplicate side write: stock reserved twice,
a total counted twice, the side effect the guard on the outcome did not cover (it came
before the guard, or beside it).

Not counted: a write that replaces what an item held (a put, ``SET p = :v``, a delete: a
lock or lease taken again, a stamp rewritten, an idempotency record completed leave the
item as one delivery would), what a failed delivery half did (taken over by the delivery
that finishes the work, as for an outcome), a repeat of an accepted transaction's
ClientRequestToken (DynamoDB wrote nothing), and a write tied to no one record (an
invocation of several records whose handler never read the one it was on). Items whose
key changes per delivery (a row per delivery) are each changed once and never repeat.

Pure; it holds one small entry per delivery and side item added to.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from loadtest.model.checker.roles import is_replay
from loadtest.model.dynamodb.attribute_values import item_digest
from loadtest.model.history.records import (
    InvocationRef,
    Record,
    SideWrite,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)

OUTCOME_TABLE = ""
"""The place of an item of the outcome table (an extra table's is its name)."""
WITNESSES_NAMED = 3
"""Repeated changes the reason names before "and N more"."""


@dataclass(frozen=True, slots=True)
class RepeatedChange:
    """An item beside the outcomes that several successful deliveries of one id added to."""

    business_id: str
    table: str
    """The extra table's name, or ``OUTCOME_TABLE``."""
    key: str
    """The item's key, as text (``sku=widget``)."""
    deliveries: int

    @property
    def text(self) -> str:
        where = "the outcome table" if self.table == OUTCOME_TABLE else f"table {self.table}"
        return f"{self.business_id} added to {self.key} in {where} in {self.deliveries} deliveries"


def key_text(key: TypedItem | None) -> str:
    """A key as the reasons show it: ``sku=widget`` (several: ``pk=a,sk=b``)."""
    parts = []
    for name, value in sorted((key or {}).items()):
        shown = next(iter(value.values())) if isinstance(value, dict) and len(value) == 1 else value
        parts.append(f"{name}={shown}")
    return ",".join(parts)


class SideChanges:
    """What each delivery did to each side item, for the business id it was made for."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], dict[tuple[str, str], list[object]]] = {}
        """By (business id, table, key): per delivery (request id, message id), the item's
        digest before its first write, after its last, and whether a write added to it."""
        self._applied: dict[tuple[str, str], int] = {}
        """(a transaction's token and request, the item's key) -> when the write DynamoDB
        applied ended (``roles.is_replay``)."""

    def add(
        self,
        business_id: str,
        table: str,
        key: str,
        delivery: tuple[str, str],
        before: str,
        after: str,
        added: bool,
    ) -> None:
        """One write of a delivery, in the order its invocation made them: the item's
        digests before and after it ("": unknown), and whether it added to the item and
        changed it. Only the items a delivery added to are kept, from that write on (a
        lock or an idempotency record no write adds to costs nothing)."""
        per_delivery = self._seen.get((business_id, table, key))
        entry = None if per_delivery is None else per_delivery.get(delivery)
        if entry is None:
            if not added:
                return  # a delivery's change counts from its first write that adds
            self._seen.setdefault((business_id, table, key), {})[delivery] = [
                before,
                after,
                added,
            ]
        else:
            entry[1] = after

    def add_side_writes(self, records: tuple[Record, ...], writes: Iterable[SideWrite]) -> None:
        """An invocation's writes to the extra tables (those of one item only)."""
        for write in writes:
            if write.key is None:
                continue
            record = _tied(records, write.record_id)
            if record is None or record.business_id is None:
                continue
            self.add(
                record.business_id,
                write.table,
                key_text(write.key),
                (write.request_id, record.message_id),
                write.before,
                write.after,
                write.adds and write.changed is not False,
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
        if write.idempotency:
            call = (write.idempotency, key)
            if is_replay(write, self._applied.get(call)):
                return  # DynamoDB answered it as the first and wrote nothing
            self._applied[call] = write.ended_ns
        before = item_digest(write.item_before) if write.before_known else ""
        after = item_digest(write.item_after) if write.after_known else ""
        self.add(
            record.business_id,
            OUTCOME_TABLE,
            key,
            (ref.request_id, record.message_id),
            before,
            after,
            write.adds and not (before and after and before == after),
        )

    def repeated(self, failed: Collection[tuple[str, str]]) -> list[RepeatedChange]:
        """The items changed by more than one delivery of an id that succeeded (``failed``:
        the deliveries that did not, as (request id, message id)), by business id."""
        out = []
        for (business_id, table, key), per_delivery in self._seen.items():
            changing = sum(
                1
                for delivery, (before, after, added) in per_delivery.items()
                if delivery not in failed and added and not (before and after and before == after)
            )
            if changing > 1:
                out.append(RepeatedChange(business_id, table, key, changing))
        out.sort(key=lambda r: (r.business_id, r.table, r.key))
        return out

    def __bool__(self) -> bool:
        return bool(self._seen)


def _tied(records: tuple[Record, ...], record_id: str) -> Record | None:
    """The record a side write was made for: the one the handler was on, else the
    invocation's only record."""
    if record_id:
        for record in records:
            if record.message_id == record_id:
                return record
    return records[0] if len(records) == 1 else None


def duplicate_side_writes(repeated: Iterable[RepeatedChange]) -> int:
    """Deliveries beyond the first that changed a side item again, over all items."""
    return sum(r.deliveries - 1 for r in repeated)


def repeated_reason(repeated: list[RepeatedChange]) -> str:
    """The reason a run with repeated side changes fails, naming its first witnesses."""
    total = duplicate_side_writes(repeated)
    named = "; ".join(r.text for r in repeated[:WITNESSES_NAMED])
    more = len(repeated) - WITNESSES_NAMED
    tail = f" (and {more} more)" if more > 0 else ""
    return (
        f"{total} duplicate side write(s): a delivery added to an item beside its outcome "
        f"that another delivery for the same business id had added to ({named}{tail})"
    )

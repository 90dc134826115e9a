"""Outcomes that are aggregates: items changed on behalf of several messages (a running total
per customer, stock per SKU), judged per (business id, item).

Owns the shared model's rules: which record a write was made for (``tied_record``: the
record the handler was on, ``WriteRecord.record_id``, or the invocation's only record), the
evidence that outcomes are aggregates (``SharedEvidence``: which items writes changed on
behalf of several business ids), and the roles of one business id's accepted writes of one
shared item (``judge_shared``). Where outcomes live is decided by ``checking``; carrying the
rules out over the writes is ``passes``' and ``parts``'.

An aggregate holds no message's details verbatim (a total is a sum), so a message's
outcome is an accepted write that *changed* the item for it: a second delivery's write
that changed the item again for the same business id is a duplicate effect (an increment
applied twice), while a write that changed nothing (a set ``ADD`` of a member already there)
is a no-op, and two different business ids changing one item are two outcomes.

Where the item lists the messages it holds (an ``orders`` set or list: ``lists_id``), its
images also say whose changes it still holds. A write for another business id that leaves
out an id the item listed overwrote that id's change (a lost update: two read-modify-writes
racing), so the id's outcome is gone (``overwritten``) unless a later write lists it again;
and a later delivery of the id that finds it no longer listed stores its outcome again
rather than applying it twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from loadtest.model.checker.details import lists_id, varies_per_delivery
from loadtest.model.checker.roles import Judged, Write, replayed_writes
from loadtest.model.checker.verdict import Role
from loadtest.model.dynamodb.updates import same_item
from loadtest.model.history.log import InvocationRef, Record, TypedItem, WriteOutcome, WriteRecord


def tied_record(write: WriteRecord, ref: InvocationRef) -> Record | None:
    """The record a write was made for: the one the handler was on when it made the call
    (``record_id``), else its invocation's only record; None when neither tells."""
    return record_made_for(ref.records, write.record_id)


def record_made_for(records: Sequence[Record], record_id: str) -> Record | None:
    """Of an invocation's ``records``, the one a call was made for: the one the handler was
    on (``record_id``), else the only one; None when neither tells."""
    if record_id:
        for record in records:
            if record.message_id == record_id:
                return record
    return records[0] if len(records) == 1 else None


def changed(write: WriteRecord) -> bool:
    """Whether an accepted write changed its item (unknown images count as a change: a
    write whose effect the observer could not see is assumed to have had one)."""
    return not (
        write.before_known and write.after_known and same_item(write.item_before, write.item_after)
    )


_PER_DELIVERY = ("{messageId}", "{requestId}", "{uuid}", "{hex}")
"""Parts of a key template that name one delivery (``details.key_template``)."""


@dataclass
class _Item:
    template: str
    """Its key's template (``details.key_template``)."""
    fixed: bool
    """Its key names neither a business id nor anything that varies per delivery."""
    ids: set[str] = field(default_factory=set)
    """Business ids accepted writes tied to a record changed it for (at most two kept)."""
    seen: set[str] = field(default_factory=set)
    """Business ids it may have been changed for: ``ids``, and, for a fixed key, an untied
    write's invocation's (at most two kept)."""
    untied: int = 0
    """Accepted writes of it no record could be tied to."""


@dataclass
class SharedEvidence:
    """What the writes of items not under the outcome key say of aggregates."""

    items: dict[str, _Item] = field(default_factory=dict)
    """Per item (its canonical key) that may be an aggregate, who changed it: items keyed
    by a business id or by a part of one delivery are left out."""

    def note(self, canon: str, template: str, write: WriteRecord, ref: InvocationRef) -> None:
        if write.outcome is not WriteOutcome.ACCEPTED or write.deletes:
            return
        item = self.items.get(canon)
        if item is None:
            if "{id}" in template or any(tag in template for tag in _PER_DELIVERY):
                # One message's item, or one delivery's: never an aggregate, and not
                # kept (a run's audit rows would make this grow with its writes).
                return
            fixed = not varies_per_delivery(template)
            item = self.items[canon] = _Item(template, fixed)
        record = tied_record(write, ref)
        if record is None or record.business_id is None:
            item.untied += 1
            # Only a fixed key can be an aggregate's by guess: an item keyed per delivery
            # or per id written in a batch is one record's, whichever.
            if item.fixed and len(item.seen) < 2:
                item.seen.update(r.business_id for r in ref.records if r.business_id)
        elif len(item.seen) < 2 and changed(write):
            item.ids.add(record.business_id)
            item.seen.add(record.business_id)

    def aggregated(self) -> bool:
        """Whether some item may have been changed on behalf of two business ids or more."""
        return any(len(i.seen) > 1 for i in self.items.values())

    def shared_items(self) -> frozenset[str]:
        """The aggregate items: changed for several business ids, or keyed by a fixed key."""
        return frozenset(
            k for k, i in self.items.items() if len(i.seen) > 1 or (i.fixed and i.seen)
        )

    def templates(self, items: frozenset[str]) -> set[str]:
        return {self.items[k].template for k in items if k in self.items}

    def untied(self, items: frozenset[str]) -> int:
        """Accepted writes of ``items`` that no record could be tied to."""
        return sum(self.items[k].untied for k in items if k in self.items)


def unit_of(w: Write) -> tuple[str, str]:
    """The delivery a write belongs to: its invocation and the record it was made for."""
    record = tied_record(w.write, w.invocation)
    return (w.invocation.request_id, record.message_id if record is not None else "")


@dataclass
class SharedJudged:
    """What one business id's accepted writes of one aggregate item did."""

    deliveries: set[str] = field(default_factory=set)
    """The invocations whose writes changed the item for it."""
    listed: bool = False
    """Whether a changing write for it left the item listing it (``lists_id``)."""


def judge_shared(writes: Sequence[Write], judged: Judged) -> SharedJudged:
    """Roles for one business id's accepted writes of one aggregate item.

    The first delivery whose write changed the item stored the outcome (its later
    writes of the item are steps); every other delivery's changing write is a
    duplicate effect, and conflicting (it changed the stored aggregate again), unless
    the item listed the id after an earlier change answered before this write started
    and this write's old image no longer lists it: that change had been overwritten, and
    this delivery stores the outcome again (a first write). A write that changed nothing
    is a no-op.
    """
    replays = replayed_writes(list(writes))
    units: list[tuple[str, str]] = []
    found = SharedJudged()
    listed_ns: int | None = None
    """When the first write that left the item listing the id was answered."""
    ordered = sorted(writes, key=lambda w: (w.write.ended_ns, w.write.started_ns))
    for position, w in enumerate(ordered, start=1):
        w.order = position
        if id(w) in replays:
            w.role = Role.NOOP
            judged.noop += 1
            continue
        if w.write.deletes:
            w.role = Role.DELETE
            continue
        if not changed(w.write):
            w.role = Role.NOOP
            judged.noop += 1
            continue
        unit = unit_of(w)
        mine = [r.message_id for r in w.invocation.records if r.business_id == w.business_id]
        w.copy_index = mine.index(unit[1]) if unit[1] in mine else 0
        # Only a write that started after the listing write was answered can have
        # followed it in the backend: overlapping writes' clocks do not order them.
        taken = (
            listed_ns is not None
            and w.write.started_ns > listed_ns
            and w.write.before_known
            and not lists_id(w.write.item_before, str(w.business_id))
        )
        if unit in units:
            w.role = Role.STEP
        elif not units or taken:
            w.role = Role.FIRST
            units.append(unit)
        else:
            w.role = Role.AGAIN
            units.append(unit)
            judged.duplicate += 1
            judged.conflicting += 1
        if w.write.after_known and lists_id(w.write.item_after, str(w.business_id)):
            found.listed = True
            listed_ns = w.write.ended_ns if listed_ns is None else min(listed_ns, w.write.ended_ns)
    found.deliveries = {request_id for request_id, _ in units}
    return found


def overwritten(item: TypedItem | None, business_id: str) -> bool:
    """Whether an aggregate item left at the end no longer lists ``business_id``, which a
    write for it had left it listing: another id's write overwrote its change."""
    return item is not None and not lists_id(item, business_id)

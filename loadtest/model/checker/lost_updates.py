"""Lost updates: a write computed from a stale read of an item, replacing what another
message had changed there since.

Owns finding them in a run's history, whatever the item is (an aggregate a running
total per customer keeps, a counter beside the orders): a delivery read an item, another
message's delivery changed it, then the first delivery's write replaced the item's
values with its own, computed from what it had read::

    order a                         order b (same customer)
    GetItem customer -> total 0
                                    GetItem customer -> total 0
    PutItem customer total 2
                                    PutItem customer total 3   (before: total 2)
                                    ─► a's change is gone: a lost update

The evidence is the write's own old image (the backend's order, not clocks): it differs
from what its delivery read of the item, and the writes that lead from the read's image
to the old image are found by their images, back from the old image. A write is
replacing only when what it stores comes from its request alone (``WriteRecord.replaces``:
a put, ``SET p = :v``); an ``ADD``, ``SET p = p + :q``, or a write conditioned on what was
read (rejected when it changed) loses nothing. A message whose change was replaced lost
it, unless what the stale write was computed from held a change of it already (a copy of
the order changed the item before the read, and again after: only the repeat was
replaced) or its deliveries changed the item again after. A change of a delivery of the
same message is not counted here: writing an order again is a duplicate.

Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from loadtest.model.checker.shared import tied_record
from loadtest.model.dynamodb.updates import same_item
from loadtest.model.history.log import (
    Invocation,
    InvocationLog,
    InvocationRef,
    ReadRecord,
    WriteOutcome,
    WriteRecord,
    key_string,
)


@dataclass(frozen=True)
class LostUpdate:
    """One message's change to an item, replaced by another message's stale write."""

    item: str
    """The item (``key_string`` of its key)."""
    lost: str
    """The business id whose change was replaced."""
    by: str
    """The business id whose write replaced it."""


@dataclass
class _Change:
    write: WriteRecord
    request_id: str
    business_id: str | None


@dataclass
class _Stale:
    change: _Change
    read: ReadRecord


def lost_updates(invocations: Iterable[Invocation]) -> list[LostUpdate]:
    """Every message's change a stale write replaced, in the order the writes were made
    (one per item and message). Reads ``invocations`` twice: for the stale writes, then for
    the other writes of their items only."""
    stale: list[_Stale] = []
    # A log decodes only the invocations that read and wrote (most read nothing).
    reading = (
        invocations.reading_and_writing() if isinstance(invocations, InvocationLog) else invocations
    )
    for inv in reading:
        if not (inv.writes and inv.reads):
            continue
        ref = InvocationRef.of(inv)
        for write in inv.writes:
            if write.outcome is not WriteOutcome.ACCEPTED or not write.replaces:
                continue
            read = _read_before(inv.reads, write)
            if (
                read is not None
                and write.before_known
                and not same_item(read.found, write.item_before)
            ):
                record = tied_record(write, ref)
                change = _Change(write, inv.request_id, record.business_id if record else None)
                stale.append(_Stale(change, read))
    if not stale:
        return []
    items = {key_string(one.change.write.key) for one in stale}
    changes: dict[str, list[_Change]] = defaultdict(list)
    for inv in invocations:
        ref = InvocationRef.of(inv)
        for write in inv.writes:
            item = key_string(write.key)
            if item not in items or write.outcome is not WriteOutcome.ACCEPTED:
                continue
            record = tied_record(write, ref)
            changes[item].append(
                _Change(write, inv.request_id, record.business_id if record else None)
            )
    found: list[LostUpdate] = []
    for one in stale:
        item = key_string(one.change.write.key)
        for change in _between(one, changes[item]):
            lost, by = change.business_id, one.change.business_id
            if lost is None or by is None or lost == by:
                continue
            if _seen_by(one.read, lost, changes[item]) or _changed_again(
                lost, one.change.write, changes[item]
            ):
                continue
            update = LostUpdate(item, lost, by)
            if update not in found:
                found.append(update)
    return found


def _read_before(reads: Iterable[ReadRecord], write: WriteRecord) -> ReadRecord | None:
    """The delivery's last read of the write's item before the write."""
    key = key_string(write.key)
    last: ReadRecord | None = None
    for read in reads:
        if read.ended_ns <= write.started_ns and key_string(read.key) == key:
            last = read
    return last


def _between(one: _Stale, changes: list[_Change]) -> list[_Change]:
    """The writes of other deliveries that led from what ``one`` read to the item it wrote
    over, found back from its old image by their images, one write at each step; [] when
    a step has no such write, or several (writes that overlapped, each leaving the same
    image), or an image the observer could not see: nothing is claimed."""
    state = one.change.write.item_before
    used: set[int] = set()
    chain: list[_Change] = []
    while not same_item(state, one.read.found):
        earlier = [
            c
            for c in changes
            if id(c) not in used
            and c.write is not one.change.write
            and c.write.after_known
            and same_item(c.write.item_after, state)
        ]
        if len(earlier) != 1:
            return []
        [change] = earlier
        if change.request_id == one.change.request_id or not change.write.before_known:
            return []  # its own write, or an image not seen: nothing is claimed
        used.add(id(change))
        chain.append(change)
        state = change.write.item_before
    return chain


def _seen_by(read: ReadRecord, business_id: str, changes: list[_Change]) -> bool:
    """Whether what ``read`` answered already held a change of ``business_id``: a write of
    it is among those that lead to the read's image, back from it by their images (every
    write that may have, where several left one image). Then the stale write was computed
    from that change, and only a repeat of it (a copy of the order) was replaced."""
    states = [read.found]
    used: set[int] = set()
    while states:
        state = states.pop()
        if state is None:
            continue
        for c in changes:
            if id(c) in used or not c.write.after_known or not same_item(c.write.item_after, state):
                continue
            if c.business_id == business_id:
                return True
            used.add(id(c))
            if c.write.before_known:
                states.append(c.write.item_before)
    return False


def _changed_again(business_id: str, after: WriteRecord, changes: list[_Change]) -> bool:
    """Whether a delivery of ``business_id`` changed the item again after ``after``: a write
    of it is among those that lead on from ``after``'s image, by their images (every write
    that may have, where several found one image)."""
    states = [after.item_after] if after.after_known else []
    used: set[int] = set()
    while states:
        state = states.pop()
        for c in changes:
            if id(c) in used or not c.write.before_known:
                continue
            if not same_item(c.write.item_before, state):
                continue
            if c.business_id == business_id and not (
                c.write.after_known and same_item(c.write.item_before, c.write.item_after)
            ):
                return True
            used.add(id(c))
            if c.write.after_known:
                states.append(c.write.item_after)
    return False


def lost_updates_reason(updates: list[LostUpdate]) -> str:
    """The reason a run with lost updates gives, its first one as the witness."""
    first = updates[0]
    return (
        f"{len(updates)} lost update(s): a write computed from an earlier read of an item "
        "replaced what another message had changed there since (e.g. "
        f"{first.lost}'s change to {first.item}, replaced by {first.by}'s write)"
    )

"""The checker: from a run's history and end state to the counts and verdict.

Pure. The vocabulary is DESIGN.md's: every count is per variant run, and a
write is attributed to a business id through the delivery that made it,
whatever key the consumer chose for the item.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from loadtest.history import (
    EndState,
    History,
    Invocation,
    InvocationOutcome,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)

STORING_OPERATIONS = frozenset(
    {
        "PutItem",
        "UpdateItem",
        "BatchWriteItem.Put",
        "TransactWriteItems.Put",
        "TransactWriteItems.Update",
    }
)


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"


@dataclass(frozen=True)
class Counts:
    """The counts of one variant run (DESIGN.md, "Counts")."""

    messages_sent: int
    distinct_ids: int
    deliveries: int
    redeliveries: int
    writes_attempted: int
    writes_accepted: int
    writes_rejected: int
    writes_errored: int
    duplicate_writes: int
    conflicting_writes: int
    lost_outcomes: int
    acked: int
    dead_lettered: int
    handler_errors: int
    unsettled: int
    """Messages neither acknowledged nor dead-lettered when the run ended."""
    send_failures: int
    unattributed_writes: int
    """Writes no delivery of the invocation could be tied to (batches only)."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class AttributedWrite:
    business_id: str | None
    invocation: Invocation
    message_id: str | None
    write: WriteRecord


@dataclass(frozen=True)
class Check:
    counts: Counts
    verdict: Verdict
    reasons: tuple[str, ...]
    """Why the default verdict failed, one line each (empty on pass)."""
    writes: tuple[AttributedWrite, ...]


def _string_values(item: TypedItem | None) -> set[str]:
    if not item:
        return set()
    return {v["S"] for v in item.values() if isinstance(v, dict) and isinstance(v.get("S"), str)}


def _key_id(write: WriteRecord) -> str | None:
    value = write.key.get("id")
    if isinstance(value, dict) and isinstance(value.get("S"), str):
        return str(value["S"])
    return None


def attribute(invocation: Invocation, write: WriteRecord) -> tuple[str | None, str | None]:
    """Tie a write to one record of its invocation: (business_id, message_id).

    By the written key first, then by a string attribute of the item equal to
    a record's business id, then — for a single-record invocation — to that
    record. A write in a batch that matches no record stays unattributed.
    """
    records = [r for r in invocation.records if r.business_id is not None]
    key_id = _key_id(write)
    for record in records:
        if record.business_id == key_id:
            return record.business_id, record.message_id
    values = _string_values(write.item_after) | _string_values(write.item_before)
    for record in records:
        if record.business_id in values:
            return record.business_id, record.message_id
    if len(invocation.records) == 1:
        only = invocation.records[0]
        return only.business_id, only.message_id
    return None, None


def write_unit(aw: AttributedWrite) -> tuple[str, int, int]:
    """What counts as one write of an outcome.

    The parts of one TransactWriteItems (an order and its outbox entry, say)
    land together or not at all: one decision, counted once. Every other
    write is its own unit.
    """
    if aw.write.operation.startswith("TransactWriteItems."):
        return (aw.invocation.request_id, aw.write.started_ns, -1)
    return (aw.invocation.request_id, aw.write.started_ns, id(aw))


def is_storing(write: WriteRecord) -> bool:
    """An accepted write that stored an outcome (not a rejection, error or delete)."""
    return write.outcome is WriteOutcome.ACCEPTED and write.operation in STORING_OPERATIONS


def outcome_writes(writes: Iterable[AttributedWrite]) -> dict[str, list[AttributedWrite]]:
    """Per business id, one accepted storing write per write unit, in time order.

    ``len(result[id]) - 1`` is that id's duplicate writes.
    """
    units: dict[str, dict[tuple[str, int, int], AttributedWrite]] = defaultdict(dict)
    for aw in sorted(writes, key=lambda aw: aw.write.ended_ns):
        if aw.business_id is not None and is_storing(aw.write):
            units[aw.business_id].setdefault(write_unit(aw), aw)
    return {business_id: list(by_unit.values()) for business_id, by_unit in units.items()}


def check(history: History, end: EndState) -> Check:
    sent_ok = [m for m in history.sent if m.message_id is not None]
    business_of = {m.message_id: m.business_id for m in sent_ok}
    acked_ids = {a.message_id for a in history.acks}
    dead_ids = {d.message_id for d in history.dead_letters}

    attributed: list[AttributedWrite] = []
    for invocation in history.invocations:
        for write in invocation.writes:
            business_id, message_id = attribute(invocation, write)
            attributed.append(AttributedWrite(business_id, invocation, message_id, write))

    accepted_by_id: dict[str, list[AttributedWrite]] = defaultdict(list)
    conflicting = 0
    for aw in attributed:
        w = aw.write
        if w.outcome is not WriteOutcome.ACCEPTED or w.operation not in STORING_OPERATIONS:
            continue
        if aw.business_id is not None:
            accepted_by_id[aw.business_id].append(aw)
        if (
            w.before_known
            and w.item_before is not None
            and w.item_after is not None
            and w.item_before != w.item_after
        ):
            conflicting += 1
    duplicate = sum(len(units) - 1 for units in outcome_writes(attributed).values())

    acked_business = {business_of.get(mid) for mid in acked_ids} - {None}
    lost = 0
    for business_id in acked_business:
        writes = accepted_by_id.get(str(business_id), [])
        stored_keys = {_key_id(aw.write) for aw in writes} - {None}
        if not writes or not any(k in end.table_items for k in stored_keys):
            lost += 1

    sent_ids = {m.message_id for m in sent_ok}
    unsettled = len(sent_ids - acked_ids - dead_ids)
    all_writes = [aw.write for aw in attributed]
    records = [r for inv in history.invocations for r in inv.records]
    counts = Counts(
        messages_sent=len(sent_ok),
        distinct_ids=len({m.business_id for m in sent_ok if m.business_id is not None}),
        deliveries=len(records),
        redeliveries=sum(1 for r in records if r.receive_count > 1),
        writes_attempted=len(all_writes),
        writes_accepted=sum(1 for w in all_writes if w.outcome is WriteOutcome.ACCEPTED),
        writes_rejected=sum(1 for w in all_writes if w.outcome is WriteOutcome.REJECTED),
        writes_errored=sum(1 for w in all_writes if w.outcome is WriteOutcome.ERROR),
        duplicate_writes=duplicate,
        conflicting_writes=conflicting,
        lost_outcomes=lost,
        acked=len(acked_ids & sent_ids),
        dead_lettered=len(dead_ids & sent_ids),
        handler_errors=sum(
            1 for i in history.invocations if i.outcome is not InvocationOutcome.SUCCESS
        ),
        unsettled=unsettled,
        send_failures=sum(1 for m in history.sent if m.message_id is None),
        unattributed_writes=sum(1 for aw in attributed if aw.business_id is None),
    )
    reasons = default_reasons(counts, timed_out=history.timed_out)
    return Check(
        counts=counts,
        verdict=Verdict.FAIL if reasons else Verdict.PASS,
        reasons=tuple(reasons),
        writes=tuple(attributed),
    )


def default_reasons(counts: Counts, *, timed_out: bool) -> list[str]:
    """The default verdict's failures: DESIGN.md's rule, one sentence each."""
    reasons = []
    if counts.duplicate_writes:
        reasons.append(
            f"{counts.duplicate_writes} duplicate write(s): an outcome was written again"
        )
    if counts.conflicting_writes:
        reasons.append(
            f"{counts.conflicting_writes} conflicting write(s): stored details were silently replaced"
        )
    if counts.lost_outcomes:
        reasons.append(f"{counts.lost_outcomes} lost outcome(s): acknowledged but not stored")
    if counts.unsettled:
        why = " (the run's deadline passed)" if timed_out else ""
        reasons.append(f"{counts.unsettled} message(s) neither acknowledged nor dead-lettered{why}")
    if counts.send_failures:
        reasons.append(f"{counts.send_failures} message(s) could not be sent")
    return reasons


def duplicate_evidence(result: Check, limit: int = 20) -> list[dict[str, Any]]:
    """The ids written more than once, with the deliveries and items that did it."""
    by_id: dict[str, list[AttributedWrite]] = defaultdict(list)
    for aw in result.writes:
        if aw.business_id is not None:
            by_id[aw.business_id].append(aw)
    evidence = []
    for business_id in sorted(by_id):
        writes = by_id[business_id]
        accepted = [
            aw
            for aw in writes
            if aw.write.outcome is WriteOutcome.ACCEPTED
            and aw.write.operation in STORING_OPERATIONS
        ]
        if len({write_unit(aw) for aw in accepted}) < 2:
            continue
        invocations = {aw.invocation.request_id: aw for aw in writes}
        reads: list[dict[str, Any]] = [
            {
                "request_id": request_id,
                "environment": aw.invocation.environment,
                "message_id": aw.message_id,
                "found": read.found,
                "started_ns": read.started_ns,
                "ended_ns": read.ended_ns,
            }
            for request_id, aw in invocations.items()
            for read in aw.invocation.reads
            if read.key.get("id") == {"S": business_id}
        ]
        evidence.append(
            {
                "business_id": business_id,
                "accepted_writes": len({write_unit(aw) for aw in accepted}),
                "reads": sorted(reads, key=lambda r: int(r["started_ns"])),
                "writes": [
                    {
                        "request_id": aw.invocation.request_id,
                        "environment": aw.invocation.environment,
                        "message_id": aw.message_id,
                        "operation": aw.write.operation,
                        "condition": aw.write.condition,
                        "outcome": aw.write.outcome.value,
                        "item_before": aw.write.item_before,
                        "item_after": aw.write.item_after,
                        "started_ns": aw.write.started_ns,
                        "ended_ns": aw.write.ended_ns,
                    }
                    for aw in sorted(writes, key=lambda aw: aw.write.started_ns)
                ],
            }
        )
        if len(evidence) >= limit:
            break
    return evidence

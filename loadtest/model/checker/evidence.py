"""The evidence of duplicate writes: which deliveries raced, and the item before and after.

Owns the smallest witness of each duplicated outcome that a report shows:
the reads and writes of the outcome item by the deliveries that stored it
more than once, in the backend's order. Reads only a ``Check``'s decisions;
it counts and judges nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from loadtest.model.checker.verdict import Check, Decision, Role

EVIDENCE_LIMIT = 20
"""Duplicated outcomes whose evidence is read (the first, by business id)."""


def duplicate_evidence(result: Check, limit: int = EVIDENCE_LIMIT) -> list[dict[str, Any]]:
    """The outcomes written more than once, with the reads and writes that did it, in order:
    the first ``limit`` by business id. Two passes over the decisions (they are kept as
    frames), holding only the witnesses' own decisions."""
    duplicated = {
        d.business_id
        for d in result.decisions
        if d.role is Role.AGAIN and d.business_id is not None
    }
    return evidence_of(result.decisions, sorted(duplicated)[:limit])


def evidence_of(decisions: Iterable[Decision], business_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The evidence of each of ``business_ids`` (outcomes written more than once), in that
    order, from the decisions that wrote them (any others are passed over)."""
    wanted = set(business_ids)
    by_id: dict[str, list[Decision]] = defaultdict(list)
    for d in decisions:
        if d.business_id in wanted and d.role is not Role.SIDE:
            by_id[d.business_id].append(d)
    return [_evidence(business_id, by_id[business_id]) for business_id in business_ids]


def _evidence(business_id: str, decisions: list[Decision]) -> dict[str, Any]:
    invocations = {d.invocation.request_id: d for d in decisions}
    reads: list[dict[str, Any]] = [
        {
            "request_id": request_id,
            "environment": d.invocation.environment,
            "message_id": d.message_id,
            "found": read.found,
            "started_ns": read.started_ns,
            "ended_ns": read.ended_ns,
        }
        for request_id, d in invocations.items()
        for read in d.invocation.reads
        if read.key == decisions[0].write.key
    ]
    ordered = sorted(decisions, key=lambda d: (d.order == 0, d.order, d.write.started_ns))
    return {
        "business_id": business_id,
        "accepted_writes": sum(1 for d in decisions if d.role in (Role.FIRST, Role.AGAIN)),
        "reads": sorted(reads, key=lambda r: int(r["started_ns"])),
        "writes": [
            {
                "request_id": d.invocation.request_id,
                "environment": d.invocation.environment,
                "message_id": d.message_id,
                "operation": d.write.operation,
                "condition": d.write.condition,
                "outcome": d.write.outcome.value,
                "role": d.role.value,
                "item_before": d.write.item_before,
                "item_after": d.write.item_after,
                "started_ns": d.write.started_ns,
                "ended_ns": d.write.ended_ns,
            }
            for d in ordered
        ],
    }

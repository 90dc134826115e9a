"""The evidence of duplicate writes: which deliveries raced, and the item before and after.

Owns the smallest witness of each duplicated outcome that a report shows:
the reads and writes of the outcome item by the deliveries that stored it
more than once, in the backend's order. Reads only a ``Check``'s decisions;
it counts and judges nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from loadtest.model.checker.verdict import Check, Decision, Role


def duplicate_evidence(result: Check, limit: int = 20) -> list[dict[str, Any]]:
    """The outcomes written more than once, with the reads and writes that did it, in order."""
    by_id: dict[str, list[Decision]] = defaultdict(list)
    for d in result.decisions:
        if d.business_id is not None and d.role is not Role.SIDE:
            by_id[d.business_id].append(d)
    evidence = []
    for business_id in sorted(by_id):
        decisions = by_id[business_id]
        if not any(d.role is Role.AGAIN for d in decisions):
            continue
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
        evidence.append(
            {
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
        )
        if len(evidence) >= limit:
            break
    return evidence

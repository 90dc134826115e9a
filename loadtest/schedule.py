"""The key schedule: the seeded list of messages a scenario sends.

Pure and deterministic: the same scenario and seed give the same bodies, ids
and order, so every variant of a comparison gets the same workload.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from loadtest.scenario import Order, Workload

MIN_QUANTITY = 1
MAX_QUANTITY = 10


@dataclass(frozen=True)
class PlannedMessage:
    index: int
    business_id: str | None
    body: str
    offset_ns: int
    """Intended send time relative to the start of the run (0 for a burst)."""


def plan(workload: Workload, seed: int) -> tuple[PlannedMessage, ...]:
    """Build the send schedule for a workload."""
    rng = random.Random(seed)
    bodies: list[list[str]] = []  # one group of copies per business id
    ids: list[str | None] = []
    if workload.messages:
        for explicit in workload.messages:
            body = json.dumps(explicit.body, separators=(",", ":"))
            raw_id = explicit.body.get("id")
            bodies.append([body] * explicit.copies)
            ids.append(raw_id if isinstance(raw_id, str) else None)
        order = [(g, c) for g, group in enumerate(bodies) for c in range(len(group))]
    else:
        width = max(5, len(str(workload.distinct_ids)))
        for number in range(1, workload.distinct_ids + 1):
            business_id = f"{workload.id_prefix}-{number:0{width}d}"
            quantity = rng.randint(MIN_QUANTITY, MAX_QUANTITY)
            body = json.dumps({"id": business_id, "quantity": quantity}, separators=(",", ":"))
            bodies.append([body] * workload.copies)
            ids.append(business_id)
        groups = list(range(len(bodies)))
        rng.shuffle(groups)
        order = [(g, c) for g in groups for c in range(workload.copies)]
        if workload.order is Order.SHUFFLED:
            rng.shuffle(order)
    return tuple(
        PlannedMessage(index=i, business_id=ids[g], body=bodies[g][c], offset_ns=0)
        for i, (g, c) in enumerate(order)
    )

"""The send schedule as ``loadtest.model.workload.schedule.plan`` built it before it kept its
messages as arrays: a tuple of every ``PlannedMessage``. The test oracle the compact
schedule is compared with (same bodies, ids, order, offsets and FIFO ids)."""

from __future__ import annotations

import json
import math
import random
import zlib
from dataclasses import replace

from loadtest.model.scenario.loading import (
    Arrival,
    CopySpacing,
    Deduplication,
    MessageGroup,
    Order,
    Workload,
)
from loadtest.model.workload.schedule import (
    MAX_QUANTITY,
    MIN_QUANTITY,
    NO_ID_GROUP,
    NS_PER_S,
    POISON_QUANTITY,
    PlannedMessage,
)


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


def oracle_plan(workload: Workload, seed: int) -> tuple[PlannedMessage, ...]:
    """The old algorithm: every message built up front, then sorted."""
    rng = random.Random(seed)
    # (business id, body, copy number, conflicting, poison) per message, in send order.
    entries: list[tuple[str | None, str, int, bool, bool]] = []
    if workload.messages:
        for explicit in workload.messages:
            body = json.dumps(explicit.body, separators=(",", ":"))
            raw_id = explicit.body.get("id")
            business_id = raw_id if isinstance(raw_id, str) else None
            entries.extend(
                (business_id, body, copy, False, explicit.poison) for copy in range(explicit.copies)
            )
    else:
        width = max(5, len(str(workload.distinct_ids)))
        groups: list[list[tuple[str | None, str, int, bool, bool]]] = []
        for number in range(1, workload.distinct_ids + 1):
            business_id = f"{workload.id_prefix}-{number:0{width}d}"
            quantity = rng.randint(MIN_QUANTITY, MAX_QUANTITY)
            if workload.poison_fraction and rng.random() < workload.poison_fraction:
                quantity = POISON_QUANTITY
            group: list[tuple[str | None, str, int, bool, bool]] = []
            for copy in range(workload.copies):
                conflicting = (
                    copy > 0
                    and quantity != POISON_QUANTITY
                    and workload.conflict_fraction > 0
                    and rng.random() < workload.conflict_fraction
                )
                sent_quantity = _other_quantity(quantity, rng) if conflicting else quantity
                body = json.dumps(
                    {"id": business_id, "quantity": sent_quantity}, separators=(",", ":")
                )
                group.append((business_id, body, copy, conflicting, quantity == POISON_QUANTITY))
            groups.append(group)
        rng.shuffle(groups)
        entries = [entry for group in groups for entry in group]
        if workload.order is Order.SHUFFLED:
            rng.shuffle(entries)

    offsets = _arrival_offsets(len(entries), workload)
    if workload.copy_spacing is CopySpacing.SPREAD:
        copies = max(workload.copies, max((m.copies for m in workload.messages), default=1))
        step_ns = round(workload.copy_spread_s * NS_PER_S / max(1, copies - 1))
        first_offset: dict[str | None, int] = {}
        for i, (business_id, _, copy, _, _) in enumerate(entries):
            if copy == 0:
                first_offset[business_id] = offsets[i]
            else:
                offsets[i] = first_offset.get(business_id, offsets[i]) + copy * step_ns
    after_first = workload.copy_spacing is CopySpacing.AFTER_COMPLETION
    planned = [
        PlannedMessage(
            index=i,
            business_id=business_id,
            body=body,
            offset_ns=offsets[i],
            copy=copy,
            after_first=after_first and copy > 0 and business_id is not None,
            conflicting=conflicting,
            poison=poison,
        )
        for i, (business_id, body, copy, conflicting, poison) in enumerate(entries)
    ]
    planned = [fifo_ids(m, workload) for m in planned]
    return tuple(sorted(planned, key=lambda m: (m.offset_ns, m.index)))


def fifo_ids(m: PlannedMessage, workload: Workload) -> PlannedMessage:
    """``m`` with the FIFO group and deduplication ids the workload's strategies give it."""
    key = m.business_id if m.business_id is not None else NO_ID_GROUP
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
        dedup = f"message-{m.index}"
    return replace(m, group_id=group, deduplication_id=dedup)

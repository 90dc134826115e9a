"""Race exposure: which business ids had two deliveries processed at the same time.

Owns the one measure of whether a run *could* have shown a race between
deliveries: per business id, the handler executions (an invocation's
``started_ns`` to ``ended_ns``) that carried a record of it, and which of
those executions overlapped in time. A run in which no two deliveries of any
id overlapped (a concurrency of 1, a serial endpoint, resends spread too far
apart, a backlog that lined everything up, copies sharing one batch) could
not have shown a read-then-write race, however its counts came out.

Two records of one id in the same invocation ran one after another in one
handler call: they are one execution here, never a pair. Intervals are
half-open (an execution that ended at the instant another began did not
overlap it). Pure: the timestamps are the history's; memory is 16 bytes per
delivery of an id, kept in one flat array per id.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable
from dataclasses import dataclass

from loadtest.model.history import Invocation


@dataclass(frozen=True, slots=True)
class Exposure:
    """How much of a run could have raced."""

    overlapping_ids: int
    """Business ids with at least two deliveries whose handler executions overlapped."""
    overlapping_deliveries: int
    """Pairs of deliveries of one business id whose handler executions overlapped."""


class Overlaps:
    """Collects each business id's handler executions, one invocation at a time."""

    def __init__(self) -> None:
        self._spans: dict[str, array[int]] = {}

    def add(self, invocation: Invocation) -> None:
        seen: set[str] = set()
        for record in invocation.records:
            business_id = record.business_id
            if business_id is None or business_id in seen:
                continue
            seen.add(business_id)
            spans = self._spans.get(business_id)
            if spans is None:
                spans = self._spans[business_id] = array("q")
            spans.append(invocation.started_ns)
            spans.append(invocation.ended_ns)

    def exposure(self) -> Exposure:
        ids = pairs = 0
        for spans in self._spans.values():
            if len(spans) < 4:
                continue
            found = overlapping_pairs(zip(spans[::2], spans[1::2], strict=True))
            ids += found > 0
            pairs += found
        return Exposure(overlapping_ids=ids, overlapping_deliveries=pairs)


def overlapping_pairs(spans: Iterable[tuple[int, int]]) -> int:
    """How many pairs of the half-open intervals ``[start, end)`` overlap (a sweep)."""
    running: list[int] = []  # the ends of the executions still running, as a heap
    pairs = 0
    for start, end in sorted(spans):
        while running and running[0] <= start:
            heapq.heappop(running)
        pairs += len(running)
        if end > start:
            heapq.heappush(running, end)
    return pairs


def exposure_reason(exposure: Exposure, repeated_ids: int, deliveries: int) -> str | None:
    """The inconclusive reason of a run whose copies were meant to race and never overlapped.

    ``repeated_ids`` is how many business ids were sent more than once; ``None`` when there
    is nothing to say (no id was sent twice, or some deliveries did overlap).
    """
    if repeated_ids == 0 or exposure.overlapping_ids > 0:
        return None
    return (
        f"no two deliveries of one business id were processed at the same time "
        f"({repeated_ids} id(s) sent more than once, {deliveries} deliveries, none "
        "overlapping another of its id): this run could not have shown a race between "
        "deliveries (raise the concurrency, send the copies closer together, or declare "
        "[expect] overlap = false if the scenario means its copies to be sequential)"
    )

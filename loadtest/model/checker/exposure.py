"""Race exposure: which business ids had two deliveries processed at the same time.

Owns the one measure of whether a run *could* have shown a race between
deliveries: per business id, the handler executions (an invocation's
``started_ns`` to ``ended_ns``) that carried a record of it, and which of
those executions overlapped in time. A run in which no two deliveries of any
id overlapped (a concurrency of 1, a serial endpoint, resends spread too far
apart, a backlog that lined everything up, copies sharing one batch) could
not have shown a read-then-write race, however its counts came out.

Two records of one id in the same invocation are one execution here, unless the
handler worked on them at the same time: a handler that processes a batch's records
in threads or tasks. Each such record's span is its writes' (the writes the observer
tied to it, ``WriteRecord.record_id``, first start to last end); two copies whose spans
overlap are a pair. A handler that works through its records one by one never makes
such spans overlap, so this never finds an overlap that did not happen; it can miss
one whose writes did not coincide. Intervals are half-open (an execution that ended
at the instant another began did not overlap it). Pure: the timestamps are the
history's; memory is 20 bytes per delivery, in flat arrays.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from loadtest.model.history.log import Invocation


@dataclass(frozen=True, slots=True)
class Exposure:
    """How much of a run could have raced."""

    overlapping_ids: int
    """Business ids with at least two deliveries whose handler executions overlapped."""
    overlapping_deliveries: int
    """Pairs of deliveries of one business id whose handler executions overlapped."""


class Overlaps:
    """Collects each delivery's business id and handler execution, one invocation at a time.

    ``index`` numbers the business ids that were sent (an id it lacks was never sent and
    is passed over). Held as three flat arrays (20 bytes a delivery), grouped by id only
    when the exposure is asked for.
    """

    def __init__(self, index: Mapping[str, int]) -> None:
        self._index = index
        self._ids = array("i")
        self._starts = array("q")
        self._ends = array("q")
        self._inside: dict[int, int] = {}
        """Per business id: pairs of its copies worked on at once inside one invocation."""

    def add(self, invocation: Invocation) -> None:
        first: dict[int, str] = {}  # per business id: its first record's message id
        copies: dict[int, list[str]] = {}  # only for ids with several records here
        for record in invocation.records:
            business_id = record.business_id
            business = -1 if business_id is None else self._index.get(business_id, -1)
            if business < 0:
                continue
            if business in first:
                copies.setdefault(business, [first[business]]).append(record.message_id)
                continue
            first[business] = record.message_id
            self._ids.append(business)
            self._starts.append(invocation.started_ns)
            self._ends.append(invocation.ended_ns)
        for business, message_ids in copies.items():
            found = overlapping_pairs(_record_spans(invocation, message_ids))
            if found:
                self._inside[business] = self._inside.get(business, 0) + found

    def exposure(self) -> Exposure:
        ids, starts, ends, inside = self._ids, self._starts, self._ends, self._inside
        if not ids:
            return Exposure(0, 0)
        # A counting sort by id: each id's deliveries sit together in ``order``.
        bounds = array("i", bytes(4 * (max(ids) + 2)))
        for business in ids:
            bounds[business + 1] += 1
        for business in range(1, len(bounds)):
            bounds[business] += bounds[business - 1]
        fill = array("i", bounds)
        order = array("i", bytes(4 * len(ids)))
        for position, business in enumerate(ids):
            order[fill[business]] = position
            fill[business] += 1
        found_ids = pairs = 0
        for business in range(len(bounds) - 1):
            low, high = bounds[business], bounds[business + 1]
            found = inside.get(business, 0)
            if high - low == 2:  # the common case (an id and one copy), without a sweep
                a, b = order[low], order[low + 1]
                found += int(starts[a] < ends[b] and starts[b] < ends[a])
            elif high - low > 2:
                found += overlapping_pairs((starts[i], ends[i]) for i in order[low:high])
            found_ids += found > 0
            pairs += found
        return Exposure(overlapping_ids=found_ids, overlapping_deliveries=pairs)


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


def _record_spans(invocation: Invocation, message_ids: list[str]) -> list[tuple[int, int]]:
    """Per record of ``message_ids``: its writes' first start and last end (records with no
    write tied to them have no span)."""
    spans: dict[str, tuple[int, int]] = {}
    wanted = set(message_ids)
    for write in invocation.writes:
        if write.record_id in wanted:
            start, end = spans.get(write.record_id, (write.started_ns, write.ended_ns))
            spans[write.record_id] = (min(start, write.started_ns), max(end, write.ended_ns))
    return list(spans.values())


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

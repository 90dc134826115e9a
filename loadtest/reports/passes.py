"""What a report reads from a run's history, in passes over its logs.

Owns the report's lists and series: the counts per interval (``series``), the
handler errors and unobserved calls grouped, the first successful results, the
dead letters with their last errors, and the listed write decisions with the
duplicate findings' evidence. Each pass decodes a whole log and none holds one:
a run of millions of messages is read a frame at a time. Pure.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from loadtest.model.checker import Role
from loadtest.model.checker.evidence import EVIDENCE_LIMIT, evidence_of
from loadtest.model.history.log import InvocationOutcome, WriteOutcome

if TYPE_CHECKING:
    from loadtest.engine import VariantRun
    from loadtest.model.checker import Decision

WRITE_DECISIONS_LIMIT = 500
"""Write decisions kept per run in the JSON; the rest are counted, not listed."""
SERIES_POINTS_LIMIT = 600
"""Most points per time series: a longer run gets wider intervals (whole seconds)."""


def _offset_ms(ns: int, start_ns: int) -> float:
    return round((ns - start_ns) / 1e6, 3)


def dead_letters(run: VariantRun, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` dead letters, each with its message and its last error."""
    if not run.history.dead_letters:
        return []  # and no pass over the invocations, which decodes the whole log
    listed = list(itertools.islice(run.history.dead_letters, limit))
    # Only the listed dead letters' messages: the log's are decoded copies, bodies included.
    dead = {d.message_id for d in listed}
    business: dict[str | None, str | None] = {}
    bodies: dict[str | None, str] = {}
    for m in run.history.sent:
        if m.message_id in dead:
            business[m.message_id] = m.business_id
            bodies[m.message_id] = m.body
    last_error: dict[str, str] = {}
    for inv in run.history.invocations.without_writes():  # their outcomes and errors alone
        if inv.outcome is not InvocationOutcome.SUCCESS or inv.failed_message_ids:
            for record in inv.records:
                if (
                    inv.error
                    and record.message_id in dead
                    and (not inv.failed_message_ids or record.message_id in inv.failed_message_ids)
                ):
                    last_error[record.message_id] = inv.error
    return [
        {
            "message_id": d.message_id,
            "business_id": business.get(d.message_id),
            "body": bodies.get(d.message_id),
            "last_error": last_error.get(d.message_id),
        }
        for d in listed
    ]


def _write_decision(d: Decision, start: int) -> dict[str, Any]:
    w = d.write
    return {
        "business_id": d.business_id,
        "message_id": d.message_id,
        "request_id": d.invocation.request_id,
        "environment": d.invocation.environment,
        "operation": w.operation,
        "key": w.key,
        "condition": w.condition,
        "outcome": w.outcome.value,
        "role": d.role.value,
        "item_before": w.item_before,
        "item_after": w.item_after,
        "requested": w.requested if w.outcome.value != "accepted" else None,
        "before_known": w.before_known,
        "at_ms": _offset_ms(w.started_ns, start),
        "duration_us": round((w.ended_ns - w.started_ns) / 1000),
        "error_code": w.error_code,
    }


class Listing:
    """The first ``limit`` decisions in the listing's order, found in two passes that hold
    about ``limit`` of them: their positions in time order, except that each outcome's
    accepted writes keep the backend's order (a write that found the item absent always
    comes before the ones that found it stored).

    The first pass (``add``) keeps the ``limit`` earliest decisions; the outcomes among
    them each take, at those places, their writes with the smallest orders, which the
    second pass (``offer``) finds wherever they are in time.
    """

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._earliest: list[tuple[int, int]] = []
        """A heap of (-started_ns, -position): the latest of the earliest on top."""
        self._ranks: dict[int, tuple[str | None, int]] = {}
        """position -> (business id, order) of those with an order."""
        self._top: list[int] = []
        self._places: dict[str | None, list[int]] = {}
        """Each outcome's places in ``_top`` (by ``close``)."""
        self._smallest: dict[str | None, list[tuple[int, int]]] = {}
        """Each outcome's writes of the smallest orders, a heap of (-order, position)."""

    def add(self, position: int, started_ns: int, business_id: str | None, order: int) -> None:
        """The first pass: each decision, in the log's order."""
        item = (-started_ns, -position)
        if len(self._earliest) < self._limit:
            heapq.heappush(self._earliest, item)
        elif item > self._earliest[0]:
            self._ranks.pop(-heapq.heapreplace(self._earliest, item)[1], None)
        else:
            return
        if order:
            self._ranks[position] = (business_id, order)

    def close(self) -> tuple[set[int], set[str | None]]:
        """After the first pass: the positions listed as they are, and the outcomes whose
        writes the second pass must be offered."""
        self._top = [-position for _, position in sorted(self._earliest, reverse=True)]
        for place, position in enumerate(self._top):
            rank = self._ranks.get(position)
            if rank is not None:
                self._places.setdefault(rank[0], []).append(place)
        del self._earliest, self._ranks
        return set(self._top), set(self._places)

    def offer(self, position: int, business_id: str | None, order: int) -> tuple[bool, int | None]:
        """The second pass: a decision of an outcome ``close`` named. Whether it may be
        listed (keep it until ``listed``), and the position of one that no longer may."""
        places = self._places.get(business_id)
        if not order or places is None:
            return False, None
        smallest = self._smallest.setdefault(business_id, [])
        if len(smallest) < len(places):
            heapq.heappush(smallest, (-order, position))
            return True, None
        if -order > smallest[0][0]:
            return True, heapq.heapreplace(smallest, (-order, position))[1]
        return False, None

    def listed(self) -> list[int]:
        """The listing's positions, in order."""
        out = list(self._top)
        for business_id, places in self._places.items():
            members = sorted(self._smallest.get(business_id, []), reverse=True)
            for place, (_, position) in zip(places, members, strict=True):
                out[place] = position
        return out


@dataclasses.dataclass(frozen=True)
class DecisionLists:
    """What the report reads from the decisions, in two passes (each pass decodes them all,
    and no pass holds them all): the listed ones and the duplicate findings."""

    write_decisions: list[dict[str, Any]]
    """The first ``WRITE_DECISIONS_LIMIT`` decisions in ``_backend_ordered`` order."""
    findings: list[dict[str, Any]]
    """The evidence of the first ``EVIDENCE_LIMIT`` duplicated outcomes (``evidence_of``),
    times from the run's start."""
    duplicated: int
    """How many outcomes were written again: the findings' total."""
    total: int
    outcomes: dict[str, int]
    """Writes by outcome."""


def _from_decisions(
    run: VariantRun, series: dict[str, list[int]], bucket: Callable[[int], int]
) -> DecisionLists:
    """Counts the outcome writes into ``series`` per interval (``bucket``) and reads the lists."""
    start = run.history.started_ns
    listing = Listing(WRITE_DECISIONS_LIMIT)
    outcomes: Counter[WriteOutcome] = Counter()
    duplicated: set[str] = set()
    for position, d in enumerate(run.check.decisions.outlines()):
        listing.add(position, d.started_ns, d.business_id, d.order)
        outcomes[d.outcome] += 1
        if d.role is Role.SIDE:
            continue
        at = bucket(d.ended_ns)
        if d.outcome is WriteOutcome.REJECTED:
            series["writes_rejected"][at] += 1
        elif d.outcome is WriteOutcome.ACCEPTED:
            series["writes_accepted"][at] += 1
        if d.role is Role.AGAIN:
            series["duplicate_writes"][at] += 1
            if d.business_id is not None:
                duplicated.add(d.business_id)
    top, ranked = listing.close()
    witnessed = sorted(duplicated)[:EVIDENCE_LIMIT]
    wanted: set[str | None] = set(witnessed)
    kept: dict[int, Decision] = {}
    witnesses: list[Decision] = []
    for position, decision in run.check.decisions.chosen(top, wanted | ranked):
        may, dropped = listing.offer(position, decision.business_id, decision.order)
        if position in top or may:
            kept[position] = decision
        if dropped is not None and dropped not in top:
            del kept[dropped]
        if decision.business_id in wanted:
            witnesses.append(decision)
    listed = listing.listed()
    findings = evidence_of(witnesses, witnessed)
    for finding in findings:
        for w in finding["writes"] + finding["reads"]:
            w["at_ms"] = _offset_ms(w.pop("started_ns"), start)
            w["done_ms"] = _offset_ms(w.pop("ended_ns"), start)
    return DecisionLists(
        write_decisions=[_write_decision(kept[position], start) for position in listed],
        findings=findings,
        duplicated=len(duplicated),
        total=len(run.check.decisions),
        outcomes={o.value: outcomes[o] for o in WriteOutcome},
    )


def _series_interval_ns(run: VariantRun) -> int:
    """Whole seconds per interval, so no series has more than SERIES_POINTS_LIMIT points."""
    span_ns = max(run.history.ended_ns - run.history.started_ns, 0)
    # span // interval + 1 points (the last, partial interval included)
    return max(1, -(-span_ns // ((SERIES_POINTS_LIMIT - 1) * 1_000_000_000))) * 1_000_000_000


def series_of(
    run: VariantRun, interval_ns: int | None = None
) -> tuple[dict[str, Any], InvocationLists, DecisionLists]:
    """Counts per interval since the run started, so a report shows *when* things happened,
    and the lists read from the invocations and the decisions in the same passes (each
    pass decodes them all)."""
    if interval_ns is None:
        interval_ns = _series_interval_ns(run)
    start = run.history.started_ns
    end = max(run.history.ended_ns, start)
    buckets = int((end - start) // interval_ns) + 1

    def bucket(ns: int) -> int:
        return min(buckets - 1, max(0, (ns - start) // interval_ns))

    names = (
        "sent",
        "deliveries",
        "redeliveries",
        "acked",
        "dead_lettered",
        "writes_accepted",
        "writes_rejected",
        "duplicate_writes",
        "handler_errors",
    )
    series: dict[str, list[int]] = {name: [0] * buckets for name in names}
    for m in run.history.sent:
        if m.message_id:
            series["sent"][bucket(m.sent_ns)] += 1
    lists = _from_invocations(run, series, bucket)
    for ack in run.history.acks:
        series["acked"][bucket(ack.acked_ns)] += 1
    for dead in run.history.dead_letters:
        series["dead_lettered"][bucket(dead.seen_ns)] += 1
    decisions = _from_decisions(run, series, bucket)
    return {"interval_s": interval_ns / 1e9, **series}, lists, decisions


@dataclasses.dataclass(frozen=True)
class InvocationLists:
    """The report's lists read from the invocations, in one pass (each pass decodes the whole log)."""

    unobserved: list[dict[str, Any]]
    """Calls the observer could not interpret and its own failures, grouped, most frequent first."""
    errors: list[dict[str, Any]]
    """Handler errors grouped by message, most frequent first (repeats on one line)."""
    results: list[Any]
    """The successful invocations' results, the first ``WRITE_DECISIONS_LIMIT`` of them."""
    result_count: int
    """How many successful invocations returned a result."""


def _from_invocations(
    run: VariantRun, series: dict[str, list[int]], bucket: Callable[[int], int]
) -> InvocationLists:
    """Counts the deliveries, redeliveries and handler errors into ``series`` per interval
    (``bucket``) and reads the lists."""
    unobserved: Counter[tuple[str, str, str]] = Counter()
    errors: Counter[tuple[str, str]] = Counter()
    results: list[Any] = []
    result_count = 0
    # What each one received, answered and could not observe: its writes need no decoding.
    for inv in run.history.invocations.without_writes():
        b = bucket(inv.received_ns)
        series["deliveries"][b] += len(inv.records)
        series["redeliveries"][b] += sum(1 for r in inv.records if r.receive_count > 1)
        if inv.outcome is not InvocationOutcome.SUCCESS:
            series["handler_errors"][b] += 1
        for call in inv.unobserved:
            unobserved[("unobserved", call.operation, call.reason)] += 1
        for fault in inv.observer_faults:
            unobserved[("observer_error", fault.operation, fault.error)] += 1
        if inv.outcome is not InvocationOutcome.SUCCESS:
            errors[(inv.outcome.value, inv.error or "")] += 1
        elif inv.result is not None:
            result_count += 1
            if len(results) < WRITE_DECISIONS_LIMIT:
                results.append(inv.result)
    return InvocationLists(
        unobserved=[
            {"kind": kind, "operation": op, "reason": reason, "count": n}
            for (kind, op, reason), n in unobserved.most_common(20)
        ],
        errors=[{"outcome": o, "error": e, "count": n} for (o, e), n in errors.most_common(20)],
        results=results,
        result_count=result_count,
    )

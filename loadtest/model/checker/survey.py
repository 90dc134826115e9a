"""The checker's first pass over a run's invocations: what was delivered, and what was stored.

Owns the ``survey``: deliveries and redeliveries, failed invocations (and the runtime
errors ``runtime_errors`` explains), calls the observer could not interpret, the extra
tables' items (and what each delivery did to them, ``side_changes``), the harness's gaps,
each business id's handler executions (for the race exposure), the attribute names accepted writes stored (which details the
messages' bodies carry that a table can hold), the records a batch's writes were
marked on, the messages the consumer sent to its own queue, the records it parked on its
dead-letter queue itself and the work it left running that never finished (``left_work``).
It streams the invocation log once and keeps no write.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from loadtest.model.checker.details import stored_names
from loadtest.model.checker.exposure import Overlaps
from loadtest.model.checker.harness import GapTally
from loadtest.model.checker.left_work import Unfinished
from loadtest.model.checker.runtime_errors import explain
from loadtest.model.checker.side_changes import SideChanges
from loadtest.model.history.log import (
    EffectKind,
    EffectRecord,
    History,
    Invocation,
    InvocationOutcome,
    WriteOutcome,
)


@dataclass
class Survey:
    """The first pass: what was delivered, and what the accepted writes stored."""

    deliveries: int = 0
    redeliveries: int = 0
    handler_errors: int = 0
    unobserved_calls: int = 0
    observer_errors: int = 0
    stored_names: set[str] = field(default_factory=set)
    """The names every item an accepted write left stores values under (its attributes,
    and inside its maps, lists and JSON strings)."""
    accepted: int = 0
    """Accepted writes of any item: the most there can be to judge together."""
    runtime_errors: Counter[tuple[str, str, bool]] = field(default_factory=Counter)
    """Failed invocations by the runtime's error type, its explanation and whether it fails
    the run (``runtime_errors.explain``), for the error types it explains."""
    side_items: int = 0
    """Items accepted writes stored in the consumer's extra tables (side writes)."""
    side_changes: SideChanges = field(default_factory=SideChanges)
    """What each delivery did to the items of the extra tables (``side_changes``)."""
    gaps: GapTally = field(default_factory=GapTally)
    """What the run did not provide that the handler expected (``harness``)."""
    overlaps: Overlaps = field(default_factory=lambda: Overlaps({}))
    """Each business id's handler executions, for the race exposure."""
    failed_ids: set[str] = field(default_factory=set)
    """The business ids something failed for: a delivery of one was a redelivery, or its
    invocation failed or reported its record failed (``completeness`` learns from the
    others)."""
    failed_deliveries: set[tuple[str, str]] = field(default_factory=set)
    """The deliveries that failed, as (invocation request id, message id): every record of
    an invocation that failed, crashed or timed out, and each record an invocation reported
    failed (``roles.Takeover``: only such a delivery's half-written outcome is taken over)."""
    effects: int = 0
    """Effects the invocations sent beyond the table (entries observed, accepted or not)."""
    resent: set[str] = field(default_factory=set)
    """The message ids of what the invocations sent to the queue that feeds the function
    and it took (``EffectKind.SOURCE``): messages of the run the workload did not send."""
    parked: set[str] = field(default_factory=set)
    """The message ids of the records the consumer parked on its dead-letter queue itself
    (``EffectKind.DEAD_LETTER``): dead-lettered, as by the queue's redrive."""
    write_marks: dict[str, frozenset[str]] = field(default_factory=dict)
    """By request id, the records the writes of each invocation that held several records
    and sent effects were marked on (the effects' judge reads no write:
    ``effects.judge_effects``)."""
    unfinished: Unfinished = field(default_factory=Unfinished)
    """The threads, pool calls and asyncio tasks the handler left running, and which never
    finished: a
    delivery whose work never finished is a failed one (``failed_deliveries``)."""


def survey(history: History, business_index: Mapping[str, int]) -> Survey:
    """``business_index`` numbers the business ids sent (``Messages.business_index``)."""
    found = Survey(overlaps=Overlaps(business_index))
    bodies = _Bodies(history)
    for inv in history.invocations:
        found.deliveries += len(inv.records)
        found.redeliveries += sum(1 for r in inv.records if r.receive_count > 1)
        failed = inv.outcome is not InvocationOutcome.SUCCESS
        for r in inv.records:
            record_failed = failed or r.message_id in inv.failed_message_ids
            if record_failed:
                found.failed_deliveries.add((inv.request_id, r.message_id))
            if r.business_id is not None and (record_failed or r.receive_count > 1):
                found.failed_ids.add(r.business_id)
        if failed:
            found.handler_errors += 1
            explained = explain(inv.error)
            if explained is not None:
                found.runtime_errors[explained] += 1
        found.unobserved_calls += len(inv.unobserved)
        found.observer_errors += len(inv.observer_faults)
        if inv.side_writes:
            found.side_items += sum(w.items for w in inv.side_writes)
            found.side_changes.add_side_writes(inv.records, inv.side_writes)
        for effect in inv.effects:
            if effect.kind is EffectKind.DEAD_LETTER:
                parked = _parked(effect, inv, bodies, found.parked) if effect.parked else ""
                if parked:
                    found.parked.add(parked)
            elif effect.kind is not EffectKind.SOURCE:
                found.effects += 1
            elif effect.resent:
                found.resent.add(effect.resent)
        found.gaps.add(inv)
        found.overlaps.add(inv)
        for record in inv.writes:
            if record.outcome is WriteOutcome.ACCEPTED:
                found.accepted += 1
                if record.item_after:
                    found.stored_names |= stored_names(record.item_after)
        if inv.effects and len(inv.records) > 1:
            found.write_marks[inv.request_id] = frozenset(w.record_id for w in inv.writes)
        if inv.left_work or inv.ended_work:
            found.unfinished.add(inv)
    for cut in found.unfinished.cut():
        for message_id, business_id in cut.deliveries:
            found.failed_deliveries.add((cut.request_id, message_id))
            if business_id is not None:
                found.failed_ids.add(business_id)
    return found


class _Bodies:
    """The sent messages' bodies by message id, gathered the first time one is asked for."""

    def __init__(self, history: History) -> None:
        self._history = history
        self._by_id: dict[str, str] | None = None

    def of(self, message_id: str) -> str | None:
        if self._by_id is None:
            self._by_id = {m.message_id: m.body for m in self._history.sent if m.message_id}
        return self._by_id.get(message_id)


def _parked(effect: EffectRecord, inv: Invocation, bodies: _Bodies, taken: set[str]) -> str:
    """The record of ``inv`` that ``effect`` parked on the dead-letter queue ("" when none
    can be told): one whose body it carried (the record the handler was on, if it is one of
    them; else the first not parked yet), else the record the handler was on, else the only
    one. ``taken``: the records of ``inv`` already parked."""
    carried = [r.message_id for r in inv.records if bodies.of(r.message_id) == effect.payload]
    if effect.record_id and (not carried or effect.record_id in carried):
        return effect.record_id
    if carried:
        return next((m for m in carried if m not in taken), carried[0])
    return inv.records[0].message_id if len(inv.records) == 1 else ""

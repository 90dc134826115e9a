"""The checker: from a run's history and end state to the counts and the verdict.

Pure, and the one owner of the counting rules (DESIGN.md, "Counts"): which
item holds a message's outcome, which writes are side writes, what one
delivery's write of an outcome is, the real order of writes, and which counts
fail or leave a run inconclusive. The live progress line, the terminal, the
HTML page and the thresholds all use its answers.

How a run is judged, in the order the code does it:

1. **Where outcomes live.** A message's outcome item is the item keyed by its
   business id under the scenario's ``OutcomeKey`` (the lab's ``id``). An item
   keyed by something else (a messageId, a random id) whose attributes carry
   the business id and the message's details is the outcome stored under a
   key that changes per delivery: it counts as a copy of the outcome, when the
   outcome key itself carries no details. Every other item is a side write.
   When nothing matches and the choice is ambiguous, the run is inconclusive
   and the key templates seen are named; the checker never guesses.
2. **Real order.** Writes of one item are ordered by their item-before
   images (each write's old image is the previous write's new one), the
   backend's own order, never client clocks; time only breaks ties.
3. **Deliveries.** An outcome's first write is the one that found it absent.
   Writes by the same invocation are steps of one delivery (a claim, then
   the result). Another delivery's accepted write is a duplicate write,
   unless it was a no-op by construction (``SET p = if_not_exists(p, v)``
   throughout) or a repeat of an accepted transaction call's (TransactWriteItems,
   ExecuteTransaction) ClientRequestToken and request within DynamoDB's window (both
   ``noop_writes``); one that changed the stored outcome (or deleted it and
   stored other details) is also a conflicting write.
4. **Per message.** An acknowledged message whose own details were never
   stored, or whose outcome is gone at the end, is a lost outcome; a
   dead-lettered message that was neither a planted poison record nor a
   resend with conflicting details is an unexpected dead letter.

This module runs those steps (``check``) and decides step 1 itself; the rest
is owned by its parts, and every name is importable from here:
``verdict`` (the counts, roles, ``Check`` and the fail/inconclusive/pass
rule), ``details`` (what a message said and whether an item carries it),
``roles`` (real order, delivery units, duplicate and conflicting writes, and
``LiveDuplicates``) and ``evidence`` (the witnesses a report shows).
"""

from __future__ import annotations

import dataclasses
import marshal
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.checker.details import (
    Messages,
    carries,
    carries_id,
    details_of,
    key_template,
    plain,
    records_of,
    varies_per_delivery,
)
from loadtest.model.checker.evidence import duplicate_evidence
from loadtest.model.checker.roles import Judged, LiveDuplicates, Write, judge_outcome
from loadtest.model.checker.verdict import (
    BAD_WHEN_NONZERO,
    COUNT_NAMES,
    FLAGGED_WHEN_NONZERO,
    INCONCLUSIVE_WHEN_NONZERO,
    NOTEWORTHY_WHEN_NONZERO,
    Check,
    Counts,
    Decision,
    DecisionLog,
    Decisions,
    Role,
    Verdict,
    cut_short_reasons,
    default_reasons,
    inconclusive_reasons,
    verdict_of,
)
from loadtest.model.history import (
    EndState,
    History,
    InvocationOutcome,
    InvocationRef,
    OutcomeKey,
    TypedItem,
    WriteOutcome,
    WriteRecord,
    key_string,
)

__all__ = [
    "BAD_WHEN_NONZERO",
    "COUNT_NAMES",
    "FLAGGED_WHEN_NONZERO",
    "INCONCLUSIVE_WHEN_NONZERO",
    "NOTEWORTHY_WHEN_NONZERO",
    "Check",
    "Counts",
    "Decision",
    "LiveDuplicates",
    "Role",
    "Verdict",
    "carries",
    "carries_id",
    "check",
    "default_reasons",
    "details_of",
    "duplicate_evidence",
    "inconclusive_reasons",
    "key_template",
    "plain",
    "verdict_of",
]


_ACKED = 1
_DEAD_LETTERED = 2
"""How a sent message was settled (bits: it may be both)."""


@dataclass(frozen=True)
class _Model:
    kind: str
    """"key" (outcome items under the OutcomeKey), "copies" (under one varying template), "ambiguous"."""
    template: str
    description: str


@dataclass
class _Read:
    """One pass over the invocations (each pass decodes the whole log): the writes with
    what they need of their invocation, and the per-invocation counts."""

    writes: list[Write] = field(default_factory=list)
    """The writes the rules read, in the history's order."""
    rejected: DecisionLog = field(default_factory=DecisionLog)
    """The rejected writes of outcome items, decided as they are read (``_read``)."""
    rejected_at: array[int] = field(default_factory=lambda: array("q"))
    """Their positions among all the writes, in order."""
    first_at: dict[str, int] = field(default_factory=dict)
    """Each key template's first write's position."""
    stored_names: set[str] = field(default_factory=set)
    deliveries: int = 0
    redeliveries: int = 0
    handler_errors: int = 0
    unobserved_calls: int = 0
    observer_errors: int = 0


def _alike(a: Any, b: Any) -> bool:
    # marshal's version 2 writes no back-references, so equal bytes mean the same
    # values, types and key order: the two read and print the same.
    return a is b or marshal.dumps(a, 2) == marshal.dumps(b, 2)


def _shared(record: WriteRecord, table: Mapping[str, TypedItem]) -> WriteRecord:
    """The write, its item after (and the fields that are that same object) replaced by
    the end state's item of its key when the two are the same value laid out alike, and
    its key's values by the item's: the run's result then holds one copy of the item,
    not two. The stored outcome is most often the item its first write stored."""
    item = record.item_after
    if not item:
        return record
    stored = table.get(key_string(record.key))
    if stored is None or stored is item or not _alike(stored, item):
        return record
    key = record.key
    if all(name in stored and _alike(stored[name], value) for name, value in key.items()):
        key = {name: stored[name] for name in key}
    return dataclasses.replace(
        record,
        key=key,
        item_after=stored,
        requested=stored if record.requested is item else record.requested,
        item_before=stored if record.item_before is item else record.item_before,
    )


def _read(
    history: History,
    outcome_key: OutcomeKey,
    outcome_keys: Mapping[str, str],
    table: Mapping[str, TypedItem],
    *,
    whole: bool,
) -> _Read:
    """The writes of the run, each outcome item's keyed by the declared key's template.

    A rejected write of an outcome item changed nothing: under the key model its only
    role is "rejected", which it gets here, and it is kept as its decision (compressed)
    instead of as a write with its items, the most of a run's writes for a guarded
    consumer. ``whole``: every write kept whole, for the other models, whose rules read
    rejected writes' items too.
    """
    read = _Read()
    declared = outcome_key.describe()
    templates: dict[str, str] = {}
    position = 0
    for inv in history.invocations:
        read.deliveries += len(inv.records)
        read.redeliveries += sum(1 for r in inv.records if r.receive_count > 1)
        read.handler_errors += inv.outcome is not InvocationOutcome.SUCCESS
        read.unobserved_calls += len(inv.unobserved)
        read.observer_errors += len(inv.observer_faults)
        if not inv.writes:
            continue
        ref = InvocationRef.of(inv)
        for record in inv.writes:
            if record.outcome is WriteOutcome.ACCEPTED and record.item_after:
                read.stored_names.update(record.item_after)
            business_id = outcome_keys.get(outcome_key.canonical(record.key))
            if business_id is None:
                template = key_template(record.key, ref)
                # One string per distinct template, not one per write.
                template = templates.setdefault(template, template)
            else:
                template = declared
            read.first_at.setdefault(template, position)
            w = Write(record, ref, template)
            if not whole and business_id is not None and record.outcome is WriteOutcome.REJECTED:
                w.business_id = business_id
                read.rejected.append(
                    Decision(record, ref, business_id, _message_id(w), Role.REJECTED)
                )
                read.rejected_at.append(position)
            else:
                w.write = _shared(record, table)
                read.writes.append(w)
            position += 1
    return read


def _choose_model(
    read: _Read,
    outcome_key: OutcomeKey,
    outcome_keys: Mapping[str, str],
    messages: Messages,
) -> _Model:
    writes = read.writes
    declared = outcome_key.describe()
    on_key = bool(read.rejected) or any(
        outcome_key.canonical(w.write.key) in outcome_keys for w in writes
    )
    accepted = [
        w for w in writes if w.write.outcome is WriteOutcome.ACCEPTED and not w.write.deletes
    ]

    def carries_outcome(w: Write) -> bool:
        for record in w.invocation.records:
            if record.business_id is None:
                continue
            after = w.write.item_after
            if not carries_id(after, w.write.key, record.business_id):
                continue
            if any(carries(after, d) for d in messages.details_for(record.business_id)):
                return True
        return False

    key_carries = any(
        carries_outcome(w) for w in accepted if outcome_key.canonical(w.write.key) in outcome_keys
    )
    carriers = Counter(
        w.template
        for w in accepted
        if outcome_key.canonical(w.write.key) not in outcome_keys and carries_outcome(w)
    )
    templates = sorted(read.first_at)
    if on_key and (key_carries or not carriers):
        return _Model("key", declared, f"outcome items keyed {declared}")
    if len(carriers) == 1:
        (template,) = carriers
        how = "a key that changes per delivery" if varies_per_delivery(template) else "another key"
        return _Model(
            "copies",
            template,
            f"outcomes stored under {how} ({template}), not under {declared}",
        )
    if not accepted or (outcome_key.declared and not carriers):
        # Nothing stored, or nothing stored elsewhere that looks like an outcome where
        # the scenario said where outcomes live: its key stands, and what it lacks is lost.
        return _Model("key", declared, f"outcome items keyed {declared}")
    seen = ", ".join(templates) or "none"
    why = (
        f"{len(carriers)} key templates carry the messages' ids and details"
        if carriers
        else "no item carries both a message's id and its details"
    )
    return _Model(
        "ambiguous",
        "",
        f"no write matches the outcome key {declared} and {why}; key templates seen: {seen}. "
        "Declare where outcomes live in the scenario ([outcome] key)",
    )


def check(
    history: History,
    end: EndState,
    outcome_key: OutcomeKey | None = None,
    *,
    cut_short: bool = False,
) -> Check:
    """Judge one variant run (DESIGN.md, "Counts").

    ``cut_short``: the run ended before its workload was settled (interrupted, or its
    backend failed), so an absence (a message unsettled, an outcome missing from a
    partial end state, nothing stored yet) is not evidence: those counts leave the
    verdict inconclusive; writes and dead letters that happened still fail it.
    """
    outcome_key = outcome_key or OutcomeKey()
    declared = outcome_key.describe()
    messages = Messages(history)
    outcome_keys = {outcome_key.canonical(outcome_key.key_for(b)): b for b in messages.by_business}
    read = _read(history, outcome_key, outcome_keys, end.table_items, whole=False)
    messages.keep_stored(read.stored_names)
    model = _choose_model(read, outcome_key, outcome_keys, messages)
    if model.kind != "key" and read.rejected:
        # The other models read the rejected writes' items too (a side write's business
        # id, a copy's): read them again, whole. The model is the same: rejected writes
        # of outcome items count in its choice only as writes of an outcome item.
        read = _read(history, outcome_key, outcome_keys, end.table_items, whole=True)
    writes = read.writes
    deliveries, redeliveries = read.deliveries, read.redeliveries
    handler_errors = read.handler_errors
    unobserved_calls, observer_errors = read.unobserved_calls, read.observer_errors

    # Which writes are outcome writes, and of which business id.
    outcome_writes: list[Write] = []
    for w in writes:
        if model.kind == "key":
            business_id = outcome_keys.get(outcome_key.canonical(w.write.key))
        elif model.kind == "copies" and w.template == model.template:
            item = w.write.item_after or w.write.requested or w.write.item_before
            business_id = next(
                (
                    r.business_id
                    for r in w.invocation.records
                    if r.business_id and carries_id(item, w.write.key, r.business_id)
                ),
                None,
            )
        else:
            business_id = None
        w.business_id = business_id
        if business_id is not None:
            outcome_writes.append(w)
        else:
            w.role = Role.SIDE
            w.business_id = _side_business_id(w)

    judged = Judged()
    by_business: dict[str, list[Write]] = defaultdict(list)
    for w in outcome_writes:
        outcome = w.write.outcome
        if outcome is WriteOutcome.ACCEPTED:
            by_business[str(w.business_id)].append(w)
        else:
            w.role = {
                WriteOutcome.REJECTED: Role.REJECTED,
                WriteOutcome.ERROR: Role.ERROR,
                WriteOutcome.INDETERMINATE: Role.INDETERMINATE,
            }[outcome]
    for business_id, group in by_business.items():
        judge_outcome(
            business_id, group, model.kind == "copies", judged, messages.details_for(business_id)
        )

    # The stored outcomes at the end.
    final: dict[str, list[TypedItem]] = defaultdict(list)
    stored_outcomes: set[str] = set()
    """The end state's keys of outcome items."""
    if model.kind == "key":
        for canon, business_id in outcome_keys.items():
            item = end.table_items.get(canon)
            if item is not None:
                final[business_id].append(item)
                stored_outcomes.add(canon)
    elif model.kind == "copies":
        for stored_key, item in end.table_items.items():
            for business_id in messages.by_business:
                if carries_id(item, {}, business_id) and any(
                    carries(item, d) for d in messages.details_for(business_id)
                ):
                    final[business_id].append(item)
                    stored_outcomes.add(stored_key)
    versions: dict[str, list[TypedItem]] = defaultdict(list)
    for business_id, group in by_business.items():
        versions[business_id] = [
            w.write.item_after for w in group if w.write.after_known and w.write.item_after
        ]
    for business_id, items in final.items():
        versions[business_id].extend(items)
    details_stored = any(
        carries(item, d)
        for business_id, items in versions.items()
        for item in items
        for d in messages.details_for(business_id)
    )

    # How each sent message was settled, marked on the sent ids themselves: the
    # acknowledgements' and dead letters' ids are decoded copies, and sets of them
    # would hold every id a second and a third time.
    settled = dict.fromkeys(messages.business, 0)
    for ack in history.acks:
        if ack.message_id in settled:
            settled[ack.message_id] |= _ACKED
    for dead in history.dead_letters:
        if dead.message_id in settled:
            settled[dead.message_id] |= _DEAD_LETTERED
    acked_ids = [message_id for message_id, how in settled.items() if how & _ACKED]
    dead_ids = [message_id for message_id, how in settled.items() if how & _DEAD_LETTERED]
    lost = 0
    if model.kind != "ambiguous":
        for message_id in sorted(acked_ids):
            business_id = messages.business[message_id]
            if business_id is None or message_id in messages.poison:
                continue
            if not final.get(business_id):
                lost += 1
                continue
            mine = messages.details[message_id]
            if (
                details_stored
                and mine is not None
                and not any(carries(v, mine) for v in versions[business_id])
            ):
                lost += 1
    unexpected_dead = sum(
        1
        for message_id in dead_ids
        if message_id not in messages.poison
        and messages.business.get(message_id) is not None
        and not messages.conflicting(message_id)
    )

    outcome_records = [w.write for w in outcome_writes]
    expected_outcomes = {
        messages.business[mid]
        for mid in messages.business
        if mid not in messages.poison and messages.business[mid] is not None
    }
    counts = Counts(
        messages_sent=messages.count,
        distinct_ids=len(messages.by_business),
        deliveries=deliveries,
        redeliveries=redeliveries,
        writes_attempted=len(outcome_records) + len(read.rejected),
        writes_accepted=sum(1 for w in outcome_records if w.outcome is WriteOutcome.ACCEPTED),
        writes_rejected=sum(1 for w in outcome_records if w.outcome is WriteOutcome.REJECTED)
        + len(read.rejected),
        writes_errored=sum(1 for w in outcome_records if w.outcome is WriteOutcome.ERROR),
        writes_indeterminate=sum(
            1 for w in outcome_records if w.outcome is WriteOutcome.INDETERMINATE
        ),
        side_writes=sum(1 for w in writes if w.role is Role.SIDE),
        noop_writes=judged.noop,
        duplicate_writes=judged.duplicate,
        conflicting_writes=judged.conflicting,
        lost_outcomes=lost,
        unexpected_dead_letters=unexpected_dead,
        acked=len(acked_ids),
        dead_lettered=len(dead_ids),
        handler_errors=handler_errors,
        unsettled=sum(1 for how in settled.values() if not how),
        send_failures=messages.failures,
        unobserved_calls=unobserved_calls,
        observer_errors=observer_errors,
    )
    nothing_stored = bool(expected_outcomes) and not by_business and not final
    reasons = default_reasons(counts, timed_out=history.timed_out, cut_short=cut_short)
    inconclusive = inconclusive_reasons(counts, history)
    if nothing_stored and model.kind != "ambiguous":
        (inconclusive if cut_short else reasons).append(
            f"nothing was stored: no write of an outcome item ({model.description}) was accepted"
        )
    if cut_short:
        inconclusive.extend(cut_short_reasons(counts))
    if model.kind == "ambiguous":
        inconclusive.append(model.description)
    unexplained = _unexplained_outcomes(writes, stored_outcomes, outcome_key)
    if unexplained:
        inconclusive.append(
            f"{len(unexplained)} outcome item(s) in the table were stored by no write the "
            f"observer saw in an invocation (e.g. {unexplained[0]!r}): written after the "
            "handler returned, or by a client the observer does not hook, so writes may be "
            "missing from the counts"
        )
    notes = []
    if not details_stored and by_business:
        notes.append(
            "the stored outcomes carry none of the messages' details: "
            "lost outcomes are judged by presence only"
        )
    unknown_after = sum(
        1 for w in outcome_records if w.outcome is WriteOutcome.ACCEPTED and not w.after_known
    )
    if unknown_after:
        notes.append(
            f"{unknown_after} accepted write(s) left an item the observer could not compute "
            "(no old image): whether they changed the outcome is not known"
        )
    verdict = verdict_of(reasons, inconclusive)
    template_roles: dict[str, dict[str, int | str]] = {}
    for w in writes:
        entry = template_roles.setdefault(
            w.template, {"role": "side" if w.role is Role.SIDE else "outcome", "writes": 0}
        )
        entry["writes"] = int(entry["writes"]) + 1
    if read.rejected:
        entry = template_roles.setdefault(declared, {"role": "outcome", "writes": 0})
        entry["writes"] = int(entry["writes"]) + len(read.rejected)
    # In the order the templates were first written.
    template_roles = {
        t: template_roles[t] for t in sorted(template_roles, key=read.first_at.__getitem__)
    }
    del outcome_writes, by_business  # the last holders of the writes but ``writes``
    decisions = Decisions(DecisionLog(_decisions(writes)), read.rejected, read.rejected_at)
    return Check(
        counts=counts,
        verdict=verdict,
        reasons=tuple(reasons),
        inconclusive=tuple(inconclusive),
        decisions=decisions,
        outcome=model.description,
        templates=template_roles,
        notes=tuple(notes),
    )


def _unexplained_outcomes(
    writes: list[Write], stored_outcomes: set[str], outcome_key: OutcomeKey
) -> list[str]:
    """Keys of the outcome items at the end that no observed write could have stored.

    The run's table starts empty and only the consumer writes to it, so every
    outcome item must come from a write of an invocation the observer recorded
    (accepted, or one whose answer was an error or never came). One that did not
    was written by a client the observer does not hook: the evidence is
    incomplete. (Other items may come from the handler's cold start, whose
    writes belong to no delivery and are not in the history.)
    """
    written = {
        outcome_key.canonical(w.write.key)
        for w in writes
        if w.write.outcome is not WriteOutcome.REJECTED and not w.write.deletes
    }
    return sorted(stored_outcomes - written)


def _decisions(writes: list[Write]) -> Iterator[Decision]:
    """Each write's decision, in order, letting go of each write once its decision is made:
    a run's writes and their decisions are not both held whole at once."""
    writes.reverse()
    while writes:
        w = writes.pop()
        yield Decision(
            write=w.write,
            invocation=w.invocation,
            business_id=w.business_id,
            message_id=_message_id(w),
            role=w.role,
            order=w.order,
        )


def _side_business_id(w: Write) -> str | None:
    """The business id a side write belongs to, for display: by its item, else its only record."""
    ids = [r.business_id for r in w.invocation.records if r.business_id]
    item = w.write.item_after or w.write.requested or {}
    for business_id in ids:
        if carries_id(item, w.write.key, business_id):
            return business_id
    return ids[0] if len(ids) == 1 else None


def _message_id(w: Write) -> str | None:
    if w.business_id is not None:
        mine = records_of(w.invocation, w.business_id)
        if mine:
            return mine[min(w.copy_index, len(mine) - 1)].message_id
    return w.invocation.records[0].message_id if len(w.invocation.records) == 1 else None

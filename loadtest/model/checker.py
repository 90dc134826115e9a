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
   throughout: ``noop_writes``); one that changed the stored outcome is also
   a conflicting write.
4. **Per message.** An acknowledged message whose own details were never
   stored, or whose outcome is gone at the end, is a lost outcome; a
   dead-lettered message that was neither a planted poison record nor a
   resend with conflicting details is an unexpected dead letter.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any

from loadtest.model.history import (
    EndState,
    History,
    Invocation,
    InvocationOutcome,
    OutcomeKey,
    Record,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.updates import same_item


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"
    """The run could not observe everything it needed to judge."""


class Role(StrEnum):
    """What one write was, as the checker judged it."""

    FIRST = "first"
    """The write that stored an outcome that was absent."""
    AGAIN = "again"
    """Another delivery wrote the outcome again: a duplicate write."""
    STEP = "step"
    """A later write of the same delivery (a claim, then the result)."""
    NOOP = "noop"
    """A repeat write that, by construction, changed nothing."""
    DELETE = "delete"
    REJECTED = "rejected"
    ERROR = "error"
    INDETERMINATE = "indeterminate"
    SIDE = "side"
    """A write of an item that holds no outcome (audit row, lock, outbox entry, ...)."""


BAD_WHEN_NONZERO: tuple[str, ...] = (
    "duplicate_writes",
    "conflicting_writes",
    "lost_outcomes",
    "unexpected_dead_letters",
    "unsettled",
    "send_failures",
)
"""Counts that fail the default verdict when above zero."""

INCONCLUSIVE_WHEN_NONZERO: tuple[str, ...] = ("unobserved_calls", "observer_errors")
"""Counts that leave the verdict inconclusive (the evidence is incomplete)."""

NOTEWORTHY_WHEN_NONZERO: tuple[str, ...] = (
    "dead_lettered",
    "handler_errors",
    "writes_errored",
    "writes_indeterminate",
)
"""Counts worth a second look, though they judge nothing by themselves."""


@dataclass(frozen=True)
class Counts:
    """The counts of one variant run (DESIGN.md, "Counts")."""

    messages_sent: int
    distinct_ids: int
    deliveries: int
    """Handler invocations per record (an invocation cut off by the deadline included)."""
    redeliveries: int
    writes_attempted: int
    """Writes of outcome items (side writes are counted apart)."""
    writes_accepted: int
    writes_rejected: int
    writes_errored: int
    writes_indeterminate: int
    """Outcome writes whose answer never came back (the environment died)."""
    side_writes: int
    """Writes (attempts, whatever their outcome) of items that hold no outcome."""
    noop_writes: int
    duplicate_writes: int
    conflicting_writes: int
    lost_outcomes: int
    unexpected_dead_letters: int
    acked: int
    dead_lettered: int
    handler_errors: int
    unsettled: int
    """Messages neither acknowledged nor dead-lettered when the run ended."""
    send_failures: int
    unobserved_calls: int
    """Calls to the watched table the observer could not interpret."""
    observer_errors: int
    """Failures of loadtest's own observer (never the handler's)."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


COUNT_NAMES: tuple[str, ...] = tuple(Counts.__dataclass_fields__)


@dataclass(frozen=True)
class Decision:
    """One observed write, as judged."""

    write: WriteRecord
    invocation: Invocation
    business_id: str | None
    message_id: str | None
    role: Role
    order: int = 0
    """Position in the backend's order of this outcome's writes (0 for side writes)."""


@dataclass(frozen=True)
class Check:
    counts: Counts
    verdict: Verdict
    reasons: tuple[str, ...]
    """Why the default verdict failed, one line each (empty when it did not)."""
    inconclusive: tuple[str, ...]
    """What the run could not observe, one line each."""
    decisions: tuple[Decision, ...]
    outcome: str
    """Where outcomes were found, in words."""
    templates: Mapping[str, Mapping[str, int | str]] = field(default_factory=dict)
    """Key templates seen: ``{template: {"role": ..., "writes": n}}``."""
    notes: tuple[str, ...] = ()


# --- values -------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A typed attribute value (or a JSON body value) as a comparable Python value."""
    if isinstance(value, dict) and len(value) == 1:
        tag, inner = next(iter(value.items()))
        if tag == "S" or tag == "B":
            return str(inner)
        if tag == "N":
            return _number(inner)
        if tag == "BOOL":
            return bool(inner)
        if tag == "NULL":
            return None
        if tag == "M" and isinstance(inner, dict):
            return {k: plain(v) for k, v in inner.items()}
        if tag == "L" and isinstance(inner, list):
            return [plain(v) for v in inner]
        if tag in ("SS", "BS") and isinstance(inner, list):
            return frozenset(str(v) for v in inner)
        if tag == "NS" and isinstance(inner, list):
            return frozenset(_number(v) for v in inner)
    return _json_value(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def _number(value: Any) -> Any:
    try:
        return Decimal(str(value)).normalize()
    except (InvalidOperation, ValueError):
        return str(value)


def _plain_item(item: TypedItem | None) -> dict[str, Any]:
    return {name: plain(value) for name, value in (item or {}).items()}


def details_of(body: str) -> dict[str, Any] | None:
    """A message's details: its JSON body's fields other than the business ``id``."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    if not isinstance(parsed, dict):
        return None
    return {k: _json_value(v) for k, v in parsed.items() if k != "id"}


def carries(item: TypedItem | None, details: Mapping[str, Any]) -> bool:
    """Whether an item holds each detail: under its own name, or else as some attribute's value."""
    if item is None:
        return False
    values = _plain_item(item)
    for name, wanted in details.items():
        if name in values and _equal(values[name], wanted):
            continue
        if any(_equal(v, wanted) for v in values.values()):
            continue
        return False
    return True


def _equal(stored: Any, wanted: Any) -> bool:
    if stored == wanted:
        return True
    # A number stored as a string, or the other way round.
    if isinstance(wanted, Decimal) and isinstance(stored, str):
        return bool(_number(stored) == wanted)
    if isinstance(stored, Decimal) and isinstance(wanted, str):
        return bool(_number(wanted) == stored)
    return False


def _token(business_id: str) -> re.Pattern[str]:
    """The business id as a whole token inside a longer string ("ORDER#a", not "audit")."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(business_id)}(?![A-Za-z0-9])")


def carries_id(item: TypedItem | None, key: TypedItem, business_id: str) -> bool:
    """Whether an item (or its key) names the business id, whole or as a token of a value."""
    token = _token(business_id)
    for value in list((item or {}).values()) + list(key.values()):
        text = plain(value)
        if isinstance(text, str) and (text == business_id or token.search(text)):
            return True
    return False


# --- key templates --------------------------------------------------------------------

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"\b[0-9a-fA-F]{16,}\b")
_DIGITS = re.compile(r"\d{4,}")


def key_template(key: TypedItem, invocation: Invocation) -> str:
    """The shape of a key, its varying parts named: ``{id}``, ``{messageId}``, ``{uuid}``, ..."""
    parts = []
    for name, value in key.items():
        text = str(plain(value))
        for record in sorted(invocation.records, key=lambda r: -len(r.message_id)):
            text = text.replace(record.message_id, "{messageId}")
        for business_id in sorted(
            {r.business_id for r in invocation.records if r.business_id}, key=len, reverse=True
        ):
            text = _token(business_id).sub("{id}", text)
        text = text.replace(invocation.request_id, "{requestId}")
        text = _UUID.sub("{uuid}", text)
        text = _HEX.sub("{hex}", text)
        text = _DIGITS.sub("{n}", text)
        parts.append(f"{name}={text}")
    return ", ".join(parts)


def _varies_per_delivery(template: str) -> bool:
    return any(tag in template for tag in ("{messageId}", "{requestId}", "{uuid}", "{hex}", "{n}"))


# --- the check ----------------------------------------------------------------------


@dataclass
class _Write:
    """A write being judged: its invocation and, once known, its business id."""

    write: WriteRecord
    invocation: Invocation
    template: str
    business_id: str | None = None
    role: Role = Role.SIDE
    order: int = 0
    copy_index: int = 0
    """Which of the invocation's records of this id made it (batches with copies)."""


@dataclass(frozen=True)
class _Model:
    kind: str
    """"key" (outcome items under the OutcomeKey), "copies" (under one varying template), "ambiguous"."""
    template: str
    description: str


def _records_of(invocation: Invocation, business_id: str) -> list[Record]:
    return [r for r in invocation.records if r.business_id == business_id]


class _Messages:
    """What was sent: business ids, details and planted poison, by messageId.

    A message's details are the body fields the consumer stores: a field that
    no written item holds under its name (a timestamp, a trace id) is left out,
    unless no field is held by name at all, when every field is looked for by
    value.
    """

    def __init__(self, history: History, stored_names: set[str]) -> None:
        self.sent = [m for m in history.sent if m.message_id is not None]
        self.business: dict[str, str | None] = {str(m.message_id): m.business_id for m in self.sent}
        full = {str(m.message_id): details_of(m.body) for m in self.sent}
        kept = {name for d in full.values() if d for name in d} & stored_names
        self.details: dict[str, dict[str, Any] | None] = {
            mid: ({k: v for k, v in d.items() if k in kept} if kept and d is not None else d)
            for mid, d in full.items()
        }
        self.poison = {str(m.message_id) for m in self.sent if m.poison}
        self.by_business: dict[str, list[str]] = defaultdict(list)
        for m in self.sent:
            if m.business_id is not None:
                self.by_business[m.business_id].append(str(m.message_id))

    def details_for(self, business_id: str) -> list[dict[str, Any]]:
        return [
            d
            for mid in self.by_business.get(business_id, [])
            if (d := self.details[mid]) is not None
        ]

    def conflicting(self, message_id: str) -> bool:
        """Whether another message with the same business id carries different details."""
        business_id = self.business.get(message_id)
        mine = self.details.get(message_id)
        if business_id is None or mine is None:
            return False
        return any(d != mine for d in self.details_for(business_id))


def _choose_model(
    writes: list[_Write],
    outcome_key: OutcomeKey,
    outcome_keys: Mapping[str, str],
    messages: _Messages,
) -> _Model:
    declared = outcome_key.describe()
    on_key = [w for w in writes if outcome_key.canonical(w.write.key) in outcome_keys]
    accepted = [
        w for w in writes if w.write.outcome is WriteOutcome.ACCEPTED and not w.write.deletes
    ]

    def carries_outcome(w: _Write) -> bool:
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
    templates = sorted({w.template for w in writes})
    if on_key and (key_carries or not carriers):
        return _Model("key", declared, f"outcome items keyed {declared}")
    if len(carriers) == 1:
        (template,) = carriers
        how = "a key that changes per delivery" if _varies_per_delivery(template) else "another key"
        return _Model(
            "copies",
            template,
            f"outcomes stored under {how} ({template}), not under {declared}",
        )
    if not accepted:
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


def _backend_order(writes: list[_Write]) -> list[_Write]:
    """One item's accepted writes in the backend's order, read from their item-before images."""
    remaining = sorted(writes, key=lambda w: (w.write.ended_ns, w.write.started_ns))
    ordered: list[_Write] = []
    state: TypedItem | None = None
    state_known = True
    while remaining:
        pick = None
        if state_known:
            pick = next(
                (
                    w
                    for w in remaining
                    if w.write.before_known and same_item(w.write.item_before, state)
                ),
                None,
            )
        if pick is None:
            pick = next((w for w in remaining if not w.write.before_known), remaining[0])
        remaining.remove(pick)
        ordered.append(pick)
        if pick.write.deletes:
            state, state_known = None, True
        elif pick.write.after_known:
            state, state_known = pick.write.item_after, True
        else:
            state_known = False
    return ordered


def _unit(
    w: _Write,
    business_id: str,
    existed: bool,
    before: TypedItem | None,
    details: Sequence[Mapping[str, Any]],
    units: Sequence[tuple[str, int]],
) -> tuple[str, int]:
    """The delivery a write belongs to: (invocation, n-th copy of the id in it).

    One record of the id in the invocation: every write of it is that
    delivery's (a claim, then the result). Several copies in one batch: a
    write that finds the outcome already complete (the item holds a message's
    details, or its old image is unknown) is the next copy's write, up to as
    many deliveries as the batch carries copies.
    """
    request_id = w.invocation.request_id
    copies = len(_records_of(w.invocation, business_id))
    mine = [n for rid, n in units if rid == request_id]
    if not mine:
        return (request_id, 0)
    complete = before is None or any(carries(before, d) for d in details)
    if copies > 1 and existed and complete and len(mine) < copies:
        return (request_id, max(mine) + 1)
    return (request_id, max(mine))


@dataclass
class _Judged:
    duplicate: int = 0
    conflicting: int = 0
    noop: int = 0


def _judge_outcome(
    business_id: str,
    writes: list[_Write],
    copies: bool,
    judged: _Judged,
    details: Sequence[Mapping[str, Any]],
) -> None:
    """Roles for one outcome's accepted writes (see the module docstring, step 3)."""
    ordered = sorted(writes, key=lambda w: w.write.ended_ns) if copies else _backend_order(writes)
    units: list[tuple[str, int]] = []
    state: TypedItem | None = None
    state_known = True
    first_after: TypedItem | None = None
    for position, w in enumerate(ordered, start=1):
        write = w.write
        w.order = position
        before_known = write.before_known or state_known
        before = write.item_before if write.before_known else state
        existed = (before is not None) if before_known else bool(units)
        if copies:
            existed = bool(units)
        unit = _unit(w, business_id, existed, before if before_known else None, details, units)
        w.copy_index = unit[1]
        changed = not (before_known and write.after_known and same_item(before, write.item_after))
        if write.deletes:
            w.role = Role.DELETE
        elif (
            existed
            and write.noop_when_present
            and not (before_known and write.after_known and changed)
        ):
            w.role = Role.NOOP
            judged.noop += 1
        elif unit in units:
            w.role = Role.STEP
        elif not units:
            w.role = Role.FIRST
            units.append(unit)
            first_after = write.item_after
        else:
            w.role = Role.AGAIN
            units.append(unit)
            judged.duplicate += 1
            if copies:
                # Each copy is its own item: it conflicts when it holds other
                # details than the first copy.
                first = next((d for d in details if carries(first_after, d)), None)
                if write.after_known and first is not None and not carries(write.item_after, first):
                    judged.conflicting += 1
            elif existed and before_known and write.after_known and changed:
                judged.conflicting += 1
        if write.deletes:
            state, state_known = None, True
        elif write.after_known:
            state, state_known = write.item_after, True
        else:
            state_known = False


def check(history: History, end: EndState, outcome_key: OutcomeKey | None = None) -> Check:
    """Judge one variant run (DESIGN.md, "Counts")."""
    outcome_key = outcome_key or OutcomeKey()
    stored_names = {
        name
        for inv in history.invocations
        for w in inv.writes
        if w.outcome is WriteOutcome.ACCEPTED and w.item_after
        for name in w.item_after
    }
    messages = _Messages(history, stored_names)
    outcome_keys = {outcome_key.canonical(outcome_key.key_for(b)): b for b in messages.by_business}
    writes = [
        _Write(w, inv, key_template(w.key, inv)) for inv in history.invocations for w in inv.writes
    ]
    for w in writes:
        canon = outcome_key.canonical(w.write.key)
        if canon in outcome_keys:
            w.template = outcome_key.describe()
    model = _choose_model(writes, outcome_key, outcome_keys, messages)

    # Which writes are outcome writes, and of which business id.
    outcome_writes: list[_Write] = []
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

    judged = _Judged()
    by_business: dict[str, list[_Write]] = defaultdict(list)
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
        _judge_outcome(
            business_id, group, model.kind == "copies", judged, messages.details_for(business_id)
        )

    # The stored outcomes at the end.
    final: dict[str, list[TypedItem]] = defaultdict(list)
    if model.kind == "key":
        for canon, business_id in outcome_keys.items():
            item = end.table_items.get(canon)
            if item is not None:
                final[business_id].append(item)
    elif model.kind == "copies":
        for item in end.table_items.values():
            for business_id in messages.by_business:
                if carries_id(item, {}, business_id) and any(
                    carries(item, d) for d in messages.details_for(business_id)
                ):
                    final[business_id].append(item)
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

    acked_ids = {a.message_id for a in history.acks}
    dead_ids = {d.message_id for d in history.dead_letters}
    sent_ids = set(messages.business)
    lost = 0
    if model.kind != "ambiguous":
        for message_id in sorted(acked_ids & sent_ids):
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
        for message_id in dead_ids & sent_ids
        if message_id not in messages.poison
        and messages.business.get(message_id) is not None
        and not messages.conflicting(message_id)
    )

    records = [r for inv in history.invocations for r in inv.records]
    outcome_records = [w.write for w in outcome_writes]
    expected_outcomes = {
        messages.business[mid]
        for mid in sent_ids
        if mid not in messages.poison and messages.business[mid] is not None
    }
    counts = Counts(
        messages_sent=len(messages.sent),
        distinct_ids=len(messages.by_business),
        deliveries=len(records),
        redeliveries=sum(1 for r in records if r.receive_count > 1),
        writes_attempted=len(outcome_records),
        writes_accepted=sum(1 for w in outcome_records if w.outcome is WriteOutcome.ACCEPTED),
        writes_rejected=sum(1 for w in outcome_records if w.outcome is WriteOutcome.REJECTED),
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
        acked=len(acked_ids & sent_ids),
        dead_lettered=len(dead_ids & sent_ids),
        handler_errors=sum(
            1 for i in history.invocations if i.outcome is not InvocationOutcome.SUCCESS
        ),
        unsettled=len(sent_ids - acked_ids - dead_ids),
        send_failures=sum(1 for m in history.sent if m.message_id is None),
        unobserved_calls=sum(len(i.unobserved) for i in history.invocations),
        observer_errors=sum(len(i.observer_faults) for i in history.invocations),
    )
    nothing_stored = bool(expected_outcomes) and not by_business and not final
    reasons = default_reasons(counts, timed_out=history.timed_out)
    if nothing_stored and model.kind != "ambiguous":
        reasons.append(
            f"nothing was stored: no write of an outcome item ({model.description}) was accepted"
        )
    inconclusive = inconclusive_reasons(counts, history)
    if model.kind == "ambiguous":
        inconclusive.append(model.description)
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
    decisions = tuple(
        Decision(
            write=w.write,
            invocation=w.invocation,
            business_id=w.business_id,
            message_id=_message_id(w),
            role=w.role,
            order=w.order,
        )
        for w in writes
    )
    template_roles: dict[str, dict[str, int | str]] = {}
    for w in writes:
        entry = template_roles.setdefault(
            w.template, {"role": "side" if w.role is Role.SIDE else "outcome", "writes": 0}
        )
        entry["writes"] = int(entry["writes"]) + 1
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


def _side_business_id(w: _Write) -> str | None:
    """The business id a side write belongs to, for display: by its item, else its only record."""
    ids = [r.business_id for r in w.invocation.records if r.business_id]
    item = w.write.item_after or w.write.requested or {}
    for business_id in ids:
        if carries_id(item, w.write.key, business_id):
            return business_id
    return ids[0] if len(ids) == 1 else None


def _message_id(w: _Write) -> str | None:
    if w.business_id is not None:
        mine = _records_of(w.invocation, w.business_id)
        if mine:
            return mine[min(w.copy_index, len(mine) - 1)].message_id
    return w.invocation.records[0].message_id if len(w.invocation.records) == 1 else None


def default_reasons(counts: Counts, *, timed_out: bool) -> list[str]:
    """The default verdict's failures: DESIGN.md's rule, one sentence each."""
    reasons = []
    if counts.duplicate_writes:
        reasons.append(
            f"{counts.duplicate_writes} duplicate write(s): an outcome was written again"
        )
    if counts.conflicting_writes:
        reasons.append(
            f"{counts.conflicting_writes} conflicting write(s): another delivery changed an outcome already stored"
        )
    if counts.lost_outcomes:
        reasons.append(
            f"{counts.lost_outcomes} lost outcome(s): acknowledged, but the message's details were never stored"
        )
    if counts.unexpected_dead_letters:
        reasons.append(
            f"{counts.unexpected_dead_letters} unexpected dead letter(s): valid messages that never succeeded"
        )
    if counts.unsettled:
        why = " (the run's deadline passed)" if timed_out else ""
        reasons.append(f"{counts.unsettled} message(s) neither acknowledged nor dead-lettered{why}")
    if counts.send_failures:
        reasons.append(f"{counts.send_failures} message(s) could not be sent")
    return reasons


def inconclusive_reasons(counts: Counts, history: History | None = None) -> list[str]:
    """What the run could not observe, naming the calls (e.g. "12 ExecuteStatement calls not understood")."""
    reasons: list[str] = []
    if counts.unobserved_calls:
        by_operation: Counter[tuple[str, str]] = Counter()
        for inv in history.invocations if history else ():
            for call in inv.unobserved:
                by_operation[(call.operation, call.reason)] += 1
        if by_operation:
            reasons.extend(
                f"{n} {operation} call(s) not understood: {reason}"
                for (operation, reason), n in by_operation.most_common(5)
            )
        else:
            reasons.append(f"{counts.unobserved_calls} call(s) to the table not understood")
    if counts.observer_errors:
        faults: Counter[str] = Counter()
        for inv in history.invocations if history else ():
            for fault in inv.observer_faults:
                faults[f"{fault.operation}: {fault.error}"] += 1
        detail = "; ".join(f"{text} (x{n})" for text, n in faults.most_common(3))
        reasons.append(
            f"{counts.observer_errors} loadtest observer error(s), the handler unaffected"
            + (f": {detail}" if detail else "")
        )
    return reasons


def verdict_of(reasons: Sequence[str], inconclusive: Sequence[str]) -> Verdict:
    return Verdict.FAIL if reasons else Verdict.INCONCLUSIVE if inconclusive else Verdict.PASS


class LiveDuplicates:
    """Duplicate writes so far, for the live progress line (the key model only).

    The same rule as ``check``: per outcome item, the invocations that stored
    it beyond the first, no-op-by-construction writes aside.
    """

    def __init__(self, outcome_key: OutcomeKey | None = None) -> None:
        self.outcome_key = outcome_key or OutcomeKey()
        self._units: dict[str, set[str]] = defaultdict(set)
        self.duplicate_writes = 0

    def add(self, writes: Iterable[WriteRecord]) -> int:
        """Note an invocation's writes; return the new duplicate count."""
        for w in writes:
            if w.outcome is not WriteOutcome.ACCEPTED or w.deletes:
                continue
            canon = self.outcome_key.canonical(w.key)
            units = self._units[canon]
            if w.noop_when_present and units:
                continue
            if w.request_id not in units:
                units.add(w.request_id)
                if len(units) > 1:
                    self.duplicate_writes += 1
        return self.duplicate_writes


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

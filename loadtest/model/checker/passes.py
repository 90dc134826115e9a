"""The checker's passes over a run's writes, each streaming the invocation log once.

Owns how the checker reads the writes without holding them: the ``survey``
(what was delivered and which attribute names were stored), the ``judging``
pass that gives every write its business id and, unless it must wait for its
outcome's other writes, its role at once, and the ``Parts`` where an outcome's
accepted writes wait: grouped by business id, in parts of at most
``WRITES_PER_PART`` writes kept where the history keeps its logs, judged a part
at a time. What a role is, and which writes are outcome writes, are the
rules' (``roles``, and the model ``check`` chose): this module only carries
them out over the log.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.checker.details import (
    carries,
    carries_id,
    key_template,
    records_of,
    stored_names,
)
from loadtest.model.checker.exposure import Overlaps
from loadtest.model.checker.harness import GapTally
from loadtest.model.checker.roles import Judged, Write, judge_outcome
from loadtest.model.checker.runtime_errors import explain
from loadtest.model.checker.sent import Messages
from loadtest.model.checker.verdict import Decision, DecisionLog, Role
from loadtest.model.history import (
    FrameStores,
    History,
    InvocationOutcome,
    InvocationRef,
    OutcomeKey,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)

WRITES_PER_PART = 4096
"""Accepted writes of outcome items judged at once, at most: a run with more groups them
by business id into parts, so judging holds one part's writes, not the run's."""
MOST_PARTS = 128
"""Parts at most (each is a file while its writes wait): past ``MOST_PARTS`` times
``WRITES_PER_PART`` writes (a million), a part holds more."""

_ROLE_OF_OUTCOME = {
    WriteOutcome.REJECTED: Role.REJECTED,
    WriteOutcome.ERROR: Role.ERROR,
    WriteOutcome.INDETERMINATE: Role.INDETERMINATE,
}


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
    gaps: GapTally = field(default_factory=GapTally)
    """What the run did not provide that the handler expected (``harness``)."""
    overlaps: Overlaps = field(default_factory=lambda: Overlaps({}))
    """Each business id's handler executions, for the race exposure."""


def survey(history: History, business_index: Mapping[str, int]) -> Survey:
    """``business_index`` numbers the business ids sent (``Messages.business_index``)."""
    found = Survey(overlaps=Overlaps(business_index))
    for inv in history.invocations:
        found.deliveries += len(inv.records)
        found.redeliveries += sum(1 for r in inv.records if r.receive_count > 1)
        if inv.outcome is not InvocationOutcome.SUCCESS:
            found.handler_errors += 1
            explained = explain(inv.error)
            if explained is not None:
                found.runtime_errors[explained] += 1
        found.unobserved_calls += len(inv.unobserved)
        found.observer_errors += len(inv.observer_faults)
        if inv.side_writes:
            found.side_items += sum(w.items for w in inv.side_writes)
        found.gaps.add(inv)
        found.overlaps.add(inv)
        for record in inv.writes:
            if record.outcome is WriteOutcome.ACCEPTED:
                found.accepted += 1
                if record.item_after:
                    found.stored_names |= stored_names(record.item_after)
    return found


@dataclass
class Evidence:
    """What the writes say of where outcomes live, for the checker's choice of model."""

    on_key: bool = False
    """Some write (any outcome) was of an outcome item under the declared key."""
    key_carries: bool = False
    """An accepted write under the declared key stored a message's id and details."""
    carriers: Counter[str] = field(default_factory=Counter)
    """Accepted writes of other key templates that stored a message's id and details."""
    stored: bool = False
    """Some accepted write stored an item (not a delete)."""


@dataclass(frozen=True)
class Model:
    kind: str
    """"key" (outcome items under the OutcomeKey), "copies" (under one varying template), "ambiguous"."""
    template: str
    description: str

    @classmethod
    def key(cls, outcome_key: OutcomeKey) -> Model:
        """Outcome items under the declared key."""
        declared = outcome_key.describe()
        return cls("key", declared, f"outcome items keyed {declared}")


class Parts:
    """The accepted writes of outcome items, waiting to be judged with their outcome's others.

    When the run accepted at most ``WRITES_PER_PART`` writes (``expected``, of any item),
    they wait as writes in memory; past that, each is kept as its decision (compressed,
    where ``frames`` says) in the part of its business id's hash, and read back a part at
    a time.
    """

    def __init__(self, expected: int, frames: FrameStores) -> None:
        self._count = min(MOST_PARTS, max(1, -(-expected // WRITES_PER_PART)))
        self._held: list[tuple[int, Write]] = []
        self._logs = [DecisionLog(frames=frames) for _ in range(self._count)]
        self._at = [array("q") for _ in range(self._count)]

    def add(self, position: int, w: Write) -> None:
        if self._count == 1:
            self._held.append((position, w))
            return
        part = hash(w.business_id) % self._count
        self._logs[part].append(Decision(w.write, w.invocation, w.business_id, None, Role.FIRST))
        self._at[part].append(position)

    def each(self) -> Iterator[list[tuple[int, Write]]]:
        """Each part's writes with their positions, in order; a part is let go of once
        the next is asked for."""
        if self._count == 1:
            held, self._held = self._held, []
            yield held
            return
        for part in range(self._count):
            log, at = self._logs[part], self._at[part]
            self._logs[part], self._at[part] = DecisionLog(), array("q")
            yield [
                (position, Write(d.write, d.invocation, "", d.business_id))
                for position, d in zip(at, log, strict=True)
            ]


@dataclass
class Judging:
    """One pass over the writes under a model: the roles decided at once, the outcome
    writes that wait in ``parts``, and the figures ``check`` reports."""

    model: Model
    outcome_key: OutcomeKey
    outcome_keys: Mapping[str, str]
    """Each outcome item's canonical key under the declared key, and its business id."""
    messages: Messages
    stored_outcomes: set[str]
    """The end state's keys of outcome items (``unexplained`` is those no write stored)."""
    parts: Parts
    frames: FrameStores
    evidence: Evidence = field(default_factory=Evidence)
    early: DecisionLog = field(init=False)
    """The decisions made as the writes are read: side writes, and outcome writes that
    were not accepted."""
    early_at: array[int] = field(default_factory=lambda: array("q"))
    outcome_writes: Counter[WriteOutcome] = field(default_factory=Counter)
    side_writes: int = 0
    side_errors: Counter[str] = field(default_factory=Counter)
    """Side writes the table refused with an error, per error code."""
    unknown_after: int = 0
    """Accepted outcome writes whose item after the observer could not compute."""
    templates: dict[str, dict[str, int | str]] = field(default_factory=dict)
    """Each key template's role and writes, in the order first written (every template
    seen: the choice of model names them)."""
    unexplained: set[str] = field(init=False)
    """The outcome items of ``stored_outcomes`` no observed write could have stored."""

    def __post_init__(self) -> None:
        self.early = DecisionLog(frames=self.frames)
        self.unexplained = set(self.stored_outcomes)

    def run(self, history: History) -> None:
        declared = self.outcome_key.describe()
        canonical = self.outcome_key.canonical
        interned: dict[str, str] = {}
        position = 0
        for inv in history.invocations:
            if not inv.writes:
                continue
            ref = InvocationRef.of(inv)
            for record in inv.writes:
                canon = canonical(record.key)
                on_key = self.outcome_keys.get(canon)
                if on_key is None:
                    template = key_template(record.key, ref)
                    template = interned.setdefault(template, template)  # one string each
                else:
                    template = declared
                self._note(record, ref, template, on_key)
                business_id = self._business_id(record, ref, template, on_key)
                self._decide(record, ref, template, business_id, position)
                if record.outcome is not WriteOutcome.REJECTED and not record.deletes:
                    self.unexplained.discard(canon)
                position += 1

    def _note(
        self,
        record: WriteRecord,
        ref: InvocationRef,
        template: str,
        on_key: str | None,
    ) -> None:
        """What this write says of where outcomes live (``Evidence``)."""
        evidence = self.evidence
        if on_key is not None:
            evidence.on_key = True
        if record.outcome is not WriteOutcome.ACCEPTED or record.deletes:
            return
        evidence.stored = True
        if on_key is not None:
            if not evidence.key_carries and self._carries_outcome(record, ref):
                evidence.key_carries = True
        elif self._carries_outcome(record, ref):
            evidence.carriers[template] += 1

    def _carries_outcome(self, record: WriteRecord, ref: InvocationRef) -> bool:
        after = record.item_after
        for r in ref.records:
            if r.business_id is None or not carries_id(after, record.key, r.business_id):
                continue
            if any(carries(after, d) for d in self.messages.details_for(r.business_id)):
                return True
        return False

    def _business_id(
        self, record: WriteRecord, ref: InvocationRef, template: str, on_key: str | None
    ) -> str | None:
        """Whose outcome this write is of, under the model; None: a side write."""
        if self.model.kind == "key":
            return on_key
        if self.model.kind == "copies" and template == self.model.template:
            item = record.item_after or record.requested or record.item_before
            return next(
                (
                    r.business_id
                    for r in ref.records
                    if r.business_id and carries_id(item, record.key, r.business_id)
                ),
                None,
            )
        return None

    def _decide(
        self,
        record: WriteRecord,
        ref: InvocationRef,
        template: str,
        business_id: str | None,
        position: int,
    ) -> None:
        side = business_id is None
        entry = self.templates.setdefault(
            template, {"role": "side" if side else "outcome", "writes": 0}
        )
        entry["writes"] = int(entry["writes"]) + 1
        if business_id is None:
            self.side_writes += 1
            if record.outcome is WriteOutcome.ERROR:
                self.side_errors[record.error_code or "an error"] += 1
            owner = side_business_id(record, ref)
            made_for = marked_record(record, ref, owner) or message_id(ref, owner, 0)
            self._early(Decision(record, ref, owner, made_for, Role.SIDE), position)
            return
        self.outcome_writes[record.outcome] += 1
        if record.outcome is WriteOutcome.ACCEPTED:
            self.unknown_after += not record.after_known
            self.parts.add(position, Write(record, ref, template, business_id))
            return
        role = _ROLE_OF_OUTCOME[record.outcome]
        self._early(
            Decision(record, ref, business_id, message_id(ref, business_id, 0), role), position
        )

    def _early(self, decision: Decision, position: int) -> None:
        self.early.append(decision)
        self.early_at.append(position)


@dataclass
class PartsJudged:
    """What judging the accepted outcome writes found, part by part."""

    judged: Judged = field(default_factory=Judged)
    log: DecisionLog = field(default_factory=DecisionLog)
    """Their decisions, a part's after another's, each part's in order."""
    at: array[int] = field(default_factory=lambda: array("q"))
    """Each decision's position among the run's writes."""
    carried: dict[str, int] = field(default_factory=dict)
    """For each business id written, which of its details (bits, by their position in
    ``Messages.details_for``) an item its accepted writes left carries."""


def judge_parts(parts: Parts, messages: Messages, copies: bool, frames: FrameStores) -> PartsJudged:
    """Judge each outcome's accepted writes, a part at a time (``judge_outcome``)."""
    found = PartsJudged()
    log, at = DecisionLog(frames=frames), array("q")
    """Every part's decisions, a part after another, each part's in order."""
    for part in parts.each():
        by_business: dict[str, list[Write]] = defaultdict(list)
        for _, w in part:
            by_business[str(w.business_id)].append(w)
        for business_id, group in by_business.items():
            details = messages.details_for(business_id)
            judge_outcome(business_id, group, copies, found.judged, details)
            afters = [w.write.item_after for w in group if w.write.after_known]
            found.carried[business_id] = carried_bits(afters, details)
        del by_business
        for position, w in part:
            log.append(
                Decision(
                    w.write,
                    w.invocation,
                    w.business_id,
                    message_id(w.invocation, w.business_id, w.copy_index),
                    w.role,
                    w.order,
                )
            )
            at.append(position)
    found.log, found.at = log, at
    return found


def carried_bits(items: Sequence[TypedItem | None], details: Sequence[Mapping[str, Any]]) -> int:
    """Which of ``details`` (bits, by position) some of ``items`` carries."""
    bits = 0
    for position, d in enumerate(details):
        if any(item and carries(item, d) for item in items):
            bits |= 1 << position
    return bits


def side_business_id(record: WriteRecord, ref: InvocationRef) -> str | None:
    """The business id a side write belongs to, for display: by its item, else its only record."""
    ids = [r.business_id for r in ref.records if r.business_id]
    item = record.item_after or record.requested or {}
    for business_id in ids:
        if carries_id(item, record.key, business_id):
            return business_id
    return ids[0] if len(ids) == 1 else None


def marked_record(record: WriteRecord, ref: InvocationRef, business_id: str | None) -> str | None:
    """The record a side write names (the one the handler was on), when it is one of its
    invocation's records of ``business_id`` (of any, when that is None)."""
    if not record.record_id:
        return None
    for r in ref.records:
        if r.message_id == record.record_id and business_id in (None, r.business_id):
            return r.message_id
    return None


def message_id(ref: InvocationRef, business_id: str | None, copy_index: int) -> str | None:
    """The message a write was made for: the ``copy_index``-th record of its business id in
    its invocation, else the invocation's only record."""
    if business_id is not None:
        mine = records_of(ref, business_id)
        if mine:
            return mine[min(copy_index, len(mine) - 1)].message_id
    return ref.records[0].message_id if len(ref.records) == 1 else None

"""The checker's judging pass over a run's writes, streaming the invocation log once.

Owns the ``Judging`` pass that gives every write its business id and, unless it must
wait for its outcome's other writes (in ``parts``), its role at once, gathering on the
way the ``Evidence`` of where outcomes live for the ``Model`` ``check`` chooses. What a
role is, and which writes are outcome writes, are the rules' (``roles``, and the model
``check`` chose): this module only carries them out over the log. The first pass over
the invocations is ``survey``'s.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from loadtest.model.checker.completeness import Beside, OnTheWay
from loadtest.model.checker.details import carries, carries_id, details_named, key_template
from loadtest.model.checker.parts import Parts
from loadtest.model.checker.roles import Write, marked_record, message_id, side_business_id
from loadtest.model.checker.sent import Messages
from loadtest.model.checker.shared import SharedEvidence, tied_record
from loadtest.model.checker.side_changes import SideChanges
from loadtest.model.checker.verdict import Decision, DecisionLog, Role
from loadtest.model.dynamodb.updates import same_item
from loadtest.model.history.log import (
    FrameStores,
    History,
    InvocationRef,
    OutcomeKey,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)

_ROLE_OF_OUTCOME = {
    WriteOutcome.REJECTED: Role.REJECTED,
    WriteOutcome.ERROR: Role.ERROR,
    WriteOutcome.INDETERMINATE: Role.INDETERMINATE,
}


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
    shared: SharedEvidence = field(default_factory=SharedEvidence)
    """Who changed each item not under the declared key (for the aggregates' model)."""


@dataclass(frozen=True)
class Model:
    kind: str
    """"key" (outcome items under the OutcomeKey), "copies" (under one varying template),
    "shared" (aggregates: ``items``, judged per business id and item), "ambiguous"."""
    template: str
    description: str
    items: frozenset[str] = frozenset()
    """The shared model's aggregate items (canonical keys)."""

    @classmethod
    def key(cls, outcome_key: OutcomeKey) -> Model:
        """Outcome items under the declared key."""
        declared = outcome_key.describe()
        return cls("key", declared, f"outcome items keyed {declared}")


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
    failed_ids: set[str] = field(default_factory=set)
    """The business ids something failed for (``Survey.failed_ids``)."""
    evidence: Evidence = field(default_factory=Evidence)
    on_the_way: OnTheWay = field(default_factory=OnTheWay)
    """The items the other business ids' outcomes held between two accepted writes of one
    delivery (a claim, then its completion): ``completeness``'s values on the way."""
    beside: Beside = field(default_factory=Beside)
    """The items beside its outcome each business id's deliveries changed
    (``completeness``: what a complete delivery writes beside its outcome)."""
    side_changes: SideChanges = field(default_factory=SideChanges)
    """What each delivery did to the outcome table's items that hold no outcome
    (``side_changes``)."""
    _held: dict[str, TypedItem] = field(default_factory=dict)
    """This invocation's last accepted write of each such outcome, until it writes again."""
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
            self._held.clear()
            for record in inv.writes:
                canon = canonical(record.key)
                on_key = self.outcome_keys.get(canon)
                if on_key is None:
                    template = key_template(record.key, ref)
                    template = interned.setdefault(template, template)  # one string each
                else:
                    template = declared
                self._note(record, ref, template, on_key, canon)
                business_id = self._business_id(record, ref, template, on_key, canon)
                self._decide(record, ref, template, business_id, position, canon)
                if record.outcome is not WriteOutcome.REJECTED and not record.deletes:
                    self.unexplained.discard(canon)
                position += 1

    def _note(
        self,
        record: WriteRecord,
        ref: InvocationRef,
        template: str,
        on_key: str | None,
        canon: str,
    ) -> None:
        """What this write says of where outcomes live (``Evidence``)."""
        evidence = self.evidence
        if on_key is not None:
            evidence.on_key = True
        else:
            evidence.shared.note(canon, template, record, ref)
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
        self,
        record: WriteRecord,
        ref: InvocationRef,
        template: str,
        on_key: str | None,
        canon: str,
    ) -> str | None:
        """Whose outcome this write is of, under the model; None: a side write."""
        if self.model.kind == "key":
            return on_key
        if self.model.kind == "shared":
            if canon not in self.model.items:
                return None
            tied = tied_record(record, ref)
            return tied.business_id if tied is not None else None
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
        canon: str,
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
            self._note_beside(record, ref, template)
            self.side_changes.add_write(record, ref, tied_record(record, ref))
            return
        self.outcome_writes[record.outcome] += 1
        if record.outcome is WriteOutcome.ACCEPTED:
            self.unknown_after += not record.after_known
            self.parts.add(position, Write(record, ref, template, business_id))
            if record.after_known and record.item_after and business_id not in self.failed_ids:
                held = self._held.get(canon)
                if held is not None:
                    self.on_the_way.add(held)
                self._held[canon] = record.item_after
            return
        role = _ROLE_OF_OUTCOME[record.outcome]
        self._early(
            Decision(record, ref, business_id, message_id(ref, business_id, 0), role), position
        )

    def _note_beside(self, record: WriteRecord, ref: InvocationRef, template: str) -> None:
        """A side write that changed its item, for the business id it was made for."""
        if record.outcome is not WriteOutcome.ACCEPTED or (
            record.before_known
            and record.after_known
            and same_item(record.item_before, record.item_after)
        ):
            return
        tied = tied_record(record, ref)
        if tied is None or tied.business_id is None:
            return
        details = self.messages.details_for(tied.business_id)
        self.beside.add(tied.business_id, details_named(template, details))

    def _early(self, decision: Decision, position: int) -> None:
        self.early.append(decision)
        self.early_at.append(position)

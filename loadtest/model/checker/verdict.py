"""The vocabulary of a judged run: counts, write roles, decisions and the verdict rule.

Owns what the checker's answers are made of: the
``Counts`` of a variant run, which of them fail the default verdict or leave it
inconclusive (``BAD_WHEN_NONZERO``, ``INCONCLUSIVE_WHEN_NONZERO``), the
``Role`` of each judged write, each sink's judged effects (``SinkEffects``, their
witnesses, ``EffectsJudged``), the items beside the outcomes added to again
(``RepeatedChange``), the ``Check`` that carries them (its decisions
kept as compressed frames, ``Decisions``), and the one rule that turns
reasons into a ``Verdict`` (fail, then inconclusive, then pass). The reasons
themselves, in words, are ``reasons``'.
Reports, thresholds and diffs read these names; they must not restate the sets
or the rule. Pure value objects and sentences: it judges no write itself.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple, overload

from loadtest.model.history.log import (
    EffectKind,
    FrameStores,
    InvocationRef,
    RecordLog,
    WriteOutcome,
    WriteRecord,
    decode_reads,
    decode_records,
    decode_write,
    encode_reads,
    encode_records,
    encode_write,
    write_outline,
)
from loadtest.model.scenario.effects import Delivery


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
    "duplicate_effects",
    "conflicting_effects",
    "lost_effects",
    "duplicate_side_writes",
)
"""Counts that fail the default verdict when above zero."""

EFFECT_COUNT_NAMES: tuple[str, ...] = (
    "effects_sent",
    "effects_delivered",
    "duplicate_effects",
    "conflicting_effects",
    "lost_effects",
)
"""Counts of what a consumer sent beyond its table (``effects``): None, and left out of
``Counts.as_dict``, for a run without sinks and without effects."""

OPTIONAL_COUNT_NAMES: tuple[str, ...] = (*EFFECT_COUNT_NAMES, "duplicate_side_writes")
"""Counts a run has only when it made what they judge (effects; writes that add to items
beside the outcomes, tied to a delivery): None, and left out of ``Counts.as_dict``,
otherwise."""

INCONCLUSIVE_WHEN_NONZERO: tuple[str, ...] = ("unobserved_calls", "observer_errors")
"""Counts that leave the verdict inconclusive (the evidence is incomplete)."""

NOTEWORTHY_WHEN_NONZERO: tuple[str, ...] = (
    "dead_lettered",
    "handler_errors",
    "writes_errored",
    "writes_indeterminate",
)
"""Counts worth a second look, though they judge nothing by themselves."""

FLAGGED_WHEN_NONZERO: frozenset[str] = frozenset(BAD_WHEN_NONZERO + INCONCLUSIVE_WHEN_NONZERO)
"""Counts every report marks as a problem when above zero: those that fail the
default verdict or leave it inconclusive."""


@dataclass(frozen=True, repr=False)
class Counts:
    """The counts of one variant run (each documented in docs/verdict-and-counts.md)."""

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
    overlapping_ids: int = 0
    """Business ids with two deliveries whose handler executions overlapped (race exposure)."""
    overlapping_deliveries: int = 0
    """Pairs of deliveries of one business id whose handler executions overlapped."""
    effects_sent: int | None = None
    """Entries the consumer sent beyond its table that their sinks accepted (None: the run
    had no sinks and sent no effects)."""
    effects_delivered: int | None = None
    """What the sinks held when read (for a sink nothing reads back, the accepted sends)."""
    duplicate_effects: int | None = None
    """Per business id and sink, deliveries beyond the first, on exactly-once sinks."""
    conflicting_effects: int | None = None
    """Per business id and sink, entries whose content differs from the first's."""
    lost_effects: int | None = None
    """Acknowledged messages whose business id never reached a required sink."""
    duplicate_side_writes: int | None = None
    """Per business id and item beside the outcomes (in the outcome table or an extra
    table), successful deliveries beyond the first that added to it (``side_changes``;
    None: no write that adds to such an item was tied to a delivery)."""

    def as_dict(self) -> dict[str, int]:
        return {name: value for name, value in asdict(self).items() if value is not None}

    def __repr__(self) -> str:
        # The effect counts only where measured: a run without them reads as it always did.
        shown = ", ".join(f"{name}={value!r}" for name, value in self.as_dict().items())
        return f"{type(self).__qualname__}({shown})"


COUNT_NAMES: tuple[str, ...] = tuple(Counts.__dataclass_fields__)


OUTCOME_TABLE = ""
"""The place of an item of the outcome table in a ``RepeatedChange`` (an extra table's is its
name)."""


@dataclass(frozen=True, slots=True)
class RepeatedChange:
    """An item beside the outcomes that several successful deliveries of one id added to."""

    business_id: str
    table: str
    """The extra table's name, or ``OUTCOME_TABLE``."""
    key: str
    """The item's key, as text (``sku=widget``)."""
    deliveries: int

    @property
    def text(self) -> str:
        where = "the outcome table" if self.table == OUTCOME_TABLE else f"table {self.table}"
        return f"{self.business_id} added to {self.key} in {where} in {self.deliveries} deliveries"


def duplicate_side_writes(repeated: Iterable[RepeatedChange]) -> int:
    """Deliveries beyond the first that changed a side item again, over all items."""
    return sum(r.deliveries - 1 for r in repeated)


@dataclass(frozen=True, slots=True)
class Decision:
    """One observed write, as judged."""

    write: WriteRecord
    invocation: InvocationRef
    """Who made the write and which records it carried (not the whole invocation)."""
    business_id: str | None
    message_id: str | None
    role: Role
    order: int = 0
    """Position in the backend's order of this outcome's writes (0 for side writes)."""


_ROLES = {r.value: r for r in Role}


def _encode_decision(d: Decision) -> tuple[Any, ...]:
    ref = d.invocation
    return (
        encode_write(d.write),
        ref.request_id,
        ref.environment,
        encode_records(ref.records),
        encode_reads(ref.reads),
        d.business_id,
        d.message_id,
        d.role.value,
        d.order,
    )


def _decode_decision(row: tuple[Any, ...]) -> Decision:
    write, request_id, environment, records, reads, business_id, message_id, role, order = row
    ref = InvocationRef(request_id, environment, decode_records(records), decode_reads(reads))
    return Decision(decode_write(write), ref, business_id, message_id, _ROLES[role], order)


class Outline(NamedTuple):
    """What a decision says in figures, read without decoding its write's items."""

    started_ns: int
    ended_ns: int
    outcome: WriteOutcome
    business_id: str | None
    role: Role
    order: int


class DecisionLog(RecordLog[Decision]):
    """Decisions kept as compressed frames (``loadtest.model.history.log.RecordLog``) where
    ``frames`` says (in memory by default; the checker uses its history's store), which a
    reader decodes a frame at a time: holding a run's judged writes costs a fraction of
    holding them as objects."""

    def __init__(self, decisions: Iterable[Decision] = (), frames: FrameStores = list) -> None:
        super().__init__(_encode_decision, _decode_decision, decisions, frames)


class Decisions(Sequence[Decision]):
    """A run's decisions in the history's order, from logs that hold them in stretches,
    each stretch in that order, beside their positions: merged as they are read. A log's
    stretches are told by its positions (a stretch ends where they go back)."""

    def __init__(self, logs: Iterable[tuple[DecisionLog, Sequence[int]]] = ()) -> None:
        self._stretches: list[tuple[DecisionLog, Sequence[int], int, int]] = []
        for log, at in logs:
            start = 0
            for index in range(1, len(at)):
                if at[index] < at[index - 1]:
                    self._stretches.append((log, at, start, index))
                    start = index
            if len(log):
                self._stretches.append((log, at, start, len(log)))

    def __len__(self) -> int:
        return sum(stop - start for _, _, start, stop in self._stretches)

    def _rows(self) -> Iterator[tuple[Any, ...]]:
        """Every decision as the row it is kept as, in order."""
        if len(self._stretches) == 1:
            log, _, start, stop = self._stretches[0]
            yield from log.rows(start, stop)
            return
        streams = [
            zip(itertools.islice(at, start, stop), log.rows(start, stop), strict=True)
            for log, at, start, stop in self._stretches
        ]
        for _, row in heapq.merge(*streams, key=operator.itemgetter(0)):
            yield row

    def __iter__(self) -> Iterator[Decision]:
        for row in self._rows():
            yield _decode_decision(row)

    def outlines(self) -> Iterator[Outline]:
        """Each decision's ``Outline``, in order: a pass that builds no write."""
        for row in self._rows():
            started_ns, ended_ns, outcome = write_outline(row[0])
            yield Outline(started_ns, ended_ns, outcome, row[5], _ROLES[row[7]], row[8])

    def chosen(
        self, positions: Container[int], business_ids: Container[str | None]
    ) -> Iterator[tuple[int, Decision]]:
        """The decisions at ``positions`` or of ``business_ids``, with their positions, in
        order: a pass that decodes only those."""
        for position, row in enumerate(self._rows()):
            if position in positions or row[5] in business_ids:
                yield position, _decode_decision(row)

    @overload
    def __getitem__(self, index: int) -> Decision: ...

    @overload
    def __getitem__(self, index: slice) -> list[Decision]: ...

    def __getitem__(self, index: int | slice) -> Decision | list[Decision]:
        if isinstance(index, slice):
            return list(itertools.islice(self, *index.indices(len(self))))
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("decision index out of range")
        return next(itertools.islice(self, index, None))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # compared by value, as a list is


# --- effects beyond the table (judged by ``effects``) -------------------------------------


@dataclass(frozen=True, slots=True)
class Delivering:
    """One delivery a witness names: the invocation, the record it was on, how it ended."""

    request_id: str
    message_id: str
    receive_count: int
    outcome: str
    operation: str = ""
    """The effect's call, for a delivery that sent one ("" for a delivery that sent none)."""
    environment: int = 0
    started_ns: int = 0
    """When the effect's call started (for a delivery that sent none, the invocation)."""
    ended_ns: int = 0

    def to_json(self, start_ns: int = 0) -> dict[str, Any]:
        """As the report lists it: times in milliseconds since ``start_ns`` (the run's start)."""
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "message_id": self.message_id,
            "receive_count": self.receive_count,
            "outcome": self.outcome,
        }
        if self.operation:
            out["operation"] = self.operation
        out["environment"] = self.environment
        out["at_ms"] = round((self.started_ns - start_ns) / 1e6, 3)
        out["done_ms"] = round((self.ended_ns - start_ns) / 1e6, 3)
        return out


@dataclass(frozen=True, slots=True)
class EffectWitness:
    """The smallest evidence of one anomaly on one sink: the business id, what happened in
    words, the deliveries that did it (or, for a lost effect, the message's deliveries)."""

    anomaly: str
    """``duplicate``, ``conflicting`` or ``lost``."""
    business_id: str
    text: str
    """``o-1 published 2 times to orders``."""
    deliveries: tuple[Delivering, ...] = ()
    held: tuple[str, ...] = ()
    """What the sink held for it: keys, or payloads cut to a few dozen characters."""

    def to_json(self, start_ns: int = 0) -> dict[str, Any]:
        return {
            "anomaly": self.anomaly,
            "business_id": self.business_id,
            "text": self.text,
            "deliveries": [d.to_json(start_ns) for d in self.deliveries],
            "held": list(self.held),
        }


@dataclass(frozen=True)
class SinkEffects:
    """One sink's effects, judged."""

    sink: str
    """Its label in the scenario (``{topic:NAME}``), or the address an effect named."""
    kind: EffectKind
    address: str
    sent: int
    """Accepted entries the consumer sent to it."""
    delivered: int
    """What it held when read (for a sink nothing reads back, the accepted sends)."""
    duplicate: int
    conflicting: int
    lost: int
    deduplicated: int
    """Accepted sends the sink itself deduplicated (measured: sent minus delivered)."""
    deduplicated_by: str = ""
    """What it deduplicates by, in words ("" when nothing)."""
    delivery: Delivery = Delivery.EXACTLY_ONCE
    required: str = "optional"
    """``declared``, ``learned`` (every clean message reached it) or ``optional``."""
    read: bool = True
    """Whether its contents were read back (False: a function, or a sink the run did not read)."""
    complete: bool = True
    unidentified: int = 0
    """Entries in which no business id was found."""
    witnesses: tuple[EffectWitness, ...] = ()
    unstaged: int = 0
    """A bucket's accepted writes that the invocation which made them deleted again (a
    staging object copied to its final key): in ``sent``, neither delivered nor
    deduplicated."""

    def to_json(self, start_ns: int = 0) -> dict[str, Any]:
        """As the report lists it (``start_ns``: the run's start, its witnesses' times'
        origin)."""
        return {
            "sink": self.sink,
            "kind": self.kind.value,
            "address": self.address,
            "sent": self.sent,
            "delivered": self.delivered,
            "duplicate": self.duplicate,
            "conflicting": self.conflicting,
            "lost": self.lost,
            "deduplicated": self.deduplicated,
            "deduplicated_by": self.deduplicated_by,
            "delivery": self.delivery.value,
            "required": self.required,
            "read": self.read,
            "complete": self.complete,
            "unidentified": self.unidentified,
            "unstaged": self.unstaged,
            "witnesses": [w.to_json(start_ns) for w in self.witnesses],
        }


@dataclass(frozen=True)
class SinkLearned:
    """What the clean business ids of a judged run (each message delivered once, and that
    succeeded) showed of one sink: whether all of them reached it, and how many different
    entries one delivery of each sent there (0 when they differ)."""

    reached: bool
    entries: int

    def merged(self, other: SinkLearned) -> SinkLearned:
        """What two runs showed together: reached by both, the entries if they agree."""
        return SinkLearned(
            self.reached and other.reached,
            self.entries if self.entries == other.entries else 0,
        )


@dataclass(frozen=True)
class EffectsJudged:
    """Every sink's effects, and what they add to the run's counts and reasons."""

    sinks: tuple[SinkEffects, ...]
    sent: int
    delivered: int
    duplicate: int
    """Duplicates on exactly-once sinks (those that fail)."""
    conflicting: int
    lost: int
    inconclusive: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    learned: Mapping[str, SinkLearned] = field(default_factory=dict)
    """By sink (``KIND:NAME``, ``topic:orders``: two kinds may share a NAME), what this
    run's clean business ids showed (sinks with none left out)."""

    def witnesses(self, anomaly: str, *, failing_only: bool = True) -> list[EffectWitness]:
        return [
            w
            for s in self.sinks
            if not (
                failing_only and anomaly == "duplicate" and s.delivery is Delivery.AT_LEAST_ONCE
            )
            for w in s.witnesses
            if w.anomaly == anomaly
        ]


@dataclass(frozen=True)
class Complete:
    """What a complete outcome holds, learned from the outcomes where nothing failed."""

    names: frozenset[str] = frozenset()
    """The names (``details.stored_names``), besides the key's, every one stored values
    under."""
    details: bool = False
    """Every one carried its own message's details."""
    ends: Mapping[str, tuple[Any, frozenset[Any]]] = field(default_factory=dict)
    """By name: the value every one ended with there, and the other values such outcomes
    held there on the way (empty when none did)."""
    beside: frozenset[str] = frozenset()
    """The shapes of the keys of the items beside the outcome every such business id's
    deliveries changed (``id=customer#{customer}``)."""

    @property
    def says_anything(self) -> bool:
        return bool(
            self.names or self.details or self.beside or any(way for _, way in self.ends.values())
        )

    def merged(self, other: Complete) -> Complete:
        """What both learned: names both hold, details both carried, ends both agree on
        (with the values either saw on the way)."""
        ends = {
            name: (end, way | other.ends[name][1])
            for name, (end, way) in self.ends.items()
            if name in other.ends and other.ends[name][0] == end
        }
        return Complete(
            self.names & other.names,
            self.details and other.details,
            ends,
            self.beside & other.beside,
        )

    def describe(self) -> str:
        """What was learned, for a note: the names, and the values outcomes end with."""
        parts = sorted(self.names)
        parts += [
            f"{name} = {end}" for name, (end, way) in sorted(self.ends.items(), key=str) if way
        ]
        if self.details:
            parts.append("the message's details")
        return ", ".join(parts)


@dataclass(frozen=True)
class Check:
    counts: Counts
    verdict: Verdict
    reasons: tuple[str, ...]
    """Why the default verdict failed, one line each (empty when it did not)."""
    inconclusive: tuple[str, ...]
    """What the run could not observe, one line each."""
    decisions: Decisions = field(repr=False)
    """One per observed write, in the history's order (left out of the repr, which must
    stay short); ``check`` keeps them as ``Decisions``, read a frame at a time."""
    outcome: str
    """Where outcomes were found, in words."""
    templates: Mapping[str, Mapping[str, int | str]] = field(default_factory=dict)
    """Key templates seen: ``{template: {"role": ..., "writes": n}}``."""
    notes: tuple[str, ...] = ()
    complete: Complete | None = None
    """What every stored outcome of a business id where nothing failed held
    (``completeness.learned``); None when there was none."""
    effects: tuple[SinkEffects, ...] = ()
    """Each sink's effects, judged (empty for a run without sinks and without effects)."""
    effects_learned: Mapping[str, SinkLearned] = field(default_factory=dict)
    """By sink (``KIND:NAME``), what the run's clean business ids showed of it
    (``EffectsJudged``)."""


def verdict_of(
    reasons: Sequence[str],
    inconclusive: Sequence[str],
    *,
    failed_thresholds: bool = False,
    incomplete: bool = False,
) -> Verdict:
    """The one rule: fail on a reason; a failed threshold fails a complete run and leaves an
    incomplete one (interrupted, stopped early) inconclusive, as its expectation may not have
    had the time to be met; then inconclusive on anything not observed, or an incomplete run;
    else pass."""
    if reasons or (failed_thresholds and not incomplete):
        return Verdict.FAIL
    if failed_thresholds or inconclusive or incomplete:
        return Verdict.INCONCLUSIVE
    return Verdict.PASS

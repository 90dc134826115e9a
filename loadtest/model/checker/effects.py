"""The effects a consumer sends beyond its table, judged per sink: sent, delivered, duplicate,
conflicting and lost.

Owns the rules for effects (documented in docs/verdict-and-counts.md), from the invocations'
``effects`` (what the consumer sent, as observed), the end state's ``sinks`` (what each sink
really held, read back) and the scenario's ``[[effects]]`` entries:

1. **Which sink.** An effect belongs to the sink whose address it named (a topic's ARN, a
   queue's URL, a bus's, bucket's, state machine's or function's name or ARN); one that named
   none of the run's sinks (another function's ``Invoke``) is a sink of its own, named by its
   address, that nothing reads back: what it delivered is what it accepted.
2. **Whose effect.** The business id of an effect or of what a sink holds is found in its
   payload as it is in stored items (any leaf, inside nested maps and JSON strings, naming
   exactly one id that was sent), else in its key (an S3 object's, an execution's name), or
   where its ``[[effects]]`` entry says (``id``, ``id_pattern``). An entry with no business id
   leaves the run inconclusive, naming the sink and what to declare: never a guess.
3. **Duplicates** are counted from what the sink held when read: per business id, entries
   beyond the first (for a bucket, objects beyond the first: one key rewritten is one object).
   On an ``at-least-once`` sink they are reported, not failed.
4. **Conflicts**: per business id, an entry whose content differs from the first's (the
   leaves named as the messages' details, else the whole payload); for a bucket, every
   accepted write is compared, as an overwrite leaves only the last.
5. **Lost**: an acknowledged, non-poison message whose business id never reached a required
   sink. A sink is required when declared (``required = true``) or learned: every clean
   business id (each of its messages acknowledged after one delivery that succeeded) reached
   it, and one did. A sink that was not read to the end counts nothing lost.
6. **Deduplicated**: on a sink that deduplicates by itself (a FIFO deduplication id, an S3
   key, an execution name), accepted sends minus what it delivered.

Pure; it reads the invocations once and holds a few values per message and per effect.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.checker.details import leaf_name, leaves_of, named_id, plain
from loadtest.model.checker.verdict import Delivering, EffectsJudged, EffectWitness, SinkEffects
from loadtest.model.history.records import (
    EffectKind,
    EffectRecord,
    Invocation,
    InvocationOutcome,
    SentMessage,
    SinkContents,
)
from loadtest.model.scenario.effects import KEYED_KINDS, Delivery, EffectRule

WITNESS_LIMIT = 5
"""Witnesses kept per sink and anomaly (the first, by business id)."""

VERBS: Mapping[EffectKind, str] = {
    EffectKind.TOPIC: "published",
    EffectKind.QUEUE: "sent",
    EffectKind.BUS: "put",
    EffectKind.BUCKET: "written",
    EffectKind.STATE_MACHINE: "started",
    EffectKind.FUNCTION: "invoked",
}
"""How an effect reaches each kind of sink, in words."""

_NOT_SENT = frozenset({"S3.DeleteObject"})
"""Operations that remove from a sink: not an effect delivered (nor counted sent)."""


# --- finding business ids ----------------------------------------------------------------


def _parsed(text: str) -> Any:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return None
    return None


class _Ids:
    """Finds the business id an entry names, among those sent (``details.named_id``), or
    where its ``[[effects]]`` entry says."""

    def __init__(self, known: Iterable[str]) -> None:
        self.known = set(known)
        self.longest = max(map(len, self.known), default=0)

    def of(self, payload: str, key: str, rule: EffectRule | None) -> str | None:
        parsed = _parsed(payload)
        if rule is not None and rule.declares_id:
            return rule.id_of(parsed, payload, key)
        return named_id(
            plain(parsed) if parsed is not None else payload, key, self.known, self.longest
        )


# --- content: what a duplicate or a conflict is compared by -------------------------------


def _content(payload: str, names: frozenset[str]) -> Any:
    """What an entry says: the leaves named as its messages' details (``names``), when it
    holds any, else its whole payload, parsed."""
    parsed = _parsed(payload)
    if parsed is None:
        return payload
    leaves = leaves_of(plain(parsed))
    chosen = sorted(((leaf_name(p), repr(v)) for p, v in leaves if leaf_name(p) in names))
    if chosen:
        return tuple(chosen)
    return tuple(sorted((p, repr(v)) for p, v in leaves))


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- sinks -------------------------------------------------------------------------------

_TAIL = re.compile(r"[/:]")


def _tail(address: str) -> str:
    return _TAIL.split(address)[-1]


@dataclass
class _Group:
    """One sink while judged: its contents, and the effects sent to it."""

    name: str
    kind: EffectKind
    address: str
    contents: SinkContents | None = None
    effects: list[tuple[EffectRecord, Delivering]] = field(default_factory=list)


def _groups(sinks: Sequence[SinkContents]) -> tuple[list[_Group], Any]:
    groups = [_Group(s.name, s.kind, s.address, s) for s in sinks]
    exact = {(g.kind, g.address): g for g in groups}
    tails: dict[tuple[EffectKind, str], list[_Group]] = defaultdict(list)
    for g in groups:
        tails[(g.kind, _tail(g.address))].append(g)

    def group_of(effect: EffectRecord) -> _Group:
        found = exact.get((effect.kind, effect.sink))
        if found is None:
            near = tails.get((effect.kind, _tail(effect.sink)), [])
            found = near[0] if len(near) == 1 else None
        if found is None:
            found = exact[(effect.kind, effect.sink)] = _Group(
                effect.sink, effect.kind, effect.sink
            )
            groups.append(found)
        return found

    return groups, group_of


def _times(n: int) -> str:
    return "twice" if n == 2 else f"{n} times"


# --- the judge ---------------------------------------------------------------------------


def judge_effects(
    invocations: Iterable[Invocation],
    sinks: Sequence[SinkContents],
    sent: Iterable[SentMessage],
    acked: Iterable[str],
    rules: Sequence[EffectRule] = (),
    details: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    *,
    cut_short: bool = False,
) -> EffectsJudged | None:
    """Every sink's effects judged, or None for a run without sinks and without effects.

    ``acked``: the message ids acknowledged; ``details``: each business id's distinct
    details (``Messages.details_for``), whose leaf names say what content is compared by.
    """
    groups, group_of = _groups(sinks)
    deliveries: dict[str, list[Delivering]] = defaultdict(list)
    dirty: set[str] = set()
    for inv in invocations:
        failed = set(inv.failed_message_ids)
        outcome = inv.outcome.value
        for r in inv.records:
            deliveries[r.message_id].append(
                Delivering(
                    inv.request_id,
                    r.message_id,
                    r.receive_count,
                    outcome,
                    environment=inv.environment,
                    started_ns=inv.started_ns,
                    ended_ns=inv.ended_ns,
                )
            )
            if (
                inv.outcome is not InvocationOutcome.SUCCESS
                or r.message_id in failed
                or r.receive_count > 1
            ):
                dirty.add(r.message_id)
        receive = {r.message_id: r.receive_count for r in inv.records}
        for effect in inv.effects:
            if effect.operation in _NOT_SENT:
                continue
            record_id = effect.record_id or (
                inv.records[0].message_id if len(inv.records) == 1 else ""
            )
            group_of(effect).effects.append(
                (
                    effect,
                    Delivering(
                        inv.request_id,
                        record_id,
                        receive.get(record_id, 0),
                        outcome,
                        effect.operation,
                        inv.environment,
                        effect.started_ns,
                        effect.ended_ns,
                    ),
                )
            )
    if not groups:
        return None

    acked_ids = set(acked)
    messages = [m for m in sent if m.message_id is not None]
    # A poison message's id is an id too: an effect sent for it is its, never unknown.
    ids = _Ids(m.business_id for m in messages if m.business_id is not None)
    expected = [m for m in messages if m.message_id in acked_ids and not m.poison and m.business_id]
    by_id: dict[str, list[SentMessage]] = defaultdict(list)
    for m in messages:
        if m.business_id is not None and not m.poison:
            by_id[m.business_id].append(m)
    clean = {
        b
        for b, ms in by_id.items()
        if all(
            m.message_id in acked_ids and m.message_id in deliveries and m.message_id not in dirty
            for m in ms
        )
    }
    detail_names = {
        b: frozenset(leaf_name(p) for d in ds for p in d) for b, ds in (details or {}).items()
    }
    rule_of = {r.sink: r for r in rules}

    judged: list[SinkEffects] = []
    inconclusive: list[str] = []
    notes: list[str] = []
    for g in groups:
        rule = rule_of.get(g.name)
        one = _judge_sink(g, rule, ids, clean, expected, deliveries, detail_names)
        judged.append(one)
        verb = VERBS[g.kind]
        if one.unidentified:
            if rule is not None and rule.declares_id:
                declared = ", ".join(
                    f"{k} = {v!r}"
                    for k, v in (("id", rule.id), ("id_pattern", rule.id_pattern))
                    if v
                )
                inconclusive.append(
                    f"{one.unidentified} entr(ies) on sink {g.name!r} ({g.kind.value}) hold no "
                    f"business id where its [[effects]] entry says ({declared}): whose effects "
                    "they are is not known, so nothing is counted lost there"
                )
            else:
                inconclusive.append(
                    f"{one.unidentified} entr(ies) on sink {g.name!r} ({g.kind.value}) name "
                    "no business id that was sent: whose effects they are is not known, so "
                    "nothing is counted lost there; declare where the id is: "
                    f'[[effects]] sink = "{g.name}", id = "PATH" (a dotted path into the '
                    'payload, or "key")'
                )
        if not one.complete:
            notes.append(
                f"sink {g.name!r} ({g.kind.value}) was not read to the end: nothing is counted "
                "lost there"
            )
        if one.duplicate and one.delivery is Delivery.AT_LEAST_ONCE:
            notes.append(
                f"{one.duplicate} duplicate effect(s) {verb} to {g.name!r}, declared "
                "at-least-once (downstream deduplicates): reported, not failed"
            )
        if one.read and one.delivered > one.sent:
            notes.append(
                f"sink {g.name!r} holds {one.delivered} entr(ies) but the observer saw "
                f"{one.sent} accepted send(s) to it: the rest went through a client it does "
                "not hook; its counts are read from what the sink holds"
            )
        if one.read and not one.deduplicated_by and one.delivered < one.sent:
            notes.append(
                f"sink {g.name!r} holds {one.delivered} of the {one.sent} send(s) it accepted "
                "and says it deduplicates nothing: the rest never arrived where it was read"
            )
        if one.deduplicated:
            notes.append(
                f"sink {g.name!r} deduplicated {one.deduplicated} of {one.sent} accepted "
                f"send(s) itself ({one.deduplicated_by})"
            )
        if one.required == "learned":
            notes.append(
                f"sink {g.name!r} is required, learned from the run: every clean message reached it"
            )
        if rule is not None and rule.required and not one.read:
            notes.append(
                f"sink {g.name!r} is declared required but was not read back: what reached "
                "it is what the consumer sent"
            )
        if cut_short and one.lost:
            inconclusive.append(
                f"{one.lost} lost effect(s) on {g.name!r}, but the run was cut short: not judged"
            )
    lost = 0 if cut_short else sum(s.lost for s in judged)
    return EffectsJudged(
        sinks=tuple(judged),
        sent=sum(s.sent for s in judged),
        delivered=sum(s.delivered for s in judged),
        duplicate=sum(s.duplicate for s in judged if s.delivery is Delivery.EXACTLY_ONCE),
        conflicting=sum(s.conflicting for s in judged),
        lost=lost,
        inconclusive=tuple(inconclusive),
        notes=tuple(notes),
    )


def _judge_sink(
    g: _Group,
    rule: EffectRule | None,
    ids: _Ids,
    clean: set[str],
    expected: Sequence[SentMessage],
    deliveries: Mapping[str, Sequence[Delivering]],
    detail_names: Mapping[str, frozenset[str]],
) -> SinkEffects:
    verb = VERBS[g.kind]
    accepted = [(e, d) for e, d in g.effects if e.accepted]
    read = g.contents is not None
    unidentified = 0
    senders: dict[str, list[Delivering]] = defaultdict(list)
    sends: dict[str, list[tuple[str, str]]] = defaultdict(list)
    sent_content: dict[str, list[Any]] = defaultdict(list)
    for e, d in accepted:
        business_id = ids.of(e.payload, e.key, rule)
        if business_id is None:
            unidentified += 0 if read else 1
            continue
        senders[business_id].append(d)
        sends[business_id].append((e.payload, e.key))
        sent_content[business_id].append(
            _content(e.payload, detail_names.get(business_id, frozenset()))
        )
    # What the sink holds per business id: its entries (payload, key) in the order read.
    held: dict[str, list[tuple[str, str]]] = defaultdict(list)
    if read and g.contents is not None:
        for message in g.contents.messages:
            business_id = ids.of(message.payload, message.key, rule)
            if business_id is None:
                unidentified += 1
                continue
            held[business_id].append((message.payload, message.key))
        delivered = len(g.contents.messages)
    else:
        held.update(sends)
        delivered = len(accepted)

    witnesses: list[EffectWitness] = []
    duplicate = conflicting = 0
    keyed = g.kind is EffectKind.BUCKET
    for business_id in sorted(held):
        entries = held[business_id]
        copies = len({key for _, key in entries}) if keyed else len(entries)
        if copies > 1:
            duplicate += copies - 1
            witnesses.append(
                EffectWitness(
                    "duplicate",
                    business_id,
                    f"{business_id} {verb} {_times(copies)} to {g.name}",
                    tuple(senders.get(business_id, ())),
                    tuple(_short(key or payload) for payload, key in entries),
                )
            )
        names = detail_names.get(business_id, frozenset())
        if keyed or not read:
            contents = sent_content.get(business_id, [])
        else:
            contents = [_content(payload, names) for payload, _ in entries]
        other = sum(1 for c in contents[1:] if c != contents[0]) if contents else 0
        if other:
            conflicting += other
            witnesses.append(
                EffectWitness(
                    "conflicting",
                    business_id,
                    f"{business_id} {verb} to {g.name} with other content than its first "
                    f"({other} time(s))",
                    tuple(senders.get(business_id, ())),
                    tuple(_short(key or payload) for payload, key in entries),
                )
            )

    reached = set(held)
    complete = g.contents.complete if g.contents is not None else True
    declared = rule is not None and rule.required
    learned = not declared and bool(clean) and clean <= reached
    required = "declared" if declared else "learned" if learned else "optional"
    lost = 0
    if required != "optional" and complete and not unidentified:
        # Counted per message; one witness per business id, naming its messages.
        missing: dict[str, list[str]] = defaultdict(list)
        for m in expected:
            business_id, message_id = m.business_id or "", m.message_id or ""
            if business_id not in reached:
                lost += 1
                missing[business_id].append(message_id)
        for business_id, message_ids in missing.items():
            which = (
                f"message {message_ids[0]} acknowledged"
                if len(message_ids) == 1
                else f"messages {', '.join(message_ids)} acknowledged"
            )
            witnesses.append(
                EffectWitness(
                    "lost",
                    business_id,
                    f"{business_id} never {verb} to {g.name} ({which})",
                    tuple(d for m in message_ids for d in deliveries.get(m, ())),
                )
            )
    deduplicated = 0
    dedup_words = g.contents.deduplicated if g.contents is not None else ""
    if read and dedup_words:
        deduplicated = max(0, len(accepted) - delivered)
    kept: dict[str, int] = defaultdict(int)
    chosen = []
    for w in witnesses:
        if kept[w.anomaly] < WITNESS_LIMIT:
            kept[w.anomaly] += 1
            chosen.append(w)
    return SinkEffects(
        sink=g.name,
        kind=g.kind,
        address=g.address,
        sent=len(accepted),
        delivered=delivered,
        duplicate=duplicate,
        conflicting=conflicting,
        lost=lost,
        deduplicated=deduplicated,
        deduplicated_by=dedup_words,
        delivery=rule.delivery if rule is not None else Delivery.EXACTLY_ONCE,
        required=required,
        read=read,
        complete=complete,
        unidentified=unidentified,
        witnesses=tuple(chosen),
    )


__all__ = [
    "KEYED_KINDS",
    "VERBS",
    "WITNESS_LIMIT",
    "Delivering",
    "EffectWitness",
    "EffectsJudged",
    "SinkEffects",
    "judge_effects",
]

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
   payload, its message attributes and its SNS Subject as it is in stored items (any leaf,
   inside nested maps and JSON strings, naming exactly one id that was sent), else in its
   key (an S3 object's, an execution's name), or where its ``[[effects]]`` entry says (``id``,
   ``id_attribute``, ``id_pattern``). An entry with no business id leaves the run
   inconclusive, naming the sink and what to declare: never a guess.
3. **Duplicates** are counted from what the sink held when read: per business id, entries
   beyond those one delivery sends (for a bucket, objects beyond them: one key rewritten is
   one object). What one delivery sends for an id is its most distinct entries (payloads;
   for a bucket, keys) sent by an invocation that held one record of that id, or by one
   record of it, in calls of one entry each, in an invocation that held several and whose
   calls were marked on more than one record (a handler on each record in turn), at
   least one:
   a consumer that publishes two events per order sends two, and a copy announced again
   is a duplicate of them. On an ``at-least-once`` sink they are reported, not failed.
4. **Conflicts**: per business id, an entry whose content differs from the first's (the
   leaves named as the messages' details, else the whole payload, but only where the
   id's messages themselves carried different details: entries of identical copies that
   differ only in what the consumer makes up per send, an event id or a timestamp, do
   not conflict); where one delivery
   sends several, an entry whose content is none of those the delivery that sent the most
   said. For a bucket, every accepted write is compared, as an overwrite leaves only the
   last (by the same rule: an object rewritten with its own timestamp does not conflict).
   A bucket's copy within the bucket says what it copied (``_bucket_writes``), and a write
   its own invocation deleted again (a staging object) is left out of rules 3 to 5: no
   reader of the bucket is left with it (it is counted ``unstaged``).
5. **Lost**: an acknowledged, non-poison message whose business id never reached a required
   sink. A sink is required when declared (``required = true``) or learned: every clean
   business id (each of its messages acknowledged after one delivery that succeeded, none of
   whose entries a sink refused without holding it) reached it (the sink holds it, or its
   deliveries sent it there and it was taken away again), and one did. When one
   delivery of every clean id sent the same number of distinct entries there (two or more),
   an acknowledged message whose id holds fewer distinct entries lost an effect too: the
   crash between a consumer's two publishes. A sink that
   was not read to the end (a deadline, a queue's messages still delayed) counts nothing
   lost, and leaves the run inconclusive when it accepted sends the read did not reach.
6. **Deduplicated**: on a sink that deduplicates by itself (a FIFO deduplication id, an S3
   key, an execution name), accepted sends minus what it delivered.
7. **Counted only**: a sink declared ``delivery = "any"`` holds no order's outcome (an
   audit log, a summary per batch): its entries are counted (sent, delivered,
   deduplicated) and nothing else; no business id is looked for, and what it refused
   leaves an order's delivery clean.

Pure; it reads the invocations once and holds a few values per message and per effect.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.checker.details import leaf_name, leaves_of, named_id, plain
from loadtest.model.checker.left_work import Cut, unjudged_sink
from loadtest.model.checker.verdict import (
    Delivering,
    EffectsJudged,
    EffectWitness,
    SinkEffects,
    SinkLearned,
)
from loadtest.model.history.records import (
    EffectKind,
    EffectRecord,
    Invocation,
    InvocationOutcome,
    SentMessage,
    SinkContents,
)
from loadtest.model.scenario.effects import ATTRIBUTE_KINDS, KEYED_KINDS, Delivery, EffectRule

WITNESS_LIMIT = 5
"""Witnesses kept per sink and anomaly (the first, by business id)."""

VERBS: Mapping[EffectKind, str] = {
    EffectKind.TOPIC: "published to",
    EffectKind.QUEUE: "sent to",
    EffectKind.BUS: "put on",
    EffectKind.BUCKET: "written to",
    EffectKind.STATE_MACHINE: "started in",
    EffectKind.FUNCTION: "sent to",
    EffectKind.SOURCE: "sent back to",
    EffectKind.DEAD_LETTER: "parked on",
}
"""How an effect reaches each kind of sink, in words, before the sink's name ("o-1 put on
orders"; a function is sent what it is invoked with)."""

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

    def of(
        self,
        payload: str,
        key: str,
        rule: EffectRule | None,
        message_attributes: tuple[tuple[str, str], ...] = (),
        subject: str = "",
    ) -> str | None:
        parsed = _parsed(payload)
        if rule is not None and rule.declares_id:
            return rule.id_of(parsed, payload, key, message_attributes, subject)
        value = plain(parsed) if parsed is not None else payload
        if message_attributes or subject:
            # What a message carries beside its body is searched as its body is: an id
            # only in an attribute (orderId) or in an SNS Subject ("Order o-1 placed")
            # names it, two different ids name none.
            value = [value, dict(message_attributes), subject]
        return named_id(value, key, self.known, self.longest)


# --- content: what a duplicate or a conflict is compared by -------------------------------


def _content(payload: str, names: frozenset[str]) -> tuple[Any, bool]:
    """What an entry says: the leaves named as its messages' details (``names``), when it
    holds any, else its whole payload, parsed; and whether it was the details' leaves."""
    parsed = _parsed(payload)
    if parsed is None:
        return payload, False
    leaves = leaves_of(plain(parsed))
    chosen = sorted(((leaf_name(p), repr(v)) for p, v in leaves if leaf_name(p) in names))
    if chosen:
        return tuple(chosen), True
    return tuple(sorted((p, repr(v)) for p, v in leaves)), False


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
    positions: dict[str, int] = field(default_factory=dict)
    """Each call's place among its invocation's effect calls, by call id."""
    removed: dict[tuple[str, str], int] = field(default_factory=dict)
    """A bucket's keys an invocation deleted (accepted ``DeleteObject``), by (request id,
    key): the place of the last such call among the invocation's effect calls."""


def _groups(sinks: Sequence[SinkContents]) -> tuple[list[_Group], Any]:
    groups = [_Group(s.name, s.kind, s.address, s) for s in sinks]
    exact = {(g.kind, g.address): g for g in groups}
    tails: dict[tuple[EffectKind, str], list[_Group]] = defaultdict(list)
    for g in groups:
        tails[(g.kind, _tail(g.address))].append(g)

    def group_of(effect: EffectRecord, create: bool = True) -> _Group | None:
        found = exact.get((effect.kind, effect.sink))
        if found is None:
            near = tails.get((effect.kind, _tail(effect.sink)), [])
            found = near[0] if len(near) == 1 else None
        if found is None and create:
            found = exact[(effect.kind, effect.sink)] = _Group(
                effect.sink, effect.kind, effect.sink
            )
            groups.append(found)
        return found

    return groups, group_of


def _distinct(entries: Sequence[tuple[str, str]], keyed: bool) -> int:
    """How many different entries ``(payload, key)`` are (for a bucket, different keys)."""
    return len({key if keyed else payload for payload, key in entries})


def _times(n: int) -> str:
    return "twice" if n == 2 else f"{n} times"


def _refused(
    groups: Sequence[_Group],
    records_of: Mapping[str, Sequence[str]],
    whose: Callable[[_Group, EffectRecord], str | None],
    business_of: Mapping[str, str | None],
) -> set[str]:
    """The messages whose delivery had an entry refused (a ``Failed`` entry of a batch call,
    an error answer, no answer) that the sink does not hold: such a delivery did not send
    all it meant to, whatever the invocation answered, so it teaches nothing about what a
    complete delivery sends. A refusal of what the sink already holds (a start of an
    execution name it keeps) is the sink's own deduplication, not a failure.

    Whose delivery it was is read from the entry first (``whose``: the business id it
    names): the messages of that id its invocation held. A batch call sent after the
    handler's loop is marked on whichever record came last, so its mark names the
    delivery only for an entry that names no id its invocation held; an entry marked on
    no record either (a batch the observer could not tell apart) marks its whole
    invocation."""
    out: set[str] = set()
    for g in groups:
        refused = [(e, d) for e, d in g.effects if not e.accepted]
        if not refused:
            continue
        keyed = g.kind in KEYED_KINDS
        # What it holds: as read, or, for a sink nothing reads back, what it accepted.
        holds = (
            {m.key if keyed else m.payload for m in g.contents.messages}
            if g.contents is not None
            else {e.key if keyed else e.payload for e, _ in g.effects if e.accepted}
        )
        for e, d in refused:
            if (e.key if keyed else e.payload) in holds:
                continue
            records = records_of.get(d.request_id, ())
            business_id = whose(g, e)
            own = [m for m in records if business_id and business_of.get(m) == business_id]
            out.update(own or ([d.message_id] if d.message_id else records))
    return out


def _bucket_writes(g: _Group) -> tuple[dict[str, str], set[str]]:
    """A bucket's accepted writes as its readers see them.

    The first value gives, by call id, the bytes a ``CopyObject`` within the bucket copied:
    its own invocation's last write of the source key before it, else the bytes every
    ``PutObject`` of that key in the run wrote (when they all wrote the same); a copy whose
    source is not known keeps its source's name. The second holds the call ids of writes
    their own invocation deleted after making them (a staging object copied to its final
    key): what no reader of the bucket is left with, so it is neither what one delivery
    leaves nor a copy of an outcome.
    """
    writes = [(e, d) for e, d in g.effects if e.accepted]
    puts: dict[str, set[str]] = defaultdict(set)
    for e, _ in writes:
        if e.operation != "S3.CopyObject":
            puts[e.key].add(e.payload)
    copied: dict[str, str] = {}
    own: dict[tuple[str, str], str] = {}
    in_order = sorted(writes, key=lambda w: (w[1].request_id, g.positions.get(w[0].call_id, 0)))
    for e, d in in_order:
        content = e.payload
        prefix = f"{e.sink}/"
        if e.operation == "S3.CopyObject" and e.payload.startswith(prefix):
            source = e.payload.removeprefix(prefix).partition("?versionId=")[0]
            found = own.get((d.request_id, source))
            if found is None and len(puts.get(source, ())) == 1:
                found = next(iter(puts[source]))
            if found is not None:
                content = copied[e.call_id] = found
        own[(d.request_id, e.key)] = content
    unstaged = {
        e.call_id
        for e, d in writes
        if g.removed.get((d.request_id, e.key), -1) > g.positions.get(e.call_id, 0)
    }
    return copied, unstaged


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
    learned_before: Mapping[str, SinkLearned] | None = None,
    write_marks: Mapping[str, frozenset[str]] | None = None,
    cut_work: Sequence[Cut] = (),
) -> EffectsJudged | None:
    """Every sink's effects judged, or None for a run without sinks and without effects.

    ``acked``: the message ids acknowledged; ``details``: each business id's distinct
    details (``Messages.details_for``), whose leaf names say what content is compared by.
    ``learned_before``: by sink (``KIND:NAME``, ``topic:orders``), what the clean ids of
    runs judged before this one showed (explore's schedules that passed, merged): a run
    with no clean id of its own learns whether a sink is required, and what one delivery
    sends there, from it.
    ``write_marks``: by request id, the records an invocation's writes were marked on, for
    invocations given without their writes (``InvocationLog.without_writes``).
    ``cut_work``: the work the handler left running that never finished
    (``left_work.Unfinished.cut``): the messages it was started for are not clean, and a
    sink not known to be required says nothing of it (inconclusive).
    """
    groups, group_of = _groups(sinks)
    sent = list(sent)
    business_of = {m.message_id: m.business_id for m in sent if m.message_id is not None}
    deliveries: dict[str, list[Delivering]] = defaultdict(list)
    dirty: set[str] = set()
    # (request id, business id) of each invocation that held one record of that id: all it
    # sent for the id is what one delivery of it sends, whichever record a call is marked on.
    single: set[tuple[str, str]] = set()
    # Invocations holding copies of an id whose marks moved from record to record: each
    # record's own calls are what its delivery sent (see ``one_delivery``).
    marked: set[str] = set()
    records_of: dict[str, tuple[str, ...]] = {}
    # Accepted deletes (a bucket's DeleteObject): (the call, its invocation, its place there).
    removals: list[tuple[EffectRecord, str, int]] = []
    for inv in invocations:
        failed = set(inv.failed_message_ids)
        outcome = inv.outcome.value
        records_of[inv.request_id] = tuple(r.message_id for r in inv.records)
        held_ids: dict[str, int] = defaultdict(int)
        for r in inv.records:
            business_id = business_of.get(r.message_id)
            if business_id is not None:
                held_ids[business_id] += 1
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
        single.update((inv.request_id, b) for b, n in held_ids.items() if n == 1)
        if any(n > 1 for n in held_ids.values()):
            # A handler that reads every body first leaves every call marked on the last
            # record: marks on two records or more are a handler on each record in turn.
            marks = {w.record_id for w in inv.writes} | {e.record_id for e in inv.effects}
            marks |= (write_marks or {}).get(inv.request_id, frozenset())
            if len(marks & set(records_of[inv.request_id])) > 1:
                marked.add(inv.request_id)
        receive = {r.message_id: r.receive_count for r in inv.records}
        for position, effect in enumerate(inv.effects):
            if effect.kind in (EffectKind.SOURCE, EffectKind.DEAD_LETTER):
                continue  # work sent back to the function's own queue, or a record parked
                # on its dead-letter queue: delivered, or dead-lettered; not an effect
            if effect.operation in _NOT_SENT:
                if effect.accepted:
                    removals.append((effect, inv.request_id, position))
                continue
            record_id = effect.record_id or (
                inv.records[0].message_id if len(inv.records) == 1 else ""
            )
            group = group_of(effect)
            group.positions[effect.call_id] = position
            group.effects.append(
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
    # A delivery whose work never finished did not complete: nothing is learned from it.
    dirty.update(m for c in cut_work for m, _ in c.deliveries)
    for effect, request_id, position in removals:
        # A delete from a bucket nothing was written to is no sink of the run's.
        removed_from = group_of(effect, create=False)
        if removed_from is not None:
            removed_from.removed[(request_id, effect.key)] = position
    messages = [m for m in sent if m.message_id is not None]
    # A poison message's id is an id too: an effect sent for it is its, never unknown.
    ids = _Ids(m.business_id for m in messages if m.business_id is not None)
    # A label two kinds of sink share (a topic and a queue both "orders") is two sinks: an
    # entry is for the kind its label was declared with.
    rule_of = {(r.kind, r.sink): r for r in rules}

    def whose(g: _Group, e: EffectRecord) -> str | None:
        rule = rule_of.get((g.kind, g.name))
        return ids.of(e.payload, e.key, rule, e.message_attributes, e.subject)

    # What a sink that holds no order's outcome refused says nothing of an order's delivery.
    counted_only = {key for key, rule in rule_of.items() if rule.delivery is Delivery.ANY}
    judged_groups = [g for g in groups if (g.kind, g.name) not in counted_only]
    dirty |= _refused(judged_groups, records_of, whose, business_of)

    acked_ids = set(acked)
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
    # Ids whose messages carried more than one set of details (a conflict among the copies).
    varied = {b for b, ds in (details or {}).items() if len(ds) > 1}

    judged: list[SinkEffects] = []
    learned: dict[str, SinkLearned] = {}
    inconclusive: list[str] = []
    notes: list[str] = []

    def one_delivery(d: Delivering, business_id: str, one_entry: bool) -> str | None:
        """What names the one delivery of ``business_id`` a call was made by, when that is
        known: an invocation that held one record of the id, or, in one that held
        several, the record its trusted mark names, for a call of ``one_entry`` only;
        None when it is not."""
        if (d.request_id, business_id) in single:
            return d.request_id
        if one_entry and d.request_id in marked and business_of.get(d.message_id) == business_id:
            return f"{d.request_id}/{d.message_id}"
        return None

    for g in groups:
        rule = rule_of.get((g.kind, g.name))
        if rule is not None and rule.delivery is Delivery.ANY:
            counted = _counted(g)
            judged.append(counted)
            notes.append(
                f'sink {g.name!r} ({g.kind.value}) is declared delivery = "any": its '
                f"{counted.delivered} entr(ies) are counted, not judged per business id"
            )
            continue
        before = (learned_before or {}).get(f"{g.kind.value}:{g.name}")
        one, shown = _judge_sink(
            g, rule, ids, clean, expected, deliveries, detail_names, one_delivery, before, varied
        )
        if shown is not None:
            learned[f"{g.kind.value}:{g.name}"] = shown
        judged.append(one)
        verb = VERBS[g.kind]
        if one.unidentified:
            if rule is not None and rule.declares_id:
                declared = ", ".join(
                    f"{k} = {v!r}"
                    for k, v in (
                        ("id", rule.id),
                        ("id_attribute", rule.id_attribute),
                        ("id_pattern", rule.id_pattern),
                    )
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
                    + (
                        'payload), or id_attribute = "NAME" (a message attribute)'
                        if g.kind in ATTRIBUTE_KINDS
                        else 'payload, or "key")'
                    )
                )
        if not one.complete:
            delayed = g.contents.delayed if g.contents is not None else 0
            why = (
                f" ({delayed} message(s) still held back by the sender's DelaySeconds)"
                if delayed
                else ""
            )
            if one.sent > one.delivered:
                # Sends the read never reached may be copies: what it holds is not known.
                inconclusive.append(
                    f"sink {g.name!r} ({g.kind.value}) was not read to the end{why}: "
                    f"{one.delivered} of the {one.sent} send(s) it accepted were read, so its "
                    "duplicates are not all seen and nothing is counted lost there"
                )
            else:
                notes.append(
                    f"sink {g.name!r} ({g.kind.value}) was not read to the end{why}: nothing "
                    "is counted lost there"
                )
        if one.duplicate and one.delivery is Delivery.AT_LEAST_ONCE:
            notes.append(
                f"{one.duplicate} duplicate effect(s) {verb} {g.name!r}, declared "
                "at-least-once (downstream deduplicates): reported, not failed"
            )
        if one.read and one.delivered > one.sent:
            notes.append(
                f"sink {g.name!r} holds {one.delivered} entr(ies) but the observer saw "
                f"{one.sent} accepted send(s) to it: the rest went through a client it does "
                "not hook, or were sent by calls whose answer it never read (left to a thread "
                "that ran on while the environment was frozen or retired); its counts are "
                "read from what the sink holds"
            )
        if one.read and one.complete and not one.deduplicated_by and one.delivered < one.sent:
            notes.append(
                f"sink {g.name!r} holds {one.delivered} of the {one.sent} send(s) it accepted "
                "and says it deduplicates nothing: the rest never arrived where it was read"
            )
        if one.unstaged:
            notes.append(
                f"{one.unstaged} object(s) written to {g.name!r} were deleted again by the "
                "invocation that wrote them: neither delivered nor duplicates"
            )
        if one.deduplicated:
            notes.append(
                f"sink {g.name!r} deduplicated {one.deduplicated} of {one.sent} accepted "
                f"send(s) itself ({one.deduplicated_by})"
            )
        if one.required == "learned" and clean:
            notes.append(
                f"sink {g.name!r} is required, learned from the run: every clean message reached it"
            )
        elif one.required == "learned":
            notes.append(
                f"sink {g.name!r} is required, learned from the runs judged before: every "
                "clean message there reached it"
            )
        if rule is not None and rule.required and not one.read:
            notes.append(
                f"sink {g.name!r} is declared required but was not read back: what reached "
                "it is what the consumer sent"
            )
        if cut_work and one.required == "optional":
            inconclusive.append(unjudged_sink(g.name, g.kind.value, cut_work))
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
        learned=learned,
    )


def _counted(g: _Group) -> SinkEffects:
    """A sink declared ``delivery = "any"``: what was sent, held and deduplicated, measured
    as for any sink; no entry is anyone's, so none is a duplicate, a conflict or lost."""
    accepted = sum(1 for e, _ in g.effects if e.accepted)
    unstaged = _bucket_writes(g)[1] if g.kind is EffectKind.BUCKET else set()
    contents = g.contents
    delivered = len(contents.messages) if contents is not None else accepted
    deduplicated, dedup_words = _deduplicated(g, accepted - len(unstaged), delivered)
    return SinkEffects(
        sink=g.name,
        kind=g.kind,
        address=g.address,
        sent=accepted,
        delivered=delivered,
        duplicate=0,
        conflicting=0,
        lost=0,
        deduplicated=deduplicated,
        deduplicated_by=dedup_words,
        delivery=Delivery.ANY,
        read=contents is not None,
        complete=contents.complete if contents is not None else True,
        unstaged=len(unstaged),
    )


def _deduplicated(g: _Group, kept: int, delivered: int) -> tuple[int, str]:
    """What a sink that deduplicates by itself dropped, measured: the accepted sends it was
    left to hold (``kept``: its writer's own staging objects left out) less what it held;
    and what it deduplicates by, in words (0 and "" for any other sink)."""
    words = g.contents.deduplicated if g.contents is not None else ""
    return (max(0, kept - delivered) if words else 0), words


def _judge_sink(
    g: _Group,
    rule: EffectRule | None,
    ids: _Ids,
    clean: set[str],
    expected: Sequence[SentMessage],
    deliveries: Mapping[str, Sequence[Delivering]],
    detail_names: Mapping[str, frozenset[str]],
    one_delivery: Callable[[Delivering, str, bool], str | None],
    before: SinkLearned | None,
    varied: set[str],
) -> tuple[SinkEffects, SinkLearned | None]:
    """The sink judged, and what its clean ids showed (None when it has none)."""
    verb = VERBS[g.kind]
    accepted = [(e, d) for e, d in g.effects if e.accepted]
    # What the sink refused, by whose entry it was: a lost effect says so.
    refusals: dict[str, list[str]] = defaultdict(list)
    for e, _ in g.effects:
        if not e.accepted:
            refused_id = ids.of(e.payload, e.key, rule, e.message_attributes, e.subject)
            if refused_id is not None:
                refusals[refused_id].append(e.error_code or "refused")
    read = g.contents is not None
    keyed = g.kind is EffectKind.BUCKET
    unidentified = 0
    # Per business id, per delivery of it that is known apart (``one_delivery``): the
    # distinct entries sent, and what they say.
    by_delivery: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    one_says: dict[str, dict[str, set[Any]]] = defaultdict(lambda: defaultdict(set))
    senders: dict[str, list[Delivering]] = defaultdict(list)
    sends: dict[str, list[tuple[str, str]]] = defaultdict(list)
    sent_content: dict[str, list[tuple[Any, bool]]] = defaultdict(list)
    # A batch call (a PublishBatch, a SendMessageBatch sent after the handler's loop) may
    # carry several records' entries, whichever record it is marked on: only a call of one
    # entry is one record's.
    entries_of_call: dict[str, int] = defaultdict(int)
    for e, _ in g.effects:
        entries_of_call[e.call_id] += 1
    # A bucket's copies by what they copied; the staging objects their writer deleted, left out.
    copied, unstaged = _bucket_writes(g) if keyed else ({}, set())
    for e, d in accepted:
        if e.call_id in unstaged:
            continue
        payload = copied.get(e.call_id, e.payload)
        business_id = ids.of(payload, e.key, rule, e.message_attributes, e.subject)
        if business_id is None:
            unidentified += 0 if read else 1
            continue
        senders[business_id].append(d)
        sends[business_id].append((payload, e.key))
        content = _content(payload, detail_names.get(business_id, frozenset()))
        sent_content[business_id].append(content)
        delivery = one_delivery(d, business_id, entries_of_call[e.call_id] == 1)
        if delivery is not None:
            by_delivery[business_id][delivery].add(e.key if keyed else e.payload)
            one_says[business_id][delivery].add(content[0])
    # What the sink holds per business id: its entries (payload, key) in the order read.
    held: dict[str, list[tuple[str, str]]] = defaultdict(list)
    if read and g.contents is not None:
        for message in g.contents.messages:
            business_id = ids.of(
                message.payload, message.key, rule, message.message_attributes, message.subject
            )
            if business_id is None:
                unidentified += 1
                continue
            held[business_id].append((message.payload, message.key))
        delivered = len(g.contents.messages)
    else:
        held.update(sends)
        delivered = len(accepted)

    def sends_once(business_id: str) -> int:
        """The entries one delivery of ``business_id`` sends here (at least one)."""
        return max((len(e) for e in by_delivery.get(business_id, {}).values()), default=1)

    def says_once(business_id: str) -> set[Any]:
        """What the first delivery that sent the most entries for ``business_id`` said."""
        sets = by_delivery[business_id]
        most = max(sets, key=lambda delivery: len(sets[delivery]))
        return one_says[business_id][most]

    witnesses: list[EffectWitness] = []
    duplicate = conflicting = 0
    for business_id in sorted(held):
        entries = held[business_id]
        copies = len({key for _, key in entries}) if keyed else len(entries)
        once = sends_once(business_id)
        if copies > once:
            duplicate += copies - once
            done, to = verb.rsplit(" ", 1)
            text = f"{business_id} {done} {_times(copies)} {to} {g.name}"
            if once > 1:
                text += f" (one delivery of it sends {once})"
            witnesses.append(
                EffectWitness(
                    "duplicate",
                    business_id,
                    text,
                    tuple(senders.get(business_id, ())),
                    tuple(_short(key or payload) for payload, key in entries),
                )
            )
        names = detail_names.get(business_id, frozenset())
        if keyed or not read:
            said = sent_content.get(business_id, [])
        else:
            said = [_content(payload, names) for payload, _ in entries]
        contents = [content for content, _ in said]
        if (
            len(contents) > 1
            and business_id not in varied
            and not any(by_details for _, by_details in said)
        ):
            # Compared by whole payloads, but the copies said the same: what differs (an
            # event id, a timestamp; an object rewritten with its own processed_at) is the
            # consumer's own per send, not another outcome.
            contents = contents[:1]
        if once > 1:
            # Several entries make one delivery's effect: an entry conflicts when it says
            # what none of them says.
            delivery_said = says_once(business_id)
            other = sum(1 for c in contents if c not in delivery_said)
        else:
            other = sum(1 for c in contents[1:] if c != contents[0]) if contents else 0
        if other:
            conflicting += other
            witnesses.append(
                EffectWitness(
                    "conflicting",
                    business_id,
                    f"{business_id} {verb} {g.name} with other content than its first "
                    f"({other} time(s))",
                    tuple(senders.get(business_id, ())),
                    tuple(_short(key or payload) for payload, key in entries),
                )
            )

    reached = set(held)
    complete = g.contents.complete if g.contents is not None else True
    declared = rule is not None and rule.required
    # What one delivery of every clean id sends here, when they all agree (0: unknown).
    complete_sets = {sends_once(b) for b in clean if b in by_delivery}
    agreed = (
        next(iter(complete_sets)) if len(complete_sets) == 1 and clean <= set(by_delivery) else 0
    )
    # A clean id's deliveries reached the sink when it holds the id, or when they sent it
    # there and something took it away again (a copy deleting the receipt its original
    # wrote): either way the consumer's complete deliveries go there.
    shown = SinkLearned(clean <= reached | set(senders), agreed) if clean else None
    shown_or_before = before if shown is None else shown
    learned = not declared and shown_or_before is not None and shown_or_before.reached
    required = "declared" if declared else "learned" if learned else "optional"
    whole = max(1, shown_or_before.entries) if shown_or_before is not None else 1
    lost = 0
    if required != "optional" and complete and not unidentified:
        # Counted per message; one witness per business id, naming its messages.
        missing: dict[str, list[str]] = defaultdict(list)
        for m in expected:
            business_id, message_id = m.business_id or "", m.message_id or ""
            if business_id not in reached or _distinct(held[business_id], keyed) < whole:
                lost += 1
                missing[business_id].append(message_id)
        for business_id, message_ids in missing.items():
            which = (
                f"message {message_ids[0]} acknowledged"
                if len(message_ids) == 1
                else f"messages {', '.join(message_ids)} acknowledged"
            )
            if business_id in reached:
                text = (
                    f"{business_id} {verb} {g.name} {_distinct(held[business_id], keyed)} "
                    f"of the {whole} entries one delivery sends ({which})"
                )
            elif business_id in senders:
                text = f"{business_id} {verb} {g.name}, but no longer there when read ({which})"
            else:
                text = f"{business_id} never {verb} {g.name} ({which})"
            codes = refusals.get(business_id)
            if codes:
                text += (
                    f"; the sink refused {len(codes)} of its entries "
                    f"({', '.join(sorted(set(codes)))})"
                )
            witnesses.append(
                EffectWitness(
                    "lost",
                    business_id,
                    text,
                    tuple(d for m in message_ids for d in deliveries.get(m, ())),
                )
            )
    deduplicated, dedup_words = _deduplicated(g, len(accepted) - len(unstaged), delivered)
    kept: dict[str, int] = defaultdict(int)
    chosen = []
    for w in witnesses:
        if kept[w.anomaly] < WITNESS_LIMIT:
            kept[w.anomaly] += 1
            chosen.append(w)
    judged = SinkEffects(
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
        unstaged=len(unstaged),
    )
    return judged, shown


__all__ = [
    "KEYED_KINDS",
    "VERBS",
    "WITNESS_LIMIT",
    "Delivering",
    "EffectWitness",
    "EffectsJudged",
    "SinkEffects",
    "SinkLearned",
    "judge_effects",
]

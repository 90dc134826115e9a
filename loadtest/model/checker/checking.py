"""Judging one variant run: ``check``, from its history and end state to its ``Check``.

Owns running the steps the package's docstring lists, in that order, and step 1
itself (where outcomes live: ``_choose_model``, from the evidence the first pass
over the writes gathered); the other steps are the package's parts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from loadtest.model.checker.completeness import (
    complete_with,
    incomplete,
    judged_without_details,
    lacking,
    lacks_complete,
    learned,
    missing_beside,
)
from loadtest.model.checker.details import (
    carries,
    carries_id,
    varies_per_delivery,
)
from loadtest.model.checker.effects import EffectsJudged, SinkLearned, judge_effects
from loadtest.model.checker.exposure import exposure_reason
from loadtest.model.checker.harness import no_business_outcome, not_judged
from loadtest.model.checker.left_work import Cut, unfinished_note
from loadtest.model.checker.lost_updates import lost_updates, lost_updates_reason
from loadtest.model.checker.parts import Parts, carried_bits, judge_parts
from loadtest.model.checker.passes import Evidence, Judging, Model
from loadtest.model.checker.reasons import (
    cut_short_reasons,
    default_reasons,
    effect_reasons,
    inconclusive_reasons,
    repeated_reason,
)
from loadtest.model.checker.roles import Takeover, over_live_claims_note, unattributed_reason
from loadtest.model.checker.runtime_errors import sentences as runtime_error_sentences
from loadtest.model.checker.sent import ACKED, DEAD_LETTERED, POISON, Messages
from loadtest.model.checker.shared import overwritten
from loadtest.model.checker.survey import survey
from loadtest.model.checker.verdict import (
    Check,
    Complete,
    Counts,
    Decisions,
    duplicate_side_writes,
    verdict_of,
)
from loadtest.model.history.log import EndState, History, OutcomeKey, TypedItem, WriteOutcome
from loadtest.model.scenario.body import BodyShape
from loadtest.model.scenario.effects import EffectRule


def refused_side_writes(errors: Mapping[str, int]) -> str:
    """What to add when nothing was stored but the table refused writes whose key is not
    an outcome item's: most often the scenario's ``[outcome] key`` is not the key the
    handler writes under (the table is created with it, so every write lacks it)."""
    if not errors:
        return ""
    listed = ", ".join(f"{code} x{n}" for code, n in sorted(errors.items()))
    return (
        f"; the table refused {sum(errors.values())} other write(s) ({listed}): "
        "check that [outcome] key names the attributes the handler keys its items by"
    )


def _shared_model(evidence: Evidence, outcome_key: OutcomeKey) -> Model | None:
    """The aggregates' model, when the scenario declares it or, where no per-message key
    holds the outcomes, the writes show it: some item was changed on behalf of several
    business ids, the items that carry the messages' ids and details (if any) are such
    items, and every write of them is tied to the record it was made for (else the run
    is ambiguous, and says why)."""
    shared = evidence.shared
    items = shared.shared_items()
    listed = ", ".join(sorted(items)[:5]) + (", ..." if len(items) > 5 else "")
    what = (
        f"aggregates: {len(items)} item(s) changed on behalf of several messages ({listed}), "
        "judged per business id and item"
    )
    if outcome_key.shared:
        return Model("shared", "", f"{what}, as the scenario declares ([outcome] shared)", items)
    if outcome_key.declared or not shared.aggregated():
        return None
    if evidence.carriers and not set(evidence.carriers) <= shared.templates(items):
        return None  # outcomes are carried by items of their own: not aggregates
    untied = shared.untied(items)
    if untied:
        return Model(
            "ambiguous",
            "",
            f"no write matches the outcome key {outcome_key.describe()}; {len(items)} item(s) "
            f"({listed}) were changed on behalf of several messages, but {untied} write(s) of "
            "them could not be tied to the record they were made for, so they cannot be "
            "judged as aggregates. Run with batch_size = 1 ([consumer] batch_size), or read "
            "each record's body where it is processed; or declare where outcomes live in "
            "the scenario ([outcome] key, or [outcome] shared = true for aggregates)",
        )
    return Model(
        "shared",
        "",
        f"{what}; detected from the writes (no write matches the outcome key "
        f"{outcome_key.describe()}): declare [outcome] shared = true to make it the rule",
        items,
    )


def _choose_model(evidence: Evidence, templates: Iterable[str], outcome_key: OutcomeKey) -> Model:
    """Where outcomes live, from the evidence of the writes (``templates``: every key
    template written)."""
    declared = outcome_key.describe()
    carriers = evidence.carriers
    if outcome_key.shared:
        return _shared_model(evidence, outcome_key) or Model.key(outcome_key)
    if evidence.on_key and (evidence.key_carries or not carriers):
        return Model.key(outcome_key)
    shared = _shared_model(evidence, outcome_key)
    if shared is not None:
        return shared
    if len(carriers) == 1:
        (template,) = carriers
        how = "a key that changes per delivery" if varies_per_delivery(template) else "another key"
        return Model(
            "copies",
            template,
            f"outcomes stored under {how} ({template}), not under {declared}",
        )
    if not evidence.stored or (outcome_key.declared and not carriers):
        # Nothing stored, or nothing stored elsewhere that looks like an outcome where
        # the scenario said where outcomes live: its key stands, and what it lacks is lost.
        return Model.key(outcome_key)
    seen = ", ".join(sorted(templates)) or "none"
    why = (
        f"{len(carriers)} key templates carry the messages' ids and details"
        if carriers
        else "no item carries both a message's id and its details"
    )
    return Model(
        "ambiguous",
        "",
        f"no write matches the outcome key {declared} and {why}; key templates seen: {seen}. "
        "Declare where outcomes live in the scenario ([outcome] key, or [outcome] shared = "
        "true for aggregates)",
    )


def _final_items(
    model: Model,
    outcome_keys: Mapping[str, str],
    messages: Messages,
    table: Mapping[str, TypedItem],
) -> tuple[dict[str, list[TypedItem]], set[str]]:
    """Each business id's stored outcome items at the end, and their keys in the end state."""
    final: dict[str, list[TypedItem]] = {}
    stored: set[str] = set()
    if model.kind == "key":
        for canon, business_id in outcome_keys.items():
            item = table.get(canon)
            if item is not None:
                final[business_id] = [item]
                stored.add(canon)
    elif model.kind == "shared":
        # Which business ids each aggregate holds is known from the writes, once judged.
        stored = {k for k in table if k in model.items}
    elif model.kind == "copies":
        for stored_key, item in table.items():
            for business_id in messages.business_ids:
                if carries_id(item, {}, business_id) and any(
                    carries(item, d) for d in messages.details_for(business_id)
                ):
                    final.setdefault(business_id, []).append(item)
                    stored.add(stored_key)
    return final, stored


def check(
    history: History,
    end: EndState,
    outcome_key: OutcomeKey | None = None,
    *,
    cut_short: bool = False,
    body: BodyShape | None = None,
    expect_overlap: bool = False,
    learned_before: Mapping[str, Complete] | None = None,
    effects: Sequence[EffectRule] = (),
    effects_before: Mapping[str, SinkLearned] | None = None,
) -> Check:
    """Judge one variant run: its counts, decisions and verdict.

    ``cut_short``: the run ended before its workload was settled (interrupted, or its
    backend failed), so an absence (a message unsettled, an outcome missing from a
    partial end state, nothing stored yet) is not evidence: those counts leave the
    verdict inconclusive; writes and dead letters that happened still fail it.
    ``body``: where the messages' bodies carry their details (``body_shape`` of the
    scenario's workload); by default the flat ``{"id", ...}`` body.

    ``expect_overlap``: copies of one id were sent to race (the scenario's
    ``[expect] overlap``, true unless it says otherwise), so a run in which no two
    deliveries of an id overlapped (``exposure``) could not have shown the race and is
    inconclusive. The counts are measured either way.

    ``learned_before``: what a complete outcome held in runs judged before this one, by
    the model's description (``Check.outcome``): the ``Check.complete`` of each that
    passed, intersected; with this run's own, it judges the outcomes where something
    failed (``completeness``).

    ``effects``: the scenario's ``[[effects]]`` entries; what the consumer sent beyond the
    table is judged (``effects``) when the run has sinks or sent effects. ``effects_before``:
    by sink, what the clean ids of runs judged before showed (``Check.effects_learned`` of
    each that passed, merged), for a run with no clean id of its own.
    """
    outcome_key = outcome_key or OutcomeKey()
    messages = Messages(history.sent, body)
    outcome_keys = {outcome_key.canonical(outcome_key.key_for(b)): b for b in messages.business_ids}
    read = survey(history, messages.business_index)
    messages.settle(history.acks, history.dead_letters, read.parked)
    messages.keep_stored(read.stored_names)
    waiting = _resent_unsettled(history, read.resent, read.parked)
    """What the consumer sent to its own queue that was neither acknowledged nor
    dead-lettered: Lambda would still deliver it, so what it carries is not judged."""
    cut_short = cut_short or bool(waiting)

    def judging(model: Model, stored_outcomes: set[str]) -> Judging:
        # The key model is the most runs' answer: its pass also gathers the evidence for
        # the choice, and another model's reads the writes again.
        judging = Judging(
            model,
            outcome_key,
            outcome_keys,
            messages,
            stored_outcomes,
            Parts(read.accepted, history.frames),
            history.frames,
            read.failed_ids,
        )
        judging.run(history)
        return judging

    key_model = Model.key(outcome_key)
    final, stored_outcomes = _final_items(key_model, outcome_keys, messages, end.table_items)
    passed = judging(key_model, stored_outcomes)
    model = _choose_model(passed.evidence, passed.templates, outcome_key)
    if model.kind != "key":
        final, stored_outcomes = _final_items(model, outcome_keys, messages, end.table_items)
        passed = judging(model, stored_outcomes)
    shared = model.kind == "shared"
    # What a complete outcome holds, learned from the outcomes where nothing failed (and
    # the runs judged before): it judges the outcomes where something failed, and tells a
    # delivery that finished a failed one's half-written outcome from a duplicate write.
    own: Complete | None = None
    complete: Complete | None = None
    clean: set[str] = set()
    if not outcome_key.fields and model.kind in ("key", "copies"):
        clean = set(final) - read.failed_ids
        own = learned(
            final,
            clean,
            outcome_key.key_names,
            messages.details_for,
            passed.on_the_way,
            passed.beside,
        )
        complete = complete_with(own, (learned_before or {}).get(model.description))
    takeover = Takeover(
        frozenset(read.failed_deliveries),
        lambda item, details: lacks_complete(item, outcome_key, complete, details),
    )
    parts = judge_parts(
        passed.parts,
        messages,
        model.kind == "copies",
        history.frames,
        shared=shared,
        takeover=takeover,
    )
    untied = passed.evidence.shared.untied(model.items) if shared else 0
    """Writes of aggregates no record was tied to: whose change each was is unknown, so
    an id without one may still have had its outcome (nothing is judged lost)."""
    if shared:
        for business_id, changed_items in parts.changed.items():
            remaining = [end.table_items[k] for k in sorted(changed_items) if k in end.table_items]
            if remaining:
                final[business_id] = remaining

    # Which of each business id's details an item it stored carries, at any time.
    carried = parts.carried
    for business_id, items in final.items():
        carried[business_id] = carried.get(business_id, 0) | carried_bits(
            items, messages.details_for(business_id)
        )
    details_stored = any(carried.values())
    unfinished = incomplete(final, outcome_key)
    by_learned: Complete | None = None
    """What was learned, when it judged an outcome where something failed."""
    if complete is not None and len(clean) < len(final):
        by_learned = complete
        unfinished |= lacking(final, complete, clean, messages.details_for)

    replaced = lost_updates(history.invocations)
    """Changes of messages a write computed from a stale read replaced (any item)."""
    replaced_ids = {r.lost for r in replaced}
    replaced_counted: set[str] = set()
    without: dict[str, frozenset[str]] = {}
    """Business ids acknowledged without a change every complete delivery makes beside its
    outcome, and those changes."""

    def _lost(business_id: str, position: int) -> bool:
        """Whether an acknowledged message's outcome is gone or incomplete, or its own
        details (at ``position`` among its id's, -1: none) were never stored while
        others' were, or its change to an item was replaced by another message's write
        computed from a read made before it (a lost update)."""
        if business_id in replaced_ids:
            replaced_counted.add(business_id)
            return True
        missing = missing_beside(complete, clean, business_id, passed.beside)
        if missing:
            without.setdefault(business_id, missing)
            return True
        if shared:
            # An aggregate holds no message's details: its outcome is a change made for it.
            # Its change is gone when an item that listed it no longer does at the end.
            return (
                business_id not in parts.changed
                or business_id in unfinished
                or any(
                    overwritten(end.table_items.get(k), business_id)
                    for k in parts.listed.get(business_id, ())
                )
            )
        if business_id not in final or business_id in unfinished:
            return True
        return details_stored and position >= 0 and not carried.get(business_id, 0) >> position & 1

    # Each sent message, as settled: lost outcomes and unexpected dead letters.
    acked = dead_lettered = unsettled = lost = unexpected_dead = 0
    expected_outcomes = False
    business_ids = messages.business_ids
    sent_of = bytearray(len(business_ids))  # messages per business id, up to 2
    for business, position, flags in messages.each():
        if business >= 0 and not flags & POISON and sent_of[business] < 2:
            sent_of[business] += 1
        acked += bool(flags & ACKED)
        dead_lettered += bool(flags & DEAD_LETTERED)
        unsettled += not flags & (ACKED | DEAD_LETTERED)
        if business < 0 or flags & POISON:
            continue
        expected_outcomes = True
        business_id = business_ids[business]
        if (
            flags & ACKED
            and not flags & DEAD_LETTERED
            and model.kind != "ambiguous"
            and not untied
            and _lost(business_id, position)
        ):
            lost += 1
        if flags & DEAD_LETTERED and not (position >= 0 and len(messages.details_at(business)) > 1):
            # Not a resend with details that conflict with another message's.
            unexpected_dead += 1

    outcomes = passed.outcome_writes
    judged = parts.judged
    exposure = read.overlaps.exposure()
    cut_work = read.unfinished.cut()
    effected = _judged_effects(
        history,
        end,
        messages,
        effects,
        read.effects,
        cut_short,
        effects_before,
        read.write_marks,
        cut_work,
    )
    failed_deliveries = frozenset(read.failed_deliveries)
    repeated = sorted(
        read.side_changes.repeated(failed_deliveries)
        + passed.side_changes.repeated(failed_deliveries),
        key=lambda r: (r.business_id, r.table, r.key),
    )
    side_judged = bool(read.side_changes or passed.side_changes)
    counts = Counts(
        messages_sent=messages.count,
        distinct_ids=len(business_ids),
        deliveries=read.deliveries,
        redeliveries=read.redeliveries,
        writes_attempted=sum(outcomes.values()),
        writes_accepted=outcomes[WriteOutcome.ACCEPTED],
        writes_rejected=outcomes[WriteOutcome.REJECTED],
        writes_errored=outcomes[WriteOutcome.ERROR],
        writes_indeterminate=outcomes[WriteOutcome.INDETERMINATE],
        side_writes=passed.side_writes + read.side_items,
        noop_writes=judged.noop,
        duplicate_writes=judged.duplicate,
        conflicting_writes=judged.conflicting,
        lost_outcomes=lost,
        unexpected_dead_letters=unexpected_dead,
        acked=acked,
        dead_lettered=dead_lettered,
        handler_errors=read.handler_errors,
        unsettled=unsettled,
        send_failures=messages.failures,
        unobserved_calls=read.unobserved_calls,
        observer_errors=read.observer_errors,
        overlapping_ids=exposure.overlapping_ids,
        overlapping_deliveries=exposure.overlapping_deliveries,
        **(
            {}
            if effected is None
            else {
                "effects_sent": effected.sent,
                "effects_delivered": effected.delivered,
                "duplicate_effects": effected.duplicate,
                "conflicting_effects": effected.conflicting,
                "lost_effects": effected.lost,
            }
        ),
        duplicate_side_writes=duplicate_side_writes(repeated) if side_judged else None,
    )
    accepted_outcomes = outcomes[WriteOutcome.ACCEPTED] > 0
    nothing_stored = expected_outcomes and not accepted_outcomes and not final and not untied
    reasons = default_reasons(counts, timed_out=history.timed_out, cut_short=cut_short)
    if repeated:
        reasons.append(repeated_reason(repeated))
    if replaced_counted:
        reasons.append(lost_updates_reason([r for r in replaced if r.lost in replaced_counted]))
    if without:
        witness, missing = next(iter(without.items()))
        reasons.append(
            f"{len(without)} business id(s) acknowledged without a change every delivery "
            "where nothing failed made beside its outcome (e.g. "
            f"{witness}: no write of {', '.join(sorted(missing))})"
        )
    reasons.extend(runtime_error_sentences(read.runtime_errors, failing=True))
    inconclusive = inconclusive_reasons(counts, history)
    if nothing_stored and model.kind != "ambiguous":
        (inconclusive if cut_short else reasons).append(
            f"nothing was stored: no write of an outcome item ({model.description}) was accepted"
            + refused_side_writes(passed.side_errors)
        )
    if waiting:
        deadline = " (the run's deadline passed)" if history.timed_out else ""
        inconclusive.append(
            f"{len(waiting)} message(s) the consumer sent to the queue that feeds it (work "
            f"deferred, e.g. with DelaySeconds) were not processed when the run ended{deadline}: "
            "the outcomes they carry are not judged; raise [run] deadline_s past the delay"
        )
    if cut_short:
        inconclusive.extend(cut_short_reasons(counts))
    if model.kind == "ambiguous":
        inconclusive.append(model.description)
    if untied:
        inconclusive.append(
            f"{untied} write(s) of the aggregate items could not be tied to the record they "
            "were made for, so whose change each was is not known. Run with batch_size = 1 "
            "([consumer] batch_size), or read each record's body where it is processed"
        )
    unexposed = exposure_reason(exposure, sent_of.count(2), read.deliveries)
    if expect_overlap and unexposed is not None:
        inconclusive.append(unexposed)
    if judged.unattributed:
        inconclusive.append(unattributed_reason(judged.unattributed))
    # The run's table starts empty and only the consumer writes to it, so every outcome
    # item must come from a write of an invocation the observer recorded (accepted, or
    # one whose answer was an error or never came). One that did not was written by a
    # client the observer does not hook: the evidence is incomplete. (Other items may
    # come from the handler's cold start, whose writes belong to no delivery.)
    unexplained = sorted(passed.unexplained)
    if unexplained:
        inconclusive.append(
            f"{len(unexplained)} outcome item(s) in the table were stored by no write the "
            f"observer saw in an invocation (e.g. {unexplained[0]!r}): written after the "
            "handler returned, or by a client the observer does not hook, so writes may be "
            "missing from the counts"
        )
    notes = runtime_error_sentences(read.runtime_errors, failing=False)
    if cut_work:
        notes.append(unfinished_note(cut_work, read.unfinished.left))
    if read.resent and not waiting:
        notes.append(
            f"{len(read.resent)} message(s) the consumer sent to the queue that feeds it were "
            "delivered and processed; their deliveries count toward the business ids their "
            "bodies carry"
        )
    if shared:
        # Never a silent guess: the report says outcomes were judged as aggregates.
        notes.append(f"outcomes judged as {model.description}")
    if not details_stored and accepted_outcomes and model.kind not in ("ambiguous", "shared"):
        # An item that holds only its key would pass: the table cannot tell a finished
        # outcome from a half-written one, unless the scenario says what one holds.
        note, unjudged = judged_without_details(outcome_key, by_learned)
        notes.extend([note] if note else [])
        inconclusive.extend([unjudged] if unjudged else [])
    if judged.over_live_claims:
        notes.append(over_live_claims_note(judged.over_live_claims))
    if passed.unknown_after:
        notes.append(
            f"{passed.unknown_after} accepted write(s) left an item the observer could not "
            "compute (no old image): whether they changed the outcome is not known"
        )
    if nothing_stored and any(n for _, n in end.side_tables) and not cut_short:
        kept = default_reasons(
            dataclasses.replace(counts, lost_outcomes=0), timed_out=history.timed_out
        )
        first, later = no_business_outcome(reasons, kept, model.description, end.side_tables)
        reasons = [r for r in reasons if r in kept]
        inconclusive = [*first, *inconclusive, *later]
    if effected is not None:
        reasons.extend(effect_reasons(effected))
        inconclusive.extend(effected.inconclusive)
        notes.extend(effected.notes)
    gaps = read.gaps.reasons()
    if gaps:
        # Never blame the consumer for the harness: what failed may be the run's gap.
        inconclusive = [*gaps, *not_judged(reasons), *inconclusive]
        reasons = []
    verdict = verdict_of(reasons, inconclusive)
    decisions = Decisions([(passed.early, passed.early_at), (parts.log, parts.at)])
    return Check(
        counts=counts,
        verdict=verdict,
        reasons=tuple(reasons),
        inconclusive=tuple(inconclusive),
        decisions=decisions,
        outcome=model.description,
        templates=passed.templates,
        notes=tuple(notes),
        complete=own,
        effects=() if effected is None else effected.sinks,
        effects_learned={} if effected is None else effected.learned,
    )


def _resent_unsettled(history: History, resent: set[str], parked: set[str]) -> set[str]:
    """The messages of ``resent`` (sent by the consumer to its own queue) that were neither
    acknowledged nor dead-lettered (by the queue, or ``parked`` by the consumer)."""
    if not resent:
        return set()
    settled = {a.message_id for a in history.acks}
    settled.update(d.message_id for d in history.dead_letters)
    return resent - settled - parked


def _judged_effects(
    history: History,
    end: EndState,
    messages: Messages,
    rules: Sequence[EffectRule],
    observed: int,
    cut_short: bool,
    before: Mapping[str, SinkLearned] | None = None,
    write_marks: Mapping[str, frozenset[str]] | None = None,
    cut_work: Sequence[Cut] = (),
) -> EffectsJudged | None:
    """The effects judged, for a run with sinks or effects (else None: nothing is read)."""
    if not end.sinks and not observed:
        return None
    return judge_effects(
        history.invocations.without_writes(),  # the effects' judge reads no write
        end.sinks,
        history.sent,
        (ack.message_id for ack in history.acks),
        rules,
        {b: messages.details_for(b) for b in messages.business_ids},
        cut_short=cut_short,
        learned_before=before,
        write_marks=write_marks,
        cut_work=cut_work,
    )

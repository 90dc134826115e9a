"""The reasons of a judged run in words: why the default verdict fails, or cannot judge.

Owns the sentences a run's counts make (``default_reasons``: one per count that fails
the default verdict; ``effect_reasons`` and ``repeated_reason``, naming their witnesses;
``cut_short_reasons``: the absences a run cut short leaves unjudged; ``inconclusive_reasons``: what the observer could not see, naming the calls).
Which counts fail or leave a run inconclusive, and the rule that turns these reasons
into a verdict, are ``verdict``'s.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from loadtest.model.checker.verdict import (
    Counts,
    EffectsJudged,
    RepeatedChange,
    duplicate_side_writes,
)
from loadtest.model.history.log import History
from loadtest.model.history.records import UNJUDGED_REASON

NOT_JUDGED_WHEN_CUT_SHORT: tuple[str, ...] = (
    "lost_outcomes",
    "unsettled",
    "send_failures",
    "lost_effects",
)
"""Counts that show an absence (a message not settled, an outcome not in the end state, a
send not answered): when the run was cut short (interrupted, its backend failed) the
absence may be the cut's, so they leave the verdict inconclusive instead of failing it.
The other failing counts are writes and dead letters that happened: evidence either way."""


def default_reasons(counts: Counts, *, timed_out: bool, cut_short: bool = False) -> list[str]:
    """The default verdict's failures, one sentence each.

    With ``cut_short``, the counts in ``NOT_JUDGED_WHEN_CUT_SHORT`` are left out
    (``cut_short_reasons`` words them).
    """
    skipped = NOT_JUDGED_WHEN_CUT_SHORT if cut_short else ()
    return [text for name, text in _count_sentences(counts, timed_out) if name not in skipped]


def cut_short_reasons(counts: Counts) -> list[str]:
    """What a run cut short leaves unjudged, one sentence each (inconclusive reasons)."""
    return [
        f"{text}, but the run was cut short: not judged"
        for name, text in _count_sentences(counts, timed_out=False)
        if name in NOT_JUDGED_WHEN_CUT_SHORT
    ]


def _count_sentences(counts: Counts, timed_out: bool) -> list[tuple[str, str]]:
    sentences = []
    if counts.duplicate_writes:
        sentences.append(
            (
                "duplicate_writes",
                f"{counts.duplicate_writes} duplicate write(s): an outcome was written again",
            )
        )
    if counts.conflicting_writes:
        sentences.append(
            (
                "conflicting_writes",
                f"{counts.conflicting_writes} conflicting write(s): another delivery changed "
                "an outcome already stored",
            )
        )
    if counts.lost_outcomes:
        sentences.append(
            (
                "lost_outcomes",
                f"{counts.lost_outcomes} lost outcome(s): acknowledged, but the message's "
                "details were never stored",
            )
        )
    if counts.unexpected_dead_letters:
        sentences.append(
            (
                "unexpected_dead_letters",
                f"{counts.unexpected_dead_letters} unexpected dead letter(s): valid messages "
                "that never succeeded",
            )
        )
    if counts.unsettled:
        why = " (the run's deadline passed)" if timed_out else ""
        sentences.append(
            (
                "unsettled",
                f"{counts.unsettled} message(s) neither acknowledged nor dead-lettered{why}",
            )
        )
    if counts.send_failures:
        sentences.append(("send_failures", f"{counts.send_failures} message(s) could not be sent"))
    return sentences


_EFFECT_SENTENCES: tuple[tuple[str, str, str], ...] = (
    ("duplicate_effects", "duplicate", "duplicate effect(s)"),
    ("conflicting_effects", "conflicting", "conflicting effect(s)"),
    ("lost_effects", "lost", "lost effect(s)"),
)
_EFFECT_REASON = re.compile(r"\d+ (duplicate|conflicting|lost) effect\(s\)(?::|$)")
_SIDE_REASON = re.compile(r"\d+ duplicate side write\(s\):")
_WITNESSES_NAMED = 3
"""Witnesses an effect reason (or the repeated side changes' one) names before "and N more"."""


def effect_reasons(judged: EffectsJudged) -> list[str]:
    """The effects' failures, one sentence per count, naming its first witnesses:
    ``2 duplicate effect(s): o-1 published twice to orders``."""
    sentences = []
    totals = {
        "duplicate_effects": judged.duplicate,
        "conflicting_effects": judged.conflicting,
        "lost_effects": judged.lost,
    }
    for name, anomaly, what in _EFFECT_SENTENCES:
        total = totals[name]
        if not total:
            continue
        witnesses = judged.witnesses(anomaly)
        named = "; ".join(w.text for w in witnesses[:_WITNESSES_NAMED])
        more = len(witnesses) - _WITNESSES_NAMED
        tail = f" (and {more} more)" if more > 0 else ""
        sentences.append(f"{total} {what}: {named}{tail}" if named else f"{total} {what}")
    return sentences


def repeated_reason(repeated: Sequence[RepeatedChange]) -> str:
    """The repeated side changes' sentence (``side_changes``), naming its first witnesses:
    ``2 duplicate side write(s): ... (o-1 added to sku=widget in table stock in 3
    deliveries)``."""
    total = duplicate_side_writes(repeated)
    named = "; ".join(r.text for r in repeated[:_WITNESSES_NAMED])
    more = len(repeated) - _WITNESSES_NAMED
    tail = f" (and {more} more)" if more > 0 else ""
    return (
        f"{total} duplicate side write(s): a delivery added to an item beside its outcome "
        f"that another delivery for the same business id had added to ({named}{tail})"
    )


def effect_reason_count(reason: str) -> str | None:
    """The count an effect reason (``effect_reasons``) or the repeated side changes' reason
    (``repeated_reason``) words, or None for any other reason: what
    ``[verdict.allow]`` drops by name."""
    if _SIDE_REASON.match(reason):
        return "duplicate_side_writes"
    match = _EFFECT_REASON.match(reason)
    return None if match is None else f"{match.group(1)}_effects"


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
                f"{n} {operation} call(s) "
                f"{'not judged' if reason == UNJUDGED_REASON else 'not understood'}: {reason}"
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

"""The finding a report opens with: which variant wrote what twice, lost or conflicting.

Owns the one-line headline per run that the terminal summary and the HTML page
both lead with, read from the report model (the counts the checker measured and
the number of double-written ids it found), the id the page's headline names as
its example, and the split of a run's warnings into real warnings and the ones
the scenario marked as intended (``[lint] intended``), which are shown as neutral
notes. Pure: report models in, text out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.model.advice.lint import INTENDED
from loadtest.reports.model import RunModel

WRITE_COUNTS = ("duplicate_writes", "lost_outcomes", "conflicting_writes")
"""The counts the headline states, in the order it states them."""

EFFECT_COUNTS = ("duplicate_effects", "lost_effects", "conflicting_effects")
"""The effect counts the headline adds, for a run that has them, in its order."""


@dataclass(frozen=True)
class Headline:
    """One run's finding: what it wrote twice, lost or wrote in conflict."""

    variant: str
    text: str
    """E.g. ``125 ids written more than once (253 duplicate writes), 0 lost, 0 conflicting``."""
    level: str
    """``bad`` (the run failed), ``expected`` (it failed as its scenario expects),
    ``inconclusive``, or ``ok``."""
    witness: Mapping[str, Any] | None
    """The first double-written id's finding (its reads and writes), if any."""


def _plural(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def ids_written_twice(run: RunModel) -> int:
    """How many ids the checker found written more than once (all of them, not only those listed)."""
    cut = (run.cut or {}).get("findings")
    if isinstance(cut, Mapping) and isinstance(cut.get("total"), int):
        return int(cut["total"])
    return len(run.findings or [])


def headline_text(run: RunModel) -> str:
    """What the run wrote twice, lost or wrote in conflict, from its measured counts."""
    counts = run.counts
    duplicates, lost, conflicting = (int(counts.get(name) or 0) for name in WRITE_COUNTS)
    if not (duplicates or lost or conflicting):
        return "no id written twice, no outcome lost, none conflicting"
    ids = ids_written_twice(run)
    parts = []
    if duplicates:
        written = _plural(duplicates, "duplicate write", "duplicate writes")
        parts.append(
            f"{_plural(ids, 'id', 'ids')} written more than once ({written})" if ids else written
        )
    else:
        parts.append("no id written twice")
    parts.append(f"{lost:,} lost")
    parts.append(f"{conflicting:,} conflicting")
    return ", ".join(parts)


def effects_text(run: RunModel) -> str:
    """What the run's effects duplicated, lost or conflicted ("" for a run without them, or
    with none of those)."""
    counts = run.counts
    duplicates, lost, conflicting = (int(counts.get(name) or 0) for name in EFFECT_COUNTS)
    if not (duplicates or lost or conflicting):
        return ""
    return (
        f"effects: {_plural(duplicates, 'duplicate', 'duplicates')}, {lost:,} lost, "
        f"{conflicting:,} conflicting"
    )


def sink_line(entry: Mapping[str, Any]) -> str:
    """One sink's effects on one line: ``orders (topic): sent 6, delivered 6, duplicate 2,
    conflicting 0, lost 0`` (and what it deduplicated, how it is delivered, when notable)."""
    text = (
        f"{entry['sink']} ({entry['kind']}): sent {entry['sent']:,}, delivered "
        f"{entry['delivered']:,}, duplicate {entry['duplicate']:,}, conflicting "
        f"{entry['conflicting']:,}, lost {entry['lost']:,}"
    )
    extra = []
    if entry.get("deduplicated"):
        extra.append(f"deduplicated {entry['deduplicated']:,} by the sink")
    if entry.get("delivery") == "at-least-once":
        extra.append("at-least-once")
    elif entry.get("delivery") == "any":
        extra.append("counted, not judged per order")
    if entry.get("required") in ("declared", "learned"):
        extra.append(f"required ({entry['required']})")
    if not entry.get("read", True):
        extra.append("not read back")
    if not entry.get("complete", True):
        extra.append("not read to the end")
    return text + (f" [{'; '.join(extra)}]" if extra else "")


def _other_reason(run: RunModel) -> str:
    """Why a run failed or gave no verdict when its writes were all right: its first reason."""
    failed = [f"threshold {r.expr}" for r in run.thresholds if not r.ok]
    reasons = [*run.reasons, *run.inconclusive, *failed]
    if not reasons:
        return ""
    more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
    return f"; but {reasons[0]}{more}"


def _level(run: RunModel) -> str:
    verdict = run.verdict
    if verdict == "inconclusive":
        return "inconclusive"
    if verdict != "pass":
        return "bad"
    return "expected" if run.relaxed_reasons else "ok"


def headlines(runs: Sequence[RunModel], labels: Sequence[str]) -> list[Headline]:
    """Each run's headline, under the label the caller shows the run by."""
    out = []
    for run, label in zip(runs, labels, strict=True):
        findings = run.findings
        level = _level(run)
        clean = not any(run.counts.get(name) for name in (*WRITE_COUNTS, *EFFECT_COUNTS))
        effects = effects_text(run)
        out.append(
            Headline(
                variant=label,
                text=headline_text(run)
                + (f"; {effects}" if effects else "")
                + (_other_reason(run) if clean and level != "ok" else ""),
                level=level,
                witness=findings[0] if findings else None,
            )
        )
    return out


def is_intended(warning: str) -> bool:
    """Whether a run's warning is one its scenario breaks on purpose (``[lint] intended``)."""
    return warning.startswith(INTENDED)


def split_warnings(warnings: Sequence[str]) -> tuple[list[str], list[str]]:
    """(real warnings, intended ones), each in the run's order."""
    real = [w for w in warnings if not is_intended(w)]
    intended = [w for w in warnings if is_intended(w)]
    return real, intended


def page_warnings(runs: Sequence[RunModel], labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """(warnings, notes) for a page, each under the labels of the runs it concerns.

    The notes are the warnings the scenario marked as intended, without the
    mark (the page heads them with it); the warnings add a run cut short and
    cleanup problems. A text several runs share is listed once, under all their labels.
    """
    warnings: dict[str, list[str]] = {}
    notes: dict[str, list[str]] = {}
    for run, label in zip(runs, labels, strict=True):
        real, intended = split_warnings(run.warnings)
        if run.timed_out:
            real.append("the run hit its deadline before every message settled")
        real += [f"cleanup: {problem}" for problem in run.cleanup_problems]
        for text in real:
            warnings.setdefault(text, []).append(label)
        for text in intended:
            notes.setdefault(text.removeprefix(INTENDED).removeprefix(": "), []).append(label)
    return (
        [f"{', '.join(names)}: {text}" for text, names in warnings.items()],
        [f"{', '.join(names)}: {text}" for text, names in notes.items()],
    )


def witness(run: RunModel, race_ids: Sequence[str]) -> dict[str, Any] | None:
    """The double-written id a page's headline names for ``run``: the first of ``race_ids``
    (the ids the page draws, ``anchor`` naming its timeline) the run wrote twice, else the
    run's first finding; None when the run wrote nothing twice."""
    findings = {str(f.get("business_id")): f for f in run.findings}
    for index, business_id in enumerate(race_ids):
        if business_id in findings:
            times = findings[business_id].get("accepted_writes")
            return {"business_id": business_id, "times": times, "anchor": f"race-{index}"}
    for business_id, f in findings.items():
        return {"business_id": business_id, "times": f.get("accepted_writes"), "anchor": None}
    return None

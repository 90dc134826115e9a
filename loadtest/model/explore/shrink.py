"""Shrinking a failing schedule: fewest deliveries, then fewest faults, then fewest steps.

The smallest counterexample is the one a reader can follow. Like hypothesis,
the shrinker tries smaller candidates of the failing schedule and keeps any
that still fails, until none does; ``still_fails`` (the driver's) replays a
candidate and answers with the schedule that replay actually took (its token
normalised) and its number of steps, or None when the candidate passed.

Candidates, smallest first: one copy of the message fewer (each copy in turn:
its entries dropped, the later copies' renumbered), each fault removed, each non-default choice
removed (later decisions then take the default: fewer preemptions), and, for a schedule
that still switches deliveries more than once, each single switch instead. A switch
removed from before a fault shifts the decisions after it, so it is also tried with the
faults after it kept where they struck (``Candidate.anchors``: the same copy's same
turn to go), not at their old decision numbers: a crash that needs no switch before it
shrinks to the crash alone.

Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from loadtest.model.explore.points import Choice, Delivery, Fault, Schedule

Trace = tuple[int, ...]
"""The copy let go at each decision of a replay (decision index -> copy)."""

Replayed = tuple[Schedule, int, Trace]
"""A candidate that still fails: the schedule its replay took, its steps and its trace."""


@dataclass(frozen=True)
class Candidate:
    """A schedule to try, with faults placed by where they strike (``Replay``'s anchors)."""

    schedule: Schedule
    anchors: Mapping[tuple[int, int], Fault] = field(default_factory=dict)

    @property
    def copies(self) -> int:
        return self.schedule.copies


def size(schedule: Schedule, steps: int) -> tuple[int, int, int, int]:
    """What "smaller" means, in order: copies, faults, steps, non-default choices."""
    return (schedule.copies, schedule.faults, steps, len(schedule.entries))


def candidates(schedule: Schedule, trace: Trace = ()) -> Iterator[Schedule | Candidate]:
    for dropped in range(schedule.copies, 0, -1):
        if schedule.copies > 1:
            if trace:
                yield _without_copy(schedule, dropped, trace)
            yield _without_copy(schedule, dropped, ())
    for i, (_, choice) in enumerate(schedule.entries):
        if choice.fault is not None:
            yield Schedule(schedule.copies, schedule.entries[:i] + schedule.entries[i + 1 :])
    for i, (_, choice) in enumerate(schedule.entries):
        if choice.fault is None:
            yield Schedule(schedule.copies, schedule.entries[:i] + schedule.entries[i + 1 :])
    if trace:
        for i, (_, choice) in enumerate(schedule.entries):
            if choice.fault is None and any(c.fault for _, c in schedule.entries[i + 1 :]):
                yield _anchored_without(schedule, i, trace)
    faults = tuple(e for e in schedule.entries if e[1].fault is not None)
    if len(schedule.entries) - len(faults) >= 2:
        # Several switches that fail together may fail as one switch elsewhere: try each
        # single switch (decision, copy), earliest first.
        for decision in range(len(trace)):
            for copy in range(1, schedule.copies + 1):
                switch = (decision, Choice(Delivery(copy)))
                yield Schedule(
                    schedule.copies, tuple(sorted((*faults, switch), key=lambda e: e[0]))
                )


def _anchored_without(schedule: Schedule, removed: int, trace: Trace) -> Candidate:
    """The schedule without its ``removed`` switch, the faults after it kept at the turn of
    their copy they struck at (in the ``trace`` of its replay)."""
    kept: list[tuple[int, Choice]] = []
    anchors: dict[tuple[int, int], Fault] = {}
    for i, (decision, choice) in enumerate(schedule.entries):
        if i == removed:
            continue
        if i > removed and choice.fault is not None and decision < len(trace):
            copy = choice.delivery.copy
            anchors[(copy, trace[:decision].count(copy))] = choice.fault
        else:
            kept.append((decision, choice))
    return Candidate(Schedule(schedule.copies, tuple(kept)), anchors)


def _without_copy(schedule: Schedule, dropped: int, trace: Trace) -> Schedule:
    """The schedule with copy ``dropped`` left out: its entries dropped, later copies
    renumbered; with the ``trace`` of the schedule's replay, the decisions that let the
    dropped copy go are taken out of the numbering too (they do not happen without it)."""
    renumbered: dict[int, int] = {}
    if trace:
        kept = 0
        for decision, copy in enumerate(trace):
            renumbered[decision] = kept
            kept += copy != dropped
    entries = []
    for decision, choice in schedule.entries:
        copy = choice.delivery.copy
        if copy == dropped:
            continue
        if copy > dropped:
            choice = Choice(Delivery(copy - 1, choice.delivery.receive), choice.fault)
        entries.append((renumbered.get(decision, decision), choice))
    return Schedule(schedule.copies - 1, tuple(entries))


def shrink(
    schedule: Schedule,
    steps: int,
    trace: Trace,
    still_fails: Callable[[Schedule | Candidate], Replayed | None],
    *,
    max_tries: int = 500,
) -> tuple[Schedule, int, int]:
    """The smallest failing schedule reached from ``schedule``; also its steps and the tries made."""
    best, best_steps, best_trace, tries = schedule, steps, trace, 0
    improved = True
    while improved and tries < max_tries:
        improved = False
        for candidate in candidates(best, best_trace):
            if tries >= max_tries:
                break
            tries += 1
            replayed = still_fails(candidate)
            if replayed is not None and size(*replayed[:2]) < size(best, best_steps):
                best, best_steps, best_trace = replayed
                improved = True
                break
    return best, best_steps, tries

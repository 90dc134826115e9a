"""Distinct bugs among failing schedules: what makes two failing schedules one bug.

``loadtest explore`` keeps searching after the first failing schedule, so one bug is
usually found by many schedules (the same race, with the switch a few steps earlier or
later, or among other copies). A bug's **key** is what a reader would call the same
bug, read off the schedule and its judgement, never off decision numbers:

- its **kinds**: which failing counts were above zero (``duplicate_writes``,
  ``lost_outcomes``, ...) and its reasons with every number written ``N``;
- its **departure** from a passing schedule (the default one, which lets the running
  delivery go on and never faults, or the search's first): at the first decision where
  the schedule took another option, what it did there (``switch``: another delivery went first, or a
  fault's name) and what the delivery it departed from (the one switched away from,
  or the one the fault struck) had done before: each call it had run, as
  ``read``/``write`` and the items it touched. A switch away from a delivery that has
  run no call only reorders alike deliveries' starts: the next departure counts.

So a read-then-write race (a switch after the delivery's read) and a crash between two
writes (a crash after a read and a write) are two bugs even when both lose an outcome,
while the race found with delivery 2 or delivery 3 switched in is one. A crash at a
write's answer and one before the next write's call meet the same calls run: one bug; so
do a crash before a read that follows the write and one after it (a crash or a timeout
leaves out the reads after the delivery's last write).
The search keys each failing schedule by where it left the search's first schedule (its
schedules share that one's prefix, not the default's); the engine shrinks one schedule
of each key (to schedules ``within`` it, failing in a way in common: a schedule showing
two bugs at once shrinks to either, one bug never into another) and keys the shrunk schedule again, by where it leaves the default schedule.
Two shrunk schedules are one bug when they depart the same way and fail in a way in
common (``same_bug``), so schedules of one bug that departed differently before
shrinking, or whose race also changed the outcome once, meet there.

Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from loadtest.model.explore.points import Fault, Option, Point

Call = tuple[str, tuple[str, ...]]
"""A call a delivery ran: its access kind (``read`` or ``write``) and the items it touched."""

_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class Departure:
    """Where a schedule first leaves the default one (``departure``)."""

    kind: str
    """``switch`` (another delivery went first), a fault's name, or ``none`` (the default
    schedule itself)."""
    calls: tuple[Call, ...] = ()
    """The calls the delivery departed from had run before, in order."""

    @property
    def text(self) -> str:
        """In words: ``a crash after the delivery's read, write`` (an effect call by what
        it does: ``write, publish``)."""
        ran = ", ".join(_call_word(kind, keys) for kind, keys in self.calls) or "no call"
        if self.kind == "none":
            return "the default schedule"
        what = "another delivery going first" if self.kind == "switch" else f"a {self.kind}"
        return f"{what} after the delivery's {ran}" if self.calls else f"{what} before any call"


_EFFECT_WORDS = {
    "topic": "publish",
    "queue": "send",
    "bus": "event put",
    "bucket": "object write",
    "state_machine": "execution start",
    "function": "invoke",
}
"""What an effect call does, by the kind of sink its keys name (``topic:ARN``)."""


def _call_word(kind: str, keys: tuple[str, ...]) -> str:
    words = {_EFFECT_WORDS.get(key.partition(":")[0]) for key in keys}
    if len(words) == 1 and None not in words:
        return str(next(iter(words)))
    return kind


_STOPS = frozenset({Fault.CRASH.value, Fault.TIMEOUT.value})
"""Faults that end the delivery where they strike."""


def departure(
    taken: Sequence[tuple[int, Option, Option]],
    reference: Sequence[tuple[int, Option, Option]] | None = None,
) -> Departure:
    """The first decision of an execution (each decision: its index, the option taken, the
    default option) where it left the default schedule, as a ``Departure``; with
    ``reference`` (another execution's decisions, one that passed), where it left that one
    (the option ``reference`` took there stands for the default; once left, the default
    does).

    A switch away from a delivery that has run no call yet is passed over: it only lets
    the deliveries start in another order (the copies of a message are alike), and the
    bug lies where the schedule departs next. A crash or a timeout after the delivery's
    last writes and a read is the crash after those writes: the reads after its last
    write are left out."""
    diverged = reference is None
    for position, (_, option, default) in enumerate(taken):
        if not diverged:
            assert reference is not None
            if position < len(reference):
                if reference[position][1].choice == option.choice:
                    continue
                default = reference[position][1]
            diverged = True
        if option.choice == default.choice:
            continue
        if option.fault is not None:
            kind, departed = option.fault.value, option.delivery
        else:
            kind, departed = "switch", default.delivery
        calls = tuple(
            (earlier.access.kind, tuple(sorted(earlier.access.keys)))
            for _, earlier, _ in taken[:position]
            if earlier.delivery == departed
            and earlier.point is Point.CALL
            and earlier.fault is None
        )
        if kind == "switch" and not calls:
            continue
        if kind in _STOPS:
            # A delivery stopped after a read is stopped as just before it: a read changes
            # nothing, so the gap it leaves is where its last write left it.
            while calls and calls[-1][0] == "read":
                calls = calls[:-1]
        return Departure(kind, calls)
    return Departure("none")


def kinds(
    counts: Mapping[str, int], failing: Iterable[str], reasons: Iterable[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A failing schedule's kinds: the ``failing`` count names above zero in ``counts``, and
    its reasons with every number written ``N`` (a bug that wrote twice or three times,
    or an id ``order_s17`` fresh in each schedule, is the same)."""
    names = tuple(sorted(name for name in failing if counts.get(name, 0) > 0))
    said = tuple(sorted({_NUMBER.sub("N", reason) for reason in reasons}))
    return names, said


@dataclass(frozen=True, slots=True)
class BugKey:
    """What makes two failing schedules one bug: the same kinds, departing the same way."""

    counts: tuple[str, ...]
    reasons: tuple[str, ...]
    departure: Departure


def bug_key(
    taken: Sequence[tuple[int, Option, Option]],
    counts: Mapping[str, int],
    failing: Iterable[str],
    reasons: Iterable[str],
    reference: Sequence[tuple[int, Option, Option]] | None = None,
) -> BugKey:
    """A failing schedule's key (``reference``: as ``departure``)."""
    names, said = kinds(counts, failing, reasons)
    return BugKey(names, said, departure(taken, reference))


def same_bug(a: BugKey, b: BugKey) -> bool:
    """Whether two shrunk schedules are one bug: they leave the default schedule the same
    way and fail in a way in common (a race that wrote twice, and the same race whose
    second write also changed the outcome, are one; a race and a crash between two writes
    are two, as are races on different items)."""
    return a.departure == b.departure and within(a, b)


def within(key: BugKey, bug: BugKey) -> bool:
    """Whether a schedule of ``key`` still shows ``bug`` (a failing count in common, or,
    where neither has one, a reason): what its shrinking may keep. A schedule that shows
    two bugs at once may shrink to either; a lost outcome never shrinks into a
    duplicate write."""
    if key.counts or bug.counts:
        return bool(set(key.counts) & set(bug.counts))
    return bool(set(key.reasons) & set(bug.reasons))

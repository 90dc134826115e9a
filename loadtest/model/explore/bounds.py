"""The bound ``explore`` is asked to cover (``--bound SPEC``), and what a schedule token must fit.

A **bound spec** states the space of schedules in one place, comma-separated
``KEY=N``:

- ``deliveries=N``: the deliveries explored, all business ids together (each id gets
  ``N / ids`` copies of its message);
- ``ids=N``: the business ids explored together (1-4);
- a fault's name (``crash=1``, ``redeliver=1``, ...): that fault may strike at most ``N``
  times in one schedule;
- ``faults=N``: at most ``N`` faults of all kinds together in one schedule (default: the
  sum of the per-kind limits).

So ``deliveries=3,crash=1,redeliver=1`` is every schedule of 3 deliveries with at most
1 crash and 1 redelivery. ``check_schedule`` says whether a ``--schedule`` token fits the
deliveries and faults explored, naming the entry that does not.

Pure: parsing and checking only; bad input is an ``InputError`` (exit 2).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from loadtest.errors import InputError
from loadtest.model.explore.points import FAULT_LETTERS, Fault, Schedule, fault_count

MOST_DELIVERIES = 8
MOST_IDS = 4
_SIZES = ("deliveries", "ids", "faults")


@dataclass(frozen=True)
class BoundSpec:
    """A ``--bound`` as parsed: each size it sets (None: not set by the bound)."""

    deliveries: int | None = None
    ids: int | None = None
    limits: tuple[tuple[Fault, int], ...] = ()
    """Each fault offered and the most of it one schedule may take, in the spec's order."""
    total: int | None = None
    """``faults=N``: the most faults of all kinds one schedule may take."""

    @property
    def faults(self) -> tuple[Fault, ...]:
        """The faults offered (a limit of 0 offers none of that kind)."""
        return tuple(f for f, n in self.limits if n > 0)

    @property
    def max_faults(self) -> int:
        """The most faults of all kinds together in one schedule."""
        together = sum(n for _, n in self.limits)
        return together if self.total is None else self.total

    def copies(self, ids: int) -> int | None:
        """Copies of each business id's message, for ``ids`` ids (None: the scenario's)."""
        if self.deliveries is None:
            return None
        if self.deliveries % ids:
            raise InputError(
                f"bound {self.text!r}: deliveries={self.deliveries} is not a multiple of the "
                f"{ids} business id(s) explored (each id gets as many copies)"
            )
        return self.deliveries // ids

    @property
    def text(self) -> str:
        """The spec written back (its canonical order), as a replay line carries it."""
        parts = [f"{k}={v}" for k, v in (("deliveries", self.deliveries), ("ids", self.ids)) if v]
        parts += [f"{f.value}={n}" for f, n in self.limits]
        if self.total is not None:
            parts.append(f"faults={self.total}")
        return ",".join(parts)


def parse_bound(text: str) -> BoundSpec:
    """The bound a spec states; InputError naming the part that does not fit."""
    allowed = ", ".join([*_SIZES, *(f.value for f in Fault)])
    usage = f"a bound is KEY=N,... with KEY one of {allowed} (e.g. deliveries=3,crash=1)"
    values: dict[str, int] = {}
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            continue
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not (value.isascii() and value.isdigit()):
            raise InputError(f"bound {text!r}: {part!r} is not KEY=N: {usage}")
        if key not in _SIZES and key not in {f.value for f in Fault}:
            raise InputError(f"bound {text!r}: key {key!r} is not known; {usage}")
        if key in values:
            raise InputError(f"bound {text!r}: {key} is given twice")
        values[key] = int(value)
    if not values:
        raise InputError(f"bound {text!r} sets nothing: {usage}")
    deliveries, ids, total = (values.pop(k, None) for k in _SIZES)
    limits = tuple((Fault(k), n) for k, n in values.items())
    spec = BoundSpec(deliveries, ids, limits, total)
    if deliveries is not None and not 1 <= deliveries <= MOST_DELIVERIES:
        raise InputError(
            f"bound {text!r}: deliveries={deliveries} must be 1 to {MOST_DELIVERIES} "
            "(each delivery multiplies the schedules)"
        )
    if ids is not None and not 1 <= ids <= MOST_IDS:
        raise InputError(f"bound {text!r}: ids={ids} must be 1 to {MOST_IDS}")
    if total is not None:
        together = sum(n for _, n in limits)
        if not limits:
            raise InputError(
                f"bound {text!r}: faults={total} names no fault kind; give each kind its "
                "limit (crash=1,redeliver=1)"
            )
        if total > together:
            raise InputError(
                f"bound {text!r}: faults={total} is more than the kinds allow together ({together})"
            )
    return spec


def check_schedule(
    schedule: Schedule,
    *,
    deliveries: int | None,
    faults: Sequence[Fault],
    max_faults: int,
    limits: Sequence[tuple[Fault, int]] = (),
) -> None:
    """Whether ``schedule`` fits what is explored: its deliveries at most ``deliveries``
    (None: any), each delivery one of its own, each fault one offered and within the
    limits. InputError naming the entry that does not fit."""
    where = f"schedule {schedule.token!r}"
    if deliveries is not None and schedule.copies > deliveries:
        raise InputError(
            f"{where} has {schedule.copies} deliveries, more than the {deliveries} explored"
        )
    kinds: Counter[Fault] = Counter()
    for decision, choice in schedule.entries:
        entry = f"{decision}={choice.text}"
        if choice.delivery.copy > schedule.copies:
            raise InputError(
                f"{where}: entry {entry!r} names delivery {choice.delivery.copy}, but the "
                f"schedule has {schedule.copies} deliveries"
            )
        if choice.fault is None:
            continue
        if choice.fault not in faults:
            offered = ", ".join(f.value for f in faults) or "none"
            raise InputError(
                f"{where}: entry {entry!r} injects {choice.fault.value} "
                f"({FAULT_LETTERS[choice.fault]}), a fault not offered (faults offered: "
                f"{offered}; add it with --faults or --bound {choice.fault.value}=N)"
            )
        kinds[choice.fault] += 1
    if sum(kinds.values()) > max_faults:
        raise InputError(
            f"{where} injects {sum(kinds.values())} faults, more than the {max_faults} "
            "a schedule may take"
        )
    for fault, most in limits:
        if kinds[fault] > most:
            raise InputError(
                f"{where} injects {fault_count(fault, kinds[fault])}, more than the "
                f"{most} the bound allows"
            )

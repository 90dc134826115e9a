"""Controlled interleavings, the pure part: points, choices, schedule tokens and replay.

``loadtest explore`` runs a few deliveries of one message with a scheduler that
owns every **point** (invocation start, before each DynamoDB call, after its
answer, a sleep, before the acknowledgement). At each point the driver
(``loadtest.emulation.explore.explorer``) offers the scheduler its **options**: which
parked delivery goes next, and which fault, if any, happens to it there. This
module says what an option is, when two options commute, how a schedule is
written as a token and read back, and how a token is replayed exactly. The
search strategies are ``loadtest.model.explore.strategies``; shrinking a failing
schedule is ``loadtest.model.explore.shrink``.

A **schedule token** is ``COPIES:ENTRIES``: the number of copies of the
message, then, comma-separated, only the decisions where the schedule did not
take the default option, each ``DECISION=DELIVERY[FAULT]``. ``DELIVERY`` is
``COPY`` (its first receive) or ``COPY.RECEIVE``; ``FAULT`` is one letter of
``FAULT_LETTERS``. The **default** option continues the delivery that ran last
when it can, otherwise the first delivery in the order they were received,
without a fault. So ``2:`` runs two deliveries one after the other and ``2:1=2``
lets delivery 2 go at the second decision, while delivery 1 waits.

Pure: no clock, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from loadtest.errors import InputError
from loadtest.model.pickled import field_state


class Fault(StrEnum):
    """What the scheduler can do to a delivery at a point, instead of just letting it go."""

    CRASH = "crash"
    """The environment dies there; the message comes back after its visibility timeout."""
    TIMEOUT = "timeout"
    """The function timeout cuts the invocation off there (the clock passes its deadline)."""
    REDELIVER = "redeliver"
    """The message becomes visible again: a second environment receives it while this one works."""
    ACK_LOST = "ack-lost"
    """The handler succeeded but the acknowledgement is lost: the message comes back."""
    THROTTLE = "throttle"
    """The call is answered with ProvisionedThroughputExceededException instead of running."""
    CLOCK = "clock"
    """The clock jumps forward (a stall): locks and in-progress records may expire meanwhile."""


FAULT_LETTERS: dict[Fault, str] = {
    Fault.CRASH: "c",
    Fault.TIMEOUT: "t",
    Fault.REDELIVER: "r",
    Fault.ACK_LOST: "a",
    Fault.THROTTLE: "h",
    Fault.CLOCK: "j",
}
_LETTER_FAULTS = {letter: fault for fault, letter in FAULT_LETTERS.items()}


FAULT_NOUNS: dict[Fault, tuple[str, str]] = {
    Fault.CRASH: ("crash", "crashes"),
    Fault.TIMEOUT: ("timeout", "timeouts"),
    Fault.REDELIVER: ("redelivery", "redeliveries"),
    Fault.ACK_LOST: ("lost acknowledgement", "lost acknowledgements"),
    Fault.THROTTLE: ("throttled call", "throttled calls"),
    Fault.CLOCK: ("clock jump", "clock jumps"),
}
"""Each fault as a bound's sentence counts it (one, many)."""


def fault_count(fault: Fault, n: int) -> str:
    """``1 crash``, ``2 redeliveries``."""
    one, many = FAULT_NOUNS[fault]
    return f"{n} {one if n == 1 else many}"


class Point(StrEnum):
    """Where a delivery is parked, waiting for the scheduler."""

    START = "start"
    """The invocation is about to start (the handler has not run yet)."""
    CALL = "call"
    """Before a DynamoDB call: releasing it runs the call against the table."""
    ANSWER = "answer"
    """After a call's answer, before the handler sees it."""
    SLEEP = "sleep"
    """In a sleep: released once the virtual clock reaches its end."""
    END = "end"
    """The handler returned; the acknowledgement (or the retry) comes next."""


FAULTS_AT: dict[Point, tuple[Fault, ...]] = {
    Point.START: (),
    Point.CALL: (Fault.CRASH, Fault.TIMEOUT, Fault.REDELIVER, Fault.THROTTLE, Fault.CLOCK),
    Point.ANSWER: (Fault.CRASH, Fault.TIMEOUT, Fault.REDELIVER, Fault.CLOCK),
    Point.SLEEP: (Fault.CRASH, Fault.REDELIVER),
    Point.END: (Fault.ACK_LOST, Fault.REDELIVER),
}
"""The faults that mean something at each point. A crash at the start is just a later
delivery; a throttle needs a call; an acknowledgement is lost only at the end."""


def parse_faults(text: str | Sequence[str] | None) -> tuple[Fault, ...]:
    """``"crash,redeliver"`` (or a list of names) as faults; bad input names what is allowed."""
    if text is None:
        return ()
    items = text.split(",") if isinstance(text, str) else [p for t in text for p in t.split(",")]
    faults: list[Fault] = []
    for raw in items:
        name = raw.strip()
        if not name:
            continue
        try:
            fault = Fault(name)
        except ValueError:
            allowed = ", ".join(f.value for f in Fault)
            raise InputError(f"fault {name!r} is not known; allowed: {allowed}") from None
        if fault not in faults:
            faults.append(fault)
    return tuple(faults)


@field_state
@dataclass(frozen=True, slots=True)
class Access:
    """What releasing a delivery from its point touches, for deciding what commutes.

    ``kind`` is ``local`` (the handler's own code up to its next point: no table,
    and the clock does not move while it runs), ``read`` or ``write`` (one call on
    the items ``keys``; no keys: it may touch any item, a Query or a Scan), or
    ``time`` (the clock jumps: ordered with the handlers' own code, which may read the
    clock), or ``global`` (any other fault: it is ordered with everything).
    """

    kind: str
    keys: frozenset[str] = frozenset()


LOCAL = Access("local")
TIME = Access("time")
GLOBAL = Access("global")


def dependent(a: Access, b: Access) -> bool:
    """Whether two steps of different deliveries may not be swapped without changing the run.

    Two calls commute when they touch different items, or are both reads; the
    handler's own code commutes with everything but a clock jump (it touches no
    table, and otherwise the virtual clock only moves when no delivery can go);
    a clock jump commutes with calls; any other fault is ordered with everything.
    """
    if a.kind == "global" or b.kind == "global":
        return True
    if a.kind == "time" or b.kind == "time":
        # The clock moving is seen by code that reads it (a handler's own steps), not by a call.
        return {a.kind, b.kind} <= {"time", "local"}
    if a.kind == "local" or b.kind == "local":
        return False
    if a.kind == "read" and b.kind == "read":
        return False
    if not a.keys or not b.keys:
        return True
    return not a.keys.isdisjoint(b.keys)


@field_state
@dataclass(frozen=True, slots=True)
class Delivery:
    """One receive of one copy of the message: ``copy`` 1.., ``receive`` 1.. (1 = first)."""

    copy: int
    receive: int = 1

    @property
    def label(self) -> str:
        return str(self.copy) if self.receive == 1 else f"{self.copy}.{self.receive}"


@field_state
@dataclass(frozen=True, slots=True)
class Option:
    """One thing the scheduler may do at a decision: let ``delivery`` go from its point,
    with ``fault`` (None: no fault)."""

    delivery: Delivery
    point: Point
    access: Access
    fault: Fault | None = None

    @property
    def choice(self) -> Choice:
        return Choice(self.delivery, self.fault)


@field_state
@dataclass(frozen=True, slots=True)
class Choice:
    """The delivery and fault an option stands for, as a token keeps it."""

    delivery: Delivery
    fault: Fault | None = None

    @property
    def text(self) -> str:
        return self.delivery.label + (FAULT_LETTERS[self.fault] if self.fault else "")


def default_option(options: Sequence[Option], last: Delivery | None) -> Option:
    """The option a schedule takes unless it says otherwise: the delivery that ran last
    goes on, else the first one received; never a fault."""
    plain = [o for o in options if o.fault is None] or list(options)
    for option in plain:
        if option.delivery == last:
            return option
    return plain[0]


class Chooser(Protocol):
    """Picks one of the options offered at each decision; None abandons the execution."""

    def choose(
        self, decision: int, options: Sequence[Option], last: Delivery | None
    ) -> Option | None: ...


@dataclass(frozen=True)
class Schedule:
    """A replayable schedule: the copies and the non-default choices by decision index."""

    copies: int
    entries: tuple[tuple[int, Choice], ...] = ()

    @property
    def token(self) -> str:
        return f"{self.copies}:" + ",".join(f"{d}={c.text}" for d, c in self.entries)

    @property
    def faults(self) -> int:
        return sum(1 for _, c in self.entries if c.fault is not None)


_ENTRY = re.compile(r"^(\d+)=(\d+)(?:\.(\d+))?([a-z]?)$")


def parse_token(token: str) -> Schedule:
    """The schedule a token names; InputError (exit 2) on anything else."""
    text = token.strip()
    head, sep, body = text.partition(":")
    usage = "a schedule token is COPIES:DECISION=DELIVERY[FAULT],... as `explore` prints it"
    if not sep or not (head.isascii() and head.isdigit()) or int(head) < 1:
        raise InputError(f"schedule {token!r} is not valid: {usage}")
    entries: list[tuple[int, Choice]] = []
    for part in filter(None, body.split(",")):
        match = _ENTRY.match(part)
        if match is None or (match.group(4) and match.group(4) not in _LETTER_FAULTS):
            raise InputError(f"schedule {token!r}: entry {part!r} is not valid: {usage}")
        decision, copy, receive, letter = match.groups()
        delivery = Delivery(int(copy), int(receive) if receive else 1)
        if delivery.copy < 1 or delivery.receive < 1:
            raise InputError(f"schedule {token!r}: entry {part!r} names no delivery")
        if any(d == int(decision) for d, _ in entries):
            raise InputError(
                f"schedule {token!r}: entry {part!r} names decision {decision} again "
                "(a decision takes one option)"
            )
        entries.append(
            (int(decision), Choice(delivery, _LETTER_FAULTS[letter] if letter else None))
        )
    entries.sort(key=lambda e: e[0])
    return Schedule(int(head), tuple(entries))


def schedule_of(copies: int, taken: Sequence[tuple[int, Option, Option]]) -> Schedule:
    """The token of an execution: each decision's (index, taken option, default option)."""
    return Schedule(
        copies, tuple((d, option.choice) for d, option, default in taken if option != default)
    )


class Replay:
    """Follows a schedule: its entries where they name an option on offer, the default elsewhere.

    An entry that names no option on offer (a shrunk schedule that no longer
    reaches it) is passed over: the replay of a token a run printed is exact, a
    candidate's replay is just another schedule.
    """

    def __init__(
        self, schedule: Schedule, anchors: Mapping[tuple[int, int], Fault] | None = None
    ) -> None:
        self.entries = dict(schedule.entries)
        self.anchors = dict(anchors or {})
        """Faults placed by where they strike, not by decision: (copy, n) strikes the
        copy's deliveries at the n-th decision that lets one of them go (a shrinking
        candidate whose earlier switches were removed keeps its faults in place)."""
        self._went: dict[int, int] = {}
        self.reached = -1
        """The last decision the execution reached."""
        self.missed: list[tuple[int, Choice, tuple[Choice, ...]]] = []
        """Entries that named no option on offer: the decision, its choice, what was offered."""

    def choose(
        self, decision: int, options: Sequence[Option], last: Delivery | None
    ) -> Option | None:
        self.reached = max(self.reached, decision)
        chosen = self._entry(decision, options) or default_option(options, last)
        if self.anchors:
            copy = chosen.delivery.copy
            went = self._went.get(copy, 0)
            self._went[copy] = went + 1
            fault = self.anchors.get((copy, went))
            struck = [o for o in options if o.delivery == chosen.delivery and o.fault == fault]
            if fault is not None and struck:
                return struck[0]
        return chosen

    def _entry(self, decision: int, options: Sequence[Option]) -> Option | None:
        wanted = self.entries.get(decision)
        if wanted is None:
            return None
        for option in options:
            if option.choice == wanted:
                return option
        self.missed.append((decision, wanted, tuple(o.choice for o in options)))
        return None

    def unmatched(self) -> str | None:
        """Why the execution was not the schedule's (an entry named no option on offer, or
        came after the last decision), in words; None: every entry was taken."""
        if self.missed:
            decision, wanted, offered = self.missed[0]
            on_offer = ", ".join(c.text for c in offered) or "nothing"
            return (
                f"entry '{decision}={wanted.text}' names no option of decision {decision} "
                f"(offered there: {on_offer})"
            )
        beyond = [(d, c) for d, c in self.entries.items() if d > self.reached]
        if beyond:
            decision, wanted = beyond[0]
            return (
                f"entry '{decision}={wanted.text}' comes after the last decision "
                f"({self.reached}) of the schedule's steps"
            )
        return None


STOPS = ("space", "budget", "time_budget", "first_failure", "unscheduled_call")
"""Why a search stopped: it covered its space (or ran its one schedule), ran its budget of
schedules, ran out of its time budget, found a failing schedule (asked to stop at the
first), or met a call it cannot schedule (so the space it searched is not the whole
space)."""


def stopped_by(
    schedules_run: int, budget: int, elapsed_s: float, time_budget_s: float
) -> str | None:
    """Whether a search stops before its next schedule, and why: ``budget`` once
    ``budget`` schedules ran, ``time_budget`` once ``time_budget_s`` seconds passed; None:
    run the next one. Checked between schedules, so the time budget is passed by at most
    one schedule's time; the first schedule always runs, so there is a judged one to answer
    with even when setting up took the whole time budget."""
    if schedules_run >= budget:
        return "budget"
    if schedules_run > 0 and elapsed_s >= time_budget_s:
        return "time_budget"
    return None


@dataclass(frozen=True)
class Bound:
    """What a search covered: the deliveries, the faults it offered, how many schedules it
    ran, whether that was the whole space within those, and why it stopped."""

    deliveries: int
    ids: tuple[str, ...]
    faults: tuple[Fault, ...]
    max_faults: int
    strategy: str
    schedules: int
    exhaustive: bool
    stopped_by: str
    failed: int = 0
    budget: int = 0
    time_budget_s: float = 0.0
    pct_depth: int | None = None
    pct_deliveries: int | None = None
    """n: the most deliveries PCT saw in one schedule."""
    pct_steps: int | None = None
    """k: the longest schedule PCT saw, in decisions."""
    limits: tuple[tuple[Fault, int], ...] = ()
    """The most of each fault kind one schedule may take, as ``--bound`` set them (empty:
    ``max_faults`` bounds all kinds together)."""

    @property
    def pct_probability(self) -> float | None:
        """PCT's lower bound, per schedule, on finding a bug of depth d: 1/(n*k^(d-1))."""
        if self.pct_depth is None or self.pct_deliveries is None or self.pct_steps is None:
            return None
        return 1.0 / float(self.pct_deliveries * self.pct_steps ** (self.pct_depth - 1))

    def to_dict(self) -> dict[str, object]:
        return {
            "deliveries": self.deliveries,
            "ids": list(self.ids),
            "faults": {f.value: n for f, n in self.limits if n > 0}
            if self.limits
            else {f.value: self.max_faults for f in self.faults},
            "max_faults": self.max_faults if self.faults else 0,
            "strategy": self.strategy,
            "schedules": self.schedules,
            "exhaustive": self.exhaustive,
            "stopped_by": self.stopped_by,
            "pct": None
            if self.pct_probability is None
            else {
                "depth": self.pct_depth,
                "n": self.pct_deliveries,
                "k": self.pct_steps,
                "probability": float(f"{self.pct_probability:.3g}"),
            },
            "sentence": self.sentence,
        }

    @property
    def sentence(self) -> str:
        """The bound in words, as the terminal and the HTML report state it."""
        what = f"{self.deliveries} deliveries of {', '.join(self.ids)}"
        if self.limits and self.faults:
            each = ", ".join(fault_count(f, n) for f, n in self.limits if n > 0)
            together = sum(n for _, n in self.limits)
            what += f" with at most {each} per schedule"
            if self.max_faults < together:
                what += f" ({self.max_faults} fault(s) in all)"
        elif self.faults:
            names = ", ".join(f.value for f in self.faults)
            what += f" with at most {self.max_faults} fault(s) per schedule ({names})"
        else:
            what += " without faults"
        plural = "schedule" if self.schedules == 1 else "schedules"
        outcome = f"{self.failed} failed" if self.failed else "no failure"
        if self.strategy == "replay":
            return f"the one schedule given, of {what}: {outcome}"
        if self.exhaustive:
            return f"every schedule of {what}: {self.schedules} {plural}, {outcome}"
        stop = {
            "space": "not every schedule: some ran differently when replayed (nondeterministic)",
            "budget": f"not every schedule: stopped by the budget of {self.budget} schedules",
            "time_budget": f"not every schedule: stopped by the time budget of "
            f"{self.time_budget_s:g} s",
            "first_failure": "stopped at the first failure",
            "unscheduled_call": "not every schedule: a call explore cannot schedule fell "
            "wherever it fell",
        }[self.stopped_by]
        if self.strategy == "pct":
            stop = stop.replace("not every schedule: ", "")
            p = self.pct_probability
            odds = (
                ""
                if p is None
                else f"; a bug of depth {self.pct_depth} is found with probability at least "
                f"1/(n*k^(d-1)) = 1/({self.pct_deliveries}*{self.pct_steps}^"
                f"{(self.pct_depth or 1) - 1}) = {p:.2e} per schedule "
                f"(n={self.pct_deliveries} deliveries, k={self.pct_steps} steps, "
                f"d={self.pct_depth})"
            )
            return f"{self.schedules} PCT {plural} of {what}, {stop}: {outcome}{odds}"
        return f"{self.schedules} {plural} of {what}, {stop}: {outcome}"

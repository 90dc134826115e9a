"""The search strategies of ``explore``: exhaustive (stateless DFS) and PCT.

Each strategy hands the driver one ``Chooser`` per execution (schedule) and
learns from it; neither runs anything itself.

**Exhaustive** is a depth-first search over the decisions of an execution,
re-running the schedule from the start for each branch (stateless, as
CHESS and Shuttle do). Two reductions keep it small without losing an
outcome:

- *The handler's own code first.* When a delivery is parked at a point from
  which it will run only its own code (its start, after an answer, after its
  end), that step commutes with every other delivery's, so only that
  delivery's options (its plain step and its faults there) are explored at
  that decision: a persistent set of one delivery. Its own code may read the
  clock, so this holds only while no fault can move the clock between two
  points (``clock``, ``timeout``): with those, every order of the handlers'
  own steps against the clock's moves is explored (the sleep sets still
  merge the orders that differ only in steps that commute).
- *Sleep sets* (Godefroid 1996). After the branch that let option ``a`` go
  first, a sibling branch that lets ``b`` go first keeps ``a`` asleep for as
  long as the steps taken commute with it (calls on other items, reads of the
  same item, the handler's own code): orders that differ only in commuting
  steps are explored once.

When the search ends without reaching its budget, every distinct order of
the dependent steps, and every fault within ``max_faults`` at each point,
was run: ``covered``.

*Subtrees, for several processes.* ``split`` hands away one untried branch of the
shallowest decision that has one (the search will not run it), as the stack of
decisions that leads to it; ``Exhaustive.subtree`` searches that branch alone. A
branch's sleep set depends only on which siblings come before it in the candidates'
order, never on when they ran, so the searches of a split space run together cover
the same schedules as one search does. ``path`` places a schedule in the one search's
order (the candidates' indices along it), so their schedules can be put back in it.

**Per-kind limits.** Both strategies take ``limits`` (a fault and the most of it one
schedule may take, as ``--bound crash=1,redeliver=1`` states them): a fault of a kind
that has struck that often in the execution is not chosen again, so every schedule
run holds at most that many of it (the driver bounds all faults together).

**PCT** (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS 2010) gives each
delivery a random priority, always lets the highest-priority delivery go, and
lowers the running delivery's priority at ``depth - 1`` random decisions. A
bug that needs ``depth`` ordering constraints among ``n`` deliveries in
executions of ``k`` steps is hit with probability at least ``1/(n·k^(depth-1))``
per schedule. With faults, each schedule also draws ``max_faults`` decisions
at which the delivery let go meets a random fault allowed there.

Pure: the randomness is a seeded ``random.Random``.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from loadtest.model.explore.points import (
    Chooser,
    Delivery,
    Fault,
    Option,
    default_option,
    dependent,
)


@dataclass
class _Node:
    candidates: list[Option]
    chosen: Option
    sleep: list[Option]
    done: list[Option] = field(default_factory=list)
    given: list[Option] = field(default_factory=list)
    """Candidates handed to another search (``Exhaustive.split``): not run here, and
    counted as done once the search here moves past them."""

    def untried(self) -> list[Option]:
        """The candidates after the one chosen that neither ran, sleep, nor were given."""
        after = self.candidates[self.candidates.index(self.chosen) + 1 :]
        return [
            o
            for o in after
            if not _in(o, self.done) and not _in(o, self.sleep) and not _in(o, self.given)
        ]


def _in(option: Option, options: Sequence[Option]) -> bool:
    """Whether ``options`` holds ``option``'s choice (its delivery and fault), compared
    field by field: a ``Choice`` made per comparison was most of a decision's cost."""
    delivery, fault = option.delivery, option.fault
    return any(o.fault == fault and o.delivery == delivery for o in options)


def within_limits(
    options: Sequence[Option], used: Counter[Fault], limits: Mapping[Fault, int]
) -> list[Option]:
    """The options whose fault (if any) has not yet struck as often as its kind's limit
    allows (``used``: the faults the execution took so far; a kind without a limit is
    bounded only by the driver)."""
    return [
        o
        for o in options
        if o.fault is None or o.fault not in limits or used[o.fault] < limits[o.fault]
    ]


def _candidates(
    options: Sequence[Option], last: Delivery | None, local_first: bool
) -> list[Option]:
    """The options explored at a decision, the default first (the persistent set)."""
    first = default_option(options, last)
    local = [o for o in options if o.access.kind == "local" and o.fault is None and local_first]
    if local:
        own = (
            first.delivery
            if any(o.delivery == first.delivery for o in local)
            else local[0].delivery
        )
        chosen = [o for o in options if o.delivery == own]
    else:
        chosen = list(options)
    chosen.sort(key=lambda o: (o != first, o.fault is not None))
    return chosen


class Exhaustive:
    """Stateless DFS with a persistent set for local steps and sleep sets for commuting calls."""

    def __init__(
        self, *, local_first: bool = True, limits: Mapping[Fault, int] | None = None
    ) -> None:
        self.local_first = local_first
        self.limits: Mapping[Fault, int] = limits or {}
        """The most of each fault kind one schedule may take (a kind not named: no limit)."""
        """Explore a delivery's own code alone (sound only while nothing else moves the clock:
        off when the clock or timeout fault may run between two points)."""
        self._stack: list[_Node] = []
        self._floor = 0
        """Decisions of the stack that are fixed (a subtree's way in): never backtracked."""
        self._started = False
        self.covered = False
        """The whole space was run (set when ``execution`` finds nothing left)."""
        self.nondeterministic = 0
        """Re-runs whose options differed from the first run's at a decision they replayed."""
        self.blocked = 0
        """Executions abandoned because every option left was asleep (already covered)."""

    @classmethod
    def subtree(
        cls,
        way_in: Sequence[_Node],
        *,
        local_first: bool = True,
        limits: Mapping[Fault, int] | None = None,
    ) -> Exhaustive:
        """The search of one branch ``split`` handed away: ``way_in``'s decisions are replayed
        and never backtracked; the search is covered when the branch below them is."""
        search = cls(local_first=local_first, limits=limits)
        search._stack = [
            _Node(list(n.candidates), n.chosen, list(n.sleep), list(n.done)) for n in way_in
        ]
        search._floor = len(search._stack)
        return search

    def split(self) -> list[_Node] | None:
        """Hand away the first untried branch of the shallowest decision that has one, as
        the decisions leading to it (for ``subtree``); None when there is none."""
        for depth in range(self._floor, len(self._stack)):
            node = self._stack[depth]
            untried = node.untried()
            if not untried:
                continue
            branch = untried[0]
            node.given.append(branch)
            before = node.candidates[: node.candidates.index(branch)]
            done = [o for o in before if not _in(o, node.sleep)]
            return [*self._stack[:depth], _Node(node.candidates, branch, node.sleep, done)]
        return None

    def path(self) -> tuple[int, ...]:
        """Where the last execution lies in the search's order: the index of each choice
        among its decision's candidates (one search runs them in increasing order)."""
        return tuple(n.candidates.index(n.chosen) for n in self._stack)

    def execution(self) -> Chooser | None:
        """The chooser of the next execution, or None once the space is covered."""
        if not self._started:
            self._started = True
            return _Run(self)
        while len(self._stack) > self._floor:
            node = self._stack[-1]
            node.done.append(node.chosen)
            for option in node.candidates:
                if _in(option, node.done) or _in(option, node.sleep):
                    continue
                if _in(option, node.given):
                    node.done.append(option)  # run elsewhere: done for the siblings after it
                    continue
                node.chosen = option
                return _Run(self)
            self._stack.pop()
        self.covered = True
        return None


class _Run:
    def __init__(self, search: Exhaustive) -> None:
        self.search = search
        self.depth = 0
        self.used: Counter[Fault] = Counter()

    def choose(
        self, decision: int, options: Sequence[Option], last: Delivery | None
    ) -> Option | None:
        options = within_limits(options, self.used, self.search.limits)
        chosen = self._choose(options, last)
        if chosen is not None and chosen.fault is not None:
            self.used[chosen.fault] += 1
        return chosen

    def _choose(self, options: Sequence[Option], last: Delivery | None) -> Option | None:
        stack = self.search._stack
        depth, self.depth = self.depth, self.depth + 1
        if depth < len(stack):
            wanted = stack[depth].chosen
            for option in options:
                if option.fault == wanted.fault and option.delivery == wanted.delivery:
                    return option
            # The handler did something else this time: the rest of this branch is lost.
            self.search.nondeterministic += 1
            if depth < self.search._floor:
                # A subtree's way in no longer leads there: nothing of it can be run.
                del stack[:]
                self.search._floor = 0
                return None
            del stack[depth:]
        if stack:
            parent = stack[-1]
            sleep = [
                s
                for s in parent.sleep + parent.done
                if s.delivery != parent.chosen.delivery
                and not dependent(s.access, parent.chosen.access)
                and _in(s, options)
            ]
        else:
            sleep = []
        candidates = _candidates(options, last, self.search.local_first)
        for option in candidates:
            if not _in(option, sleep):
                stack.append(_Node(candidates, option, sleep))
                return option
        self.search.blocked += 1
        return None


@dataclass
class Pct:
    """PCT with ``depth`` (d) and, optionally, faults drawn at random decisions."""

    seed: int
    depth: int = 3
    max_faults: int = 0
    steps: int = 20
    """k: the longest execution seen so far, in decisions (grows as executions are run)."""
    deliveries: int = 2
    """n: the most deliveries seen in one execution."""
    limits: Mapping[Fault, int] = field(default_factory=dict)
    """The most of each fault kind one schedule may take (a kind not named: no limit)."""
    _rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def execution(self) -> Chooser:
        changes = sorted(
            self._rng.sample(range(1, self.steps + 1), min(self.depth - 1, self.steps))
        )
        faults = set(self._rng.sample(range(self.steps), min(self.max_faults, self.steps)))
        return _PctRun(
            random.Random(self._rng.getrandbits(64)), changes, faults, self.depth, self.limits
        )

    def learn(self, decisions: int, deliveries: int) -> None:
        """What one execution showed: how many decisions and deliveries it had."""
        self.steps = max(self.steps, decisions)
        self.deliveries = max(self.deliveries, deliveries)

    def bound(self) -> str:
        n, k, d = self.deliveries, self.steps, self.depth
        return (
            f"PCT: a bug of depth {d} is found with probability at least 1/(n*k^(d-1)) = "
            f"1/({n}*{k}^{d - 1}) = {1 / (n * k ** (d - 1)):.2e} per schedule "
            f"(n={n} deliveries, k={k} steps, d={d})"
        )


class _PctRun:
    def __init__(
        self,
        rng: random.Random,
        changes: list[int],
        faults: set[int],
        depth: int,
        limits: Mapping[Fault, int],
    ) -> None:
        self.limits = limits
        self.used: Counter[Fault] = Counter()
        self.rng = rng
        self.changes = changes
        self.faults = faults
        self.depth = depth
        self.priority: dict[Delivery, float] = {}

    def choose(
        self, decision: int, options: Sequence[Option], last: Delivery | None
    ) -> Option | None:
        for option in options:
            if option.delivery not in self.priority:
                # Above every change point's priority (1..depth-1).
                self.priority[option.delivery] = self.depth + self.rng.random()
        plain = [o for o in options if o.fault is None] or list(options)
        best = max(plain, key=lambda o: self.priority[o.delivery])
        if decision in self.changes:
            self.priority[best.delivery] = (
                float(self.changes.index(decision) + 1) - self.rng.random() / 2
            )
            best = max(plain, key=lambda o: self.priority[o.delivery])
        if decision in self.faults:
            faulty = [
                o
                for o in within_limits(options, self.used, self.limits)
                if o.delivery == best.delivery and o.fault is not None
            ]
            if faulty:
                chosen = self.rng.choice(faulty)
                assert chosen.fault is not None
                self.used[chosen.fault] += 1
                return chosen
        return best

"""The pure part of explore: tokens, what commutes, the searches and shrinking."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from loadtest.errors import InputError
from loadtest.model.explore.points import (
    GLOBAL,
    LOCAL,
    TIME,
    Access,
    Choice,
    Delivery,
    Fault,
    Option,
    Point,
    Replay,
    Schedule,
    default_option,
    dependent,
    parse_faults,
    parse_token,
    schedule_of,
)
from loadtest.model.explore.shrink import Candidate, candidates, shrink
from loadtest.model.explore.strategies import Exhaustive, Pct


def test_token_round_trip() -> None:
    schedule = Schedule(3, ((2, Choice(Delivery(2))), (5, Choice(Delivery(1, 2), Fault.CRASH))))
    assert schedule.token == "3:2=2,5=1.2c"
    assert parse_token(schedule.token) == schedule
    assert parse_token("2:") == Schedule(2)
    assert schedule.faults == 1


@pytest.mark.parametrize(
    "token",
    ["", "x", "0:", "²:", "2:1", "2:1=x", "2:1=2z", "2:a=1", "2:1=2,1=1", "3:4=2,2=3,4=1"],
)
def test_bad_tokens_are_input_errors(token: str) -> None:
    with pytest.raises(InputError, match="schedule"):
        parse_token(token)


def test_faults_parse_and_name_what_is_allowed() -> None:
    assert parse_faults("crash, ack-lost,crash") == (Fault.CRASH, Fault.ACK_LOST)
    assert parse_faults(["redeliver", "clock"]) == (Fault.REDELIVER, Fault.CLOCK)
    with pytest.raises(InputError, match="allowed: crash, timeout"):
        parse_faults("crash,boom")


def test_what_commutes() -> None:
    read_a, write_a = Access("read", frozenset({"a"})), Access("write", frozenset({"a"}))
    write_b, scan = Access("write", frozenset({"b"})), Access("read")
    assert not dependent(read_a, read_a)
    assert dependent(read_a, write_a) and dependent(write_a, write_a)
    assert not dependent(write_a, write_b)
    assert dependent(scan, write_b) and not dependent(scan, read_a)
    assert not dependent(LOCAL, write_a) and not dependent(LOCAL, LOCAL)
    assert dependent(TIME, LOCAL) and not dependent(TIME, write_a)
    assert dependent(GLOBAL, LOCAL) and dependent(GLOBAL, read_a)


def _opt(
    copy: int, access: Access, point: Point = Point.CALL, fault: Fault | None = None
) -> Option:
    return Option(Delivery(copy), point, access, fault)


def test_default_goes_on_with_the_last_delivery() -> None:
    options = [_opt(1, LOCAL), _opt(2, LOCAL), _opt(2, GLOBAL, fault=Fault.CRASH)]
    assert default_option(options, Delivery(2)).delivery == Delivery(2)
    assert default_option(options, None).delivery == Delivery(1)
    assert default_option(options, Delivery(3)).fault is None


class _Toy:
    """Deliveries that each make ``calls`` calls (read then write) on item keys: the
    interleavings a search explores, without a handler."""

    def __init__(self, keys: Sequence[str]) -> None:
        self.keys = keys

    def run(self, chooser: object) -> list[tuple[int, str]] | None:
        position = dict.fromkeys(range(1, len(self.keys) + 1), 0)
        trace: list[tuple[int, str]] = []
        last = None
        decision = 0
        while True:
            options = []
            for copy, step in position.items():
                if step < 2:
                    kind = "read" if step == 0 else "write"
                    options.append(_opt(copy, Access(kind, frozenset({self.keys[copy - 1]}))))
            if not options:
                return trace
            option = chooser.choose(decision, options, last)  # type: ignore[attr-defined]
            if option is None:
                return None
            decision += 1
            position[option.delivery.copy] += 1
            trace.append((option.delivery.copy, option.access.kind))
            last = option.delivery


def _explore(keys: Sequence[str]) -> tuple[list[list[tuple[int, str]]], Exhaustive]:
    toy, search, done = _Toy(keys), Exhaustive(), []
    while (chooser := search.execution()) is not None:
        trace = toy.run(chooser)
        if trace is not None:
            done.append(trace)
    return done, search


def test_exhaustive_counts_orders_of_dependent_calls_once() -> None:
    # Same item: the orders of the two writes relative to the reads. Reads commute with
    # reads, so the distinct traces are fewer than the 6 interleavings.
    same, search = _explore(["x", "x"])
    assert search.covered
    assert len(same) == 4
    # Different items: everything commutes, one schedule covers the space.
    apart, _ = _explore(["x", "y"])
    assert len(apart) == 1


def test_replay_follows_its_entries_and_defaults_elsewhere() -> None:
    toy = _Toy(["x", "x"])
    trace = toy.run(Replay(Schedule(2, ((1, Choice(Delivery(2))),))))
    assert trace == [(1, "read"), (2, "read"), (2, "write"), (1, "write")]
    taken_default = toy.run(Replay(Schedule(2)))
    assert taken_default == [(1, "read"), (1, "write"), (2, "read"), (2, "write")]


def test_schedule_of_keeps_only_non_default_choices() -> None:
    a, b = _opt(1, LOCAL), _opt(2, LOCAL)
    assert schedule_of(2, [(0, a, a), (1, b, a), (2, b, b)]) == Schedule(
        2, ((1, Choice(Delivery(2))),)
    )


def test_pct_is_seeded_and_states_its_bound() -> None:
    pct = Pct(seed=4, depth=3)
    pct.learn(decisions=10, deliveries=2)
    assert pct.bound().startswith(
        "PCT: a bug of depth 3 is found with probability at least 1/(n*k^(d-1)) = 1/(2*20^2)"
    )
    toy = _Toy(["x", "x"])
    first = [toy.run(Pct(seed=9).execution()) for _ in range(3)]
    again = [toy.run(Pct(seed=9).execution()) for _ in range(3)]
    assert first == again


def test_shrink_drops_copies_faults_and_choices_while_it_still_fails() -> None:
    big = Schedule(
        3,
        (
            (1, Choice(Delivery(3))),
            (2, Choice(Delivery(1), Fault.CLOCK)),
            (4, Choice(Delivery(2))),
        ),
    )
    assert Schedule(2, ((1, Choice(Delivery(2))), (2, Choice(Delivery(1), Fault.CLOCK)))) in list(
        candidates(big)
    )

    def fails(candidate: Schedule | Candidate) -> tuple[Schedule, int, tuple[int, ...]] | None:
        # Fails while delivery 2 (renumbered or not) preempts at decision 1.
        assert isinstance(candidate, Schedule)  # no trace: no faults placed by their turn
        wanted = (1, Choice(Delivery(candidate.copies)))
        ok = candidate.copies >= 2 and wanted in candidate.entries
        return (candidate, 10, ()) if ok else None

    best, steps, tries = shrink(big, 12, (), fails)
    assert best == Schedule(2, ((1, Choice(Delivery(2))),))
    assert steps == 10 and tries > 0


def test_dropping_a_copy_takes_its_decisions_out_of_the_numbering() -> None:
    # Copy 1 went at decisions 0 and 3, copy 2 at 1, 2 and 4 (a crash).
    schedule = Schedule(2, ((1, Choice(Delivery(2))), (4, Choice(Delivery(2), Fault.CRASH))))
    without_first = list(candidates(schedule, (1, 2, 2, 1, 2)))[2]
    assert without_first == Schedule(
        1, ((0, Choice(Delivery(1))), (2, Choice(Delivery(1), Fault.CRASH)))
    )


def _turns(replay: Replay, decisions: int) -> list[Choice]:
    """What ``replay`` takes at each decision where copies 1 and 2 can both go, each plainly
    or crashed."""
    taken: list[Choice] = []
    last: Delivery | None = None
    for decision in range(decisions):
        options = [
            Option(Delivery(copy), Point.CALL, LOCAL, fault)
            for copy in (1, 2)
            for fault in (None, Fault.CRASH)
        ]
        option = replay.choose(decision, options, last)
        assert option is not None
        taken.append(option.choice)
        last = option.delivery
    return taken


def test_a_fault_anchored_to_a_copys_turn_strikes_there_whatever_the_decision() -> None:
    # Copy 1 goes at decisions 0-2 by default; with copy 2 switched in at decision 1, its
    # third turn is decision 3. Either way the crash strikes copy 1's third turn.
    crash = {(1, 2): Fault.CRASH}
    alone = _turns(Replay(Schedule(2), crash), 4)
    assert alone[2] == Choice(Delivery(1), Fault.CRASH)
    switched = _turns(
        Replay(Schedule(2, ((1, Choice(Delivery(2))), (2, Choice(Delivery(1))))), crash), 4
    )
    assert switched[3] == Choice(Delivery(1), Fault.CRASH)
    assert all(c.fault is None for c in switched[:3])


def test_a_switch_removed_before_a_fault_keeps_the_fault_at_its_copys_turn() -> None:
    # Copy 2 went at decision 1, copy 1 again at 2, crashed at its third turn (decision 3).
    schedule = Schedule(
        2,
        ((1, Choice(Delivery(2))), (2, Choice(Delivery(1))), (3, Choice(Delivery(1), Fault.CRASH))),
    )
    anchored = [c for c in candidates(schedule, (1, 2, 1, 1)) if isinstance(c, Candidate)]
    assert Candidate(Schedule(2, ((2, Choice(Delivery(1))),)), {(1, 2): Fault.CRASH}) in anchored

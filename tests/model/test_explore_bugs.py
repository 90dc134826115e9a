"""What makes two failing schedules one bug (``loadtest.model.explore.bugs``)."""

from __future__ import annotations

from loadtest.model.explore.bugs import (
    BugKey,
    Departure,
    bug_key,
    departure,
    kinds,
    same_bug,
    within,
)
from loadtest.model.explore.points import LOCAL, Access, Delivery, Fault, Option, Point

KEY = '{"id":"dedup-order"}'
READ = Access("read", frozenset({KEY}))
WRITE = Access("write", frozenset({KEY}))
Taken = list[tuple[int, Option, Option]]


def opt(copy: int, point: Point, access: Access = LOCAL, fault: Fault | None = None) -> Option:
    return Option(Delivery(copy), point, access, fault)


def schedule(*steps: tuple[Option, Option]) -> Taken:
    """Decisions from (taken, default) pairs."""
    return [(n, taken, default) for n, (taken, default) in enumerate(steps)]


def same(o: Option) -> tuple[Option, Option]:
    return (o, o)


def test_a_race_departs_by_a_switch_after_the_read_wherever_the_switch_falls() -> None:
    # Delivery 1 read, then delivery 2 goes before 1's put: at the answer, or at the put.
    at_answer = schedule(
        same(opt(1, Point.START)),
        same(opt(1, Point.CALL, READ)),
        (opt(2, Point.START), opt(1, Point.ANSWER)),
    )
    at_put = schedule(
        same(opt(1, Point.START)),
        same(opt(1, Point.CALL, READ)),
        same(opt(1, Point.ANSWER)),
        (opt(2, Point.START), opt(1, Point.CALL, WRITE)),
    )
    expected = Departure("switch", (("read", (KEY,)),))
    assert departure(at_answer) == departure(at_put) == expected
    assert expected.text == "another delivery going first after the delivery's read"


def test_a_crash_at_a_writes_answer_and_before_the_next_write_are_one_gap() -> None:
    prefix = [
        same(opt(1, Point.START)),
        same(opt(1, Point.CALL, READ)),
        same(opt(1, Point.ANSWER)),
        same(opt(1, Point.CALL, WRITE)),
    ]
    at_answer = schedule(*prefix, (opt(1, Point.ANSWER, fault=Fault.CRASH), opt(1, Point.ANSWER)))
    before_next = schedule(
        *prefix,
        same(opt(1, Point.ANSWER)),
        (opt(1, Point.CALL, WRITE, Fault.CRASH), opt(1, Point.CALL, WRITE)),
    )
    gap = departure(at_answer)
    assert gap == departure(before_next)
    assert gap.text == "a crash after the delivery's read, write"
    # A crash before the write is another place: nothing was written yet.
    before_write = schedule(
        *prefix[:3], (opt(1, Point.CALL, WRITE, Fault.CRASH), opt(1, Point.CALL, WRITE))
    )
    assert departure(before_write) != gap


def test_a_crash_after_a_read_that_follows_the_last_write_is_the_crash_after_the_write() -> None:
    other = Access("read", frozenset({'{"id":"customer#c-1"}'}))
    prefix = [same(opt(1, Point.START)), same(opt(1, Point.CALL, WRITE))]
    after_write = schedule(*prefix, (opt(1, Point.ANSWER, fault=Fault.CRASH), opt(1, Point.ANSWER)))
    after_read = schedule(
        *prefix,
        same(opt(1, Point.ANSWER)),
        same(opt(1, Point.CALL, other)),
        (opt(1, Point.ANSWER, fault=Fault.CRASH), opt(1, Point.ANSWER)),
    )
    assert departure(after_read) == departure(after_write)
    assert departure(after_read).text == "a crash after the delivery's write"
    # Another delivery going first after the read still names it: the read is the race.
    switched = schedule(
        *prefix,
        same(opt(1, Point.ANSWER)),
        same(opt(1, Point.CALL, other)),
        (opt(2, Point.START), opt(1, Point.ANSWER)),
    )
    assert departure(switched).calls[-1][0] == "read"


def test_a_switch_before_the_delivery_ran_a_call_only_reorders_starts() -> None:
    reordered = schedule(
        same(opt(1, Point.START)),
        (opt(2, Point.START), opt(1, Point.CALL, READ)),  # 2 starts first: passed over
        same(opt(2, Point.CALL, READ)),
        same(opt(2, Point.ANSWER)),
        (opt(1, Point.CALL, READ), opt(2, Point.CALL, WRITE)),  # the race: 2 read, 1 goes
    )
    assert departure(reordered) == Departure("switch", (("read", (KEY,)),))
    assert departure(schedule(same(opt(1, Point.START)))) == Departure("none")


def test_a_reference_schedule_stands_for_the_default_until_the_schedule_leaves_it() -> None:
    # The search's first schedule let delivery 2 go on after its read; this one let
    # delivery 1 read instead, which the default would also have done.
    reference = schedule(
        same(opt(2, Point.START)), same(opt(2, Point.CALL, READ)), same(opt(2, Point.ANSWER))
    )
    later = schedule(
        same(opt(2, Point.START)), same(opt(2, Point.CALL, READ)), same(opt(1, Point.CALL, READ))
    )
    assert departure(later) == Departure("none")
    assert departure(later, reference) == Departure("switch", (("read", (KEY,)),))
    assert departure(reference, reference) == Departure("none")


def test_kinds_name_the_failing_counts_and_the_reasons_without_their_numbers() -> None:
    counts = {"duplicate_writes": 2, "lost_outcomes": 0, "writes_accepted": 3}
    failing = ("duplicate_writes", "lost_outcomes")
    reasons = ["2 duplicate write(s): an outcome was written again"]
    assert kinds(counts, failing, reasons) == (
        ("duplicate_writes",),
        ("N duplicate write(s): an outcome was written again",),
    )
    once = kinds(
        {"duplicate_writes": 1}, failing, ["1 duplicate write(s): an outcome was written again"]
    )
    assert once == kinds(counts, failing, reasons)


def test_one_bug_shares_its_departure_and_a_failing_count() -> None:
    race = Departure("switch", (("read", (KEY,)),))
    gap = Departure("crash", (("read", (KEY,)), ("write", (KEY,))))
    twice = BugKey(("duplicate_writes",), (), race)
    changed = BugKey(("conflicting_writes", "duplicate_writes"), (), race)
    lost = BugKey(("lost_outcomes",), (), gap)
    lost_racing = BugKey(("lost_outcomes",), (), race)
    assert same_bug(twice, changed)
    assert not same_bug(twice, lost) and not same_bug(twice, lost_racing)
    # Shrinking keeps a schedule that fails in a way in common; a lost outcome never
    # becomes a duplicate write.
    both = BugKey(("duplicate_writes", "lost_outcomes"), (), gap)
    assert within(twice, both) and within(lost, both)
    assert not within(twice, lost)
    empty = BugKey((), (), race)
    assert not within(empty, twice)
    key = bug_key(schedule(same(opt(1, Point.START))), {"lost_outcomes": 1}, ["lost_outcomes"], [])
    assert key == BugKey(("lost_outcomes",), (), Departure("none"))


def test_an_effect_call_is_named_by_what_it_does() -> None:
    calls = (
        ("write", ("table:orders",)),
        ("write", ("topic:arn:aws:sns:us-east-1:000000000000:orders",)),
        ("write", ("queue:http://localhost/q", "bucket:receipts")),
    )
    assert Departure("crash", calls).text == "a crash after the delivery's write, publish, write"

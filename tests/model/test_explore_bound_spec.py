"""``--bound SPEC``: parsing it, the per-kind fault limits the strategies keep, and what a
schedule token must fit. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pytest

from loadtest.errors import InputError
from loadtest.model.explore.bounds import BoundSpec, check_schedule, parse_bound
from loadtest.model.explore.points import (
    GLOBAL,
    Access,
    Bound,
    Delivery,
    Fault,
    Option,
    Point,
    parse_token,
)
from loadtest.model.explore.strategies import Exhaustive, Pct, within_limits


def test_a_spec_sets_the_deliveries_the_ids_and_each_faults_limit() -> None:
    spec = parse_bound("deliveries=3, crash=1,redeliver=1")
    assert spec == BoundSpec(3, None, ((Fault.CRASH, 1), (Fault.REDELIVER, 1)), None)
    assert spec.faults == (Fault.CRASH, Fault.REDELIVER)
    assert spec.max_faults == 2
    assert spec.copies(1) == 3
    assert spec.text == "deliveries=3,crash=1,redeliver=1"
    capped = parse_bound("faults=1,ids=2,deliveries=4,ack-lost=1,crash=1")
    assert (capped.ids, capped.max_faults, capped.copies(2)) == (2, 1, 2)
    assert capped.text == "deliveries=4,ids=2,ack-lost=1,crash=1,faults=1"
    # A limit of 0 offers none of that kind.
    assert parse_bound("crash=0,redeliver=2").faults == (Fault.REDELIVER,)
    assert parse_bound("ids=2").copies(2) is None


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("deliveries=3,explode=1", "key 'explode' is not known"),
        ("crash", "'crash' is not KEY=N"),
        ("crash=one", "'crash=one' is not KEY=N"),
        # A digit that is not a decimal one (a superscript): not a count.
        ("crash=²", "'crash=²' is not KEY=N"),
        ("crash=1,crash=2", "crash is given twice"),
        ("", "sets nothing"),
        ("deliveries=9", "deliveries=9 must be 1 to 8"),
        ("deliveries=0", "deliveries=0 must be 1 to 8"),
        ("ids=5", "ids=5 must be 1 to 4"),
        ("faults=2", "faults=2 names no fault kind"),
        ("crash=1,redeliver=1,faults=3", "faults=3 is more than the kinds allow together (2)"),
    ],
)
def test_a_spec_that_does_not_fit_names_what_does_not(text: str, names: str) -> None:
    with pytest.raises(InputError, match=names.replace("(", r"\(").replace(")", r"\)")):
        parse_bound(text)


def test_deliveries_must_share_out_evenly_among_the_ids() -> None:
    with pytest.raises(InputError, match="deliveries=3 is not a multiple of the 2 business"):
        parse_bound("deliveries=3").copies(2)


def _check(token: str, **kwargs: object) -> None:
    fields: dict[str, object] = {
        "deliveries": 3,
        "faults": (Fault.CRASH, Fault.REDELIVER),
        "max_faults": 2,
        "limits": ((Fault.CRASH, 1), (Fault.REDELIVER, 1)),
    }
    check_schedule(parse_token(token), **(fields | kwargs))  # type: ignore[arg-type]


def test_a_token_that_fits_passes() -> None:
    _check("3:2=2,5=1c,7=2.2r")
    _check("2:")
    _check("9:", deliveries=None)


@pytest.mark.parametrize(
    ("token", "names"),
    [
        ("4:2=2", "has 4 deliveries, more than the 3 explored"),
        ("2:2=3", "entry '2=3' names delivery 3, but the schedule has 2 deliveries"),
        ("3:2=1a", "entry '2=1a' injects ack-lost \\(a\\), a fault not offered"),
        ("3:2=1c,4=1c", "injects 2 crashes, more than the 1 the bound allows"),
        ("3:2=1c,4=1r,6=2r", "injects 3 faults, more than the 2 a schedule may take"),
    ],
)
def test_a_token_that_does_not_fit_names_the_entry(token: str, names: str) -> None:
    with pytest.raises(InputError, match=names):
        _check(token)


D1 = Delivery(1)
WRITE = Access("write", frozenset({"a"}))


def _offered() -> list[Option]:
    return [
        Option(D1, Point.CALL, WRITE),
        Option(D1, Point.CALL, GLOBAL, Fault.CRASH),
        Option(D1, Point.CALL, GLOBAL, Fault.REDELIVER),
    ]


def _all_executions(limits: Mapping[Fault, int]) -> list[Counter[Fault]]:
    """Every execution the DFS runs of one delivery through three decisions, each offering
    the plain step, a crash and a redelivery: the faults each took."""
    search = Exhaustive(limits=limits)
    runs = []
    while (chooser := search.execution()) is not None:
        taken: Counter[Fault] = Counter()
        for decision in range(3):
            option = chooser.choose(decision, _offered(), D1)
            assert option is not None
            if option.fault is not None:
                taken[option.fault] += 1
        runs.append(taken)
    assert search.covered
    return runs


def test_the_search_keeps_each_kinds_limit_and_covers_all_within_it() -> None:
    unlimited = _all_executions({})
    assert len(unlimited) == 3**3
    limited = _all_executions({Fault.CRASH: 1, Fault.REDELIVER: 1})
    assert all(r[Fault.CRASH] <= 1 and r[Fault.REDELIVER] <= 1 for r in limited)
    # Every sequence of plain/crash/redeliver with at most one of each: 1 + 3 + 3 + 6.
    assert len(limited) == 13
    assert len({tuple(sorted(r.items())) for r in limited}) == 4
    crashes_only = _all_executions({Fault.CRASH: 2, Fault.REDELIVER: 0})
    assert max(r[Fault.CRASH] for r in crashes_only) == 2
    assert all(r[Fault.REDELIVER] == 0 for r in crashes_only)
    assert len(crashes_only) == 1 + 3 + 3


def test_pct_draws_no_fault_beyond_its_kinds_limit() -> None:
    pct = Pct(seed=7, depth=3, max_faults=3, steps=3, limits={Fault.CRASH: 1, Fault.REDELIVER: 0})
    most = Counter[Fault]()
    for _ in range(200):
        chooser = pct.execution()
        taken: Counter[Fault] = Counter()
        for decision in range(3):
            option = chooser.choose(decision, _offered(), D1)
            if option is not None and option.fault is not None:
                taken[option.fault] += 1
        most = most | taken
    assert most == Counter({Fault.CRASH: 1})


def test_within_limits_drops_only_the_faults_of_a_spent_kind() -> None:
    kept = within_limits(_offered(), Counter({Fault.CRASH: 1}), {Fault.CRASH: 1})
    assert [o.fault for o in kept] == [None, Fault.REDELIVER]


def test_the_bound_states_each_kinds_limit() -> None:
    bound = Bound(
        deliveries=3,
        ids=("dedup-order",),
        faults=(Fault.CRASH, Fault.REDELIVER),
        max_faults=2,
        strategy="exhaustive",
        schedules=1806,
        exhaustive=True,
        stopped_by="space",
        limits=((Fault.CRASH, 1), (Fault.REDELIVER, 1)),
    )
    assert bound.sentence == (
        "every schedule of 3 deliveries of dedup-order with at most 1 crash, 1 redelivery "
        "per schedule: 1806 schedules, no failure"
    )
    data = bound.to_dict()
    assert data["faults"] == {"crash": 1, "redeliver": 1} and data["max_faults"] == 2
    capped = Bound(
        **{**bound.__dict__, "max_faults": 2, "limits": ((Fault.CRASH, 2), (Fault.REDELIVER, 1))}
    )
    assert "at most 2 crashes, 1 redelivery per schedule (2 fault(s) in all)" in capped.sentence

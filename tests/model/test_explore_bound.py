"""What explore states it covered, and when it stops: pure."""

from __future__ import annotations

from loadtest.model.explore.points import Bound, Fault, stopped_by


def _bound(**changes: object) -> Bound:
    fields: dict[str, object] = {
        "deliveries": 3,
        "ids": ("dedup-order",),
        "faults": (Fault.CRASH, Fault.REDELIVER),
        "max_faults": 1,
        "strategy": "exhaustive",
        "schedules": 412,
        "exhaustive": True,
        "stopped_by": "space",
        "budget": 2000,
        "time_budget_s": 120.0,
    }
    return Bound(**(fields | changes))  # type: ignore[arg-type]


def test_a_covered_space_says_every_schedule_within_its_bound() -> None:
    assert _bound().sentence == (
        "every schedule of 3 deliveries of dedup-order with at most 1 fault(s) per schedule "
        "(crash, redeliver): 412 schedules, no failure"
    )
    data = _bound().to_dict()
    assert data["faults"] == {"crash": 1, "redeliver": 1}
    assert data["exhaustive"] is True and data["stopped_by"] == "space"
    assert data["pct"] is None and data["sentence"] == _bound().sentence


def test_a_cut_search_says_how_many_ran_and_what_cut_it() -> None:
    timed = _bound(exhaustive=False, stopped_by="time_budget", schedules=40, time_budget_s=1.0)
    assert timed.sentence == (
        "40 schedules of 3 deliveries of dedup-order with at most 1 fault(s) per schedule "
        "(crash, redeliver), not every schedule: stopped by the time budget of 1 s: no failure"
    )
    counted = _bound(exhaustive=False, stopped_by="budget", schedules=2000, faults=())
    assert counted.sentence == (
        "2000 schedules of 3 deliveries of dedup-order without faults, not every schedule: "
        "stopped by the budget of 2000 schedules: no failure"
    )
    failed = _bound(exhaustive=False, stopped_by="first_failure", schedules=2, failed=1)
    assert failed.sentence.endswith("stopped at the first failure: 1 failed")


def test_pct_states_its_probability_bound_for_the_depth_used() -> None:
    pct = _bound(
        strategy="pct",
        exhaustive=False,
        stopped_by="budget",
        schedules=2000,
        pct_depth=3,
        pct_deliveries=2,
        pct_steps=10,
    )
    assert pct.pct_probability == 1 / (2 * 10**2)
    assert pct.sentence.startswith("2000 PCT schedules of 3 deliveries")
    assert (
        "a bug of depth 3 is found with probability at least 1/(n*k^(d-1)) = 1/(2*10^2) "
        "= 5.00e-03 per schedule (n=2 deliveries, k=10 steps, d=3)"
    ) in pct.sentence
    assert pct.to_dict()["pct"] == {"depth": 3, "n": 2, "k": 10, "probability": 0.005}


def test_the_stop_rule_checks_the_count_then_the_clock() -> None:
    assert stopped_by(0, 2000, 0.0, 120.0) is None
    assert stopped_by(1999, 2000, 119.9, 120.0) is None
    assert stopped_by(2000, 2000, 0.0, 120.0) == "budget"
    assert stopped_by(5, 2000, 120.0, 120.0) == "time_budget"
    assert stopped_by(2000, 2000, 500.0, 120.0) == "budget"
    # The first schedule runs whatever the clock says: an answer needs one judged schedule.
    assert stopped_by(0, 2000, 500.0, 1.0) is None

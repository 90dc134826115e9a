"""What a complete outcome holds, learned from the outcomes where nothing failed."""

from __future__ import annotations

from typing import Any

from loadtest.model.checker.completeness import (
    OnTheWay,
    complete_with,
    judged_without_details,
    lacking,
    learned,
)
from loadtest.model.checker.verdict import Complete
from loadtest.model.history.log import OutcomeKey

DONE = {"id": {"S": "a"}, "status": {"S": "DONE"}, "amount": {"N": "1100"}}
PENDING = {"id": {"S": "b"}, "status": {"S": "PENDING"}}


def _no_details(business_id: str) -> list[dict[str, Any]]:
    return []


def test_names_every_clean_outcome_holds_are_learned_without_the_key() -> None:
    other = {"id": {"S": "c"}, "status": {"S": "DONE"}, "amount": {"N": "1"}, "note": {"S": "x"}}
    final = {"a": [DONE], "c": [other], "b": [PENDING]}
    complete = learned(final, {"a", "c"}, ("id",), _no_details)
    assert complete is not None
    assert complete.names == frozenset({"status", "amount"})
    # Both ended DONE; no write left them elsewhere on the way.
    assert complete.ends == {"status": ("DONE", frozenset())}


def test_names_inside_maps_are_learned_as_the_details_are_read() -> None:
    nested = {"id": {"S": "a"}, "details": {"M": {"quantity": {"N": "4"}}}}
    complete = learned({"a": [nested]}, {"a"}, ("id",), _no_details)
    assert complete is not None and complete.names == frozenset({"quantity"})


def test_values_an_outcome_held_on_the_way_are_learned_beside_its_end() -> None:
    way = OnTheWay()
    way.add(PENDING)
    way.add(DONE)
    complete = learned({"a": [DONE]}, {"a"}, ("id",), _no_details, way)
    assert complete is not None
    assert complete.ends["status"] == ("DONE", frozenset({"PENDING"}))
    # An amount, a timestamp: more values than a state takes, none learned.
    many = OnTheWay()
    for n in range(20):
        many.add({**DONE, "amount": {"N": str(n)}})
    assert many.values("amount") == frozenset()
    assert many.values("status") == frozenset({"DONE"})


def test_nothing_is_learned_where_nothing_passed() -> None:
    assert learned({"b": [PENDING]}, set(), ("id",), _no_details) is None
    assert complete_with(None, None) is None
    # Outcomes that hold only their key teach nothing.
    assert complete_with(Complete(), Complete(frozenset({"status"}))) is None


def test_runs_before_and_the_run_itself_are_intersected() -> None:
    before = Complete(frozenset({"status", "amount"}), ends={"status": ("DONE", frozenset())})
    assert complete_with(None, before) == before
    own = Complete(frozenset({"status"}), ends={"status": ("DONE", frozenset({"PENDING"}))})
    both = complete_with(own, before)
    assert both == Complete(
        frozenset({"status"}), ends={"status": ("DONE", frozenset({"PENDING"}))}
    )
    # Runs that ended elsewhere agree on no end.
    other = Complete(frozenset({"status"}), ends={"status": ("SKIPPED", frozenset({"PENDING"}))})
    assert own.merged(other).ends == {}


def test_an_outcome_where_something_failed_lacking_a_learned_name_is_incomplete() -> None:
    complete = Complete(frozenset({"status", "amount"}))
    final = {"a": [DONE], "b": [PENDING], "c": [{**DONE, "id": {"S": "c"}}]}
    assert lacking(final, complete, {"a"}, _no_details) == {"b"}
    # The clean outcomes are the evidence, never judged by it.
    assert lacking({"b": [PENDING]}, complete, {"b"}, _no_details) == set()


def test_an_outcome_still_at_a_value_complete_ones_passed_through_is_incomplete() -> None:
    complete = Complete(frozenset({"status"}), ends={"status": ("DONE", frozenset({"PENDING"}))})
    skipped = {"id": {"S": "c"}, "status": {"S": "SKIPPED"}}
    final = {"b": [PENDING], "c": [skipped]}
    assert lacking(final, complete, set(), _no_details) == {"b"}


def test_learned_names_judge_the_outcomes_without_details() -> None:
    complete = Complete(frozenset({"status", "amount"}))
    note, reason = judged_without_details(OutcomeKey(), complete)
    assert reason is None and note is not None and "amount, status" in note
    note, reason = judged_without_details(OutcomeKey(), None)
    assert note is None and reason is not None

"""What a complete outcome holds, learned from the outcomes where nothing failed."""

from __future__ import annotations

from loadtest.model.checker.completeness import (
    complete_names,
    judged_without_details,
    lacking,
    learned,
)
from loadtest.model.history.log import OutcomeKey

DONE = {"id": {"S": "a"}, "status": {"S": "DONE"}, "amount": {"N": "1100"}}
PENDING = {"id": {"S": "b"}, "status": {"S": "PENDING"}}


def test_names_every_clean_outcome_holds_are_learned_without_the_key() -> None:
    other = {"id": {"S": "c"}, "status": {"S": "DONE"}, "amount": {"N": "1"}, "note": {"S": "x"}}
    final = {"a": [DONE], "c": [other], "b": [PENDING]}
    assert learned(final, {"a", "c"}, ("id",)) == frozenset({"status", "amount"})


def test_nothing_is_learned_where_nothing_passed() -> None:
    assert learned({"b": [PENDING]}, set(), ("id",)) is None
    assert complete_names(None, None) is None
    # Outcomes that hold only their key teach nothing.
    assert complete_names(frozenset(), frozenset({"status"})) is None


def test_runs_before_and_the_run_itself_are_intersected() -> None:
    assert complete_names(None, frozenset({"status", "amount"})) == frozenset({"status", "amount"})
    assert complete_names(frozenset({"status"}), frozenset({"status", "amount"})) == frozenset(
        {"status"}
    )


def test_an_outcome_where_something_failed_lacking_a_learned_name_is_incomplete() -> None:
    names = frozenset({"status", "amount"})
    final = {"a": [DONE], "b": [PENDING], "c": [{**DONE, "id": {"S": "c"}}]}
    assert lacking(final, names, clean={"a"}) == {"b"}
    # The clean outcomes are the evidence, never judged by it.
    assert lacking({"b": [PENDING]}, names, clean={"b"}) == set()


def test_learned_names_judge_the_outcomes_without_details() -> None:
    note, reason = judged_without_details(OutcomeKey(), frozenset({"status", "amount"}))
    assert reason is None and note is not None and "amount, status" in note
    note, reason = judged_without_details(OutcomeKey(), None)
    assert note is None and reason is not None

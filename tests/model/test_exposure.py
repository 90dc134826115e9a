"""loadtest.model.checker.exposure: which deliveries of one id were processed at the same time."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import given
from hypothesis import strategies as st

from loadtest.model.checker import Verdict, check, overlapping_pairs
from loadtest.model.checker.exposure import Exposure, Overlaps, exposure_reason
from tests.model.builders import invocation, lab_history, record, write


def brute_force_pairs(spans: list[tuple[int, int]]) -> int:
    return sum(1 for (a, b), (c, d) in itertools.combinations(spans, 2) if a < d and c < b)


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 20)), max_size=30))
def test_overlapping_pairs_agrees_with_every_pair_compared(raw: list[tuple[int, int]]) -> None:
    spans = [(start, start + length) for start, length in raw]
    assert overlapping_pairs(spans) == brute_force_pairs(spans)


@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 50), st.integers(0, 20)), max_size=40))
def test_exposure_groups_deliveries_by_id(raw: list[tuple[int, int, int]]) -> None:
    index = {f"id-{n}": n for n in range(5)}
    index["never-sent"] = -1  # passed over, as an id the run did not send
    overlaps = Overlaps(index)
    spans: dict[int, list[tuple[int, int]]] = {}
    for n, (business, start, length) in enumerate(raw):
        record_id = "never-sent" if business == 4 and start % 7 == 0 else f"id-{business}"
        inv = dataclasses.replace(
            invocation(f"r-{n}", [record(f"m-{n}", record_id)], []),
            started_ns=start,
            ended_ns=start + length,
        )
        overlaps.add(inv)
        if record_id != "never-sent":
            spans.setdefault(business, []).append((start, start + length))
    per_id = [brute_force_pairs(s) for s in spans.values()]
    assert overlaps.exposure() == Exposure(sum(1 for p in per_id if p), sum(per_id))


def test_touching_executions_do_not_overlap() -> None:
    assert overlapping_pairs([(0, 10), (10, 20)]) == 0
    assert overlapping_pairs([(0, 10), (9, 20), (5, 6)]) == 2


def test_the_sequential_lab_run_has_no_overlap_and_says_so_only_when_asked() -> None:
    history, end = lab_history()
    plain = check(history, end)
    assert plain.counts.overlapping_ids == 0
    assert plain.counts.overlapping_deliveries == 0
    assert plain.verdict is Verdict.PASS

    expected = check(history, end, expect_overlap=True)
    assert expected.verdict is Verdict.INCONCLUSIVE
    (reason,) = expected.inconclusive
    assert "this run could not have shown a race between deliveries" in reason
    assert "1 id(s) sent more than once, 4 deliveries" in reason


def test_overlapping_copies_are_counted_per_id_and_per_pair() -> None:
    history, end = lab_history()
    # The three dedup-order deliveries at 1, 1.5 and 2.5 ms, each 2 ms long: all three pairs
    # overlap; other-order's single delivery overlaps nothing of its own id.
    starts = {"r-1": 1_000_000, "r-2": 1_500_000, "r-3": 2_500_000}
    history.invocations = [
        dataclasses.replace(
            inv,
            started_ns=starts.get(inv.request_id, inv.started_ns),
            ended_ns=starts.get(inv.request_id, inv.started_ns) + 2_000_000,
        )
        for inv in history.invocations
    ]
    result = check(history, end, expect_overlap=True)
    assert (result.counts.overlapping_ids, result.counts.overlapping_deliveries) == (1, 3)
    assert result.verdict is Verdict.PASS
    assert result.inconclusive == ()


def test_copies_in_one_batch_ran_one_after_another() -> None:
    overlaps = Overlaps({"a": 0})
    overlaps.add(invocation("r-1", [record("m-1", "a"), record("m-2", "a")], []))
    assert overlaps.exposure() == Exposure(0, 0)
    overlaps.add(invocation("r-2", [record("m-3", "a"), record("m-4", None)], []))
    assert overlaps.exposure() == Exposure(1, 1)


def test_nothing_to_say_without_copies() -> None:
    assert exposure_reason(Exposure(0, 0), repeated_ids=0, deliveries=10) is None
    assert exposure_reason(Exposure(1, 1), repeated_ids=5, deliveries=10) is None


def _copies_in_one_batch(spans: list[tuple[int, int]]) -> Overlaps:
    """One invocation carrying len(spans) copies of one id, each copy's write at its span."""
    records = [record(f"m-{n}", "order-1") for n in range(len(spans))]
    writes = [
        dataclasses.replace(
            write({"id": {"S": "order-1"}}), started_ns=s, ended_ns=e, record_id=f"m-{n}"
        )
        for n, (s, e) in enumerate(spans)
    ]
    overlaps = Overlaps({"order-1": 0})
    overlaps.add(
        dataclasses.replace(invocation("r-1", records, writes), started_ns=0, ended_ns=100)
    )
    return overlaps


def test_copies_a_handler_works_through_one_by_one_do_not_overlap() -> None:
    assert _copies_in_one_batch([(10, 20), (20, 30), (40, 50)]).exposure() == Exposure(0, 0)


def test_copies_a_handler_works_on_at_once_in_one_batch_overlap() -> None:
    # A thread pool over the batch: the first two copies' writes coincide.
    assert _copies_in_one_batch([(10, 30), (15, 25), (40, 50)]).exposure() == Exposure(1, 1)


def test_a_copy_without_a_write_tied_to_it_has_no_span() -> None:
    records = [record("m-0", "order-1"), record("m-1", "order-1")]
    writes = [
        dataclasses.replace(write({"id": {"S": "order-1"}}), started_ns=10, ended_ns=30),
        dataclasses.replace(write({"id": {"S": "order-1"}}), started_ns=15, ended_ns=25),
    ]  # record_id "": the environment could not tell which record each write was for
    overlaps = Overlaps({"order-1": 0})
    overlaps.add(invocation("r-1", records, writes))
    assert overlaps.exposure() == Exposure(0, 0)

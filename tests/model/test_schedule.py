"""loadtest.model.workload.schedule.plan: the seeded, deterministic send schedule."""

from __future__ import annotations

import json
import pickle
from array import array
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadtest.model.scenario.loading import (
    Arrival,
    CopySpacing,
    Deduplication,
    ExplicitMessage,
    MessageGroup,
    Order,
    Workload,
    load_scenario,
)
from loadtest.model.workload.schedule import (
    MAX_QUANTITY,
    MIN_QUANTITY,
    Part,
    PlannedMessage,
    plan,
    split,
)
from tests.model.schedule_oracle import oracle_plan


def quantities(planned: Sequence[PlannedMessage]) -> dict[str | None, int]:
    return {m.business_id: json.loads(m.body)["quantity"] for m in planned}


def test_same_seed_gives_the_identical_schedule() -> None:
    workload = Workload(distinct_ids=30, copies=3, order=Order.SHUFFLED)
    assert plan(workload, 5) == plan(workload, 5)


def test_different_seeds_change_order_and_quantities() -> None:
    workload = Workload(distinct_ids=30, copies=3)
    a, b = plan(workload, 1), plan(workload, 2)
    assert [m.business_id for m in a] != [m.business_id for m in b]
    assert quantities(a) != quantities(b)
    # Same ids, whatever the seed.
    assert Counter(m.business_id for m in a) == Counter(m.business_id for m in b)


def test_generated_ids_and_bodies() -> None:
    planned = plan(Workload(distinct_ids=3, copies=2, id_prefix="job"), 1)
    assert len(planned) == 6
    assert {m.business_id for m in planned} == {"job-00001", "job-00002", "job-00003"}
    for m in planned:
        body = json.loads(m.body)
        assert set(body) == {"id", "quantity"}
        assert body["id"] == m.business_id
        assert m.body == json.dumps(body, separators=(",", ":"))
        assert m.offset_ns == 0
    assert [m.index for m in planned] == list(range(6))


def test_id_width_grows_with_the_number_of_ids() -> None:
    ids = {m.business_id for m in plan(Workload(distinct_ids=100_000, copies=1), 1)}
    assert "order-000001" in ids
    assert "order-100000" in ids
    assert {len(i) for i in ids if i is not None} == {len("order-000001")}
    assert {m.business_id for m in plan(Workload(distinct_ids=2, copies=1), 1)} == {
        "order-00001",
        "order-00002",
    }


def test_grouped_keeps_copies_adjacent() -> None:
    planned = plan(Workload(distinct_ids=25, copies=4, order=Order.GROUPED), 3)
    ids = [m.business_id for m in planned]
    runs = [ids[i : i + 4] for i in range(0, len(ids), 4)]
    assert all(len(set(run)) == 1 for run in runs)
    assert len({run[0] for run in runs}) == 25
    # The copies of one id carry the same body.
    for i in range(0, len(planned), 4):
        assert len({m.body for m in planned[i : i + 4]}) == 1


def test_shuffled_keeps_the_multiset() -> None:
    workload = Workload(distinct_ids=25, copies=4)
    grouped = plan(workload, 3)
    shuffled = plan(Workload(distinct_ids=25, copies=4, order=Order.SHUFFLED), 3)
    assert Counter(m.body for m in shuffled) == Counter(m.body for m in grouped)
    ids = [m.business_id for m in shuffled]
    adjacent_groups = all(len(set(ids[i : i + 4])) == 1 for i in range(0, len(ids), 4))
    assert not adjacent_groups


def test_count_is_distinct_ids_times_copies() -> None:
    planned = plan(Workload(distinct_ids=150, copies=4), 7)
    assert len(planned) == 600
    assert Counter(m.business_id for m in planned) == {f"order-{n:05d}": 4 for n in range(1, 151)}


def test_quantities_within_range() -> None:
    planned = plan(Workload(distinct_ids=500, copies=1), 11)
    values = {json.loads(m.body)["quantity"] for m in planned}
    assert values <= set(range(MIN_QUANTITY, MAX_QUANTITY + 1))
    assert min(values) == 1
    assert max(values) == 10


def test_explicit_messages_preserved_in_order_with_copies() -> None:
    planned = plan(load_scenario("seed-lab").workload, 1)
    assert [(m.index, m.business_id, m.body, m.offset_ns) for m in planned] == [
        (0, "dedup-order", '{"id":"dedup-order","quantity":4}', 0),
        (1, "dedup-order", '{"id":"dedup-order","quantity":4}', 0),
        (2, "dedup-order", '{"id":"dedup-order","quantity":4}', 0),
        (3, "other-order", '{"id":"other-order","quantity":1}', 0),
    ]
    assert plan(load_scenario("seed-lab").workload, 99) == planned


def test_explicit_message_without_a_string_id_has_no_business_id() -> None:
    workload = Workload(
        messages=(
            ExplicitMessage(body={"quantity": 1}, copies=1),
            ExplicitMessage(body={"id": 7, "quantity": 1}, copies=2),
        )
    )
    planned = plan(workload, 1)
    assert [m.business_id for m in planned] == [None, None, None]
    assert [m.body for m in planned] == [
        '{"quantity":1}',
        '{"id":7,"quantity":1}',
        '{"id":7,"quantity":1}',
    ]


@settings(max_examples=60, deadline=None)
@given(
    distinct_ids=st.integers(min_value=1, max_value=60),
    copies=st.integers(min_value=1, max_value=6),
    order=st.sampled_from(list(Order)),
    seed=st.integers(min_value=0, max_value=2**63 - 1),
)
def test_plan_properties(distinct_ids: int, copies: int, order: Order, seed: int) -> None:
    workload = Workload(distinct_ids=distinct_ids, copies=copies, order=order, id_prefix="p")
    planned = plan(workload, seed)
    assert planned == plan(workload, seed)
    assert len(planned) == distinct_ids * copies
    assert [m.index for m in planned] == list(range(len(planned)))
    per_id = Counter(m.business_id for m in planned)
    assert per_id == {f"p-{n:05d}": copies for n in range(1, distinct_ids + 1)}
    bodies_per_id: dict[str | None, set[str]] = {}
    for m in planned:
        body = json.loads(m.body)
        assert body["id"] == m.business_id
        assert MIN_QUANTITY <= body["quantity"] <= MAX_QUANTITY
        bodies_per_id.setdefault(m.business_id, set()).add(m.body)
        assert m.offset_ns == 0
    assert all(len(bodies) == 1 for bodies in bodies_per_id.values())
    if order is Order.GROUPED:
        ids = [m.business_id for m in planned]
        assert all(len(set(ids[i : i + copies])) == 1 for i in range(0, len(ids), copies))


def test_fifo_ids_follow_the_workload_strategies() -> None:
    def ids(**fields: Any) -> list[tuple[str | None, str, str | None]]:
        planned = plan(Workload(distinct_ids=20, copies=2, **fields), seed=3)
        return [(m.business_id, m.group_id, m.deduplication_id) for m in planned]

    by_id = ids(deduplication=Deduplication.BUSINESS_ID)
    assert all(group == business and dedup == business for business, group, dedup in by_id)
    per_message = ids()
    assert len({dedup for _, _, dedup in per_message}) == len(per_message) == 40
    fixed = ids(message_group=MessageGroup.FIXED, message_groups=3)
    groups: dict[str | None, set[str]] = {}
    for business, group, _ in fixed:
        groups.setdefault(business, set()).add(group)
    assert all(len(g) == 1 for g in groups.values())  # an id's copies share one group
    assert {g for gs in groups.values() for g in gs} == {"group-0", "group-1", "group-2"}
    assert fixed == ids(message_group=MessageGroup.FIXED, message_groups=3)  # stable
    assert all(dedup is None for _, _, dedup in ids(deduplication=Deduplication.CONTENT))


EXPLICIT = (
    ExplicitMessage(body={"id": "a", "quantity": 2}, copies=3),
    ExplicitMessage(body={"quantity": 1}, copies=2),
    ExplicitMessage(body={"id": "b", "quantity": 0}, copies=2, poison=True),
    ExplicitMessage(body={"id": "a", "quantity": 5}, copies=1),
)
"""Explicit bodies: resends, a body without an id, a poison record and an id used twice."""

WORKLOADS = {
    "grouped burst": Workload(distinct_ids=40, copies=3),
    "shuffled": Workload(distinct_ids=40, copies=4, order=Order.SHUFFLED),
    "rate, poison and conflicts": Workload(
        distinct_ids=60,
        copies=3,
        arrival=Arrival.RATE,
        rate_per_s=200,
        poison_fraction=0.2,
        conflict_fraction=0.5,
    ),
    "ramp": Workload(
        distinct_ids=50, copies=2, arrival=Arrival.RAMP, rate_per_s=300, ramp_from_per_s=5
    ),
    "spread copies, shuffled": Workload(
        distinct_ids=30,
        copies=4,
        order=Order.SHUFFLED,
        arrival=Arrival.RATE,
        rate_per_s=50,
        copy_spacing=CopySpacing.SPREAD,
        copy_spread_s=2.5,
    ),
    "after completion": Workload(
        distinct_ids=25, copies=3, copy_spacing=CopySpacing.AFTER_COMPLETION
    ),
    "FIFO fixed groups, business-id deduplication": Workload(
        distinct_ids=30,
        copies=2,
        message_group=MessageGroup.FIXED,
        message_groups=4,
        deduplication=Deduplication.BUSINESS_ID,
    ),
    "FIFO content deduplication": Workload(
        distinct_ids=30, copies=2, deduplication=Deduplication.CONTENT, conflict_fraction=0.3
    ),
    "explicit messages": Workload(messages=EXPLICIT),
    "explicit, spread, after completion ids": Workload(
        messages=EXPLICIT,
        arrival=Arrival.RATE,
        rate_per_s=4,
        copy_spacing=CopySpacing.SPREAD,
        copy_spread_s=1,
    ),
    "explicit after completion": Workload(
        messages=EXPLICIT, copy_spacing=CopySpacing.AFTER_COMPLETION
    ),
    "seed-lab": load_scenario("seed-lab").workload,
}


@pytest.mark.parametrize("name", list(WORKLOADS))
@pytest.mark.parametrize("seed", [1, 7, 2**40 + 3])
def test_the_schedule_is_the_one_every_message_built_up_front_gave(name: str, seed: int) -> None:
    """Same bodies, ids, order, offsets, flags and FIFO ids as the algorithm that
    built every ``PlannedMessage`` before the arrays (kept in tests as the oracle)."""
    workload = WORKLOADS[name]
    expected = oracle_plan(workload, seed)
    planned = plan(workload, seed)
    assert list(planned) == list(expected)
    assert len(planned) == len(expected)
    assert [planned[i] for i in range(-len(planned), 0)] == list(expected)
    assert planned[3:9] == list(expected[3:9])


@settings(max_examples=40, deadline=None)
@given(
    distinct_ids=st.integers(min_value=1, max_value=40),
    copies=st.integers(min_value=1, max_value=5),
    order=st.sampled_from(list(Order)),
    spacing=st.sampled_from(list(CopySpacing)),
    arrival=st.sampled_from(list(Arrival)),
    poison=st.sampled_from([0.0, 0.3]),
    conflict=st.sampled_from([0.0, 0.5]),
    seed=st.integers(min_value=0, max_value=2**63 - 1),
)
def test_the_schedule_matches_the_oracle_on_any_generated_workload(
    distinct_ids: int,
    copies: int,
    order: Order,
    spacing: CopySpacing,
    arrival: Arrival,
    poison: float,
    conflict: float,
    seed: int,
) -> None:
    workload = Workload(
        distinct_ids=distinct_ids,
        copies=copies,
        order=order,
        copy_spacing=spacing,
        copy_spread_s=1.5,
        arrival=arrival,
        rate_per_s=100,
        ramp_from_per_s=10,
        poison_fraction=poison,
        conflict_fraction=conflict,
    )
    assert list(plan(workload, seed)) == list(oracle_plan(workload, seed))


def test_a_schedule_is_a_few_dozen_bytes_a_message_and_pickles_whole() -> None:
    """What a run holds from start to end, and what a producer process is handed."""
    workload = Workload(distinct_ids=10_000, copies=3, order=Order.SHUFFLED)
    planned = plan(workload, 3)
    assert len(pickle.dumps(planned)) < 40 * len(planned)
    assert pickle.loads(pickle.dumps(planned)) == planned
    with pytest.raises(IndexError):
        planned[len(planned)]


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_split_reads_the_arrays_as_the_messages_say(name: str) -> None:
    """Resends after completion (with an id) wait; the rest go on schedule, in order."""
    planned = plan(WORKLOADS[name], 5)
    on_schedule, waiting = split(planned)
    messages = list(planned)
    assert list(waiting) == [m for m in messages if m.after_first and m.business_id]
    assert list(on_schedule) == [m for m in messages if not (m.after_first and m.business_id)]
    # The same from a plain sequence of messages, and from a part of a schedule.
    assert [list(p) for p in split(messages)] == [list(on_schedule), list(waiting)]
    half = Part(planned, array("q", range(0, len(planned), 2)))
    assert list(half.offsets_ns()) == [m.offset_ns for m in messages[::2]]
    assert list(Part(messages, half.positions).offsets_ns()) == list(half.offsets_ns())
    assert [list(p) for p in split(half)] == [
        [m for m in messages[::2] if not (m.after_first and m.business_id)],
        [m for m in messages[::2] if m.after_first and m.business_id],
    ]

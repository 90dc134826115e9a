"""loadtest.model.schedule.plan: the seeded, deterministic send schedule."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from loadtest.model.scenario import (
    Deduplication,
    ExplicitMessage,
    MessageGroup,
    Order,
    Workload,
    load_scenario,
)
from loadtest.model.schedule import MAX_QUANTITY, MIN_QUANTITY, PlannedMessage, plan


def quantities(planned: tuple[PlannedMessage, ...]) -> dict[str | None, int]:
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

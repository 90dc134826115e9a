"""The report's listing of write decisions: the first ones in time, each outcome's accepted
writes in the backend's order, found without sorting every decision."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import pytest

from loadtest.reports.report import Listing as _Listing


def _whole(started_ns: Sequence[int], ranked: Mapping[int, tuple[str | None, int]]) -> list[int]:
    """Every decision sorted, the oracle (the listing's rule as it was written at first)."""
    out = sorted(range(len(started_ns)), key=started_ns.__getitem__)
    slots: dict[str | None, list[int]] = {}
    members: dict[str | None, list[int]] = {}
    for slot, position in enumerate(out):
        rank = ranked.get(position)
        if rank is not None:
            slots.setdefault(rank[0], []).append(slot)
            members.setdefault(rank[0], []).append(position)
    for business_id, taken in slots.items():
        by_order = sorted(members[business_id], key=lambda p: ranked[p][1])
        for slot, position in zip(taken, by_order, strict=True):
            out[slot] = position
    return out


def _decisions(seed: int) -> tuple[list[int], dict[int, tuple[str | None, int]]]:
    """Writes of a few outcomes at clashing times; each outcome's orders 1..n in an order
    that disagrees with the clocks, and side writes without one."""
    rng = random.Random(seed)
    started_ns: list[int] = []
    ranked: dict[int, tuple[str | None, int]] = {}
    orders: dict[str, list[int]] = {}
    for position in range(rng.randint(1, 300)):
        started_ns.append(rng.randint(0, 60))
        if rng.random() < 0.7:
            business_id = f"o-{rng.randint(0, 12)}"
            orders.setdefault(business_id, []).append(position)
    for business_id, positions in orders.items():
        shuffled = rng.sample(positions, len(positions))
        for order, position in enumerate(shuffled, start=1):
            ranked[position] = (business_id, order)
    return started_ns, ranked


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("limit", [1, 7, 50, 1000])
def test_the_listing_is_the_first_of_every_decision_sorted(seed: int, limit: int) -> None:
    started_ns, ranked = _decisions(seed)
    listing = _Listing(limit)
    for position, started in enumerate(started_ns):
        business_id, order = ranked.get(position, (None, 0))
        listing.add(position, started, business_id, order)
    top, outcomes = listing.close()
    kept: set[int] = set()
    for position in range(len(started_ns)):  # the second pass: the named outcomes' decisions
        business_id, order = ranked.get(position, (None, 0))
        if position not in top and business_id not in outcomes:
            continue
        may, dropped = listing.offer(position, business_id, order)
        if position in top or may:
            kept.add(position)
        if dropped is not None and dropped not in top:
            kept.remove(dropped)
    listed = listing.listed()
    assert listed == _whole(started_ns, ranked)[:limit]
    assert set(listed) <= kept and len(kept) <= 2 * limit

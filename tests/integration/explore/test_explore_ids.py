"""explore over several business ids at once: orders that share an item, and their tokens."""

from __future__ import annotations

import loadtest

HERE = "tests/integration/explore"
ORDERS = f"{HERE}/customer-orders.toml"


def test_a_lost_update_between_two_orders_replays_with_both_orders(backend_url: str) -> None:
    options = {"copies": 1, "distinct_ids": 2, "endpoint_url": backend_url}
    handler = f"{HERE}/consumers/customer_total_listed.py:handler"
    report = loadtest.explore(ORDERS, handler=handler, **options)  # type: ignore[arg-type]
    assert report.exit_code == 1
    example = report.to_dict()["explore"]["counterexample"]
    assert example["counts"]["lost_outcomes"] == 1
    assert example["counts"]["duplicate_writes"] == 0

    # The token's deliveries are the search's first two messages: one of each order,
    # not two copies of the first. The customer's item, keyed by no order, is cleared
    # after each schedule: the replay reads what the search's schedule read.
    again = loadtest.explore(ORDERS, handler=handler, schedule=example["schedule"], **options)  # type: ignore[arg-type]
    replayed = again.to_dict()["explore"]
    assert again.exit_code == 1, replayed
    assert replayed["bound"]["ids"] == ["order-a", "order-b"]
    assert replayed["counterexample"]["steps"] == example["steps"]
    assert replayed["counterexample"]["counts"] == example["counts"]


def test_a_lost_update_of_a_total_that_lists_no_order_is_a_lost_outcome(backend_url: str) -> None:
    # The total names no order: only the put's old image, against what its delivery read,
    # shows it replaced the other order's change.
    options = {"copies": 1, "distinct_ids": 2, "endpoint_url": backend_url}
    handler = f"{HERE}/consumers/customer_total.py:handler"
    report = loadtest.explore(ORDERS, handler=handler, **options)  # type: ignore[arg-type]
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1, explore["bound"]["sentence"]
    [bug] = explore["bugs"]
    assert bug["counts"]["lost_outcomes"] == 1
    assert bug["counts"]["duplicate_writes"] == 0 and bug["counts"]["conflicting_writes"] == 0
    assert any(r.startswith("1 lost update(s)") for r in bug["reasons"]), bug["reasons"]
    again = loadtest.explore(ORDERS, handler=handler, schedule=bug["schedule"], **options)  # type: ignore[arg-type]
    assert again.exit_code == 1
    assert again.to_dict()["explore"]["counterexample"]["counts"] == bug["counts"]


def test_an_order_recorded_without_its_change_to_the_customers_total_is_a_lost_outcome(
    backend_url: str,
) -> None:
    # The ADDs never lose each other's quantity; a crash after the order's put does: every
    # schedule that passed changed the customer's total, this one never did.
    handler = f"{HERE}/consumers/customer_total_added.py:handler"
    options = {"distinct_ids": 2, "copies": 1, "endpoint_url": backend_url}
    report = loadtest.explore(ORDERS, handler=handler, **options)  # type: ignore[arg-type]
    assert report.exit_code == 0
    report = loadtest.explore(ORDERS, handler=handler, faults="crash", **options)  # type: ignore[arg-type]
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1, explore["bound"]["sentence"]
    [bug] = explore["bugs"]
    assert bug["counts"]["lost_outcomes"] == 1 and bug["faults"] == 1
    assert any("no write of id=customer#{customer}" in r for r in bug["reasons"]), bug["reasons"]

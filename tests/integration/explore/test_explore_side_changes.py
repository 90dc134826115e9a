"""explore on a consumer that keeps stock in a table of its own: reserved before the guard on
the order, the second delivery reserves again in every schedule; reserved once the guard
is passed, under a lock taken and given back, no schedule repeats a change; a stock level
read and put back less the units, before the guard or after it, the same."""

from __future__ import annotations

from typing import Any

import loadtest

ADVERSARIAL = "tests/integration/consumers/adversarial"
SCENARIO = f"{ADVERSARIAL}/burst_stock.toml"


def _explore(consumer: str, backend_url: str, **options: Any) -> loadtest.Report:
    return loadtest.explore(
        SCENARIO,
        handler=f"{ADVERSARIAL}/{consumer}.py:handler",
        copies=2,
        distinct_ids=1,
        endpoint_url=backend_url,
        **options,
    )


def test_stock_reserved_before_the_guard_is_a_duplicate_side_write_in_every_schedule(
    backend_url: str,
) -> None:
    report = _explore("reserve_before_guard", backend_url)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1
    assert explore["exhaustive"] is True
    assert explore["schedules_failed"] == explore["schedules_run"]
    [bug] = explore["bugs"]
    assert bug["counts"]["duplicate_side_writes"] == 1
    assert bug["counts"]["duplicate_writes"] == 0
    assert "added to sku=widget in table $STOCK_TABLE in 2 deliveries" in bug["reasons"][0]
    again = _explore("reserve_before_guard", backend_url, schedule=bug["schedule"])
    assert again.exit_code == 1
    assert again.to_dict()["explore"]["bugs"][0]["reasons"] == bug["reasons"]


def test_stock_reserved_once_the_guard_is_passed_passes_every_schedule(
    backend_url: str,
) -> None:
    report = _explore("reserve_after_guard", backend_url)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore["bugs"]
    assert explore["exhaustive"] is True and explore["schedules_run"] > 1


def test_a_level_put_back_from_a_read_before_the_guard_is_taken_again_where_copies_follow(
    backend_url: str,
) -> None:
    # The first copy makes the level, the next takes from it, unless both read before
    # either put (then the units were taken once between them).
    report = _explore("stock_read_put", backend_url)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1
    assert explore["exhaustive"] is True
    assert 0 < explore["schedules_failed"] < explore["schedules_run"]
    [bug] = explore["bugs"]
    assert (bug["counts"]["duplicate_side_writes"], bug["counts"]["duplicate_writes"]) == (1, 0)
    assert "added to sku=widget in table $STOCK_TABLE in 2 deliveries" in bug["reasons"][0]


def test_a_level_put_back_from_a_read_once_the_guard_is_passed_passes_every_schedule(
    backend_url: str,
) -> None:
    report = _explore("stock_read_put_after_guard", backend_url)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore["bugs"]
    assert explore["exhaustive"] is True and explore["schedules_run"] > 1

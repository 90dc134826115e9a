"""explore on the guards users write beside the lab's conditional put: optimistic locking
with a version, a deduplication table (in one transaction with the order, or before it),
counters added to with ``ADD`` under a condition, and leases with an expiry. Each verdict
is what DynamoDB and the queue really allow, and each bug's token replays it."""

from __future__ import annotations

import re
from typing import Any

import pytest

import loadtest

HERE = "tests/integration/explore"
CONSUMERS = f"{HERE}/consumers"
ORDERS = f"{HERE}/customer-orders.toml"
DEDUP_TABLE = f"{HERE}/dedup-table.toml"
FIVE_RECEIVES = f"{HERE}/lab-five-receives.toml"


def _explore(scenario: str, consumer: str, **options: Any) -> loadtest.Report:
    return loadtest.explore(scenario, handler=f"{CONSUMERS}/{consumer}.py:handler", **options)


def _replays(scenario: str, consumer: str, bug: dict[str, Any], **options: Any) -> None:
    """The bug's token reruns its schedule: the same steps, counts and reasons."""
    again = _explore(scenario, consumer, schedule=bug["schedule"], **options)
    assert again.exit_code == 1
    [only] = again.to_dict()["explore"]["bugs"]
    assert only["schedule"] == bug["schedule"]
    assert only["steps"] == bug["steps"]
    assert only["counts"] == bug["counts"] and only["reasons"] == bug["reasons"]


def test_a_version_checked_put_retried_from_a_fresh_read_keeps_both_orders(
    backend_url: str,
) -> None:
    options = {"copies": 1, "distinct_ids": 2, "endpoint_url": backend_url}
    report = _explore(ORDERS, "customer_versioned", **options)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore["bugs"]
    assert explore["exhaustive"] is True and explore["schedules_run"] == 4


def test_a_refused_version_check_retried_by_writing_over_loses_the_other_order(
    backend_url: str,
) -> None:
    options = {"copies": 1, "distinct_ids": 2, "endpoint_url": backend_url}
    report = _explore(ORDERS, "customer_versioned_overwrite", **options)
    assert report.exit_code == 1
    [bug] = report.to_dict()["explore"]["bugs"]
    assert bug["faults"] == 0 and bug["counts"]["lost_outcomes"] == 1
    assert bug["counts"]["duplicate_writes"] == 0
    assert any(r.startswith("1 lost update(s)") for r in bug["reasons"]), bug["reasons"]
    _replays(ORDERS, "customer_versioned_overwrite", bug, **options)


def test_a_dedup_marker_written_with_the_order_in_one_transaction_survives_every_crash(
    backend_url: str,
) -> None:
    report = _explore(
        DEDUP_TABLE, "dedup_marker_transaction", copies=2, faults="crash", endpoint_url=backend_url
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore["bugs"]
    assert explore["exhaustive"] is True and explore["schedules_failed"] == 0


def test_a_dedup_marker_written_before_the_order_loses_it_on_a_crash_between(
    backend_url: str,
) -> None:
    options = {"copies": 2, "faults": "crash", "endpoint_url": backend_url}
    assert _explore(DEDUP_TABLE, "dedup_marker_then_order", copies=2).exit_code == 0
    report = _explore(DEDUP_TABLE, "dedup_marker_then_order", **options)
    assert report.exit_code == 1
    [bug] = report.to_dict()["explore"]["bugs"]
    assert bug["faults"] == 1 and bug["counts"]["lost_outcomes"] == 1
    assert bug["departure"] == "a crash after the delivery's write"
    [crash] = [s for s in bug["steps"] if s["fault"] == "crash"]
    # The marker, in the deduplication table, is the write the crash follows.
    assert bug["steps"][crash["number"] - 2]["what"].startswith("PutItem table ")
    _replays(DEDUP_TABLE, "dedup_marker_then_order", bug, **options)


def test_units_added_under_a_message_id_guard_hold_for_a_redelivery_not_a_resend(
    backend_url: str,
) -> None:
    # The same message again (a lost acknowledgement, a redelivery, a timeout) is refused.
    report = _explore(
        "seed-lab",
        "reserve_by_message_id",
        copies=1,
        faults="ack-lost,redeliver,timeout",
        endpoint_url=backend_url,
    )
    assert report.exit_code == 0, report.to_dict()["explore"]["bugs"]
    # A producer's resend has a messageId of its own: its units are added again.
    report = _explore("seed-lab", "reserve_by_message_id", copies=2, endpoint_url=backend_url)
    assert report.exit_code == 1
    [bug] = report.to_dict()["explore"]["bugs"]
    assert bug["faults"] == 0 and bug["schedule"] == "2:"
    assert bug["counts"]["duplicate_writes"] == 1 and bug["counts"]["conflicting_writes"] == 1
    _replays("seed-lab", "reserve_by_message_id", bug, copies=2, endpoint_url=backend_url)


def test_a_total_added_to_under_an_order_id_set_counts_every_order_once(
    backend_url: str,
) -> None:
    report = _explore(
        ORDERS, "customer_total_order_set", copies=2, distinct_ids=2, endpoint_url=backend_url
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore["bugs"]
    # Four updates of one item, in their 4! orders.
    assert explore["exhaustive"] is True and explore["schedules_run"] == 24


@pytest.mark.slow
def test_a_lease_shorter_than_the_work_lets_a_later_copy_write_the_order_again(
    backend_url: str,
) -> None:
    # The copy that arrives once the lease has expired, while its holder still works.
    options = {"copies": 3, "faults": "clock", "endpoint_url": backend_url}
    report = _explore(FIVE_RECEIVES, "lease_short", stop_at_first=True, **options)
    assert report.exit_code == 1
    [bug] = report.to_dict()["explore"]["bugs"]
    assert bug["counts"]["duplicate_writes"] == 1 and bug["faults"] == 1
    # The holder's request id, stored in the lease, reads the same in the replay.
    assert "request-1" in str(bug["steps"]) and not re.search(r"'s\d+-", str(bug["steps"]))
    _replays(FIVE_RECEIVES, "lease_short", bug, **options)


@pytest.mark.slow
def test_a_lease_past_the_function_timeout_over_a_conditional_write_survives_stalls(
    backend_url: str,
) -> None:
    report = _explore(
        FIVE_RECEIVES, "lease_fenced", copies=2, faults="clock", endpoint_url=backend_url
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, (explore["bound"], report.to_dict()["runs"][0]["reasons"])
    assert explore["exhaustive"] is True


def test_a_redelivery_started_after_a_clock_jump_is_visible_again_a_timeout_after_it_started(
    backend_url: str,
) -> None:
    # Delivery 1 stalls 29 s past its write and times out at t=49 s; both messages came back
    # at t=30 s while it stalled, and start at t=49 s. The copy refused there comes back at
    # t=79 s, once the lease its sibling took at t=49 s has expired, not at t=60 s.
    report = _explore(
        "seed-lab",
        "lease_short",
        copies=2,
        faults="timeout,clock",
        schedule="2:10=1j,13=1.2",
        endpoint_url=backend_url,
    )
    run = report.to_dict()["runs"][0]
    assert report.exit_code == 0, run["reasons"]
    assert run["counts"]["acked"] == 2 and run["counts"]["dead_lettered"] == 0

"""The bug families a burst reaches only by luck, found on purpose with the right fault and
shrunk; their correct twins explored to the end without a failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import loadtest

CONSUMERS = Path(__file__).parent / "consumers"


def _explore(
    backend_url: str, consumer: str, scenario: str | Path = "seed-lab", **options: Any
) -> dict[str, Any]:
    report = loadtest.explore(
        scenario,
        handler=f"{CONSUMERS / consumer}.py:handler",
        endpoint_url=backend_url,
        **options,
    )
    data = report.to_dict()
    assert report.exit_code == (1 if data["explore"]["counterexample"] else 0)
    return data["explore"]  # type: ignore[no-any-return]


def _lines(explore: dict[str, Any]) -> list[tuple[str, str, str | None, str | None]]:
    return [
        (s["delivery"], s["what"], s["answer"], s["fault"])
        for s in explore["counterexample"]["steps"]
    ]


def test_claim_trusted_after_a_crash_loses_the_outcome(backend_url: str) -> None:
    explore = _explore(backend_url, "claim_trusting", copies=1, faults="crash")
    example = explore["counterexample"]
    assert example["deliveries"] == 2 and example["faults"] == 1
    assert example["counts"]["lost_outcomes"] == 1
    assert _lines(explore) == [
        ("1", "invocation starts", None, None),
        ("1", "PutItem id=claim#dedup-order", "accepted", None),
        ("1", "the environment crashes", None, "crash"),
        ("1.2", "invocation starts (receive 2)", None, None),
        ("1.2", "PutItem id=claim#dedup-order", "rejected (ConditionalCheckFailedException)", None),
        ("1.2", "acknowledged", None, None),
    ]
    assert explore["replay"].endswith("--faults crash --schedule 1:3=1c")


def test_claim_trusted_is_found_among_copies_too(backend_url: str) -> None:
    explore = _explore(backend_url, "claim_trusting", copies=2, faults="crash")
    example = explore["counterexample"]
    assert example["deliveries"] <= 2 and example["faults"] == 1
    assert example["counts"]["lost_outcomes"] >= 1


def test_claim_that_expires_survives_every_crash(backend_url: str) -> None:
    explore = _explore(backend_url, "claim_expiring", copies=2, faults="crash")
    assert explore["exhaustive"] is True and explore["schedules_failed"] == 0
    assert explore["schedules_run"] > 10


def test_ack_lost_after_a_message_id_keyed_overwrite(backend_url: str) -> None:
    explore = _explore(backend_url, "message_id_overwrite", copies=1, faults="ack-lost")
    example = explore["counterexample"]
    assert example["deliveries"] == 2 and example["faults"] == 1
    assert example["counts"]["duplicate_writes"] == 1
    assert _lines(explore) == [
        ("1", "invocation starts", None, None),
        ("1", "PutItem id=message-1", "accepted", None),
        ("1", "returned; the acknowledgement is lost", None, "ack-lost"),
        ("1.2", "invocation starts (receive 2)", None, None),
        ("1.2", "PutItem id=message-1", "accepted", None),
        ("1.2", "acknowledged", None, None),
    ]
    assert example["steps"][3]["at_ms"] == 30_000  # back after the visibility timeout


def test_message_id_guard_covers_a_lost_ack_but_not_a_resend(backend_url: str) -> None:
    explore = _explore(backend_url, "message_id_conditional", copies=1, faults="ack-lost")
    assert explore["exhaustive"] is True and explore["schedules_failed"] == 0
    # A producer's resend carries a new messageId: no fault is needed to write twice.
    resent = _explore(backend_url, "message_id_conditional", copies=2)
    assert resent["counterexample"]["faults"] == 0
    assert resent["counterexample"]["counts"]["duplicate_writes"] == 1


@pytest.mark.slow
def test_lock_that_expires_under_its_holder_lets_a_second_write_in(backend_url: str) -> None:
    # The quick gate: the whole space with the clock fault takes a minute.
    explore = _explore(
        backend_url, "lock_unconditional", copies=2, faults="clock", stop_at_first=True
    )
    example = explore["counterexample"]
    assert example["deliveries"] == 2 and example["faults"] == 1
    assert example["counts"]["duplicate_writes"] == 1
    lines = _lines(explore)
    assert lines[:4] == [
        ("1", "invocation starts", None, None),
        ("1", "PutItem id=lock#dedup-order", "accepted", None),
        ("1", "GetItem id=dedup-order", "absent", None),
        ("1", "the clock jumps 29 s", None, "clock"),
    ]
    assert ("2", "PutItem id=lock#dedup-order", "accepted", None) in lines  # the expired lock
    assert lines[-3] == ("1", "PutItem id=dedup-order", "accepted", None)
    assert explore["replay"].endswith("--faults clock --schedule 2:5=1j,6=2")


@pytest.mark.slow
def test_fenced_write_under_the_same_lock_survives_every_clock_jump(backend_url: str) -> None:
    explore = _explore(backend_url, "lock_fenced", copies=2, faults="clock")
    assert explore["exhaustive"] is True and explore["schedules_failed"] == 0


def test_lock_without_faults_never_fails(backend_url: str) -> None:
    explore = _explore(backend_url, "lock_unconditional", copies=2)
    assert explore["exhaustive"] is True and explore["schedules_failed"] == 0


def test_powertools_in_progress_record_expires_and_the_order_is_written_again(
    backend_url: str,
) -> None:
    report = loadtest.explore(
        "seed-lab", variant="powertools", copies=1, faults="crash", endpoint_url=backend_url
    )
    assert report.exit_code == 1
    explore = report.to_dict()["explore"]
    example = explore["counterexample"]
    # One message: the receive that crashed after its write, one refused while the
    # record is in progress (it expires with the function timeout, as the message comes
    # back), and one that takes the expired record and writes the order again.
    assert example["deliveries"] == 3 and example["faults"] == 1
    assert example["counts"]["duplicate_writes"] == 1
    lines = [(s["delivery"], s["what"], s["answer"], s["fault"]) for s in example["steps"]]
    assert lines[:4] == [
        ("1", "invocation starts", None, None),
        ("1", "PutItem table $IDEMPOTENCY_TABLE_NAME", "ok", None),
        ("1", "PutItem id=dedup-order", "accepted", None),
        ("1", "the environment crashes", None, "crash"),
    ]
    assert ("1.3", "PutItem id=dedup-order", "accepted", None) in lines
    assert explore["replay"].endswith(
        "--variant powertools --copies 1 --faults crash --schedule 1:5=1c"
    )


POWERTOOLS_TWICE = [
    ("1", "invocation starts", None, None),
    ("1", "PutItem table $IDEMPOTENCY_TABLE_NAME", "ok", None),
    ("1", "PutItem id=dedup-order", "accepted", None),
]
"""The first receive: its in-progress record, then the order."""
POWERTOOLS_AGAIN = [
    ("1.2", "invocation starts (receive 2)", None, None),
    ("1.2", "PutItem table $IDEMPOTENCY_TABLE_NAME", "ok", None),
    ("1.2", "PutItem id=dedup-order", "accepted", None),
    ("1.2", "UpdateItem table $IDEMPOTENCY_TABLE_NAME", "ok", None),
    ("1.2", "acknowledged", None, None),
]
"""The second receive: the expired in-progress record taken over, the order written again."""


def test_powertools_with_a_visibility_timeout_past_the_record_expiry_fails_in_two_receives(
    backend_url: str,
) -> None:
    # The message comes back at 60 s, after the in-progress record expired with the 30 s
    # function timeout: the second receive takes the record over.
    scenario = Path(__file__).parent / "lab-long-visibility.toml"
    report = loadtest.explore(
        scenario, variant="powertools", copies=1, faults="crash", endpoint_url=backend_url
    )
    assert report.exit_code == 1
    explore = report.to_dict()["explore"]
    example = explore["counterexample"]
    assert example["deliveries"] == 2 and example["faults"] == 1
    assert example["counts"]["duplicate_writes"] == 1
    assert _lines(explore) == [
        *POWERTOOLS_TWICE,
        ("1", "the environment crashes", None, "crash"),
        *POWERTOOLS_AGAIN,
    ]
    assert example["steps"][4]["at_ms"] == 60_000
    assert explore["replay"] == (
        f"loadtest explore {scenario} --variant powertools --copies 1 --faults crash "
        "--schedule 1:5=1c"
    )


def test_powertools_in_progress_record_expires_under_a_stall_in_two_receives(
    backend_url: str,
) -> None:
    # The lab's settings; the clock jumps past the function timeout while the first receive
    # works (a stall): it times out, the message and its record are back at once.
    report = loadtest.explore(
        "seed-lab",
        variant="powertools",
        copies=1,
        faults="clock",
        clock_jump_s=31,
        endpoint_url=backend_url,
    )
    assert report.exit_code == 1
    explore = report.to_dict()["explore"]
    example = explore["counterexample"]
    assert example["deliveries"] == 2 and example["faults"] == 1
    assert example["counts"]["duplicate_writes"] == 1
    assert _lines(explore) == [
        *POWERTOOLS_TWICE,
        ("1", "the clock jumps 31 s", None, "clock"),
        ("1", "UpdateItem table $IDEMPOTENCY_TABLE_NAME", None, None),
        ("1", "timed out (the function timeout passed)", None, None),
        *POWERTOOLS_AGAIN,
    ]
    assert explore["replay"].endswith("--faults clock --clock-jump 31 --schedule 1:5=1j")


def test_powertools_around_a_conditional_write_survives_every_crash(backend_url: str) -> None:
    scenario = Path(__file__).parent / "idempotency-table.toml"
    explore = _explore(backend_url, "powertools_fenced", scenario, copies=1, faults="crash")
    assert explore["exhaustive"] is True and explore["schedules_failed"] == 0


def test_the_handler_sleeps_on_the_virtual_clock(backend_url: str) -> None:
    report = loadtest.explore(
        "seed-lab",
        handler=f"{CONSUMERS / 'slow_conditional'}.py:handler",
        copies=1,
        schedule="1:",
        endpoint_url=backend_url,
    )
    assert report.exit_code == 0
    [result] = report.runs[0].raw["results"]
    # 20 s of sleep seen by time.monotonic, time.time, datetime.now and the context,
    # from the fixed virtual epoch (2026-01-01T00:00:00Z) and a 30 s function timeout.
    assert result == {
        "slept_s": 20.0,
        "now_s": 1_767_225_620.0,
        "utc": "2026-01-01T00:00:20+00:00",
        "remaining_ms": 10_000,
    }

"""explore on claim-then-complete consumers: the crash between the claim and the completion."""

from __future__ import annotations

import pytest

import loadtest

CONSUMERS = "tests/integration/explore/consumers"


def test_a_pending_claim_skipped_by_the_redelivery_is_a_lost_outcome(backend_url: str) -> None:
    handler = f"{CONSUMERS}/claim_pending.py:handler"
    report = loadtest.explore("seed-lab", handler=handler, faults="crash", endpoint_url=backend_url)
    assert report.exit_code == 1
    explore = report.to_dict()["explore"]
    example = explore["counterexample"]
    assert example["counts"]["lost_outcomes"] >= 1
    assert example["faults"] == 1
    [run] = report.runs
    assert run.verdict == "fail" and run.counts.lost_outcomes >= 1
    assert "--faults crash --schedule " in explore["replay"]
    # The first schedule passed and taught what a complete order holds: no crashed
    # schedule after it is left inconclusive, and every failing one is the one gap.
    assert explore["schedules_inconclusive"] == 0
    [bug] = explore["bugs"]
    assert bug["schedules"] == explore["schedules_failed"] >= 1

    again = loadtest.explore(
        "seed-lab",
        handler=handler,
        faults="crash",
        schedule=example["schedule"],
        endpoint_url=backend_url,
    )
    assert again.exit_code == 1
    assert again.to_dict()["explore"]["counterexample"]["counts"]["lost_outcomes"] >= 1


@pytest.mark.parametrize(
    "consumer",
    [
        # The details go in a map the claim holds empty.
        "claim_nested_details.py",
        # The claim holds every detail; only its status (PROCESSING, never DONE) tells.
        "claim_status_flip.py",
    ],
)
def test_a_half_written_order_however_it_is_written_is_a_lost_outcome(
    backend_url: str, consumer: str
) -> None:
    handler = f"{CONSUMERS}/{consumer}:handler"
    report = loadtest.explore("seed-lab", handler=handler, faults="crash", endpoint_url=backend_url)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1, explore["bound"]["sentence"]
    [bug] = explore["bugs"]
    assert bug["counts"]["lost_outcomes"] == 1 and bug["faults"] == 1
    assert bug["counts"]["duplicate_writes"] == 0
    assert explore["exhaustive"] is True and explore["schedules_inconclusive"] == 0


def test_a_redelivery_that_takes_a_pending_claim_over_passes(backend_url: str) -> None:
    report = loadtest.explore(
        "seed-lab",
        handler=f"{CONSUMERS}/claim_takeover.py:handler",
        faults="crash",
        copies=1,
        endpoint_url=backend_url,
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore
    assert explore["schedules_failed"] == 0 and explore["schedules_inconclusive"] == 0
    assert explore["exhaustive"] is True


def test_a_redelivery_that_claims_an_expired_claim_with_its_own_token_passes(
    backend_url: str,
) -> None:
    # Crashed or timed out after its claim, the first receive leaves it to expire; the
    # third receive claims it with its own token, then completes: a takeover, in two writes.
    report = loadtest.explore(
        "seed-lab",
        handler=f"{CONSUMERS}/claim_fenced_takeover.py:handler",
        faults="crash,timeout",
        copies=1,
        endpoint_url=backend_url,
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore["bugs"]
    assert explore["exhaustive"] is True and explore["schedules_run"] > 1


def test_a_copy_that_takes_a_live_claim_over_after_a_timeout_is_a_duplicate(
    backend_url: str,
) -> None:
    # Both copies time out once; their redeliveries run side by side. One claims, the other
    # finds the claim PENDING at its second receive and takes it over as if the holder had
    # crashed: it completes the order, the holder's completion is refused. The table holds
    # one complete order, but the work between claim and completion was done twice.
    report = loadtest.explore(
        "seed-lab",
        handler=f"{CONSUMERS}/claim_takeover.py:handler",
        faults="crash,timeout",
        schedule="2:1=2,2=1t,7=2.2",
        endpoint_url=backend_url,
    )
    assert report.exit_code == 1
    [run] = report.runs
    assert run.counts.duplicate_writes == 1
    assert run.counts.conflicting_writes == 0 and run.counts.lost_outcomes == 0
    [explored] = report.to_dict()["runs"]
    assert any(
        n.startswith("1 of the duplicate writes took over a claim") for n in explored["notes"]
    )

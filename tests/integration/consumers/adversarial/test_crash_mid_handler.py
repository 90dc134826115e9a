"""The crash-mid-handler fault: the environment dies right after a write is answered.

A claim-then-complete consumer that skips a claim it finds is the family of bugs this
fault exists for: its first delivery dies between the claim and the work, the
redelivery finds the claim IN_PROGRESS, skips the order and is acknowledged.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.engine import VariantRun
from loadtest.model.history.log import InvocationOutcome, WriteOutcome
from loadtest.model.scenario.loading import load_scenario
from loadtest.observer.lambda_entry import CRASH_MID_HANDLER_MESSAGE
from tests.integration.helpers import run_variants

HERE = Path(__file__).parent
SCENARIO = HERE / "crash_mid_handler.toml"
CONSUMER = f"{HERE / 'claim_skip_in_progress.py'}:handler"
ORDERS = 6


@pytest.fixture(scope="module")
def crashed(backend_url: str) -> VariantRun:
    scenario = load_scenario(str(SCENARIO)).with_overrides(crash_mid_handler=1.0)
    (run,) = run_variants(scenario, backend_url, CONSUMER).runs
    return run


def test_every_first_delivery_dies_after_its_claim_and_every_order_is_lost(
    crashed: VariantRun,
) -> None:
    c = crashed.check.counts
    assert crashed.check.verdict == "fail"
    assert c.unsettled == c.unobserved_calls == 0
    # Each order: one delivery that claims and dies, one redelivery that finds the claim,
    # skips and is acked. The work write is never made.
    assert (c.messages_sent, c.deliveries, c.redeliveries) == (ORDERS, 2 * ORDERS, ORDERS)
    assert (c.acked, c.dead_lettered, c.handler_errors) == (ORDERS, 0, ORDERS)
    assert (c.side_writes, c.writes_accepted) == (ORDERS, 0)
    assert c.lost_outcomes == ORDERS
    assert c.duplicate_writes == c.conflicting_writes == 0
    crashes = [i for i in crashed.history.invocations if i.outcome is InvocationOutcome.CRASH]
    assert len(crashes) == ORDERS
    for invocation in crashes:
        # The claim was answered (accepted) and recorded; nothing after it ran.
        assert [w.outcome for w in invocation.writes] == [WriteOutcome.ACCEPTED]
        assert invocation.error == CRASH_MID_HANDLER_MESSAGE
    claims = {k: v for k, v in crashed.end_state.table_items.items() if k.startswith("CLAIM#")}
    assert len(claims) == len(crashed.end_state.table_items) == ORDERS
    assert {item["status"]["S"] for item in claims.values()} == {"IN_PROGRESS"}


def test_without_the_fault_the_same_consumer_passes(backend_url: str) -> None:
    (run,) = run_variants(load_scenario(str(SCENARIO)), backend_url, CONSUMER).runs
    c = run.check.counts
    assert run.check.verdict == "pass", run.check.reasons
    assert (c.acked, c.handler_errors, c.lost_outcomes) == (ORDERS, 0, 0)
    assert (c.writes_accepted, c.side_writes) == (ORDERS, 2 * ORDERS)


def test_the_flag_is_labelled_in_every_report(backend_url: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(SCENARIO),
            "--handler",
            CONSUMER,
            "--endpoint-url",
            backend_url,
            "--crash-mid-handler",
            "1",
            "--out",
            str(tmp_path),
            "--json",
            "r.json",
            "--markdown",
            "r.md",
            "--html",
            "r.html",
        ],
    )
    assert result.exit_code == 1, result.output
    label = "crash mid-handler 100% per write"
    assert label in result.output
    assert f"{ORDERS} lost outcome(s)" in result.output
    (run,) = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert run["faults"] == label
    assert run["settings"]["faults"]["crash_mid_handler"] == 1.0
    assert run["counts"]["lost_outcomes"] == ORDERS
    assert label in (tmp_path / "r.md").read_text()
    assert label in (tmp_path / "r.html").read_text()


def test_an_aioboto3_consumer_dies_after_every_answered_write(backend_url: str) -> None:
    # crash.toml: 4 orders, one copy each, max_receive_count 3. With the fault at 1 every
    # delivery dies once its conditional put is answered (accepted the first time, refused
    # by the condition after), so each order is received 3 times and dead-lettered.
    scenario = load_scenario(str(HERE / "crash.toml")).with_overrides(crash_mid_handler=1.0)
    (run,) = run_variants(scenario, backend_url, f"{HERE / 'aio_conditional.py'}:handler").runs
    c = run.check.counts
    assert (c.deliveries, c.handler_errors, c.acked, c.dead_lettered) == (12, 12, 0, 4)
    assert (c.writes_accepted, c.writes_rejected, c.duplicate_writes) == (4, 8, 0)
    assert run.check.verdict == "fail"
    assert all(i.error == CRASH_MID_HANDLER_MESSAGE for i in run.history.invocations)


def test_claims_a_crash_left_pending_are_lost_by_what_the_completed_orders_hold(
    backend_url: str,
) -> None:
    # The order item is its own claim: a crash between the claim and the completion leaves
    # {id, status: PENDING, quantity}, which the redelivery skips. It carries the message's
    # details, and no field is declared: the orders completed where nothing failed show
    # what a complete one holds (a total_cents).
    scenario = load_scenario(str(HERE / "claim_crash.toml")).with_overrides(crash_mid_handler=0.5)
    (run,) = run_variants(scenario, backend_url, f"{HERE / 'claim_pending_skip.py'}:handler").runs
    c = run.check.counts
    items = run.end_state.table_items.values()
    pending = sum(1 for item in items if item["status"]["S"] == "PENDING")
    assert pending >= 1, "no crash fell between a claim and its completion"
    assert c.lost_outcomes == pending
    assert run.check.complete is not None
    assert run.check.complete.names == frozenset({"status", "quantity", "total_cents"})
    assert c.duplicate_writes == c.conflicting_writes == 0
    assert run.check.verdict == "fail", (run.check.reasons, run.check.inconclusive)
    assert c.unsettled == c.dead_lettered == 0

"""The transactional and Powertools consumers, run by the engine on the real embedded backend."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from loadtest.engine import VariantRun
from loadtest.model.history.log import InvocationOutcome, WriteOutcome
from loadtest.model.scenario.loading import Scenario, load_scenario
from tests.integration.helpers import loadtest_resources, run_variants

HERE = Path(__file__).parent
IDS = 20
COPIES = 3


def small_race_burst() -> Scenario:
    # The shipped race-burst, small: 20 ids x 3 copies at once, 8 environments,
    # and a 2 s visibility timeout so a failed copy comes back quickly.
    return load_scenario("race-burst").with_overrides(
        distinct_ids=IDS, copies=COPIES, visibility_timeout_s=2
    )


@pytest.fixture(scope="module")
def transactional_run(backend_url: str) -> VariantRun:
    (run,) = run_variants(small_race_burst(), backend_url, "transactional").runs
    return run


def test_transactional_stores_each_order_once_with_its_outbox_entry(
    transactional_run: VariantRun,
) -> None:
    run = transactional_run
    counts = run.check.counts
    assert counts.messages_sent == IDS * COPIES
    assert counts.acked == IDS * COPIES
    assert counts.dead_lettered == 0
    assert counts.lost_outcomes == 0
    assert counts.conflicting_writes == 0
    assert run.end_state.queue_visible == run.end_state.queue_in_flight == 0

    # End state: exactly one order and one outbox entry per id, each matching its order.
    items = run.end_state.table_items
    orders = {k: v for k, v in items.items() if not k.startswith("outbox#")}
    outbox = {k: v for k, v in items.items() if k.startswith("outbox#")}
    assert len(orders) == IDS
    assert len(outbox) == IDS
    for order_id, order in orders.items():
        entry = outbox[f"outbox#{order_id}"]
        assert entry["kind"] == {"S": "order-created"}
        assert entry["order_id"] == {"S": order_id}
        assert entry["total_cents"] == order["total_cents"]

    # Per written key, one accepted write: the order was never written again.
    writes = [aw.write for aw in run.check.decisions]
    accepted_keys = Counter(w.key["id"]["S"] for w in writes if w.outcome is WriteOutcome.ACCEPTED)
    assert set(accepted_keys) == set(items)
    assert set(accepted_keys.values()) == {1}
    # Every later copy's transaction was cancelled: both of its parts show as rejected,
    # the order part with the stored order as its item before.
    rejected = [w for w in writes if w.outcome is WriteOutcome.REJECTED]
    assert all(w.operation == "TransactWriteItems.Put" for w in rejected)
    assert len(rejected) == 2 * IDS * (COPIES - 1)
    rejected_orders = [w for w in rejected if not w.key["id"]["S"].startswith("outbox#")]
    assert len(rejected_orders) == IDS * (COPIES - 1)
    assert all(w.item_before == orders[w.key["id"]["S"]] for w in rejected_orders)
    assert all(w.error_code == "ConditionalCheckFailed" for w in rejected)
    # Completed duplicates are acknowledged, not failed.
    assert counts.handler_errors == 0
    assert counts.redeliveries == 0


def test_transactional_outbox_part_is_not_a_duplicate_write(
    transactional_run: VariantRun, conflicting_run: VariantRun
) -> None:
    # The order is the outcome, written once per id; its outbox entry is a side write.
    assert transactional_run.check.counts.writes_accepted == IDS
    assert transactional_run.check.counts.side_writes == IDS * COPIES
    assert transactional_run.check.counts.duplicate_writes == 0
    assert transactional_run.check.verdict == "pass"
    assert conflicting_run.check.counts.duplicate_writes == 0


@pytest.fixture(scope="module")
def conflicting_run(backend_url: str) -> VariantRun:
    scenario = load_scenario(str(HERE / "conflicting.toml"))
    (run,) = run_variants(scenario, backend_url, "transactional").runs
    return run


def test_transactional_refuses_conflicting_details(
    conflicting_run: VariantRun, backend_url: str
) -> None:
    run = conflicting_run
    counts = run.check.counts
    assert counts.messages_sent == 2
    assert counts.acked == 1
    assert counts.dead_lettered == 1
    # The second copy: delivered, refused, redelivered once, refused, dead-lettered.
    assert counts.deliveries == 3
    assert counts.redeliveries == 1
    assert counts.handler_errors == 2
    assert counts.conflicting_writes == 0
    # The refused transactions stored nothing: one accepted write per key, both from
    # the first message's transaction (one write of the outcome: the checker counts a transaction once).
    accepted = [aw for aw in run.check.decisions if aw.write.outcome is WriteOutcome.ACCEPTED]
    assert sorted(aw.write.key["id"]["S"] for aw in accepted) == ["c-1", "outbox#c-1"]
    assert len({aw.invocation.request_id for aw in accepted}) == 1
    failed = [i for i in run.history.invocations if i.outcome is not InvocationOutcome.SUCCESS]
    assert all(i.error and "different details" in i.error for i in failed)

    dead = {d.message_id for d in run.history.dead_letters}
    (dead_body,) = [json.loads(m.body) for m in run.history.sent if m.message_id in dead]
    assert dead_body == {"id": "c-1", "quantity": 3}
    assert run.end_state.table_items["c-1"]["quantity"] == {"N": "2"}
    assert run.end_state.table_items["outbox#c-1"]["total_cents"] == {"N": "600"}
    assert len(run.end_state.table_items) == 2
    assert loadtest_resources(backend_url) == ([], [])


@pytest.mark.skipif(
    importlib.util.find_spec("aws_lambda_powertools") is None,
    reason="aws-lambda-powertools is not installed (the optional 'powertools' extra)",
)
def test_powertools_never_writes_twice_and_pays_in_redeliveries(backend_url: str) -> None:
    (run,) = run_variants(small_race_burst(), backend_url, "powertools").runs
    counts = run.check.counts
    assert counts.messages_sent == IDS * COPIES
    assert counts.acked == IDS * COPIES
    assert counts.dead_lettered == 0
    assert counts.duplicate_writes == 0
    assert counts.conflicting_writes == 0
    assert counts.lost_outcomes == 0
    assert counts.writes_accepted == IDS  # one unconditional put per id, nothing rejected
    assert counts.writes_rejected == 0
    assert len(run.end_state.table_items) == IDS
    assert run.check.verdict == "pass"
    # The copies arrive together and 8 environments take them at once, so copies of
    # an id whose first delivery still holds the INPROGRESS lock raise
    # IdempotencyAlreadyInProgressError: the invocation fails and the message comes
    # back after the visibility timeout, where the stored result is replayed. Every
    # failure is that error, and each one costs exactly one redelivery.
    failed = [i for i in run.history.invocations if i.outcome is not InvocationOutcome.SUCCESS]
    assert failed, "no copy met the in-progress lock; the race did not reproduce"
    assert all(i.error and "IdempotencyAlreadyInProgressError" in i.error for i in failed)
    assert counts.handler_errors == len(failed)
    assert counts.redeliveries == counts.handler_errors
    assert loadtest_resources(backend_url) == ([], [])

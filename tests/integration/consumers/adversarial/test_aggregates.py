"""Consumers whose outcome is an aggregate: a running total per customer, judged end to end.

Each handler adds an order's quantity to its customer's item (three customers, chosen by a
hash of the order id), so no item is keyed by the business id: the checker judges each
order's effect on its customer's item. The end table shows what a duplicate costs (a
total above the orders' sum by the quantities applied again), which the counts must match.
"""

from __future__ import annotations

import json
import zlib
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from loadtest.engine import VariantRun
from loadtest.model.scenario.loading import load_scenario
from tests.integration.helpers import run_variants

HERE = Path(__file__).parent
IDS, COPIES = 10, 3


def _run(backend_url: str, scenario: str, consumer: str) -> VariantRun:
    loaded = load_scenario(str(HERE / scenario))
    (run,) = run_variants(loaded, backend_url, f"{HERE / consumer}:handler").runs
    return run


def _quantities(run: VariantRun) -> dict[str, int]:
    return {json.loads(m.body)["id"]: json.loads(m.body)["quantity"] for m in run.history.sent}


def _customer(order_id: str) -> str:
    return f"customer-{zlib.crc32(order_id.encode()) % 3}"


def _amounts(run: VariantRun) -> dict[str, Decimal]:
    return {
        key: Decimal(item["amount"]["N"])
        for key, item in run.end_state.table_items.items()
        if key.startswith("customer-")
    }


def _true_totals(run: VariantRun) -> dict[str, Decimal]:
    totals: Counter[str] = Counter()
    for order_id, quantity in _quantities(run).items():
        totals[_customer(order_id)] += quantity
    return {customer: Decimal(total) for customer, total in totals.items()}


def _assert_clean_settlement(run: VariantRun) -> None:
    c = run.check.counts
    assert (c.messages_sent, c.distinct_ids) == (IDS * COPIES, IDS)
    assert (c.acked, c.dead_lettered, c.unsettled, c.handler_errors) == (IDS * COPIES, 0, 0, 0)
    assert c.unobserved_calls == c.observer_errors == 0, run.check.inconclusive


@pytest.fixture(scope="module")
def ledger_add(backend_url: str) -> VariantRun:
    return _run(backend_url, "burst.toml", "ledger_add.py")


def test_an_unguarded_running_total_fails_with_every_repeat_counted(ledger_add: VariantRun) -> None:
    run = ledger_add
    c = run.check.counts
    _assert_clean_settlement(run)
    assert run.check.verdict == "fail"
    # Every delivery's ADD changed its customer's item: one per delivery, the first of
    # each order its outcome, every other one a duplicate effect.
    assert c.writes_accepted == c.deliveries == IDS * COPIES
    assert (c.duplicate_writes, c.conflicting_writes) == (IDS * (COPIES - 1),) * 2
    assert (c.lost_outcomes, c.noop_writes, c.side_writes) == (0, 0, 0)
    # The table agrees: each customer's total holds its orders' quantities COPIES times.
    truth = _true_totals(run)
    assert _amounts(run) == {customer: total * COPIES for customer, total in truth.items()}
    assert run.check.outcome.startswith("aggregates: 3 item(s) changed on behalf of several")
    assert "detected from the writes" in run.check.outcome


@pytest.fixture(scope="module")
def ledger_guarded(backend_url: str) -> VariantRun:
    return _run(backend_url, "burst.toml", "ledger_guarded.py")


def test_a_running_total_guarded_by_the_order_set_passes(ledger_guarded: VariantRun) -> None:
    run = ledger_guarded
    c = run.check.counts
    _assert_clean_settlement(run)
    assert run.check.verdict == "pass", (run.check.reasons, run.check.inconclusive)
    assert (c.writes_accepted, c.writes_rejected) == (IDS, IDS * (COPIES - 1))
    assert c.duplicate_writes == c.conflicting_writes == c.lost_outcomes == 0
    assert _amounts(run) == _true_totals(run)


@pytest.fixture(scope="module")
def ledger_read_modify_write(backend_url: str) -> VariantRun:
    return _run(backend_url, "ledger_serial.toml", "ledger_read_modify_write.py")


def test_a_read_modify_write_total_counts_each_sequential_repeat(
    ledger_read_modify_write: VariantRun,
) -> None:
    run = ledger_read_modify_write
    c = run.check.counts
    _assert_clean_settlement(run)
    assert run.check.verdict == "fail"
    # One environment: each copy read the total the one before it stored and put it back
    # with its quantity added again.
    assert c.writes_accepted == IDS * COPIES
    assert (c.duplicate_writes, c.conflicting_writes, c.lost_outcomes) == (
        IDS * (COPIES - 1),
        IDS * (COPIES - 1),
        0,
    )
    truth = _true_totals(run)
    assert _amounts(run) == {customer: total * COPIES for customer, total in truth.items()}


@pytest.fixture(scope="module")
def ledger_read_modify_write_racing(backend_url: str) -> VariantRun:
    return _run(backend_url, "burst.toml", "ledger_read_modify_write.py")


def test_racing_read_modify_writes_count_each_order_the_table_lost(
    ledger_read_modify_write_racing: VariantRun,
) -> None:
    run = ledger_read_modify_write_racing
    c = run.check.counts
    _assert_clean_settlement(run)
    # Six environments: a put computed from a total read before another order's put
    # replaces that order's change. Every acknowledged message of an order its customer's
    # item no longer lists is a lost outcome, and only those.
    listed: Counter[str] = Counter()
    for key, item in run.end_state.table_items.items():
        if key.startswith("customer-"):
            listed.update(entry["S"] for entry in item["orders"]["L"])
    quantities = _quantities(run)
    missing = [order for order in quantities if not listed[order]]
    assert c.lost_outcomes == len(missing) * COPIES
    assert c.duplicate_writes == c.conflicting_writes
    if missing or c.duplicate_writes:
        assert run.check.verdict == "fail"

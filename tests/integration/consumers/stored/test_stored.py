"""Consumers that store the outcome their own way, judged end to end on the embedded backend.

Each consumer runs once (module-scoped fixture); each test asserts the verdict and the
counts the workload makes exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.engine import VariantRun
from loadtest.model.scenario.loading import load_scenario
from tests.integration.helpers import run_variants

HERE = Path(__file__).parent
ORDERS = 20
runner = CliRunner()


def _run(backend_url: str, scenario: str, consumer: str, **overrides: Any) -> VariantRun:
    loaded = load_scenario(str(HERE / scenario)).with_overrides(**overrides)
    (run,) = run_variants(loaded, backend_url, f"{HERE / consumer}:handler").runs
    return run


def _assert_observed(run: VariantRun) -> None:
    c = run.check.counts
    assert c.unsettled == c.unobserved_calls == c.observer_errors == 0, run.check.inconclusive


def _shared_batches(run: VariantRun) -> int:
    """Orders two of whose copies one invocation carried."""
    return sum(
        1
        for inv in run.history.invocations
        for business_id in {r.business_id for r in inv.records}
        if sum(r.business_id == business_id for r in inv.records) > 1
    )


@pytest.fixture(
    scope="module", params=["message_id_payload.toml", "message_id_payload_table_key.toml"]
)
def message_id_payload(backend_url: str, request: pytest.FixtureRequest) -> VariantRun:
    # The table's key named as the outcome key, or as the table's own key ([table] key).
    return _run(backend_url, request.param, "message_id_payload.py")


def test_a_body_kept_as_a_map_under_the_message_id_is_sixty_duplicates(
    message_id_payload: VariantRun,
) -> None:
    # 20 orders x 4 copies: a row per message, each copy after the first a duplicate.
    run = message_id_payload
    c = run.check.counts
    _assert_observed(run)
    assert (c.messages_sent, c.acked, c.handler_errors) == (80, 80, 0)
    assert len(run.end_state.table_items) == 80
    assert (c.writes_accepted, c.duplicate_writes, c.lost_outcomes) == (80, 60, 0)
    assert c.conflicting_writes == 0
    assert run.check.verdict == "fail"
    assert "ID={messageId}" in run.check.outcome


def test_outcomes_carrying_no_detail_are_inconclusive_unless_declared(
    backend_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "run.json"
    result = runner.invoke(
        app,
        [
            "run",
            str(HERE / "half_written_undeclared.toml"),
            "--handler",
            f"{HERE / 'half_written.py'}:handler",
            "--endpoint-url",
            backend_url,
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 4, result.output
    assert "[outcome] fields" in result.output
    (run,) = json.loads(out.read_text())["runs"]
    c = run["counts"]
    assert (c["acked"], c["writes_accepted"], c["writes_rejected"]) == (20, 10, 10)
    assert c["lost_outcomes"] == c["duplicate_writes"] == 0
    assert c["unobserved_calls"] == c["observer_errors"] == c["unsettled"] == 0
    assert run["verdict"] == "inconclusive"


@pytest.fixture(scope="module")
def half_written(backend_url: str) -> VariantRun:
    return _run(backend_url, "half_written.toml", "half_written.py")


def test_a_declared_outcome_finds_every_order_half_written(half_written: VariantRun) -> None:
    run = half_written
    c = run.check.counts
    _assert_observed(run)
    assert (c.acked, c.writes_accepted, c.writes_rejected) == (20, 10, 10)
    assert c.lost_outcomes == 20  # every acknowledged message: its order was never priced
    assert c.duplicate_writes == 0
    assert run.check.verdict == "fail"


@pytest.fixture(scope="module")
def parallel_claims(backend_url: str) -> VariantRun:
    return _run(backend_url, "parallel_claims.toml", "parallel_claims.py")


def test_records_worked_in_parallel_threads_are_each_tied_to_their_writes(
    parallel_claims: VariantRun,
) -> None:
    # Every copy after an order's first claims it again (an unconditional put): a
    # duplicate write, whether it shared its batch with the first copy or not. In a
    # shared batch only the records' marks tell the two claims apart.
    run = parallel_claims
    c = run.check.counts
    _assert_observed(run)
    assert (c.acked, c.handler_errors) == (20, 0)
    shared = _shared_batches(run)
    assert shared > 0, "no batch carried two copies of an order; the case did not reproduce"
    # A copy in a later batch claims a finished order (a conflicting write: DONE becomes
    # PENDING) and completes it again; in a shared batch the second completion is refused.
    split = 10 - shared
    writes = [d.write for d in run.check.decisions]
    assert all(w.record_id for w in writes)
    assert (c.writes_accepted, c.writes_rejected) == (30 + split, 10 - split)
    assert (c.duplicate_writes, c.lost_outcomes, c.conflicting_writes) == (10, 0, split)
    assert run.check.verdict == "fail"
    assert not run.check.inconclusive


@pytest.mark.parametrize("consumer", ["sns_orders.py", "sns_orders_read_first.py"])
def test_an_sns_envelope_consumer_in_batches_of_ten_writes_each_order_twice(
    backend_url: str, consumer: str
) -> None:
    # Whether it stores each record's order as it reads it (the writes' marks name their
    # records) or parses the whole batch first (every write marked with the last record:
    # not trusted), each copy's put is found: 20 duplicate writes.
    run = _run(backend_url, "sns_orders.toml", consumer)
    c = run.check.counts
    _assert_observed(run)
    assert _shared_batches(run) > 0, "no batch carried two copies of an order"
    assert (c.messages_sent, c.acked, c.handler_errors) == (40, 40, 0)
    assert (c.writes_accepted, c.duplicate_writes, c.lost_outcomes) == (40, 20, 0)
    assert c.conflicting_writes == 0
    assert run.check.verdict == "fail"
    assert not run.check.inconclusive
    marks = {(d.write.record_id, d.invocation.request_id) for d in run.check.decisions}
    if consumer == "sns_orders.py":
        assert len(marks) == 40  # each write names its own record
    else:
        assert len(marks) == len(run.history.invocations)  # the last record of each batch

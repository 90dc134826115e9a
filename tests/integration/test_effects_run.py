"""A load run of a consumer that publishes after its guarded put: each invocation's effects
are recorded in the history, one accepted publish per order written."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from loadtest.model.history.log import EffectKind, WriteOutcome
from loadtest.model.scenario.loading import load_scenario
from tests.integration.helpers import run_variants

CONSUMER = Path(__file__).parent / "explore" / "consumers" / "put_then_publish.py"


def test_each_invocations_publish_is_in_the_history(backend_url: str) -> None:
    result = run_variants(load_scenario("seed-lab"), backend_url, f"{CONSUMER}:handler")
    [run] = result.runs
    invocations = run.history.invocations
    effects = [e for inv in invocations for e in inv.effects]
    assert {(e.operation, e.kind, e.accepted) for e in effects} == {
        ("SNS.Publish", EffectKind.TOPIC, True)
    }
    # One publish per accepted put, made by the same invocation, for the record it read.
    for inv in invocations:
        accepted = [w for w in inv.writes if w.outcome is WriteOutcome.ACCEPTED]
        assert [e.record_id for e in inv.effects] == [w.record_id for w in accepted]
        assert all(e.request_id == inv.request_id for e in inv.effects)
    assert Counter(e.payload for e in effects) == {
        '{"id": "dedup-order", "quantity": 4}': 1,
        '{"id": "other-order", "quantity": 1}': 1,
    }

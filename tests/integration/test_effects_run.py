"""A load run of a consumer that publishes after its guarded put: each invocation's effects
are recorded in the history, one accepted publish per order written, and the run's counts of
effects sent are the observer's."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

from loadtest import api
from loadtest.model.history.log import EffectKind, WriteOutcome
from loadtest.model.scenario.loading import load_scenario
from tests.integration import test_sinks
from tests.integration.explore.test_explore_effects import delete_consumer_topic
from tests.integration.helpers import run_variants

CONSUMER = Path(__file__).parent / "explore" / "consumers" / "put_then_publish.py"


def test_each_invocations_publish_is_in_the_history(backend_url: str) -> None:
    try:
        result = run_variants(load_scenario("seed-lab"), backend_url, f"{CONSUMER}:handler")
    finally:
        delete_consumer_topic(backend_url)
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


def test_the_counts_of_a_run_with_a_sink_are_read_from_what_the_observer_saw(
    backend_url: str, tmp_path: Path
) -> None:
    # The sinks' own run (a publish per order written, to the run's {topic:orders}): the
    # observer's records are what the checker counts as sent, the topic what was delivered.
    (tmp_path / "publisher.py").write_text(textwrap.dedent(test_sinks.HANDLER))
    (tmp_path / "sinks.toml").write_text(test_sinks.SCENARIO)
    plan = api.prepare(
        tmp_path / "sinks.toml",
        handler=f"{tmp_path / 'publisher.py'}:handler",
        endpoint_url=backend_url,
    )
    counts = api.execute(plan).runs[0].counts
    assert counts.messages_sent == 12
    assert (counts.effects_sent, counts.effects_delivered) == (6, 6)
    assert (counts.duplicate_effects, counts.lost_effects) == (0, 0)

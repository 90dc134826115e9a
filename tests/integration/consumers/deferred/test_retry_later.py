"""Consumers that defer work by sending it back to the queue that feeds them, judged end
to end on the embedded backend.

``retry_later.toml`` sends 4 orders x 3 copies; each first pass sends its order back with
``DelaySeconds`` and is acknowledged, each second pass stores it. Lambda delivers what a
consumer sends to its own queue, so the run waits for those messages as well and judges
their writes under the business ids their bodies carry.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import loadtest
from loadtest.engine import VariantRun
from loadtest.model.history.log import EffectKind, WriteOutcome
from loadtest.model.scenario.loading import load_scenario
from tests.integration.helpers import loadtest_resources, run_variants

HERE = Path(__file__).parent
IDS = 4
COPIES = 3


def _run(backend_url: str, consumer: str, *env: str, **overrides: Any) -> VariantRun:
    scenario = load_scenario(str(HERE / "retry_later.toml")).with_environment(list(env))
    (run,) = run_variants(
        scenario.with_overrides(**overrides), backend_url, f"{HERE / consumer}:handler"
    ).runs
    assert loadtest_resources(backend_url) == ([], [])
    return run


def _resent(run: VariantRun) -> list[str]:
    """The message ids the queue gave what the consumer sent back to it."""
    return [
        e.key
        for inv in run.history.invocations
        for e in inv.effects
        if e.kind is EffectKind.SOURCE and e.accepted
    ]


def _counts(run: VariantRun, *names: str) -> dict[str, int]:
    counts = run.check.counts
    return {name: int(getattr(counts, name)) for name in names}


@pytest.fixture(scope="module")
def guarded(backend_url: str) -> VariantRun:
    return _run(backend_url, "retry_later.py")


def test_work_sent_back_to_its_own_queue_is_processed_and_passes(guarded: VariantRun) -> None:
    run = guarded
    assert run.check.verdict == "pass", (run.check.reasons, run.check.inconclusive)
    assert _counts(
        run,
        "messages_sent",
        "deliveries",
        "redeliveries",
        "writes_accepted",
        "writes_rejected",
        "duplicate_writes",
        "conflicting_writes",
        "lost_outcomes",
        "acked",
        "unsettled",
        "unexpected_dead_letters",
    ) == {
        "messages_sent": IDS * COPIES,
        "deliveries": 2 * IDS * COPIES,
        "redeliveries": 0,
        "writes_accepted": IDS,
        "writes_rejected": IDS * (COPIES - 1),
        "duplicate_writes": 0,
        "conflicting_writes": 0,
        "lost_outcomes": 0,
        "acked": IDS * COPIES,
        "unsettled": 0,
        "unexpected_dead_letters": 0,
    }
    # Each copy was sent back once, and each message sent back was delivered once.
    resent = _resent(run)
    assert len(set(resent)) == IDS * COPIES
    delivered = Counter(r.message_id for inv in run.history.invocations for r in inv.records)
    assert all(delivered[m] == 1 for m in resent)
    assert {a.message_id for a in run.history.acks} >= set(resent)
    # What was sent back is no effect: no sink, no effect counts.
    assert run.check.counts.effects_sent is None
    assert len(run.end_state.table_items) == IDS
    assert run.end_state.queue_visible == run.end_state.queue_in_flight == 0
    assert any("sent to the queue that feeds it were delivered" in n for n in run.check.notes)


def test_an_unguarded_second_pass_fails_with_duplicates(backend_url: str) -> None:
    run = _run(backend_url, "retry_later_unguarded.py")
    assert run.check.verdict == "fail"
    assert _counts(
        run, "deliveries", "writes_accepted", "duplicate_writes", "lost_outcomes", "unsettled"
    ) == {
        "deliveries": 2 * IDS * COPIES,
        "writes_accepted": IDS * COPIES,
        "duplicate_writes": IDS * (COPIES - 1),
        "lost_outcomes": 0,
        "unsettled": 0,
    }
    accepted = [w for inv in run.history.invocations for w in inv.writes]
    assert all(w.outcome is WriteOutcome.ACCEPTED for w in accepted)


def test_work_still_delayed_at_the_deadline_is_not_judged_lost(backend_url: str) -> None:
    # Sent back for 15 minutes (SQS's longest delay) with a 4 s deadline: Lambda would
    # still deliver it, so the missing orders are not lost, and the run cannot pass.
    run = _run(backend_url, "retry_later.py", "RETRY_DELAY_S=900", deadline_s=4)
    assert run.check.verdict == "inconclusive"
    assert run.history.timed_out
    assert len(_resent(run)) == IDS * COPIES
    assert not any("lost outcome" in r for r in run.check.reasons)
    assert any(
        f"{IDS * COPIES} message(s) the consumer sent to the queue that feeds it" in r
        and "deadline passed" in r
        for r in run.check.inconclusive
    )


@pytest.mark.parametrize("consumer", ["retry_later.py", "retry_later_unguarded.py"])
def test_explore_names_work_sent_back_to_its_own_queue_and_never_passes(
    backend_url: str, consumer: str
) -> None:
    # Explore delivers only the scenario's own messages: either consumer is inconclusive,
    # the guarded one never a false pass, the unguarded one never blamed for a lost order.
    report = loadtest.explore(
        str(HERE / "retry_later.toml"),
        handler=f"{HERE / consumer}:handler",
        copies=2,
        endpoint_url=backend_url,
    )
    assert report.exit_code == 4
    (run,) = report.runs
    assert any("sent work to the queue that feeds it" in r for r in run.inconclusive)

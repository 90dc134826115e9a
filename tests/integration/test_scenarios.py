"""Every shipped scenario, run as shipped on the embedded backend: it shows what it exists to show.

Each scenario's thresholds state its expected effect (e.g. "read-then-write:
duplicate_writes > 0", "conditional: duplicate_writes == 0"), so a passing
verdict for every run is the first assertion; the rest check the mechanism.
"""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import pytest

from loadtest.engine import RunResult
from loadtest.model.scenario.loading import builtin_scenarios, load_scenario
from loadtest.reports.report import build_report
from tests.integration.helpers import loadtest_resources, run_variants

FIFO_SCENARIOS = [
    "fifo-resends-deduplicated",
    "fifo-visibility-timeout",
    "fifo-crash-before-ack",
    "fifo-resends-after-window",
]
STANDARD_QUEUE_SCENARIOS = [
    "resends-at-once",
    "resends-after-completion",
    "visibility-timeout-short",
    "crash-before-ack",
    "conflicting-details",
    "poison-batch",
    "poison-batch-partial",
    "steady-rate",
]


def _run(name: str, url: str) -> tuple[RunResult, dict[str, dict[str, Any]]]:
    result = run_variants(load_scenario(name), url)
    report = build_report(result)
    runs = {run["variant"]: run for run in report["runs"]}
    for variant, run in runs.items():
        failed = [t["expr"] for t in run["thresholds"] if not t["ok"]]
        assert run["verdict"] == "pass", (variant, run["reasons"], failed)
        assert run["counts"]["unsettled"] == 0
    assert loadtest_resources(url) == ([], [])
    return result, runs


def test_every_shipped_scenario_is_listed_with_a_description() -> None:
    found = builtin_scenarios()
    # effects: tests/integration/test_effects.py runs it.
    shipped = {*STANDARD_QUEUE_SCENARIOS, *FIFO_SCENARIOS, "seed-lab", "race-burst", "effects"}
    assert shipped == set(found)
    assert all(s.description for s in found.values())


def test_resends_at_once(backend_url: str) -> None:
    _, runs = _run("resends-at-once", backend_url)
    assert runs["read-then-write"]["counts"]["duplicate_writes"] > 0
    assert runs["conditional"]["counts"]["duplicate_writes"] == 0
    assert runs["conditional"]["counts"]["writes_rejected"] == 60
    assert runs["read-then-write"]["faults"] == "race window 20 ms"


def test_resends_after_completion(backend_url: str) -> None:
    _, runs = _run("resends-after-completion", backend_url)
    assert runs["unconditional"]["counts"]["duplicate_writes"] == 20
    assert runs["read-then-write"]["counts"]["duplicate_writes"] == 0
    assert runs["conditional"]["counts"]["duplicate_writes"] == 0
    assert runs["conditional"]["counts"]["writes_rejected"] == 20


def test_visibility_timeout_shorter_than_handler(backend_url: str) -> None:
    result, runs = _run("visibility-timeout-short", backend_url)
    for run in result.runs:
        # The same messageId delivered again while the first invocation ran.
        deliveries = Counter(r.message_id for inv in run.history.invocations for r in inv.records)
        assert max(deliveries.values()) >= 2
        assert run.check.counts.messages_sent == 8
        assert any("shorter than the handler duration" in w for w in run.warnings)
    assert runs["read-then-write"]["counts"]["duplicate_writes"] > 0
    assert runs["conditional"]["counts"]["duplicate_writes"] == 0
    assert runs["conditional"]["table_after"] == {"items": 8}


@pytest.mark.slow
def test_crash_before_acknowledgement(backend_url: str) -> None:
    result, runs = _run("crash-before-ack", backend_url)
    for run in result.runs:
        crashed = [inv for inv in run.history.invocations if inv.outcome.value == "crash"]
        assert crashed and all("injected crash" in (inv.error or "") for inv in crashed)
        # What a crashed invocation did before the crash is still observed
        # (read-then-write's redelivery may only read, find the order and stop).
        assert all(inv.writes or inv.reads for inv in crashed)
        if run.variant != "read-then-write":
            assert all(inv.writes for inv in crashed)
    assert runs["unconditional"]["counts"]["duplicate_writes"] > 0
    assert runs["read-then-write"]["counts"]["duplicate_writes"] == 0
    assert runs["conditional"]["counts"]["duplicate_writes"] == 0


def test_conflicting_details(backend_url: str) -> None:
    _, runs = _run("conflicting-details", backend_url)
    guarded = runs["conditional"]
    assert guarded["counts"]["dead_lettered"] > 0
    assert guarded["counts"]["conflicting_writes"] == 0
    assert {d["last_error"] for d in guarded["dead_letters"]} == {
        "ConflictingOrderError: Order ID already exists with different details"
    }
    assert runs["unconditional"]["counts"]["conflicting_writes"] > 0
    assert runs["unconditional"]["relaxed_reasons"]


@pytest.mark.slow
def test_poison_in_batches_without_partial_responses(backend_url: str) -> None:
    _, runs = _run("poison-batch", backend_url)
    for run in runs.values():
        assert run["counts"]["dead_lettered"] > 0
        assert any(
            "Quantity must be an integer from 1 to 10" in (d["last_error"] or "")
            or "records failed; retrying the batch" in (d["last_error"] or "")
            for d in run["dead_letters"]
        )
        assert run["counts"]["redeliveries"] > 0
    assert runs["unconditional"]["counts"]["duplicate_writes"] > 0


@pytest.mark.slow
def test_poison_in_batches_with_partial_responses(backend_url: str) -> None:
    result, runs = _run("poison-batch-partial", backend_url)
    poison = {m.business_id for m in result.runs[0].history.sent if '"quantity":0' in m.body}
    for run in runs.values():
        # Only the poison records are retried and dead-lettered.
        assert {d["business_id"] for d in run["dead_letters"]} == poison
        assert run["counts"]["duplicate_writes"] == 0
    batched = [inv for inv in result.runs[0].history.invocations if len(inv.records) > 1]
    assert batched, "no invocation got more than one record"


def test_steady_rate_is_open_loop(backend_url: str) -> None:
    result, runs = _run("steady-rate", backend_url)
    sent = result.runs[0].history.sent
    start = min(m.intended_ns for m in sent)
    span_s = (max(m.intended_ns for m in sent) - start) / 1e9
    # 200 messages at 40/s are due over 5 s; each resend 2 s after its first copy.
    assert 4.9 < span_s <= 199 / 40 + 2.0
    assert runs["conditional"]["latency_us"]["end_to_end"]["count"] == 200


@pytest.mark.parametrize("bad", [{"batch_size": 0}, {"copies": 0}, {"rate_per_s": -1.0}])
def test_impossible_settings_are_refused_before_anything_is_created(
    backend_url: str, bad: dict[str, Any]
) -> None:
    from loadtest.errors import ScenarioError

    with pytest.raises(ScenarioError):
        load_scenario("steady-rate").with_overrides(**bad)
    assert loadtest_resources(backend_url) == ([], [])


# --- FIFO queues --------------------------------------------------------------------


def _deliveries_by_id(result: RunResult, variant: str) -> Counter[str | None]:
    run = next(r for r in result.runs if r.variant == variant)
    return Counter(r.business_id for inv in run.history.invocations for r in inv.records)


def _overlapping_invocations_of_one_id(result: RunResult, variant: str) -> int:
    """Pairs of invocations of the same business id that ran at the same time."""
    run = next(r for r in result.runs if r.variant == variant)
    spans: dict[str | None, list[tuple[int, int]]] = {}
    for inv in run.history.invocations:
        for record in inv.records:
            spans.setdefault(record.business_id, []).append((inv.started_ns, inv.ended_ns))
    pairs = 0
    for found in spans.values():
        found.sort()
        pairs += sum(1 for a, b in itertools.pairwise(found) if b[0] < a[1])
    return pairs


def test_fifo_resends_inside_the_window_are_dropped_by_the_queue(backend_url: str) -> None:
    result, runs = _run("fifo-resends-deduplicated", backend_url)
    for variant, run in runs.items():
        assert run["counts"]["messages_sent"] == 60, variant
        assert run["counts"]["deliveries"] == 20, variant
        assert set(_deliveries_by_id(result, variant).values()) == {1}, variant
        # The queue accepted every resend and answered with the first copy's messageId.
        sent = next(r for r in result.runs if r.variant == variant).history.sent
        ids: dict[str | None, set[str | None]] = {}
        for m in sent:
            ids.setdefault(m.business_id, set()).add(m.message_id)
        assert all(len(found) == 1 and None not in found for found in ids.values())
    assert runs["unconditional"]["counts"]["duplicate_writes"] == 0
    # The control: the same workload on a standard queue, where nothing drops the resends.
    standard = load_scenario("fifo-resends-deduplicated").with_overrides(
        fifo=False, deduplication="per-message", variants=["unconditional"]
    )
    (control,) = build_report(run_variants(standard, backend_url))["runs"]
    assert control["counts"]["deliveries"] == 60
    assert control["counts"]["duplicate_writes"] == 40


def test_fifo_redelivery_after_the_visibility_timeout_still_double_writes(
    backend_url: str,
) -> None:
    result, runs = _run("fifo-visibility-timeout", backend_url)
    for run in result.runs:
        deliveries = Counter(r.message_id for inv in run.history.invocations for r in inv.records)
        assert max(deliveries.values()) >= 2  # the same messageId again: no producer resend
        assert run.check.counts.messages_sent == 8
    # Its group was free again once the message was visible: it ran beside the first.
    assert _overlapping_invocations_of_one_id(result, "read-then-write") > 0
    assert runs["read-then-write"]["counts"]["duplicate_writes"] > 0
    assert runs["conditional"]["counts"]["duplicate_writes"] == 0
    assert runs["conditional"]["counts"]["writes_rejected"] > 0


@pytest.mark.slow
def test_fifo_crash_before_ack_is_redelivered_despite_deduplication(backend_url: str) -> None:
    result, runs = _run("fifo-crash-before-ack", backend_url)
    for run in result.runs:
        crashed = [inv for inv in run.history.invocations if inv.outcome.value == "crash"]
        assert crashed
        # Every crashed message was delivered again and acknowledged after a delivery that
        # did not crash: deduplication never sees a redelivery.
        succeeded = {
            record.message_id
            for inv in run.history.invocations
            if inv.outcome.value == "success"
            for record in inv.records
        }
        deliveries = Counter(r.message_id for inv in run.history.invocations for r in inv.records)
        for inv in crashed:
            for record in inv.records:
                assert deliveries[record.message_id] >= 2
                assert record.message_id in succeeded
    assert runs["unconditional"]["counts"]["redeliveries"] > 0
    assert (
        runs["unconditional"]["counts"]["duplicate_writes"]
        == (runs["unconditional"]["counts"]["redeliveries"])
    )
    assert runs["read-then-write"]["counts"]["duplicate_writes"] == 0
    assert runs["conditional"]["counts"]["duplicate_writes"] == 0


def test_fifo_resends_after_the_shortened_window_are_delivered_again(backend_url: str) -> None:
    result, runs = _run("fifo-resends-after-window", backend_url)
    for variant, run in runs.items():
        assert run["faults"] == "FIFO deduplication window shortened to 2 s (SQS: 300 s)"
        assert set(_deliveries_by_id(result, variant).values()) == {2}, variant
        sent = next(r for r in result.runs if r.variant == variant).history.sent
        assert len({m.message_id for m in sent}) == 20  # each resend is a new message
    assert runs["unconditional"]["counts"]["duplicate_writes"] == 10
    assert runs["conditional"]["counts"]["duplicate_writes"] == 0
    assert runs["conditional"]["counts"]["writes_rejected"] == 10


@pytest.mark.parametrize(
    "bad",
    [
        {"fifo": True, "batching_window_s": 1.0},
        {"fifo": True, "batch_size": 20, "batching_window_s": 1.0},
        {"deduplication": "business-id"},
    ],
)
def test_impossible_fifo_settings_are_refused_before_anything_is_created(
    backend_url: str, bad: dict[str, Any]
) -> None:
    from loadtest.errors import ScenarioError

    with pytest.raises(ScenarioError):
        load_scenario("race-burst").with_overrides(**bad)
    assert loadtest_resources(backend_url) == ([], [])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            ["--fifo", "--batching-window", "2"],
            "consumer.batching_window_s = 2 is not allowed with consumer.fifo = true",
        ),
        (["--fifo", "--message-group", "bogus"], "workload.message_group = 'bogus' is not allowed"),
        (["--dedup-window", "5"], "faults.dedup_window_s is set but consumer.fifo = false"),
    ],
)
def test_fifo_command_line_overrides_refuse_impossible_combinations_with_exit_2(
    backend_url: str, options: list[str], message: str
) -> None:
    from typer.testing import CliRunner

    from loadtest.cli import app

    result = CliRunner().invoke(app, ["run", "race-burst", "--endpoint-url", backend_url, *options])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert loadtest_resources(backend_url) == ([], [])

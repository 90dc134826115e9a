"""Point faults in load runs: explore's faults drawn at random in every local environment.

At probability 1 each fault makes the counts exact. crash.toml: 4 orders, one copy each,
one record per batch, max_receive_count 3, a visibility timeout of 2 s.
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
from loadtest.observer.point_faults import POINT_CRASH_MESSAGE, POINT_TIMEOUT_MESSAGE
from tests.integration.helpers import run_variants

HERE = Path(__file__).parent
SCENARIO = HERE / "crash.toml"
ORDERS = 4
RECEIVES = 3


def _run(backend_url: str, *faults: str, variant: str = "conditional") -> VariantRun:
    scenario = load_scenario(str(SCENARIO)).with_overrides(point_faults=list(faults))
    (run,) = run_variants(scenario, backend_url, variant).runs
    return run


def test_throttle_answers_every_call_with_a_throttling_error(backend_url: str) -> None:
    run = _run(backend_url, "throttle:1")
    c = run.check.counts
    # The conditional put is never sent: every delivery fails, each order is dead-lettered.
    assert (c.deliveries, c.handler_errors, c.acked) == (ORDERS * RECEIVES, ORDERS * RECEIVES, 0)
    assert (c.writes_attempted, c.dead_lettered) == (0, ORDERS)
    assert run.end_state.table_items == {}
    for invocation in run.history.invocations:
        assert invocation.outcome is InvocationOutcome.ERROR
        assert "ProvisionedThroughputExceededException" in str(invocation.error)


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [("crash", InvocationOutcome.CRASH), ("timeout", InvocationOutcome.TIMEOUT)],
)
def test_crash_and_timeout_end_every_invocation_once_its_write_is_answered(
    backend_url: str, fault: str, outcome: InvocationOutcome
) -> None:
    run = _run(backend_url, f"{fault}:1")
    c = run.check.counts
    assert (c.deliveries, c.handler_errors, c.acked, c.dead_lettered) == (
        ORDERS * RECEIVES,
        ORDERS * RECEIVES,
        0,
        ORDERS,
    )
    # The first delivery's put is accepted, the redeliveries' refused by the condition.
    assert (c.writes_accepted, c.writes_rejected, c.duplicate_writes) == (
        ORDERS,
        ORDERS * (RECEIVES - 1),
        0,
    )
    assert {i.outcome for i in run.history.invocations} == {outcome}
    message = POINT_CRASH_MESSAGE if fault == "crash" else POINT_TIMEOUT_MESSAGE
    for invocation in run.history.invocations:
        assert invocation.error == message
        assert f"{message} (PutItem)" in invocation.log_tail
        assert len(invocation.writes) == 1
        assert invocation.writes[0].outcome in (WriteOutcome.ACCEPTED, WriteOutcome.REJECTED)


def test_ack_lost_keeps_every_message_until_it_is_dead_lettered(backend_url: str) -> None:
    run = _run(backend_url, "ack-lost:1")
    c = run.check.counts
    # Every invocation succeeds, none is acknowledged.
    assert (c.deliveries, c.handler_errors, c.acked, c.dead_lettered) == (
        ORDERS * RECEIVES,
        0,
        0,
        ORDERS,
    )
    assert (c.writes_accepted, c.writes_rejected) == (ORDERS, ORDERS * (RECEIVES - 1))
    assert {i.outcome for i in run.history.invocations} == {InvocationOutcome.SUCCESS}


def test_redeliver_hands_the_message_to_another_environment_mid_handler(
    backend_url: str,
) -> None:
    run = _run(backend_url, "redeliver:1", variant="read-then-write")
    c = run.check.counts
    # Each delivery makes its message visible again after its first read: every order
    # is received again while (or after) its first delivery works.
    assert c.redeliveries >= ORDERS
    assert c.deliveries == ORDERS + c.redeliveries
    by_message: dict[str, int] = {}
    for invocation in run.history.invocations:
        for record in invocation.records:
            by_message[record.message_id] = by_message.get(record.message_id, 0) + 1
    assert len(by_message) == ORDERS and min(by_message.values()) >= 2


def test_point_faults_are_labelled_in_every_report(backend_url: str, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(SCENARIO),
            "--endpoint-url",
            backend_url,
            "--point-fault",
            "throttle:1",
            "--point-fault",
            "ack-lost:0.5",
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
    label = "point fault ack-lost 50% per successful invocation, point fault throttle 100% per call"
    assert "point fault throttle 100% per call" in result.output
    (run,) = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert run["faults"] == label
    assert run["settings"]["faults"]["point"] == {"ack-lost": 0.5, "throttle": 1.0}
    assert run["counts"]["dead_lettered"] == ORDERS
    assert label in (tmp_path / "r.md").read_text()
    assert label in (tmp_path / "r.html").read_text()


def test_bad_point_faults_are_refused() -> None:
    result = CliRunner().invoke(app, ["run", str(SCENARIO), "--point-fault", "clock:1"])
    assert result.exit_code == 2
    assert "'clock' is not one; allowed: crash, timeout, redeliver, ack-lost, throttle" in (
        result.output
    )
    result = CliRunner().invoke(app, ["run", str(SCENARIO), "--point-fault", "crash:2"])
    assert result.exit_code == 2 and "probability must be 0..1" in result.output


def test_the_scenario_declares_point_faults_and_the_command_line_wins(tmp_path: Path) -> None:
    from loadtest.errors import ScenarioError
    from loadtest.model.scenario.loading import parse_scenario, to_raw

    path = tmp_path / "points.toml"
    path.write_text("[faults]\npoint = { throttle = 0.25, redeliver = 0.05 }\n", encoding="utf-8")
    scenario = load_scenario(str(path))
    assert scenario.faults.point == (("redeliver", 0.05), ("throttle", 0.25))
    assert parse_scenario(to_raw(scenario), source="again").faults == scenario.faults
    given = scenario.with_overrides(point_faults=["throttle:1", "crash:0"])
    assert given.faults.point == (("redeliver", 0.05), ("throttle", 1.0))
    path.write_text("[faults]\npoint = { clock = 1 }\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"faults\.point\.clock is not a point fault"):
        load_scenario(str(path))
    path.write_text('[faults]\npoint = { crash = "often" }\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"faults\.point\.crash = 'often'; give a probability"):
        load_scenario(str(path))

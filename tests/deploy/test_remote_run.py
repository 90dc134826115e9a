"""Runs through a deployed mapping on MiniStack: the workload, the collector, the verdict.

The seed lab deployed as a Lambda function behind a real event source mapping
gives the lab's counts and table, rebuilt from what the observer layer
reported; read-then-write and conditional are judged on the same evidence
under a race; a wrapper that loses a messageId is caught; nothing tagged is
left behind; an attached function is restored exactly, and its run's history gives
the run's report.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from loadtest.api import execute, prepare, report_from_history
from loadtest.aws.clients import BackendKind, Target
from loadtest.deploy.lambda_attach import FunctionSnapshot
from loadtest.deploy.lambda_cleanup import find_tagged, make_clients
from loadtest.deploy.lambda_deploy import Clients, layer_zip
from loadtest.deploy.lint_aws import deployed_settings
from loadtest.deploy.remote_run import AttachTo, RemoteVariant, run_deployed
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.model.advice.lint import lint
from loadtest.model.scenario.loading import load_scenario
from tests.deploy.test_ministack import LAB_TABLE, _user_function

pytestmark = pytest.mark.slow


ADVERSARIAL = Path(__file__).parents[1] / "integration" / "consumers" / "adversarial"


def _deployed(
    ministack: str, scenario: str, consumer: str, run_id: str, **overrides: Any
) -> tuple[RemoteVariant, Clients]:
    """An adversarial consumer's run through a deployed mapping, and the clients that find
    what it left tagged."""
    clients, _ = make_clients(ministack)
    target = Target.resolve(BackendKind.ENDPOINT, ministack)
    loaded = load_scenario(str(ADVERSARIAL / scenario)).with_overrides(**overrides)
    ref = parse_ref(f"{ADVERSARIAL / consumer}:handler")
    (run,) = run_deployed(loaded, [ref], clients, target, run_id=run_id)
    return run, clients


def _table(items: dict[str, dict[str, dict[str, str]]]) -> list[tuple[str, str, str]]:
    return sorted((i["id"]["S"], i["quantity"]["N"], i["total_cents"]["N"]) for i in items.values())


def test_seed_lab_through_the_mapping_gives_the_lab_counts_and_table(ministack: str) -> None:
    clients, _ = make_clients(ministack)
    target = Target.resolve(BackendKind.ENDPOINT, ministack)
    scenario = load_scenario("seed-lab")
    (run,) = run_deployed(scenario, [parse_ref("conditional")], clients, target, run_id="lab")
    counts = run.check.counts
    assert run.incomplete is None
    assert (counts.messages_sent, counts.distinct_ids, counts.deliveries) == (4, 2, 4)
    assert (counts.writes_accepted, counts.writes_rejected, counts.duplicate_writes) == (2, 2, 0)
    assert (counts.acked, counts.dead_lettered, counts.redeliveries) == (4, 0, 0)
    assert _table(run.end_state.table_items) == LAB_TABLE
    assert (run.end_state.queue_visible, run.end_state.queue_in_flight) == (0, 0)
    assert run.check.verdict == "pass"
    # The layer's records mark themselves in the deployed function too: each write names
    # the record it was made for.
    assert [d.write.record_id for d in run.check.decisions] == [
        d.message_id for d in run.check.decisions
    ]
    # End to end includes the real queue dwell: every message measured.
    assert run.latency["end_to_end"].summary()["count"] == 4
    assert run.latency["queue_dwell"].summary()["count"] == 4
    assert find_tagged(clients, "lab") == []


def test_read_then_write_double_writes_through_the_mapping_conditional_does_not(
    ministack: str,
) -> None:
    plan = prepare(
        "race-burst",
        endpoint_url=ministack,
        deploy=True,
        distinct_ids=4,
        copies=3,
        concurrency=4,
        race_window_ms=400,
        deadline_s=90,
    )
    report = execute(plan, run_id="race")
    racy, conditional = report.runs
    assert racy.variant == "read-then-write"
    assert racy.counts.messages_sent == conditional.counts.messages_sent == 12
    assert racy.counts.acked == conditional.counts.acked == 12
    assert racy.counts.duplicate_writes > 0
    # Read-then-write wrote twice only because two copies ran at once: the deployed
    # functions' start and end lines show the overlap.
    assert racy.counts.overlapping_ids > 0
    assert racy.counts.overlapping_deliveries >= racy.counts.overlapping_ids
    assert conditional.counts.duplicate_writes == 0
    assert conditional.counts.writes_accepted == 4
    assert conditional.counts.writes_rejected == 8
    assert report.exit_code == 0  # the scenario expects read-then-write to double-write
    clients, _ = make_clients(ministack)
    assert find_tagged(clients, "race") == []


def _layer_losing(body_marker: str) -> bytes:
    """The observer layer with a wrapper that drops the records whose body holds ``body_marker``."""
    source = io.BytesIO(layer_zip())
    out = io.BytesIO()
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(out, "w") as planted:
        for info in original.infolist():
            data = original.read(info)
            if info.filename.endswith("observer/lambda_entry.py"):
                text = data.decode()
                loop = '        attributes = record.get("attributes") or {}\n'
                assert loop in text
                text = text.replace(
                    loop,
                    f"        if {body_marker!r} in str(record.get('body')):\n"
                    "            continue\n" + loop,
                )
                data = text.encode()
            planted.writestr(info, data)
    return out.getvalue()


def test_a_wrapper_that_loses_a_message_id_is_caught(ministack: str) -> None:
    clients, _ = make_clients(ministack)
    target = Target.resolve(BackendKind.ENDPOINT, ministack)
    scenario = load_scenario("seed-lab").with_overrides(deadline_s=15)
    (run,) = run_deployed(
        scenario,
        [parse_ref("conditional")],
        clients,
        target,
        run_id="lost",
        layer=_layer_losing("other-order"),
    )
    # The function acknowledged other-order, but nothing said so: never settled.
    assert run.incomplete is not None and "1 of 4 messages" in run.incomplete
    assert "the queue is empty, so no invocation reported them" in run.incomplete
    assert run.history.timed_out
    assert run.check.counts.unsettled == 1
    assert run.check.counts.deliveries == 3
    # What became of it is not known: inconclusive (exit 4), not failed.
    assert run.check.verdict == "inconclusive", run.check.reasons
    # Its write is kept even though its invocation reported no records.
    assert sorted(len(i.records) for i in run.history.invocations) == [0, 1, 1, 1]
    assert run.check.counts.writes_accepted == 2
    assert find_tagged(clients, "lost") == []


def test_attach_runs_the_workload_through_a_deployed_function_and_restores_it(
    ministack: str, tmp_path: Path
) -> None:
    clients, _ = make_clients(ministack)
    queue, _ = _user_function(clients, suffix="-run")
    queue_name = queue.rsplit("/", 1)[-1]
    before = FunctionSnapshot.of(clients.lambda_, "user-worker-run")
    plan = prepare("seed-lab", endpoint_url=ministack, deploy=True)
    history = tmp_path / "attached.history"
    report = execute(
        plan,
        attach=AttachTo(function="user-worker-run", queue_url=queue, table="user-orders-run"),
        run_id="att2",
        history=history,
    )
    # Its history gives the run's own report (the attached function's warnings included).
    assert json.dumps(report_from_history(history).to_dict(), indent=2) == json.dumps(
        report.to_dict(), indent=2
    )
    (run,) = report.runs
    assert run.variant == "attached:user-worker-run"
    assert run.raw["handler"] == "consumer.conditional:handler"
    assert run.verdict == "pass"
    assert (run.counts.deliveries, run.counts.writes_accepted, run.counts.writes_rejected) == (
        4,
        2,
        2,
    )
    assert FunctionSnapshot.of(clients.lambda_, "user-worker-run") == before
    assert find_tagged(clients, "att2") == []
    # The warnings are the deployed mapping's own settings linted, not the scenario's.
    (mapping,) = [
        m for m in deployed_settings(clients, "user-worker-run") if m.source.endswith(queue_name)
    ]
    expected = [f"{mapping.source}: {finding.message}" for finding in lint(mapping)]
    assert expected, "the user function is deployed with settings loadtest lint flags"
    assert run.raw["warnings"] == expected


def test_a_consumer_keyed_on_the_message_id_fails_through_the_mapping_as_it_does_locally(
    ministack: str,
) -> None:
    # A planted bug: the guard stops SQS redeliveries (same messageId) but a
    # producer resend has a new messageId, so every copy stores another order. The embedded
    # backend counts 20 duplicate writes for 10 ids x 3 copies (tests/integration/consumers/adversarial);
    # through a real mapping, 4 ids x 3 copies must give 8, and a FAIL.
    plan = prepare(
        ADVERSARIAL / "burst.toml",
        handler=f"{ADVERSARIAL / 'message_id_key_conditional.py'}:handler",
        endpoint_url=ministack,
        deploy=True,
        distinct_ids=4,
        copies=3,
        concurrency=4,
        visibility_timeout_s=30,
        deadline_s=90,
    )
    report = execute(plan, run_id="msgid")
    (run,) = report.runs
    c = run.counts
    assert (c.messages_sent, c.acked, c.dead_lettered) == (12, 12, 0)
    assert c.duplicate_writes == 4 * (3 - 1)
    assert c.conflicting_writes == c.lost_outcomes == 0
    assert run.verdict == "fail" and not report.passed and report.exit_code == 1
    clients, _ = make_clients(ministack)
    assert find_tagged(clients, "msgid") == []


def test_the_crash_mid_handler_kills_the_deployed_function_between_two_writes(
    ministack: str,
) -> None:
    run, clients = _deployed(
        ministack,
        "crash_mid_handler.toml",
        "claim_skip_in_progress.py",
        "midcrash",
        crash_mid_handler=1.0,
    )
    c = run.check.counts
    # Each order's first delivery dies after its claim; a redelivery finds the claim, skips
    # and is acknowledged: every order lost, as on the local runtime.
    assert run.incomplete is None
    assert (c.messages_sent, c.acked, c.lost_outcomes, c.side_writes) == (6, 6, 6, 6)
    assert c.writes_accepted == 0 and c.unsettled == 0
    assert run.check.verdict == "fail"
    assert find_tagged(clients, "midcrash") == []


def test_work_a_deployed_consumer_sends_back_to_its_own_queue_is_waited_for(
    ministack: str,
) -> None:
    # Each first pass sends its order back to the function's own queue with DelaySeconds
    # and is acknowledged; the mapping delivers the deferred message, whose pass stores it.
    # The run waits for those messages as the local runtime does: a pass, not lost orders.
    deferred = Path(__file__).parents[1] / "integration" / "consumers" / "deferred"
    clients, _ = make_clients(ministack)
    target = Target.resolve(BackendKind.ENDPOINT, ministack)
    scenario = load_scenario(str(deferred / "retry_later.toml")).with_environment(
        ["RETRY_DELAY_S=6"]
    )
    ref = parse_ref(f"{deferred / 'retry_later.py'}:handler")
    (run,) = run_deployed(scenario, [ref], clients, target, run_id="deferred")
    c = run.check.counts
    assert run.incomplete is None
    assert (c.messages_sent, c.deliveries, c.acked, c.unsettled) == (12, 24, 12, 0)
    assert (c.writes_accepted, c.writes_rejected, c.lost_outcomes) == (4, 8, 0)
    assert run.check.verdict == "pass", (run.check.reasons, run.check.inconclusive)
    assert find_tagged(clients, "deferred") == []


def test_messages_a_deployed_function_deletes_itself_are_acknowledged_by_it(
    ministack: str,
) -> None:
    # The records that succeeded are deleted by the handler, which then raises: only the
    # poison record comes back and is dead-lettered. The run takes each delete as its
    # message's acknowledgement, as the local runtime does, instead of waiting for the
    # deleted messages until its deadline.
    run, clients = _deployed(
        ministack, "poison_one_batch_manual.toml", "delete_done_then_raise.py", "selfack"
    )
    c = run.check.counts
    assert run.incomplete is None
    assert (c.messages_sent, c.acked, c.dead_lettered, c.unsettled) == (6, 5, 1, 0)
    assert (c.writes_accepted, c.duplicate_writes, c.lost_outcomes) == (5, 0, 0)
    assert run.check.verdict == "pass", (run.check.reasons, run.check.inconclusive)
    assert find_tagged(clients, "selfack") == []


def test_a_record_a_deployed_function_parks_on_its_dead_letter_queue_is_dead_lettered(
    ministack: str,
) -> None:
    # The deployed function is told its dead-letter queue by the run: the poison record it
    # sends there is dead-lettered by it, not an effect sent to a queue of nobody's.
    run, clients = _deployed(
        ministack, "poison_one_batch_parked.toml", "park_bad_records.py", "parked"
    )
    c = run.check.counts
    assert run.incomplete is None
    assert (c.messages_sent, c.acked, c.dead_lettered, c.unexpected_dead_letters) == (6, 6, 1, 0)
    assert (c.writes_accepted, c.duplicate_writes, c.lost_outcomes) == (4, 0, 0)
    assert c.effects_sent is None
    assert run.check.verdict == "pass", (run.check.reasons, run.check.inconclusive)
    assert find_tagged(clients, "parked") == []


def test_stock_a_deployed_function_reserves_again_for_each_copy_is_a_duplicate_side_write(
    ministack: str,
) -> None:
    # The deployed function is told its extra table with its key: each write of one item
    # there comes back with its images, and each copy's reservation is seen.
    run, clients = _deployed(
        ministack,
        "burst_stock.toml",
        "reserve_before_guard.py",
        "stock",
        distinct_ids=2,
        copies=2,
        visibility_timeout_s=30,
    )
    c = run.check.counts
    assert run.incomplete is None
    assert (c.messages_sent, c.acked, c.writes_accepted, c.duplicate_writes) == (4, 4, 2, 0)
    # Every delivery reserved; all but each order's first reserved again.
    assert c.side_writes == c.deliveries
    assert c.duplicate_side_writes == c.deliveries - 2 >= 2
    assert run.check.verdict == "fail"
    assert find_tagged(clients, "stock") == []

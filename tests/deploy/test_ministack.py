"""Deploy and attach end to end on MiniStack: real mappings, real invocations, real layers.

The lab's workload through a deployed function behind a mapping gives the
lab's table, and the observer inside the function ships the lab's four write
decisions (two accepted, two rejected by the condition) to the run's
observation queue. Attach mode observes a function deployed without loadtest
and leaves it exactly as it was.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from loadtest.deploy.collect import InvocationEnd, InvocationStart, parse
from loadtest.deploy.deploy_plan import Kind, plan_deploy
from loadtest.deploy.lambda_attach import FunctionSnapshot, attached, observation_queue
from loadtest.deploy.lambda_cleanup import make_clients
from loadtest.deploy.lambda_deploy import (
    Clients,
    Deployed,
    deploy,
    function_zip,
    layer_zip,
    teardown,
)
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.model.history.log import WriteOutcome, WriteRecord
from loadtest.model.history.observation import Observation
from loadtest.model.scenario.loading import load_scenario

pytestmark = pytest.mark.slow

LAB = [{"id": "dedup-order", "quantity": 4}] * 3 + [{"id": "other-order", "quantity": 1}]
LAB_TABLE = [("dedup-order", "4", "1100"), ("other-order", "1", "350")]


def _settle(clients: Clients, queue_url: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        attrs = clients.sqs.get_queue_attributes(
            QueueUrl=queue_url,
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        if (
            attrs["ApproximateNumberOfMessages"]
            == attrs["ApproximateNumberOfMessagesNotVisible"]
            == "0"
        ):
            return
        time.sleep(0.3)
    raise AssertionError(f"queue not drained within {timeout_s} s: {attrs}")


def _drain(clients: Clients, url: str, expected: int, timeout_s: float = 30) -> list[Observation]:
    found: list[Observation] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        got = clients.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for message in got.get("Messages", []):
            line = parse(message["Body"])
            if not isinstance(line, InvocationStart | InvocationEnd):
                found.append(line)
            clients.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        if sum(isinstance(o, WriteRecord) for o in found) >= expected:
            break
    return found


def _table(clients: Clients, name: str) -> list[tuple[str, str, str]]:
    items = clients.dynamodb.scan(TableName=name, ConsistentRead=True)["Items"]
    return sorted((i["id"]["S"], i["quantity"]["N"], i["total_cents"]["N"]) for i in items)


def _outcomes(observations: list[Observation]) -> list[WriteOutcome]:
    return sorted(o.outcome for o in observations if isinstance(o, WriteRecord))


def test_deployed_lab_gives_the_lab_table_and_write_decisions(ministack: str) -> None:
    clients, _ = make_clients(ministack)
    plan = plan_deploy(
        load_scenario("seed-lab"), [parse_ref("conditional")], run_id="e2e", region="us-east-1"
    )
    code = {f.name: function_zip(parse_ref("conditional")) for f in plan.of_kind(Kind.FUNCTION)}
    made = Deployed()
    try:
        deploy(plan, clients, code, into=made)
        jobs = made.get("loadtest-e2e-0-jobs").ident
        for body in LAB:
            clients.sqs.send_message(QueueUrl=jobs, MessageBody=json.dumps(body))
        _settle(clients, jobs)
        assert _table(clients, "loadtest-e2e-0-orders") == LAB_TABLE
        observed = _drain(clients, made.get("loadtest-e2e-0-observations").ident, expected=4)
        assert _outcomes(observed) == [WriteOutcome.ACCEPTED] * 2 + [WriteOutcome.REJECTED] * 2
        rejected = [
            o for o in observed if isinstance(o, WriteRecord) and o.outcome is WriteOutcome.REJECTED
        ]
        assert all(o.item_before == o.item_after for o in rejected)
        assert all(o.request_id for o in observed if isinstance(o, WriteRecord))
    finally:
        assert teardown(clients, made) == []


def _user_function(clients: Clients, suffix: str = "") -> tuple[str, str]:
    """A consumer deployed without loadtest: role, table, queue, function, mapping
    (names ``user-*`` with ``suffix``, so several tests share one MiniStack)."""
    trust: dict[str, Any] = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    role = clients.iam.create_role(
        RoleName=f"user-role{suffix}", AssumeRolePolicyDocument=json.dumps(trust)
    )
    clients.dynamodb.create_table(
        TableName=f"user-orders{suffix}",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    queue = clients.sqs.create_queue(QueueName=f"user-jobs{suffix}")["QueueUrl"]
    arn = clients.sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    clients.lambda_.create_function(
        FunctionName=f"user-worker{suffix}",
        Runtime="python3.12",
        Handler="consumer.conditional.handler",
        Role=role["Role"]["Arn"],
        Code={"ZipFile": function_zip(parse_ref("conditional"))},
        Environment={"Variables": {"TABLE_NAME": f"user-orders{suffix}", "STAGE": "prod"}},
        Timeout=30,
    )
    clients.lambda_.create_event_source_mapping(
        FunctionName=f"user-worker{suffix}", EventSourceArn=arn, BatchSize=1, Enabled=True
    )
    return queue, arn


def test_attach_observes_a_deployed_function_and_restores_it(ministack: str) -> None:
    clients, _ = make_clients(ministack)
    queue, _ = _user_function(clients)
    layer = clients.lambda_.publish_layer_version(
        LayerName="loadtest-att-observer", Content={"ZipFile": layer_zip()}
    )["LayerVersionArn"]
    before = FunctionSnapshot.of(clients.lambda_, "user-worker")
    role = clients.lambda_.get_function_configuration(FunctionName="user-worker")["Role"]
    observations = observation_queue(
        clients.sqs, "loadtest-att-observations", role_arn=role, run_id="att"
    )
    try:
        with attached(
            clients.lambda_,
            "user-worker",
            layer_arn=layer,
            watch_table="user-orders",
            key_names=("id",),
            observation_queue="loadtest-att-observations",
            run_id="att",
        ):
            for body in LAB:
                clients.sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(body))
            _settle(clients, queue)
            observed = _drain(clients, observations, expected=4)
        assert _table(clients, "user-orders") == LAB_TABLE
        assert _outcomes(observed) == [WriteOutcome.ACCEPTED] * 2 + [WriteOutcome.REJECTED] * 2
        assert FunctionSnapshot.of(clients.lambda_, "user-worker") == before
    finally:
        name, version = layer.split(":")[-2:]
        clients.lambda_.delete_layer_version(LayerName=name, VersionNumber=int(version))
        clients.sqs.delete_queue(QueueUrl=observations)


@pytest.mark.slow
def test_doctor_measures_the_mapping_and_leaves_nothing_tagged(ministack: str) -> None:
    from typer.testing import CliRunner

    from loadtest.cli import app
    from loadtest.deploy.lambda_cleanup import find_tagged
    from loadtest.doctor.mapping import MAPPING_CHECK_NAMES

    clients, _ = make_clients(ministack)
    before = {f.run_id for f in find_tagged(clients)}
    result = CliRunner().invoke(
        app, ["doctor", "--endpoint-url", ministack, "--keys", "10", "--rounds", "1"]
    )
    assert result.exit_code == 0, result.output
    for name in MAPPING_CHECK_NAMES:
        assert f"PASS  {name}" in result.output
    # The measured figures, as MiniStack's mapping runs the probe.
    peak = re.search(r"(\d+) invocation\(s\) at once at most for a burst of 8", result.output)
    assert peak is not None and int(peak.group(1)) >= 2  # 8 on an idle machine
    assert "while it was still running" in result.output
    assert "1 of 1 record(s) named in batchItemFailures came back, 0 of 3 others" in result.output
    assert "6 of 6 messages of one group delivered, in send order" in result.output
    assert {f.run_id for f in find_tagged(clients)} == before

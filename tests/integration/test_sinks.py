"""A run whose consumer publishes to a topic (or invokes a function) the run made for it: the
end state holds what the sink really received, one message per distinct id (one per copy
for a consumer that invokes before its guard), and the sink is gone afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loadtest import api
from loadtest.engine.results import Salvage
from loadtest.model.history.records import EffectKind
from tests.backend.aws_clients import events, iam, lambda_, s3, sns, sqs, stepfunctions
from tests.integration.helpers import loadtest_resources

HANDLER = """
import json
import os

import boto3
from botocore.exceptions import ClientError

TOPIC = os.environ["ORDERS_TOPIC_ARN"]
table = boto3.client("dynamodb")
topic = boto3.client("sns")


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        try:
            table.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": order["id"]}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue  # a copy already handled: nothing is published again
            raise
        topic.publish(TopicArn=TOPIC, Message=json.dumps({"id": order["id"]}))
"""

SCENARIO = """
seed = 5

[workload]
distinct_ids = 6
copies = 2

[consumer]
concurrency = 2
environment = { ORDERS_TOPIC_ARN = "{topic:orders}" }
"""


def test_the_end_state_holds_one_published_message_per_distinct_id(
    backend_url: str, tmp_path: Path
) -> None:
    (tmp_path / "publisher.py").write_text(textwrap.dedent(HANDLER))
    (tmp_path / "sinks.toml").write_text(SCENARIO)
    plan = api.prepare(
        tmp_path / "sinks.toml",
        handler=f"{tmp_path / 'publisher.py'}:handler",
        endpoint_url=backend_url,
    )
    salvage = Salvage()
    report = api.execute(plan, salvage=salvage)

    [run] = salvage.runs
    [sink] = run.end_state.sinks
    assert (sink.name, sink.kind, sink.complete, sink.fifo) == (
        "orders",
        EffectKind.TOPIC,
        True,
        False,
    )
    assert sink.address.startswith("arn:aws:sns:") and sink.address.endswith("-orders")
    ids = sorted(m.payload for m in sink.messages)
    assert len(ids) == 6 and len(set(ids)) == 6
    assert report.runs[0].counts.messages_sent == 12
    assert {json.loads(i)["id"] for i in ids} == {m.business_id for m in run.history.sent}

    # Nothing of the run's is left: the topic, its capture queue and the subscription.
    prefix = sink.address.rsplit(":", 1)[1].removesuffix("-orders")
    topics = [t["TopicArn"] for t in sns(backend_url).list_topics()["Topics"]]
    queues = sqs(backend_url).list_queues().get("QueueUrls", [])
    subscriptions = sns(backend_url).list_subscriptions()["Subscriptions"]
    assert [name for name in topics + queues if prefix in name] == []
    assert [s for s in subscriptions if prefix in s["TopicArn"]] == []


def _sink_names(url: str) -> list[str]:
    """Topics, buckets, buses, state machines, functions and roles whose names say a run
    created them."""
    topics = [t["TopicArn"].rsplit(":", 1)[1] for t in sns(url).list_topics()["Topics"]]
    buckets = [b["Name"] for b in s3(url).list_buckets()["Buckets"]]
    buses = [b["Name"] for b in events(url).list_event_buses()["EventBuses"]]
    machines = [m["name"] for m in stepfunctions(url).list_state_machines()["stateMachines"]]
    functions = [f["FunctionName"] for f in lambda_(url).list_functions()["Functions"]]
    roles = [r["RoleName"] for r in iam(url).list_roles()["Roles"]]
    names = topics + buckets + buses + machines + functions + roles
    return [n for n in names if n.startswith("loadtest-")]


@pytest.mark.slow
@pytest.mark.process
def test_an_interrupted_run_deletes_its_sinks(backend_url: str, tmp_path: Path) -> None:
    """Ctrl-C mid-run: the shielded teardown deletes the sinks with the queues and tables."""
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "loadtest", "run", "race-burst", "--variant", "conditional"),
            # 200 messages of 0.1 s on two environments: still running at the Ctrl-C.
            *("--distinct-ids", "50", "--handler-duration", "100", "--concurrency", "2"),
            *("--endpoint-url", backend_url),
            *("--env", "T={topic:orders.fifo}", "--env", "B={bucket:receipts}"),
            *("--env", "E={bus:events}", "--env", "S={state_machine:ship}"),
            *("--env", "F={function:notify}"),
            *("--out", str(tmp_path), "--quiet"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    deadline = time.monotonic() + 60
    # Four sinks, and a function sink's function and role.
    # Five sinks, and the roles of the state machine and the function.
    while len(_sink_names(backend_url)) < 7 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_sink_names(backend_url)) == 7, "the run never made its sinks"
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "the run's resources were deleted" in stderr
    assert _sink_names(backend_url) == []
    assert loadtest_resources(backend_url) == ([], [])


INVOKER = """
import json
import os

import boto3
from botocore.exceptions import ClientError

FUNCTION = os.environ["NOTIFY_FUNCTION"]
table = boto3.client("dynamodb")
notify = boto3.client("lambda")


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        if os.environ.get("NOTIFY_FIRST"):  # the effect before the guard: once per copy
            notify.invoke(
                FunctionName=FUNCTION,
                InvocationType="Event",
                Payload=json.dumps({"id": order["id"]}),
            )
        try:
            table.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": order["id"]}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
        if not os.environ.get("NOTIFY_FIRST"):
            notify.invoke(
                FunctionName=FUNCTION,
                InvocationType="Event",
                Payload=json.dumps({"id": order["id"]}),
            )
"""


@pytest.mark.parametrize(("first", "duplicate"), [("", 0), ("1", 6)])
def test_a_function_sink_holds_what_it_was_invoked_with_and_is_gone_afterwards(
    backend_url: str, tmp_path: Path, first: str, duplicate: int
) -> None:
    (tmp_path / "invoker.py").write_text(textwrap.dedent(INVOKER))
    (tmp_path / "function.toml").write_text(
        SCENARIO.replace(
            '{ ORDERS_TOPIC_ARN = "{topic:orders}" }',
            f'{{ NOTIFY_FUNCTION = "{{function:notify}}", NOTIFY_FIRST = "{first}" }}',
        )
    )
    plan = api.prepare(
        tmp_path / "function.toml",
        handler=f"{tmp_path / 'invoker.py'}:handler",
        endpoint_url=backend_url,
    )
    salvage = Salvage()
    report = api.execute(plan, salvage=salvage)

    [run] = salvage.runs
    [sink] = run.end_state.sinks
    assert (sink.name, sink.kind, sink.complete) == ("notify", EffectKind.FUNCTION, True)
    assert sink.address.startswith("arn:aws:lambda:") and sink.address.endswith("-notify")
    delivered = [json.loads(m.payload)["id"] for m in sink.messages]
    assert len(delivered) == 6 + duplicate
    assert set(delivered) == {m.business_id for m in run.history.sent}
    counts = report.runs[0].counts
    assert (counts.effects_sent, counts.effects_delivered) == (6 + duplicate, 6 + duplicate)
    assert counts.duplicate_effects == duplicate
    effects = [e for inv in run.history.invocations for e in inv.effects]
    assert {(e.operation, e.kind, e.accepted) for e in effects} == {
        ("Lambda.Invoke", EffectKind.FUNCTION, True)
    }

    # Nothing of the run's is left: the function, its role and its capture queue.
    prefix = sink.address.rsplit(":", 1)[1].removesuffix("-notify")
    functions = [f["FunctionName"] for f in lambda_(backend_url).list_functions()["Functions"]]
    roles = [r["RoleName"] for r in iam(backend_url).list_roles()["Roles"]]
    queues = sqs(backend_url).list_queues().get("QueueUrls", [])
    assert [name for name in functions + roles + queues if prefix in name] == []

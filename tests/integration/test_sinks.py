"""A run whose consumer publishes to a topic the run made for it: the end state holds what
the topic really delivered, one message per distinct id, and the topic is gone afterwards."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from loadtest import api
from loadtest.engine.results import Salvage
from loadtest.model.history.records import EffectKind
from tests.backend.aws_clients import sns, sqs

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


def _keys(data: object) -> set[str]:
    if isinstance(data, dict):
        return set(data) | {k for value in data.values() for k in _keys(value)}
    if isinstance(data, list):
        return {k for value in data for k in _keys(value)}
    return set()


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
    assert "sinks" not in _keys(report.model.to_json())

    # Nothing of the run's is left: the topic, its capture queue and the subscription.
    prefix = sink.address.rsplit(":", 1)[1].removesuffix("-orders")
    topics = [t["TopicArn"] for t in sns(backend_url).list_topics()["Topics"]]
    queues = sqs(backend_url).list_queues().get("QueueUrls", [])
    subscriptions = sns(backend_url).list_subscriptions()["Subscriptions"]
    assert [name for name in topics + queues if prefix in name] == []
    assert [s for s in subscriptions if prefix in s["TopicArn"]] == []

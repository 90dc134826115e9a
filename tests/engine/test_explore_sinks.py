"""An explore session's sinks: made once, read after each schedule (which drains them, so
each schedule's end state holds only what it sent), and deleted when the session closes."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from loadtest.aws import clients as aws
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.emulation.explore.runs import ExploreSettings
from loadtest.engine.explore_session import Session, explored_messages
from loadtest.model.explore.points import Delivery, Option, default_option
from loadtest.model.scenario.loading import parse_scenario
from tests.backend.aws_clients import s3, sns

HANDLER = """
import json
import os

import boto3

topic = boto3.client("sns")
bucket = boto3.client("s3")


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        topic.publish(TopicArn=os.environ["ORDERS_TOPIC_ARN"], Message=order["id"])
        bucket.put_object(Bucket=os.environ["RECEIPTS_BUCKET"], Key=order["id"], Body=b"r")
"""


class Defaults:
    """Every decision the default one."""

    def choose(
        self, decision: int, options: Sequence[Option], last: Delivery | None
    ) -> Option | None:
        return default_option(options, last)


def test_each_schedule_reads_only_what_it_sent_and_the_sinks_go_with_the_session(
    backend_url: str, tmp_path: Path
) -> None:
    (tmp_path / "effects.py").write_text(textwrap.dedent(HANDLER))
    scenario = parse_scenario(
        {
            "workload": {"distinct_ids": 1, "copies": 2},
            "consumer": {
                "environment": {
                    "ORDERS_TOPIC_ARN": "{topic:orders}",
                    "RECEIPTS_BUCKET": "{bucket:receipts}",
                }
            },
        },
        source="s.toml",
    )
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    settings = ExploreSettings(visibility_timeout_s=30, function_timeout_s=10, max_receive_count=3)
    session = Session(scenario, parse_ref(f"{tmp_path / 'effects.py'}:handler"), target, settings)
    messages = explored_messages(scenario, None, 1)
    with session.open():
        first = session.run(Defaults(), messages, 0)
        second = session.run(Defaults(), messages, 1)
        addresses = [m.address for m in session.sinks]
    for judged, schedule in ((first, 0), (second, 1)):
        topic, bucket = judged.end_state.sinks
        sent = {str(m.business_id) for m in judged.history.sent}
        assert len(sent) == 1
        assert [m.payload for m in topic.messages] == sorted(sent) * 2, schedule
        assert [m.key for m in bucket.messages] == sorted(sent), schedule
    assert [
        t["TopicArn"]
        for t in sns(backend_url).list_topics()["Topics"]
        if t["TopicArn"] in addresses
    ] == []
    assert [b for b in s3(backend_url).list_buckets()["Buckets"] if b["Name"] in addresses] == []

"""The backend keeps no SQS or DynamoDB model object beyond what its queues and tables hold."""

from __future__ import annotations

import json
import urllib.request

import boto3

from loadtest.backend.core.untracked import KeepsNothing, stop_tracking_instances
from loadtest.backend.sqs.message import MotoMessage


def test_sqs_and_dynamodb_models_are_not_tracked() -> None:
    replaced = stop_tracking_instances()

    assert "sqs.Message" in replaced
    assert any(name.startswith("dynamodb.") for name in replaced)
    assert isinstance(MotoMessage.instances_tracked, KeepsNothing)  # type: ignore[attr-defined]


def test_messages_sent_received_and_deleted_leave_nothing_tracked(backend_url: str) -> None:
    sqs = boto3.client(
        "sqs",
        endpoint_url=backend_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    url = sqs.create_queue(QueueName="untracked-check")["QueueUrl"]
    try:
        sqs.send_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(10)]
        )
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for m in got.get("Messages", []):
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    finally:
        sqs.delete_queue(QueueUrl=url)
    # moto's dashboard lists the instances it tracks: none are left to keep.
    with urllib.request.urlopen(f"{backend_url}/moto-api/data.json", timeout=10) as response:
        tracked = json.load(response)
    assert tracked["sqs"]["Message"] == []


def test_keeps_nothing_ignores_appends() -> None:
    keeps = KeepsNothing()
    keeps.append(object())
    keeps.insert(0, object())
    assert list(keeps) == []

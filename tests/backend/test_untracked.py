"""The backend keeps no SQS or DynamoDB model object beyond what its queues and tables hold."""

from __future__ import annotations

import io
import json
import urllib.request
import zipfile
from collections.abc import Iterator

import boto3
import pytest

from loadtest.backend.core.untracked import KeepsNothing, stop_tracking_instances
from loadtest.backend.sqs.message import MotoMessage


@pytest.fixture(scope="module")
def own_backend() -> Iterator[str]:
    """A backend of these tests' own: what other tests' services leave in a shared one
    (buckets, executions, ...) is theirs, and the dashboard lists every tracked model."""
    from loadtest.backend.embedded import EmbeddedBackend

    with EmbeddedBackend() as backend:
        yield backend.endpoint_url


def test_sqs_and_dynamodb_models_are_not_tracked() -> None:
    replaced = stop_tracking_instances()

    assert "sqs.Message" in replaced
    assert any(name.startswith("dynamodb.") for name in replaced)
    assert isinstance(MotoMessage.instances_tracked, KeepsNothing)  # type: ignore[attr-defined]


def test_messages_sent_received_and_deleted_leave_nothing_tracked(own_backend: str) -> None:
    backend_url = own_backend
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


def test_the_dashboard_still_answers_once_a_function_exists(own_backend: str) -> None:
    backend_url = own_backend
    # moto's dashboard reads every tracked model's properties; a Lambda function's
    # docker_client raises without Docker, so functions are not tracked either.
    session = boto3.session.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    iam = session.client("iam", endpoint_url=backend_url)
    lam = session.client("lambda", endpoint_url=backend_url)
    role = iam.create_role(
        RoleName="untracked-fn-role",
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "lambda.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                    }
                ],
            }
        ),
    )["Role"]["Arn"]
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("index.py", "def handler(event, context):\n    return event\n")
    lam.create_function(
        FunctionName="untracked-fn",
        Runtime="python3.12",
        Role=role,
        Handler="index.handler",
        Code={"ZipFile": code.getvalue()},
    )
    try:
        with urllib.request.urlopen(f"{backend_url}/moto-api/data.json", timeout=10) as response:
            assert response.status == 200
            tracked = json.load(response)
        assert tracked["awslambda"]["LambdaFunction"] == []
    finally:
        lam.delete_function(FunctionName="untracked-fn")
        iam.delete_role(RoleName="untracked-fn-role")

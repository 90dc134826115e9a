"""moto's IAM is loaded only when something uses it; once it is, accounts and key use are moto's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import boto3

from loadtest.backend.iam import lazy_iam
from tests.backend.aws_clients import dynamodb, unique

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


def test_the_mirrored_moto_source_is_the_installed_one() -> None:
    # A moto release that changes these functions turns the replacements off (moto's own
    # code runs, IAM and all); this test says so, so the copy can be brought up to date.
    assert lazy_iam.mirrors_installed_moto()


def test_dynamodb_and_sqs_requests_load_neither_iam_nor_the_other_services() -> None:
    script = textwrap.dedent(
        """
        import json, sys
        from werkzeug.test import Client
        from loadtest.backend.http.app import build_app

        client = Client(build_app())

        def call(service, target, body):
            response = client.post(
                "/",
                data=json.dumps(body).encode(),
                headers={
                    "Content-Type": "application/x-amz-json-1.0",
                    "X-Amz-Target": target,
                    "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20250101/"
                    f"us-east-1/{service}/aws4_request, SignedHeaders=host, Signature=0",
                },
            )
            assert response.status_code == 200, response.data
            return json.loads(response.data)

        call("dynamodb", "DynamoDB_20120810.CreateTable", {
            "TableName": "t",
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
        })
        call("dynamodb", "DynamoDB_20120810.PutItem", {
            "TableName": "t",
            "Item": {"id": {"S": "a"}},
            "ConditionExpression": "attribute_not_exists(id)",
        })
        queue_url = call("sqs", "AmazonSQS.CreateQueue", {"QueueName": "q"})["QueueUrl"]
        call("sqs", "AmazonSQS.SendMessage", {"QueueUrl": queue_url, "MessageBody": "m"})
        got = call("sqs", "AmazonSQS.ReceiveMessage", {"QueueUrl": queue_url})
        assert len(got["Messages"]) == 1
        # Nor the services a consumer's other effects go to (SNS, EventBridge, S3, Step
        # Functions): a run that never calls them loads none of them.
        lazy = ("moto.iam", "moto.s3", "moto.sts", "moto.sns", "moto.events", "moto.stepfunctions")
        print(sorted(m for m in sys.modules if m.startswith(lazy)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"


def _client_as(url: str, credentials: dict[str, str]) -> DynamoDBClient:
    return boto3.session.Session().client(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials.get("SessionToken"),
    )


def test_a_role_assumed_in_another_account_works_in_that_account(backend_url: str) -> None:
    sts = boto3.session.Session().client(
        "sts",
        endpoint_url=backend_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    assumed = sts.assume_role(
        RoleArn="arn:aws:iam::210987654321:role/lab", RoleSessionName=unique("lazy-iam")
    )["Credentials"]
    other = _client_as(backend_url, {k: str(v) for k, v in assumed.items()})
    name = unique("other-account")
    other.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        assert name in other.list_tables()["TableNames"]
        assert name not in dynamodb(backend_url).list_tables()["TableNames"]
        assert other.describe_table(TableName=name)["Table"]["TableArn"].startswith(
            "arn:aws:dynamodb:us-east-1:210987654321:table/"
        )
    finally:
        other.delete_table(TableName=name)


def test_an_iam_access_key_used_for_dynamodb_is_noted_as_used(backend_url: str) -> None:
    iam = boto3.session.Session().client(
        "iam",
        endpoint_url=backend_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    user = unique("lazy-iam")
    iam.create_user(UserName=user)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    client = _client_as(
        backend_url,
        {"AccessKeyId": key["AccessKeyId"], "SecretAccessKey": key["SecretAccessKey"]},
    )
    client.list_tables()
    used = iam.get_access_key_last_used(AccessKeyId=key["AccessKeyId"])["AccessKeyLastUsed"]
    assert used["ServiceName"] == "dynamodb"
    assert used["Region"] == "us-east-1"

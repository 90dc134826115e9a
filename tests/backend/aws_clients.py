"""boto3 clients and throwaway resources on a real embedded backend, for these tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType
    from mypy_boto3_stepfunctions import SFNClient

# One attempt: a retried HTTP 500 would hide exactly the failures these tests look for.
_CONFIG = Config(retries={"total_max_attempts": 1, "mode": "standard"}, max_pool_connections=32)


def _kwargs(url: str) -> dict[str, Any]:
    return {
        "endpoint_url": url,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
        "config": _CONFIG,
    }


def sqs(url: str) -> SQSClient:
    """A new SQS client (own session: safe to make in any thread)."""
    return boto3.session.Session().client("sqs", **_kwargs(url))


def dynamodb(url: str) -> DynamoDBClient:
    """A new DynamoDB client (own session: safe to make in any thread)."""
    return boto3.session.Session().client("dynamodb", **_kwargs(url))


def sns(url: str) -> SNSClient:
    """A new SNS client."""
    return boto3.session.Session().client("sns", **_kwargs(url))


def events(url: str) -> EventBridgeClient:
    """A new EventBridge client."""
    return boto3.session.Session().client("events", **_kwargs(url))


def s3(url: str) -> S3Client:
    """A new S3 client."""
    return boto3.session.Session().client("s3", **_kwargs(url))


def stepfunctions(url: str) -> SFNClient:
    """A new Step Functions client."""
    return boto3.session.Session().client("stepfunctions", **_kwargs(url))


def lambda_(url: str) -> LambdaClient:
    """A new Lambda client."""
    return boto3.session.Session().client("lambda", **_kwargs(url))


def iam(url: str) -> IAMClient:
    """A new IAM client."""
    return boto3.session.Session().client("iam", **_kwargs(url))


def queue_arn(url: str, queue_url: str) -> str:
    """The ARN of the queue at ``queue_url``."""
    attributes = sqs(url).get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    return attributes["Attributes"]["QueueArn"]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@contextmanager
def table(url: str) -> Iterator[str]:
    """A PAY_PER_REQUEST table keyed by ``id`` (S), deleted afterwards."""
    client = dynamodb(url)
    name = unique("backend-test")
    client.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        yield name
    finally:
        client.delete_table(TableName=name)


@contextmanager
def queue(url: str, attributes: dict[QueueAttributeNameType, str] | None = None) -> Iterator[str]:
    """A standard queue (its URL), deleted afterwards."""
    client = sqs(url)
    queue_url = client.create_queue(QueueName=unique("backend-test"), Attributes=attributes or {})[
        "QueueUrl"
    ]
    try:
        yield queue_url
    finally:
        client.delete_queue(QueueUrl=queue_url)

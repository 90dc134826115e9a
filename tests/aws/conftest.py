"""moto's in-process control plane (no Docker, no network) for the Lambda path's tests."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from loadtest.lambda_deploy import Clients

REGION = "us-east-1"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clients]:
    """Control-plane clients on a fresh moto account; nothing leaves the process."""
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield Clients(
            iam=boto3.client("iam", region_name=REGION),
            lambda_=boto3.client("lambda", region_name=REGION),
            sqs=boto3.client("sqs", region_name=REGION),
            dynamodb=boto3.client("dynamodb", region_name=REGION),
        )

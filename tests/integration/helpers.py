"""Helpers for end-to-end tests against a real backend."""

from __future__ import annotations

from typing import Any, Literal

import boto3
from botocore.config import Config

from loadtest import engine
from loadtest.aws.clients import EMBEDDED_CREDENTIALS, BackendKind
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.model.scenario.loading import Scenario


def run_variants(scenario: Scenario, url: str, *variants: str) -> engine.RunResult:
    refs = [parse_ref(v) for v in variants or scenario.variants]
    return engine.run(scenario, refs, kind=BackendKind.ENDPOINT, endpoint_url=url)


def client(
    service: Literal["sqs", "dynamodb", "kinesis"], url: str, config: Config | None = None
) -> Any:
    creds = dict(EMBEDDED_CREDENTIALS)
    return boto3.client(
        service,
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"],
        config=config,
    )


def loadtest_resources(url: str) -> tuple[list[str], list[str]]:
    """Queues and tables whose names say a run created them."""
    queues = client("sqs", url).list_queues(QueueNamePrefix="loadtest-").get("QueueUrls", [])
    tables = [
        t for t in client("dynamodb", url).list_tables()["TableNames"] if t.startswith("loadtest-")
    ]
    return queues, tables

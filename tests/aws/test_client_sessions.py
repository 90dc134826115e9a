"""loadtest's own clients share one session per fixed credentials and region (it keeps the
service models a client is built from); credentials from boto3's chain get a new one. Over
plain HTTP they build no TLS context."""

from __future__ import annotations

from typing import Any

import anyio

from loadtest.aws import clients as aws


def test_fixed_credentials_share_a_session_across_runs(backend_url: str) -> None:
    target = aws.Target.resolve(aws.BackendKind.ENDPOINT, backend_url)
    assert target.credentials_env
    assert target.session() is target.session()
    other_region = aws.Target(target.kind, target.endpoint_url, "eu-west-1", target.credentials_env)
    assert other_region.session() is not target.session()

    async def main() -> int:
        async with aws.clients(target) as (sqs, _):
            return len((await sqs.list_queues()).get("QueueUrls", []))

    # Clients of the shared session work in one event loop after another.
    assert anyio.run(main, backend="asyncio") == anyio.run(main, backend="asyncio")


def test_credentials_from_boto3s_chain_get_a_new_session_each_time() -> None:
    target = aws.Target(aws.BackendKind.AWS, None, "us-east-1")
    assert target.session() is not target.session()


def test_plain_http_endpoints_build_no_tls_context() -> None:
    async def verifies(endpoint_url: str) -> list[object]:
        target = aws.Target.resolve(aws.BackendKind.ENDPOINT, endpoint_url)
        async with aws.clients(target) as (sqs, dynamodb):
            clients: list[Any] = [sqs, dynamodb]
            return [c._endpoint.http_session._verify for c in clients]

    assert anyio.run(verifies, "http://127.0.0.1:9", backend="asyncio") == [False, False]
    assert False not in anyio.run(verifies, "https://127.0.0.1:9", backend="asyncio")

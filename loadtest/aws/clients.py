"""The AWS adapter: the clients for loadtest's own calls, and the one entry point of ``loadtest.aws``.

Every call loadtest itself makes to SQS or DynamoDB goes through clients made
here (``clients``). ``translated`` (a context manager around calls to the backend, built on
``translate``; both in ``loadtest.aws.errors``) is the one place botocore's exceptions
become loadtest's (``BackendError`` / ``CredentialsError``). Where a run's resources
live is ``loadtest.aws.target``'s; creating and deleting them ``loadtest.aws.resources``';
the end state's reads ``loadtest.aws.endstate``'s; the sinks' ``loadtest.aws.sinks``'
and their reads ``loadtest.aws.sink_reads``' (their synchronous clients made here,
``sink_clients``). All are re-exported here, the names
callers use (``from loadtest.aws import clients as aws``). Owns the clients' settings and
the embedded backend's request count (``served_sqs_requests``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
from aiobotocore.config import AioConfig

from loadtest.aws.endstate import count_items as count_items
from loadtest.aws.endstate import queue_depth as queue_depth
from loadtest.aws.endstate import scan_items as scan_items
from loadtest.aws.errors import ERRORS as ERRORS
from loadtest.aws.errors import translate as translate
from loadtest.aws.errors import translated as translated
from loadtest.aws.hand_sqs import HandSQS, HandSQSSync
from loadtest.aws.resources import KeySchema as KeySchema
from loadtest.aws.resources import Provisioned as Provisioned
from loadtest.aws.resources import ResourceNames as ResourceNames
from loadtest.aws.resources import create_id_table as create_id_table
from loadtest.aws.resources import delete_resources as delete_resources
from loadtest.aws.resources import new_run_id as new_run_id
from loadtest.aws.resources import provision as provision
from loadtest.aws.resources import refuse_existing_tables as refuse_existing_tables
from loadtest.aws.resources import teardown as teardown
from loadtest.aws.sink_reads import read_sinks as read_sinks
from loadtest.aws.sinks import MadeSink as MadeSink
from loadtest.aws.sinks import SinkClients as SinkClients
from loadtest.aws.sinks import capture_zip as capture_zip
from loadtest.aws.sinks import create_sinks as create_sinks
from loadtest.aws.sinks import delete_found_sink as delete_found_sink
from loadtest.aws.sinks import delete_sinks as delete_sinks
from loadtest.aws.sinks import find_tagged_sinks as find_tagged_sinks
from loadtest.aws.target import DEFAULT_REGION as DEFAULT_REGION
from loadtest.aws.target import EMBEDDED_CREDENTIALS as EMBEDDED_CREDENTIALS
from loadtest.aws.target import STATS_PATH as STATS_PATH
from loadtest.aws.target import BackendKind as BackendKind
from loadtest.aws.target import Target as Target
from loadtest.aws.target import is_loadtest_backend as is_loadtest_backend
from loadtest.aws.target import region_from_environment as region_from_environment
from loadtest.aws.user_agent import memoise_user_agent

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_sqs.client import SQSClient


@asynccontextmanager
async def clients(
    target: Target, pool: int = 64
) -> AsyncIterator[tuple[SQSClient, DynamoDBClient]]:
    """SQS and DynamoDB clients for loadtest's own calls (not the consumer's)."""
    config = AioConfig(
        max_pool_connections=pool,
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=5,
        read_timeout=30,
        # botocore checks every parameter against the model before each call (some 5%
        # of a call's CPU); loadtest's own calls are typed against the same model, and
        # the service still rejects a bad one, with a ValidationException translated
        # like any other refusal.
        parameter_validation=False,
    )
    session = target.session()
    # Over plain HTTP there is no certificate to verify, but each client would still
    # build a TLS context and load the CA bundle (some 20 ms of CPU per client).
    plain_http = (target.endpoint_url or "").lower().startswith("http:")
    verify = False if plain_http else None
    async with (
        session.client(
            "sqs", endpoint_url=target.endpoint_url, config=config, verify=verify
        ) as sqs,
        session.client(
            "dynamodb", endpoint_url=target.endpoint_url, config=config, verify=verify
        ) as dynamodb,
    ):
        memoise_user_agent(sqs)
        memoise_user_agent(dynamodb)
        if not _own_backend(target):
            yield sqs, dynamodb
            return
        # loadtest's own backend: its calls per message are written by hand.
        by_hand = HandSQS(sqs, str(target.endpoint_url), _access_key(target))
        try:
            yield cast("SQSClient", by_hand), dynamodb
        finally:
            await by_hand.aclose()


def _own_backend(target: Target) -> bool:
    """Whether ``target`` is loadtest's own backend (the embedded one, or ``loadtest serve``
    behind an endpoint) over plain HTTP."""
    url = (target.endpoint_url or "").lower()
    if target.kind is BackendKind.AWS or not url.startswith("http:"):
        return False
    return target.kind is BackendKind.EMBEDDED or is_loadtest_backend(str(target.endpoint_url))


def _access_key(target: Target) -> str:
    return dict(target.credentials_env).get("AWS_ACCESS_KEY_ID", "testing")


def sink_clients(target: Target) -> SinkClients:
    """boto3 clients for the run's sinks (SQS, SNS, EventBridge, S3, Step Functions, Lambda
    and IAM, each made when first used), used from a worker thread (``loadtest.aws.sinks``
    is synchronous)."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"max_attempts": 3, "mode": "standard"},
        connect_timeout=5,
        read_timeout=30,
        max_pool_connections=4,
    )
    credentials = dict(target.credentials_env)
    session = boto3.session.Session(
        aws_access_key_id=credentials.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=credentials.get("AWS_SECRET_ACCESS_KEY"),
        region_name=target.region,
    )
    plain_http = (target.endpoint_url or "").lower().startswith("http:")
    kwargs: dict[str, Any] = {"endpoint_url": target.endpoint_url, "config": config}
    if plain_http:
        kwargs["verify"] = False
    own = _own_backend(target)

    def make(service: str) -> Any:
        client = session.client(service, **kwargs)  # type: ignore[call-overload]
        if own and service == "sqs":
            # Reading a sink's queue back: receive and delete written by hand.
            return HandSQSSync(client, str(target.endpoint_url), _access_key(target))
        return client

    return SinkClients(make)


async def served_sqs_requests(target: Target) -> int | None:
    """SQS requests the embedded backend has served so far, or None if it does not say.

    Asked of local backends only (loadtest's embedded one, or ``loadtest
    serve`` behind ``--endpoint-url``); one that does not count answers
    nothing and the caller falls back to the history. A difference of two
    readings is this run's count as long as nobody else uses the backend.
    """
    if target.kind is BackendKind.AWS or not target.endpoint_url:
        return None
    url = f"{target.endpoint_url}{STATS_PATH}"

    def read() -> int | None:
        import urllib.request

        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                value = json.load(response).get("sqs")
        except (OSError, ValueError):
            return None
        return value if isinstance(value, int) else None

    return await anyio.to_thread.run_sync(read)

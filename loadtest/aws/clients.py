"""The AWS adapter: sessions, clients, the run's resources, and error translation.

Every call loadtest itself makes to SQS or DynamoDB goes through clients made
here. ``translated`` (a context manager around calls to the backend, built on
``translate``; both in ``loadtest.aws.errors``, re-exported here) is
the one place botocore's exceptions become loadtest's (``BackendError`` /
``CredentialsError``). Resources are created with unique
names and tracked in ``Provisioned`` so teardown deletes exactly what this run
created and nothing else.
"""

from __future__ import annotations

import functools
import json
import math
import os
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import aioboto3
import anyio
from aiobotocore.config import AioConfig

from loadtest.aws.endstate import count_items as count_items
from loadtest.aws.endstate import queue_depth as queue_depth
from loadtest.aws.endstate import scan_items as scan_items
from loadtest.aws.errors import ERRORS as ERRORS
from loadtest.aws.errors import translate as translate
from loadtest.aws.errors import translated as translated
from loadtest.aws.fifo import FifoQueue, refuse_window_fault
from loadtest.aws.user_agent import memoise_user_agent
from loadtest.errors import TableExistsError

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_dynamodb.type_defs import KeySchemaElementTypeDef
    from types_aiobotocore_sqs.client import SQSClient

DEFAULT_REGION = "us-east-1"
"""The region when neither the caller nor the environment names one (boto3 would have none)."""


def region_from_environment(given: str | None = None) -> str:
    """``given``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else ``DEFAULT_REGION``."""
    return (
        given
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or DEFAULT_REGION
    )


EMBEDDED_CREDENTIALS = (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"))
"""Fixed credentials for an embedded or local endpoint, which accepts any."""


class BackendKind(StrEnum):
    EMBEDDED = "embedded"
    ENDPOINT = "endpoint"
    AWS = "aws"


@dataclass(frozen=True)
class Target:
    """Where the run's queues and table live."""

    kind: BackendKind
    endpoint_url: str | None
    region: str
    credentials_env: tuple[tuple[str, str], ...] = ()
    """Credentials to use and to hand the consumer; empty means boto3's normal chain."""

    @staticmethod
    def resolve(kind: BackendKind, endpoint_url: str | None) -> Target:
        region = region_from_environment()
        if kind is BackendKind.AWS:
            return Target(kind, None, region)
        creds: tuple[tuple[str, str], ...] = ()
        if kind is BackendKind.EMBEDDED or not _has_credentials():
            # Local emulators accept any key; fixed ones avoid NoCredentialsError.
            creds = EMBEDDED_CREDENTIALS
        return Target(kind, endpoint_url, region, creds)

    @staticmethod
    def control_plane(where: str) -> Target:
        """Real AWS as the deploy, cleanup and lint calls reach it (synchronous boto3), named in
        messages as ``AWS (where)``: a region, or "profile P, region R[, endpoint E]"."""
        return Target(BackendKind.AWS, None, where)

    def session(self) -> aioboto3.Session:
        if self.credentials_env:
            return _fixed_credentials_session(self.credentials_env, self.region)
        return aioboto3.Session(region_name=self.region)


@functools.cache
def _fixed_credentials_session(
    credentials_env: tuple[tuple[str, str], ...], region: str
) -> aioboto3.Session:
    """One session per fixed credentials and region for the whole process.

    A session loads the service models and endpoint rules its clients are built from
    and keeps them: a new session cost some 35 ms of CPU for an SQS and a DynamoDB
    client, a shared one 3 ms, and a run opens clients several times (reachability,
    each variant). Fixed credentials hold no refresh state, so the session is no
    event loop's. Credentials from boto3's chain get a new session each time, as they
    may change between runs of a long-lived process.
    """
    kwargs = dict(credentials_env)
    return aioboto3.Session(
        aws_access_key_id=kwargs.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=kwargs.get("AWS_SECRET_ACCESS_KEY"),
        region_name=region,
    )


def _has_credentials() -> bool:
    import boto3

    return boto3.Session().get_credentials() is not None


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
        yield sqs, dynamodb


def new_run_id() -> str:
    return secrets.token_hex(4)


@dataclass
class Provisioned:
    """The resources one run created; teardown deletes these and nothing else."""

    queue_url: str | None = None
    queue_arn: str | None = None
    dlq_url: str | None = None
    dlq_arn: str | None = None
    table_name: str | None = None
    extra_tables: list[str] = field(default_factory=list)
    key_names: tuple[str, ...] = ("id",)
    """The orders table's key attributes (hash, then range)."""

    def set_orders_table(self, name: str) -> None:
        self.table_name = name

    def names(self) -> list[str]:
        """Every queue URL and table name recorded, for a message."""
        return [
            name
            for name in (self.queue_url, self.dlq_url, self.table_name, *self.extra_tables)
            if name
        ]


@dataclass(frozen=True)
class ResourceNames:
    queue: str
    dlq: str
    table: str
    prefix: str = ""
    """What the generated names of the variant's extra tables start with."""

    @staticmethod
    def for_run(run_id: str, variant_index: int) -> ResourceNames:
        base = f"loadtest-{run_id}-{variant_index}"
        return ResourceNames(
            queue=f"{base}-jobs", dlq=f"{base}-dlq", table=f"{base}-orders", prefix=base
        )


KeySchema = tuple[tuple[str, str], ...]
"""A table's key attributes with their types (``S``, ``N`` or ``B``): hash, then range."""


async def provision(
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    names: ResourceNames,
    *,
    visibility_timeout_s: int,
    max_receive_count: int,
    into: Provisioned,
    target: Target,
    key_names: tuple[str, ...] = ("id",),
    key_schema: KeySchema = (),
    extra_tables: tuple[tuple[str, KeySchema], ...] = (),
    fifo: FifoQueue | None = None,
) -> None:
    """Create the DLQ, the queue (with its redrive policy), the orders table (keyed by
    ``key_schema``, or ``key_names`` as strings) and the consumer's ``extra_tables``;
    with ``fifo``, a FIFO queue and DLQ (a FIFO queue's DLQ must be FIFO too).

    On real AWS a table the run would name as an existing one is refused
    (``BackendError``) before anything is created: the run never touches a table
    it did not make.

    Each resource is recorded in ``into`` the moment it exists, so a failure
    halfway still lets teardown remove what was made.
    """
    refuse_window_fault(fifo, real_aws=target.kind is BackendKind.AWS)
    schema = key_schema or tuple((name, "S") for name in key_names)
    into.key_names = tuple(name for name, _ in schema)
    if target.kind is BackendKind.AWS:
        await refuse_existing_tables(
            dynamodb, [names.table, *(name for name, _ in extra_tables)], target
        )
    fifo_attributes: dict[Any, str] = fifo.attributes() if fifo else {}
    with translated("create the run's queue and table", target):
        dlq = await sqs.create_queue(
            QueueName=fifo.name(names.dlq) if fifo else names.dlq,
            Attributes={"MessageRetentionPeriod": "1209600", **fifo_attributes},
        )
        into.dlq_url = dlq["QueueUrl"]
        attrs = await sqs.get_queue_attributes(QueueUrl=into.dlq_url, AttributeNames=["QueueArn"])
        into.dlq_arn = attrs["Attributes"]["QueueArn"]
        queue = await sqs.create_queue(
            QueueName=fifo.name(names.queue) if fifo else names.queue,
            Attributes={
                "VisibilityTimeout": str(visibility_timeout_s),
                "RedrivePolicy": json.dumps(
                    {"deadLetterTargetArn": into.dlq_arn, "maxReceiveCount": str(max_receive_count)}
                ),
                **fifo_attributes,
            },
            **({"tags": fifo.tags()} if fifo and fifo.tags() else {}),
        )
        into.queue_url = queue["QueueUrl"]
        attrs = await sqs.get_queue_attributes(QueueUrl=into.queue_url, AttributeNames=["QueueArn"])
        into.queue_arn = attrs["Attributes"]["QueueArn"]
        await create_id_table(
            dynamodb, names.table, record=into.set_orders_table, key_schema=schema
        )
        for name, extra_schema in extra_tables:
            await create_id_table(
                dynamodb, name, record=into.extra_tables.append, key_schema=extra_schema
            )


async def refuse_existing_tables(
    dynamodb: DynamoDBClient, tables: list[str], target: Target
) -> None:
    """Refuse (``BackendError``) to make a table whose name already exists: the run would
    write into, and then delete, a table it does not own."""
    for name in tables:
        try:
            await dynamodb.describe_table(TableName=name)
        except dynamodb.exceptions.ResourceNotFoundException:
            continue
        except ERRORS as exc:
            raise translate(exc, f"check that table {name} does not exist yet", target) from exc
        raise TableExistsError(
            f"table {name!r} already exists in {target.region}; the run creates and deletes "
            "its own tables and never touches one it did not make: delete or rename it, or run "
            "against the embedded backend ([table] name / [[tables]] name in the scenario)"
        )


async def create_id_table(
    dynamodb: DynamoDBClient,
    name: str,
    *,
    record: Callable[[str], None],
    created_by: str = "loadtest",
    timeout_s: float = 120,
    key_names: tuple[str, ...] = ("id",),
    key_schema: KeySchema = (),
) -> None:
    """Create an on-demand table keyed by ``key_schema`` (or ``key_names``, strings: hash,
    then range; the lab's ``id`` by default) and wait until it is ACTIVE.

    ``record(name)`` runs the moment the table exists, before the wait, so a
    failure while waiting still leaves it in the caller's list for teardown.
    """
    typed = key_schema or tuple((n, "S") for n in key_names)
    schema: list[KeySchemaElementTypeDef] = [{"AttributeName": typed[0][0], "KeyType": "HASH"}]
    if len(typed) > 1:
        schema.append({"AttributeName": typed[1][0], "KeyType": "RANGE"})
    await dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[
            {"AttributeName": n, "AttributeType": t}  # type: ignore[typeddict-item]
            for n, t in typed
        ],
        KeySchema=schema,
        BillingMode="PAY_PER_REQUEST",
        Tags=[{"Key": "created-by", "Value": created_by}],
    )
    record(name)
    with anyio.fail_after(timeout_s):
        # botocore's own rule for "exists": ACTIVE, retrying while not found.
        await dynamodb.get_waiter("table_exists").wait(
            TableName=name,
            WaiterConfig={
                "Delay": _TABLE_POLL_S,
                "MaxAttempts": math.ceil(timeout_s / _TABLE_POLL_S),
            },
        )


_TABLE_POLL_S = 1
"""How often (in seconds) a new table's status is read while waiting for it."""


async def teardown(
    sqs: SQSClient, dynamodb: DynamoDBClient, made: Provisioned, *, timeout_s: float | None = None
) -> list[str]:
    """Delete exactly what ``made`` lists; return problems, by name, instead of raising.

    Shielded from cancellation: an interrupted run still cleans up. With
    ``timeout_s``, a backend that stopped answering costs at most that many
    seconds, and each resource not deleted is named.
    """
    queues = [url for url in (made.queue_url, made.dlq_url) if url]
    tables = [table for table in (made.table_name, *made.extra_tables) if table]
    return await delete_resources(sqs, dynamodb, queues, tables, timeout_s=timeout_s)


async def delete_resources(
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    queue_urls: list[str],
    tables: list[str],
    *,
    timeout_s: float | None = None,
) -> list[str]:
    """Delete these queues and tables, shielded from cancellation; return the problems.

    What was deleted is removed from the lists, so what remains is what is
    left behind. With ``timeout_s``, give up after that many seconds and say so.
    """
    problems: list[str] = []
    with anyio.CancelScope(shield=True) as scope:
        if timeout_s is not None:
            scope.deadline = anyio.current_time() + timeout_s
        for url in list(queue_urls):
            try:
                await sqs.delete_queue(QueueUrl=url)
                queue_urls.remove(url)
            except ERRORS as exc:
                problems.append(f"queue {url}: {exc}")
        for table in list(tables):
            try:
                await dynamodb.delete_table(TableName=table)
                tables.remove(table)
            except ERRORS as exc:
                problems.append(f"table {table}: {exc}")
    if scope.cancelled_caught:
        problems.extend(
            f"{kind} {name}: not deleted within {timeout_s:g} s"
            for kind, names in (("queue", queue_urls), ("table", tables))
            for name in names
            if not any(name in problem for problem in problems)
        )
    return problems


STATS_PATH = "/_loadtest/stats"
"""Where loadtest's embedded backend reports the requests it served, by service."""


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

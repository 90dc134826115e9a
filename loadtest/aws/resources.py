"""The run's resources: unique names, creating the queue, its DLQ and the tables, and
deleting exactly what was created (the sinks too, through ``loadtest.aws.sinks``).

Resources are created with unique names (``ResourceNames``) and tracked in
``Provisioned`` the moment each exists, so teardown deletes exactly what this run
created and nothing else; on real AWS a table name that already exists is refused
before anything is made. Every failure goes through ``loadtest.aws.errors``. Must not
open clients (they are passed in).
"""

from __future__ import annotations

import json
import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from loadtest.aws.errors import ERRORS, translate, translated
from loadtest.aws.fifo import FifoQueue, refuse_window_fault
from loadtest.aws.sinks import MadeSink, SinkClients, delete_sinks
from loadtest.aws.target import BackendKind, Target
from loadtest.errors import TableExistsError

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_dynamodb.type_defs import KeySchemaElementTypeDef
    from types_aiobotocore_sqs.client import SQSClient


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
    sinks: list[MadeSink] = field(default_factory=list)
    """The sinks made so far (``loadtest.aws.sinks``), each with the parts that exist."""

    def set_orders_table(self, name: str) -> None:
        self.table_name = name

    def names(self) -> list[str]:
        """Every queue URL, table name and sink part recorded, for a message."""
        return [
            name
            for name in (self.queue_url, self.dlq_url, self.table_name, *self.extra_tables)
            if name
        ] + [name for sink in self.sinks for name in sink.names()]

    def sink_values(self) -> dict[str, str]:
        """What each sink placeholder stands for (``RunResources.sinks``)."""
        return {k: v for sink in self.sinks for k, v in sink.placeholder_values().items()}


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
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    made: Provisioned,
    *,
    timeout_s: float | None = None,
    sinks: SinkClients | None = None,
) -> list[str]:
    """Delete exactly what ``made`` lists (its sinks with ``sinks``' clients); return
    problems, by name, instead of raising.

    Shielded from cancellation: an interrupted run still cleans up. With
    ``timeout_s``, a backend that stopped answering costs at most that many
    seconds (for the sinks, and again for the queues and tables), and each resource
    not deleted is named.
    """
    problems = await delete_made_sinks(sinks, made.sinks, timeout_s=timeout_s)
    queues = [url for url in (made.queue_url, made.dlq_url) if url]
    tables = [table for table in (made.table_name, *made.extra_tables) if table]
    return problems + await delete_resources(sqs, dynamodb, queues, tables, timeout_s=timeout_s)


async def delete_made_sinks(
    clients: SinkClients | None, made: list[MadeSink], *, timeout_s: float | None = None
) -> list[str]:
    """``delete_sinks`` in a worker thread, shielded from cancellation; with ``timeout_s``,
    each sink not deleted within that many seconds is named."""
    if not made:
        return []
    if clients is None:
        return [f"{m.sink.kind.value} sink {m.name}: no clients to delete it" for m in made]
    problems: list[str] = []
    with anyio.CancelScope(shield=True) as scope:
        if timeout_s is not None:
            scope.deadline = anyio.current_time() + timeout_s
        problems = await anyio.to_thread.run_sync(
            delete_sinks, clients, made, abandon_on_cancel=True
        )
    if scope.cancelled_caught:
        problems = [
            f"{m.sink.kind.value} sink {m.name}: not deleted within {timeout_s:g} s"
            for m in list(made)
        ]
    return problems


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

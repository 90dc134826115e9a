"""``loadtest cleanup``: find and delete what runs left behind, by the ``loadtest:run`` tag.

Finds event source mappings, functions, roles, queues, tables and sinks (topics, buses,
buckets, state machines; a function sink is a function, a role and a queue, a state
machine's role a role) whose ``loadtest:run`` tag is present (or equals ``--run``), and observer layers
whose description carries it (a layer version cannot be tagged). Nothing
without the tag is ever listed, so nothing untagged is ever deleted. A user's
function a killed attach run left redirected is not deleted but restored
(``loadtest.deploy.lambda_attach.restore_leftover``). Synchronous boto3; clients
passed in; nothing printed.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from loadtest.aws import clients as aws
from loadtest.deploy.deploy_plan import RUN_TAG, Kind
from loadtest.deploy.lambda_attach import ATTACHED_ENV, restore_leftover
from loadtest.deploy.lambda_deploy import Clients, delete_one
from loadtest.errors import BackendError

if TYPE_CHECKING:
    from mypy_boto3_lambda.client import LambdaClient

ATTACHED = "attached-function"
"""A user's function left attached: restored, never deleted."""
DELETION_ORDER = (
    Kind.MAPPING,
    Kind.FUNCTION,
    Kind.LAYER,
    Kind.ROLE,
    Kind.QUEUE,
    Kind.SINK,
    Kind.TABLE,
)


@dataclass(frozen=True)
class Found:
    """A resource a run left: what it is, its name, its id for deletion and its run."""

    kind: Kind | str
    name: str
    ident: str
    run_id: str

    @property
    def action(self) -> str:
        return "restore" if self.kind == ATTACHED else "delete"


def _matches(tags: dict[str, str], run_id: str | None) -> str | None:
    value = tags.get(RUN_TAG)
    if value is None or (run_id is not None and value != run_id):
        return None
    return value


def _pages(client: Any, operation: str, key: str, **kwargs: Any) -> list[Any]:
    return [
        item
        for page in client.get_paginator(operation).paginate(**kwargs)
        for item in page.get(key, [])
    ]


def find_tagged(clients: Clients, run_id: str | None = None) -> list[Found]:
    """Every resource tagged ``loadtest:run`` (= ``run_id`` if given), in deletion order."""
    found: list[Found] = []
    lam = clients.lambda_
    for mapping in _pages(lam, "list_event_source_mappings", "EventSourceMappings"):
        arn = mapping.get("EventSourceMappingArn")
        if not arn:
            continue
        run = _matches(lam.list_tags(Resource=arn).get("Tags", {}), run_id)
        if run is not None:
            name = f"{mapping['EventSourceArn'].rsplit(':', 1)[-1]} -> {mapping['FunctionArn'].rsplit(':', 1)[-1]}"
            found.append(Found(Kind.MAPPING, name, mapping["UUID"], run))
    for function in _pages(lam, "list_functions", "Functions"):
        name = function["FunctionName"]
        run = _matches(lam.list_tags(Resource=function["FunctionArn"]).get("Tags", {}), run_id)
        if run is not None:
            found.append(Found(Kind.FUNCTION, name, name, run))
            continue
        note = function.get("Environment", {}).get("Variables", {}).get(ATTACHED_ENV)
        if note is not None:
            attached_run = _attached_run(note)
            if run_id is None or attached_run == run_id:
                found.append(Found(ATTACHED, name, name, attached_run))
    for layer in _pages(lam, "list_layers", "Layers"):
        for version in _pages(
            lam, "list_layer_versions", "LayerVersions", LayerName=layer["LayerName"]
        ):
            run = _run_in_description(version.get("Description", ""), run_id)
            if run is not None:
                arn = version["LayerVersionArn"]
                found.append(Found(Kind.LAYER, layer["LayerName"], arn, run))
    for role in _pages(clients.iam, "list_roles", "Roles"):
        name = role["RoleName"]
        tags = clients.iam.list_role_tags(RoleName=name).get("Tags", [])
        run = _matches({t["Key"]: t["Value"] for t in tags}, run_id)
        if run is not None:
            found.append(Found(Kind.ROLE, name, name, run))
    for url in _pages(clients.sqs, "list_queues", "QueueUrls"):
        run = _matches(clients.sqs.list_queue_tags(QueueUrl=url).get("Tags", {}), run_id)
        if run is not None:
            found.append(Found(Kind.QUEUE, url.rsplit("/", 1)[-1], url, run))
    for table in _pages(clients.dynamodb, "list_tables", "TableNames"):
        arn = clients.dynamodb.describe_table(TableName=table)["Table"]["TableArn"]
        tags = clients.dynamodb.list_tags_of_resource(ResourceArn=arn).get("Tags", [])
        run = _matches({t["Key"]: t["Value"] for t in tags}, run_id)
        if run is not None:
            found.append(Found(Kind.TABLE, table, table, run))
    if clients.sinks is not None:
        for kind, address, run in aws.find_tagged_sinks(clients.sinks, RUN_TAG, run_id):
            name = address.rsplit(":", 1)[-1]
            found.append(Found(Kind.SINK, f"{kind.value} {name}", f"{kind.value} {address}", run))
    order = {kind: i for i, kind in enumerate((ATTACHED, *DELETION_ORDER))}
    return sorted(found, key=lambda f: order[f.kind])


def _attached_run(note: str) -> str:
    import json

    try:
        return str(json.loads(note)["run"])
    except (ValueError, KeyError, TypeError):
        return "?"


def _run_in_description(description: str, run_id: str | None) -> str | None:
    marker = f"{RUN_TAG}="
    if marker not in description:
        return None
    run = description.split(marker, 1)[1].split()[0].rstrip(";,")
    return run if run_id is None or run == run_id else None


def delete_found(
    clients: Clients, found: list[Found], *, restore: Any = restore_leftover
) -> list[str]:
    """Delete (or restore) each of ``found``; return the problems, by name, instead of raising."""
    problems: list[str] = []
    for item in found:
        try:
            if item.kind == ATTACHED:
                lam: LambdaClient = clients.lambda_
                restore(lam, item.ident)
            else:
                assert isinstance(item.kind, Kind)
                delete_one(clients, item.kind, item.ident)
        except (*aws.ERRORS, BackendError) as exc:
            problems.append(f"{item.kind} {item.name}: {exc}")
    return problems


def make_clients(endpoint_url: str | None, region: str | None = None) -> tuple[Clients, str]:
    """Control-plane clients from boto3's credential chain, and "profile P, region R" for messages.

    Against an endpoint with no credentials configured, fixed test keys (an
    emulator accepts any).
    """
    region = aws.region_from_environment(region)
    session = boto3.Session(region_name=region)
    if endpoint_url and session.get_credentials() is None:
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=region
        )
    where = f"profile {session.profile_name or 'default'}, region {region}"
    if endpoint_url:
        where += f", endpoint {endpoint_url}"

    config = Config(
        connect_timeout=5, read_timeout=60, retries={"max_attempts": 3, "mode": "standard"}
    )

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=endpoint_url, config=config)  # type: ignore[call-overload]

    shared = {"sqs": client("sqs"), "iam": client("iam"), "lambda": client("lambda")}
    return (
        Clients(
            iam=shared["iam"],
            lambda_=shared["lambda"],
            sqs=shared["sqs"],
            dynamodb=client("dynamodb"),
            sinks=aws.SinkClients(lambda service: shared.get(service) or client(service)),
        ),
        where,
    )


def translated(action: str, where: str) -> AbstractContextManager[None]:
    """The adapter's translation around control-plane calls made with ``make_clients``'
    clients: errors name the profile and region (``where``) and the ``action``."""
    return aws.translated(action, aws.Target.control_plane(where))


def translate_call_error(exc: BaseException, action: str, where: str) -> BaseException:
    """One botocore failure as ``translated`` would raise it (the adapter's ``translate``)."""
    return aws.translate(exc, action, aws.Target.control_plane(where))

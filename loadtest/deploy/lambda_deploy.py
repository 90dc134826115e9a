"""Deploying a plan: the role, the observer layer, tables, queues, functions and mappings.

Creates exactly the resources of a ``loadtest.deploy.deploy_plan.Plan``, in its
order, with its settings and tags, and records each one in ``Deployed`` the
moment it exists, so ``teardown`` deletes what was made (and nothing else)
even when the deploy failed halfway. Control-plane calls on synchronous boto3
clients that the caller passes in (run them off the event loop); botocore
failures become loadtest's through ``loadtest.aws.clients.translated``.
The zips come from ``loadtest.deploy.packaging`` (the function's code) and
``loadtest.observer.layer`` (the observer layer), and waiting until what was created
is ready from ``loadtest.deploy.lambda_ready``; their names are re-exported here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from loadtest.aws import clients as aws
from loadtest.deploy.deploy_plan import RUN_TAG, Kind, Plan, Resource
from loadtest.deploy.lambda_ready import (
    ROLE_RETRY_S,
    TABLE_POLL_S,
    create_function_once_role_is_usable,
    function_active,
    poll,
    wait_mapping_enabled,
    wait_table_active,
)
from loadtest.deploy.packaging import function_zip
from loadtest.errors import TableExistsError
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.placeholders import sink_of
from loadtest.observer.layer import MAX_CODE_BYTES, layer_modules, layer_zip

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_iam.client import IAMClient
    from mypy_boto3_lambda.client import LambdaClient
    from mypy_boto3_sqs.client import SQSClient


@dataclass(frozen=True)
class Clients:
    """The control-plane clients a deploy uses (made by the caller, region and endpoint set)."""

    iam: IAMClient
    lambda_: LambdaClient
    sqs: SQSClient
    dynamodb: DynamoDBClient
    sinks: aws.SinkClients | None = None
    """For a plan with sinks (SQS, SNS, EventBridge, S3, Step Functions)."""


@dataclass(frozen=True)
class Created:
    """One resource that exists: its kind, planned name and its id for deletion."""

    kind: Kind
    name: str
    ident: str
    """Role name, layer version ARN, table name, queue URL, function name or mapping UUID."""
    arn: str = ""


@dataclass
class Deployed:
    """What a deploy created so far, in creation order."""

    created: list[Created] = field(default_factory=list)
    sinks: list[aws.MadeSink] = field(default_factory=list)
    """The sinks made so far, each with the parts that exist (``loadtest.aws.sinks``)."""
    sink_values: dict[str, dict[str, str]] = field(default_factory=dict)
    """What each variant's sink placeholders stand for, by variant."""

    def of_kind(self, kind: Kind) -> list[Created]:
        return [c for c in self.created if c.kind is kind]

    def get(self, name: str) -> Created:
        for created in self.created:
            if created.name == name:
                return created
        raise KeyError(name)


def _tags_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _queue_arn(clients: Clients, url: str) -> str:
    attrs = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    return attrs["Attributes"]["QueueArn"]


def _account_of(arn: str) -> str:
    return arn.split(":")[4]


def _role_policy(plan: Plan, account: str) -> dict[str, Any]:
    run = f"loadtest-{plan.run_id}-*"
    prefix = f"arn:aws:{{}}:{plan.region}:{account}:"
    sqs_actions = [a for a in plan.function_actions if a.startswith("sqs:")]
    ddb_actions = [a for a in plan.function_actions if a.startswith("dynamodb:")]
    log_actions = [a for a in plan.function_actions if a.startswith("logs:")]
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": sqs_actions, "Resource": prefix.format("sqs") + run},
            {
                "Effect": "Allow",
                "Action": ddb_actions,
                "Resource": prefix.format("dynamodb") + f"table/{run}",
            },
            {
                "Effect": "Allow",
                "Action": log_actions,
                "Resource": prefix.format("logs") + f"log-group:/aws/lambda/{run}*",
            },
            *_sink_statements(plan, prefix, run),
        ],
    }


def _sink_statements(plan: Plan, prefix: str, run: str) -> list[dict[str, Any]]:
    """What the function may send to the run's sinks (none without sinks)."""
    scoped = {
        "sns": prefix.format("sns") + run,
        "events": prefix.format("events") + f"event-bus/{run}",
        "s3": f"arn:aws:s3:::{run}/*",
        "states": prefix.format("states") + f"stateMachine:{run}",
        "lambda": prefix.format("lambda") + f"function:{run}",
    }
    return [
        {"Effect": "Allow", "Action": actions, "Resource": resource}
        for service, resource in scoped.items()
        if (actions := [a for a in plan.function_actions if a.startswith(f"{service}:")])
    ]


def deploy(
    plan: Plan,
    clients: Clients,
    code: dict[str, bytes],
    *,
    into: Deployed,
    layer: bytes | None = None,
    timeout_s: float = 300,
    sleep: Callable[[float], None] = time.sleep,
    target: aws.Target | None = None,
) -> None:
    """Create every resource of ``plan`` in order; ``code`` maps function names to zips.

    ``target`` names where the clients point in error messages (an endpoint
    such as MiniStack's); by default AWS in the plan's region.

    Each resource is appended to ``into`` as soon as it exists. Returns once
    every table is ACTIVE (``wait_table_active``, boto3's waiter), every function
    Active and every mapping Enabled (polled, pausing with ``sleep``).
    """
    where = target or aws.Target(aws.BackendKind.AWS, None, plan.region)
    with aws.translated("deploy the run", target or aws.Target.control_plane(plan.region)):
        for resource in plan.resources:
            _create(plan, clients, resource, code, into, layer, timeout_s, sleep, where)
        for mapping in into.of_kind(Kind.MAPPING):
            wait_mapping_enabled(clients.lambda_, mapping.ident, timeout_s=timeout_s, sleep=sleep)


def _filled(settings: Any, into: Deployed, variant: str | None = None) -> dict[str, str]:
    """The function's variables with the queues and sinks it names filled in (``{queue_url}``,
    ``{topic:orders}``, ...)."""
    refs = settings.get("EnvironmentRefs", {})
    made: dict[str, str | None] = {
        "{queue_url}": into.get(refs["url"]).ident if "url" in refs else None,
        "{queue_arn}": into.get(refs["arn"]).arn if "arn" in refs else None,
        "{dlq_url}": into.get(refs["dlq-url"]).ident if "dlq-url" in refs else None,
    }
    for placeholder, value in into.sink_values.get(variant or "", {}).items():
        made[f"{{{placeholder}}}"] = value
    out = {}
    for name, value in settings["Environment"]["Variables"].items():
        for placeholder, actual in made.items():
            if actual is not None:
                value = value.replace(placeholder, actual)
        out[name] = value
    return out


def _create(
    plan: Plan,
    clients: Clients,
    resource: Resource,
    code: dict[str, bytes],
    into: Deployed,
    layer: bytes | None,
    timeout_s: float,
    sleep: Callable[[float], None],
    where: aws.Target,
) -> None:
    s = resource.settings
    tags = dict(resource.tags)
    if resource.kind is Kind.ROLE:
        role = clients.iam.create_role(
            RoleName=resource.name,
            AssumeRolePolicyDocument=json.dumps(s["AssumeRolePolicyDocument"]),
            Tags=[{"Key": k, "Value": v} for k, v in tags.items()],
            Description=f"loadtest run {plan.run_id}: execution role",
        )["Role"]
        into.created.append(Created(Kind.ROLE, resource.name, resource.name, role["Arn"]))
        clients.iam.put_role_policy(
            RoleName=resource.name,
            PolicyName="loadtest-run",
            PolicyDocument=json.dumps(_role_policy(plan, _account_of(role["Arn"]))),
        )
    elif resource.kind is Kind.LAYER:
        published = clients.lambda_.publish_layer_version(
            LayerName=resource.name,
            Description=s["Description"],
            Content={"ZipFile": layer if layer is not None else layer_zip()},
            CompatibleRuntimes=list(s["CompatibleRuntimes"]),
        )
        arn = published["LayerVersionArn"]
        into.created.append(Created(Kind.LAYER, resource.name, arn, arn))
    elif resource.kind is Kind.SINK:
        _create_sink(clients, resource, into, where, sleep)
    elif resource.kind is Kind.TABLE:
        key_schema = list(s["KeySchema"])
        try:
            described = clients.dynamodb.create_table(
                TableName=resource.name,
                KeySchema=key_schema,
                AttributeDefinitions=s.get("AttributeDefinitions")
                or [
                    {"AttributeName": k["AttributeName"], "AttributeType": "S"} for k in key_schema
                ],
                BillingMode=s["BillingMode"],
                Tags=_tags_list(tags),  # type: ignore[arg-type]
            )["TableDescription"]
        except clients.dynamodb.exceptions.ResourceInUseException as exc:
            # Never touched, so never in ``into``: teardown leaves it alone.
            raise TableExistsError(
                f"table {resource.name!r} already exists in {plan.region}; the run creates and "
                "deletes its own tables and never touches one it did not make: delete or rename "
                "it, or leave [table] name / [[tables]] name out of the scenario"
            ) from exc
        into.created.append(
            Created(Kind.TABLE, resource.name, resource.name, described.get("TableArn", ""))
        )
        wait_table_active(clients.dynamodb, resource.name, timeout_s=timeout_s)
    elif resource.kind is Kind.QUEUE:
        attributes = dict(s["Attributes"])
        redrive = s.get("RedrivePolicy")
        if redrive:
            dlq = into.get(redrive["deadLetterTargetArn"])
            attributes["RedrivePolicy"] = json.dumps(
                {
                    "deadLetterTargetArn": dlq.arn,
                    "maxReceiveCount": str(redrive["maxReceiveCount"]),
                }
            )
        url = clients.sqs.create_queue(
            QueueName=resource.name,
            Attributes=attributes,
            tags=tags,
        )["QueueUrl"]
        into.created.append(Created(Kind.QUEUE, resource.name, url, _queue_arn(clients, url)))
    elif resource.kind is Kind.FUNCTION:
        zipped = code[resource.name]
        function = create_function_once_role_is_usable(
            clients.lambda_,
            {
                "FunctionName": resource.name,
                "Runtime": s["Runtime"],
                "Handler": s["Handler"],
                "Role": into.get(s["Role"]).arn,
                "Code": {"ZipFile": zipped},
                "MemorySize": s["MemorySize"],
                "Timeout": s["Timeout"],
                "Layers": [into.get(name).arn for name in s["Layers"]],
                "Environment": {"Variables": _filled(s, into, resource.variant)},
                "Tags": tags,
                "Description": f"loadtest run {plan.run_id}: {resource.purpose}",
            },
            timeout_s=timeout_s,
            sleep=sleep,
        )
        into.created.append(
            Created(Kind.FUNCTION, resource.name, resource.name, function["FunctionArn"])
        )
        if s.get("ReservedConcurrentExecutions") is not None:
            clients.lambda_.put_function_concurrency(
                FunctionName=resource.name,
                ReservedConcurrentExecutions=int(s["ReservedConcurrentExecutions"]),
            )
        poll(
            f"function {resource.name}",
            lambda: function_active(clients.lambda_, resource.name),
            timeout_s=timeout_s,
            sleep=sleep,
        )
    elif resource.kind is Kind.MAPPING:
        kwargs: dict[str, Any] = {
            "FunctionName": s["FunctionName"],
            "EventSourceArn": into.get(s["EventSourceArn"]).arn,
            "BatchSize": s["BatchSize"],
            "Enabled": True,
            "Tags": tags,
        }
        if s.get("MaximumBatchingWindowInSeconds"):
            kwargs["MaximumBatchingWindowInSeconds"] = s["MaximumBatchingWindowInSeconds"]
        if s.get("FunctionResponseTypes"):
            kwargs["FunctionResponseTypes"] = list(s["FunctionResponseTypes"])
        if s.get("ScalingConfig"):
            kwargs["ScalingConfig"] = dict(s["ScalingConfig"])
        mapping = clients.lambda_.create_event_source_mapping(**kwargs)
        into.created.append(
            Created(
                Kind.MAPPING,
                resource.name,
                mapping["UUID"],
                mapping.get("EventSourceMappingArn", ""),
            )
        )


def _create_sink(
    clients: Clients,
    resource: Resource,
    into: Deployed,
    where: aws.Target,
    sleep: Callable[[float], None],
) -> None:
    """Make one planned sink with ``loadtest.aws.sinks`` (tagged with the run), and note what
    its placeholders stand for in the variant's function."""
    if clients.sinks is None:
        raise ValueError("a plan with sinks is deployed with Clients.sinks")
    sink = sink_of(str(resource.settings["Placeholder"]).strip("{}"))
    assert sink is not None, resource.settings
    if resource.settings.get("Fifo") == "content-based deduplication on":
        sink = replace(sink, content_deduplication=True)
    first = len(into.sinks)
    aws.create_sinks(
        clients.sinks,
        [sink],
        sink.prefix_of(resource.name),
        into=into.sinks,
        target=where,
        tags=dict(resource.tags),
        sleep=sleep,
    )
    values = into.sink_values.setdefault(resource.variant or "", {})
    for made in into.sinks[first:]:
        values.update(made.placeholder_values())


def teardown(clients: Clients, deployed: Deployed) -> list[str]:
    """Delete what ``deployed`` lists, newest first; return the problems instead of raising.

    What was deleted leaves ``deployed``, so what remains is what is left behind.
    """
    problems: list[str] = []
    for created in reversed(list(deployed.created)):
        try:
            delete_one(clients, created.kind, created.ident)
            deployed.created.remove(created)
        except aws.ERRORS as exc:
            problems.append(f"{created.kind} {created.name}: {exc}")
    if deployed.sinks and clients.sinks is None:
        problems += [f"sink {m.name}: no clients to delete it" for m in deployed.sinks]
    elif deployed.sinks and clients.sinks is not None:
        problems += aws.delete_sinks(clients.sinks, deployed.sinks)
    return problems


def delete_one(clients: Clients, kind: Kind, ident: str) -> None:
    """Delete one resource by kind and id (a role loses its inline policies first)."""
    if kind is Kind.MAPPING:
        clients.lambda_.delete_event_source_mapping(UUID=ident)
    elif kind is Kind.FUNCTION:
        clients.lambda_.delete_function(FunctionName=ident)
    elif kind is Kind.LAYER:
        name, version = ident.split(":")[-2:]
        clients.lambda_.delete_layer_version(LayerName=name, VersionNumber=int(version))
    elif kind is Kind.ROLE:
        for policy in clients.iam.list_role_policies(RoleName=ident)["PolicyNames"]:
            clients.iam.delete_role_policy(RoleName=ident, PolicyName=policy)
        for attached in clients.iam.list_attached_role_policies(RoleName=ident)["AttachedPolicies"]:
            clients.iam.detach_role_policy(RoleName=ident, PolicyArn=attached["PolicyArn"])
        clients.iam.delete_role(RoleName=ident)
    elif kind is Kind.QUEUE:
        clients.sqs.delete_queue(QueueUrl=ident)
    elif kind is Kind.TABLE:
        clients.dynamodb.delete_table(TableName=ident)
    elif kind is Kind.SINK:
        # A sink found by its tag: "KIND ADDRESS" (``lambda_cleanup.find_tagged``).
        if clients.sinks is None:
            raise ValueError("a sink is deleted with Clients.sinks")
        sink_kind, address = ident.split(" ", 1)
        aws.delete_found_sink(clients.sinks, EffectKind(sink_kind), address)


__all__ = [
    "MAX_CODE_BYTES",
    "ROLE_RETRY_S",
    "RUN_TAG",
    "TABLE_POLL_S",
    "Clients",
    "Created",
    "Deployed",
    "deploy",
    "function_zip",
    "layer_modules",
    "layer_zip",
    "teardown",
    "wait_mapping_enabled",
    "wait_table_active",
]

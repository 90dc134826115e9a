"""The deploy plan: every AWS resource a ``--target aws`` run would create, as data.

One owner for names, settings and tags of a deployed run. ``--plan`` prints
it; ``loadtest.deploy.lambda_deploy`` creates exactly these resources from it, so
"the plan matches what a deploy creates" holds by construction and is tested
resource by resource. Pure: no boto3, no clock, no files (the handler's
package is named, not read).

Per variant ``i`` of run ``R`` (names ``loadtest-R-i-...``): the function,
its queue and DLQ (redrive after ``max_receive_count``), the orders table
(the scenario's outcome key), an observation queue the write observer ships
its lines to, and the event source mapping. Once per run: the execution role
and the observer layer. Everything carries ``loadtest:run=R`` (a layer cannot
be tagged: its description carries the tag instead).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from loadtest.adapters.fifo import fifo_queue, refuse_window_fault
from loadtest.emulation.handlers import NEEDS_IDEMPOTENCY_TABLE, HandlerRef
from loadtest.model.scenario import Scenario

RUN_TAG = "loadtest:run"
"""The tag every resource of a run carries; ``loadtest cleanup`` deletes by it."""
RUNTIME = "python3.12"
WRAPPER_HANDLER = "loadtest.emulation.lambda_entry.handler"
"""The observer layer's entry point; it calls the function's own handler."""
ORIGINAL_HANDLER_ENV = "LOADTEST_ORIGINAL_HANDLER"
WATCH_TABLE_ENV = "LOADTEST_WATCH_TABLE"
KEY_NAMES_ENV = "LOADTEST_KEY_NAMES"
OBSERVATION_QUEUE_ENV = "LOADTEST_OBSERVATION_QUEUE"
MAX_CONCURRENCY_RANGE = (2, 1000)
"""ScalingConfig.MaximumConcurrency bounds (Lambda refuses values outside)."""
BASE_HANDLER_MS = 100
"""Assumed duration (in milliseconds) of one invocation besides the injected faults."""


class Kind(StrEnum):
    """What a planned resource is, in the order a deploy creates them."""

    ROLE = "iam-role"
    LAYER = "lambda-layer"
    TABLE = "dynamodb-table"
    QUEUE = "sqs-queue"
    FUNCTION = "lambda-function"
    MAPPING = "event-source-mapping"
    FUNCTION_CHANGE = "lambda-function-change"
    """Attach mode: an existing function changed for the run and restored after it."""


@dataclass(frozen=True)
class Resource:
    """One resource to create. ``settings`` are the create call's parameters; another
    resource is referred to by its planned name (the deploy resolves it to an ARN or URL)."""

    kind: Kind
    name: str
    settings: Mapping[str, Any]
    tags: Mapping[str, str]
    variant: str | None = None
    """The variant it serves, or None for a run-wide resource (role, layer)."""
    purpose: str = ""


@dataclass(frozen=True)
class Prices:
    """List prices (in USD, us-east-1, on-demand) the estimate uses; check the AWS pages."""

    lambda_per_million_requests: float = 0.20
    lambda_per_gb_s: float = 0.0000166667
    sqs_per_million_requests: float = 0.40
    dynamodb_per_million_write_units: float = 0.625
    dynamodb_per_million_read_units: float = 0.125


@dataclass(frozen=True)
class Cost:
    """What a run costs, at least (no redelivery) and at most (every invocation times out)."""

    messages: int
    invocations: int
    """Lambda requests when every batch is full and nothing is redelivered."""
    gb_s_expected: float
    """GB-seconds at ``BASE_HANDLER_MS`` plus the scenario's injected handler duration."""
    gb_s_max: float
    """GB-seconds if every invocation ran to the function timeout."""
    sqs_requests: int
    """Sends, the mapping's receives and deletes, observation sends and drains (idle polling apart)."""
    dynamodb_write_units: int
    usd_expected: float
    usd_max: float


@dataclass(frozen=True)
class Plan:
    run_id: str
    region: str
    resources: tuple[Resource, ...]
    operator_actions: tuple[str, ...]
    """IAM actions the credentials running loadtest need."""
    function_actions: tuple[str, ...]
    """IAM actions the execution role grants the function."""
    cost: Cost
    notes: tuple[str, ...] = field(default=())

    def of_kind(self, kind: Kind) -> list[Resource]:
        return [r for r in self.resources if r.kind is kind]

    def named(self, name: str) -> Resource:
        for resource in self.resources:
            if resource.name == name:
                return resource
        raise KeyError(name)


@dataclass(frozen=True)
class VariantNames:
    function: str
    queue: str
    dlq: str
    table: str
    observations: str
    idempotency_table: str

    @staticmethod
    def for_run(run_id: str, index: int) -> VariantNames:
        base = f"loadtest-{run_id}-{index}"
        return VariantNames(
            function=f"{base}-fn",
            queue=f"{base}-jobs",
            dlq=f"{base}-dlq",
            table=f"{base}-orders",
            observations=f"{base}-observations",
            idempotency_table=f"{base}-idempotency",
        )


def role_name(run_id: str) -> str:
    return f"loadtest-{run_id}-role"


def layer_name(run_id: str) -> str:
    return f"loadtest-{run_id}-observer"


def lambda_handler(ref: HandlerRef) -> str:
    """The handler string Lambda expects (``module.function``) for a handler reference."""
    if ref.module is not None:
        return f"{ref.module}.{ref.function}"
    assert ref.path is not None
    stem = ref.path.rsplit("/", 1)[-1].removesuffix(".py")
    return f"{stem}.{ref.function}"


def package_of(ref: HandlerRef) -> str:
    """What the function's zip holds: the handler's directory, or its top-level package."""
    if ref.module is not None:
        return f"package {ref.module.split('.')[0]}/ (and its siblings' imports)"
    assert ref.path is not None
    return f"directory {ref.path.rsplit('/', 1)[0]}/"


OPERATOR_ACTIONS = (
    "iam:CreateRole",
    "iam:TagRole",
    "iam:PutRolePolicy",
    "iam:PassRole",
    "iam:GetRole",
    "iam:DeleteRolePolicy",
    "iam:DeleteRole",
    "lambda:PublishLayerVersion",
    "lambda:DeleteLayerVersion",
    "lambda:CreateFunction",
    "lambda:GetFunction",
    "lambda:PutFunctionConcurrency",
    "lambda:DeleteFunction",
    "lambda:TagResource",
    "lambda:CreateEventSourceMapping",
    "lambda:GetEventSourceMapping",
    "lambda:DeleteEventSourceMapping",
    "sqs:CreateQueue",
    "sqs:TagQueue",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "sqs:SendMessage",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:DeleteQueue",
    "dynamodb:CreateTable",
    "dynamodb:TagResource",
    "dynamodb:DescribeTable",
    "dynamodb:Scan",
    "dynamodb:DeleteTable",
)
"""What ``--target aws`` calls, create to delete (a missing one is named by the error)."""

FUNCTION_ACTIONS = (
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:ChangeMessageVisibility",
    "sqs:SendMessage",
    "sqs:GetQueueUrl",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:Query",
    "dynamodb:PartiQLInsert",
    "dynamodb:PartiQLUpdate",
    "dynamodb:PartiQLDelete",
    "dynamodb:PartiQLSelect",
    "logs:CreateLogGroup",
    "logs:CreateLogStream",
    "logs:PutLogEvents",
)
"""The execution role's inline policy: the mapping's queue calls, the observation
queue's sends, the consumer's table calls, and its logs. Scoped to the run's resources."""


def _messages(scenario: Scenario) -> int:
    workload = scenario.workload
    if workload.messages:
        return sum(m.copies for m in workload.messages)
    return workload.distinct_ids * workload.copies


def _scaling(scenario: Scenario) -> tuple[dict[str, Any], int | None, list[str]]:
    """(ScalingConfig, reserved concurrency, notes) for the scenario's concurrency."""
    low, high = MAX_CONCURRENCY_RANGE
    wanted = scenario.consumer.concurrency
    if wanted < low:
        return (
            {},
            wanted,
            [
                f"concurrency {wanted} is below MaximumConcurrency's minimum ({low}): the mapping "
                f"has no ScalingConfig and the function gets reserved concurrency {wanted}, so "
                "the mapping's extra invocations are throttled and retried (they count as receives)"
            ],
        )
    if wanted > high:
        return (
            {"MaximumConcurrency": high},
            None,
            [f"concurrency {wanted} is above MaximumConcurrency's maximum: capped at {high}"],
        )
    return {"MaximumConcurrency": wanted}, None, []


def plan_deploy(
    scenario: Scenario, refs: Sequence[HandlerRef], *, run_id: str, region: str
) -> Plan:
    """Every resource a deploy of ``refs`` under ``scenario`` creates, in creation order."""
    tags = {RUN_TAG: run_id}
    consumer = scenario.consumer
    fifo = fifo_queue(scenario)
    refuse_window_fault(fifo, real_aws=True)
    fifo_attributes = fifo.attributes() if fifo else {}
    key_names = scenario.outcome.key_names
    scaling, reserved, notes = _scaling(scenario)
    role = role_name(run_id)
    layer = layer_name(run_id)
    resources: list[Resource] = [
        Resource(
            Kind.ROLE,
            role,
            {
                "AssumeRolePolicyDocument": {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "lambda.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                },
                "InlinePolicyActions": list(FUNCTION_ACTIONS),
                "InlinePolicyResources": "the run's queues and tables, its log groups",
            },
            tags,
            purpose="execution role of the run's functions",
        ),
        Resource(
            Kind.LAYER,
            layer,
            {
                "CompatibleRuntimes": [RUNTIME],
                "Description": f"loadtest write observer; {RUN_TAG}={run_id}",
                "EntryPoint": WRAPPER_HANDLER,
            },
            {},
            purpose="the write observer and its handler wrapper",
        ),
    ]
    if scenario.faults.crash_after_write:
        notes.append("crash_after_write is not injected on Lambda (the runtime owns the process)")
    for index, ref in enumerate(refs):
        names = VariantNames.for_run(run_id, index)
        if fifo:
            names = replace(names, queue=fifo.name(names.queue), dlq=fifo.name(names.dlq))
        v = ref.variant
        table_settings: dict[str, Any] = {
            "KeySchema": [
                {"AttributeName": n, "KeyType": "HASH" if i == 0 else "RANGE"}
                for i, n in enumerate(key_names)
            ],
            "BillingMode": "PAY_PER_REQUEST",
        }
        resources.append(Resource(Kind.TABLE, names.table, table_settings, tags, v, "orders table"))
        environment = {
            "TABLE_NAME": names.table,
            ORIGINAL_HANDLER_ENV: lambda_handler(ref),
            WATCH_TABLE_ENV: names.table,
            KEY_NAMES_ENV: ",".join(key_names),
            OBSERVATION_QUEUE_ENV: names.observations,
        }
        if ref.variant in NEEDS_IDEMPOTENCY_TABLE:
            resources.append(
                Resource(
                    Kind.TABLE,
                    names.idempotency_table,
                    {
                        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                        "BillingMode": "PAY_PER_REQUEST",
                    },
                    tags,
                    v,
                    "idempotency records (Powertools)",
                )
            )
            environment["IDEMPOTENCY_TABLE_NAME"] = names.idempotency_table
        if scenario.faults.handler_duration_ms or scenario.faults.handler_jitter_ms:
            environment["LOADTEST_HANDLER_DURATION_MS"] = str(scenario.faults.handler_duration_ms)
            environment["LOADTEST_HANDLER_JITTER_MS"] = str(scenario.faults.handler_jitter_ms)
        if scenario.faults.race_window_ms:
            environment["LOADTEST_RACE_WINDOW_MS"] = str(scenario.faults.race_window_ms)
        resources += [
            Resource(
                Kind.QUEUE,
                names.dlq,
                {"Attributes": {"MessageRetentionPeriod": "1209600", **fifo_attributes}},
                tags,
                v,
                "dead-letter queue",
            ),
            Resource(
                Kind.QUEUE,
                names.queue,
                {
                    "Attributes": {
                        "VisibilityTimeout": str(consumer.visibility_timeout_s),
                        **fifo_attributes,
                    },
                    "RedrivePolicy": {
                        "deadLetterTargetArn": names.dlq,
                        "maxReceiveCount": consumer.max_receive_count,
                    },
                },
                tags,
                v,
                "job queue",
            ),
            Resource(
                Kind.QUEUE,
                names.observations,
                {"Attributes": {"MessageRetentionPeriod": "86400"}},
                tags,
                v,
                "observation channel: the observer's write decisions",
            ),
            Resource(
                Kind.FUNCTION,
                names.function,
                {
                    "Runtime": RUNTIME,
                    "Handler": WRAPPER_HANDLER,
                    "MemorySize": consumer.memory_mb,
                    "Timeout": consumer.function_timeout_s,
                    "Role": role,
                    "Layers": [layer],
                    "Environment": {"Variables": environment},
                    "Code": package_of(ref),
                    "ReservedConcurrentExecutions": reserved,
                },
                tags,
                v,
                f"the consumer {ref.ref}",
            ),
        ]
        mapping: dict[str, Any] = {
            "FunctionName": names.function,
            "EventSourceArn": names.queue,
            "BatchSize": consumer.batch_size,
            "MaximumBatchingWindowInSeconds": math.ceil(consumer.batching_window_s),
            "FunctionResponseTypes": (
                ["ReportBatchItemFailures"] if consumer.report_batch_item_failures else []
            ),
            "ScalingConfig": scaling,
        }
        resources.append(
            Resource(Kind.MAPPING, f"{names.queue} -> {names.function}", mapping, tags, v, "")
        )
    return Plan(
        run_id=run_id,
        region=region,
        resources=tuple(resources),
        operator_actions=OPERATOR_ACTIONS,
        function_actions=FUNCTION_ACTIONS,
        cost=estimate_cost(scenario, len(refs)),
        notes=tuple(notes),
    )


ATTACH_ACTIONS = (
    "lambda:GetFunctionConfiguration",
    "lambda:UpdateFunctionConfiguration",
    "lambda:ListEventSourceMappings",
    "lambda:PublishLayerVersion",
    "lambda:GetLayerVersion",
    "lambda:DeleteLayerVersion",
    "sqs:CreateQueue",
    "sqs:TagQueue",
    "sqs:SetQueueAttributes",
    "sqs:GetQueueAttributes",
    "sqs:SendMessage",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:DeleteQueue",
    "dynamodb:Scan",
)
"""What attach mode calls: the function's configuration, the layer, the observation queue,
the user's queue (sends) and table (the end state)."""


def plan_attach(
    scenario: Scenario,
    *,
    function: str,
    function_role_arn: str,
    queue_url: str,
    table: str,
    run_id: str,
    region: str,
) -> Plan:
    """What attach mode creates (layer, observation queue) and changes (the function).

    The function's own role gets no new permission: the observation queue's
    resource policy lets that role send to it, and goes with the queue.
    """
    tags = {RUN_TAG: run_id}
    layer = layer_name(run_id)
    observations = f"loadtest-{run_id}-observations"
    key_names = scenario.outcome.key_names
    resources = (
        Resource(
            Kind.LAYER,
            layer,
            {
                "CompatibleRuntimes": [RUNTIME],
                "Description": f"loadtest write observer; {RUN_TAG}={run_id}",
                "EntryPoint": WRAPPER_HANDLER,
            },
            {},
            purpose="the write observer and its handler wrapper",
        ),
        Resource(
            Kind.QUEUE,
            observations,
            {
                "Attributes": {"MessageRetentionPeriod": "86400"},
                "Policy": {"Allow": "sqs:SendMessage", "Principal": function_role_arn},
            },
            tags,
            purpose="observation channel; its policy lets the function's role send to it",
        ),
        Resource(
            Kind.FUNCTION_CHANGE,
            function,
            {
                "Handler": f"{WRAPPER_HANDLER} (the original moves to {ORIGINAL_HANDLER_ENV})",
                "Layers": f"+ {layer} (appended)",
                "Environment": {
                    "added": [
                        ORIGINAL_HANDLER_ENV,
                        WATCH_TABLE_ENV,
                        KEY_NAMES_ENV,
                        OBSERVATION_QUEUE_ENV,
                        "LOADTEST_ATTACHED",
                    ],
                    WATCH_TABLE_ENV: table,
                    KEY_NAMES_ENV: ",".join(key_names),
                    OBSERVATION_QUEUE_ENV: observations,
                },
                "Restore": "handler, layers and environment set back exactly at the end, "
                "on failure and on Ctrl-C; never tagged, never deleted",
                "Workload": f"sent to {queue_url}",
            },
            {},
            purpose="observed for the run, restored after it",
        ),
    )
    return Plan(
        run_id=run_id,
        region=region,
        resources=resources,
        operator_actions=ATTACH_ACTIONS,
        function_actions=("sqs:SendMessage (granted by the observation queue's policy)",),
        cost=estimate_cost(scenario, 1),
    )


def estimate_cost(scenario: Scenario, variants: int, prices: Prices | None = None) -> Cost:
    """Requests and GB-seconds of one run of ``variants`` variants (no redelivery assumed)."""
    prices = prices or Prices()
    consumer = scenario.consumer
    per_variant = _messages(scenario)
    messages = per_variant * variants
    invocations = math.ceil(per_variant / consumer.batch_size) * variants
    gb = consumer.memory_mb / 1024
    faults = scenario.faults
    expected_ms = BASE_HANDLER_MS + faults.handler_duration_ms + faults.handler_jitter_ms / 2
    gb_s_expected = invocations * expected_ms / 1000 * gb
    gb_s_max = invocations * consumer.function_timeout_s * gb
    # Producer batches of 10; the mapping receives per batch and deletes per message;
    # each write is about two observation lines, sent one each, drained in tens.
    writes = messages * 2
    observation_lines = writes * 2
    sqs_requests = (
        math.ceil(messages / 10)
        + invocations
        + messages
        + observation_lines
        + math.ceil(observation_lines / 10) * 2
    )

    def usd(gb_s: float) -> float:
        return (
            invocations / 1e6 * prices.lambda_per_million_requests
            + gb_s * prices.lambda_per_gb_s
            + sqs_requests / 1e6 * prices.sqs_per_million_requests
            + writes / 1e6 * prices.dynamodb_per_million_write_units
        )

    return Cost(
        messages=messages,
        invocations=invocations,
        gb_s_expected=gb_s_expected,
        gb_s_max=gb_s_max,
        sqs_requests=sqs_requests,
        dynamodb_write_units=writes,
        usd_expected=usd(gb_s_expected),
        usd_max=usd(gb_s_max),
    )


def _value(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}={_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return str(value)


def render_plan(plan: Plan) -> str:
    """The plan as text: resources with settings and tags, permissions, cost."""
    changed = sum(r.kind is Kind.FUNCTION_CHANGE for r in plan.resources)
    lines = [
        f"Plan for run {plan.run_id} in {plan.region}: {len(plan.resources) - changed} resources "
        f"to create{f', {changed} to change and restore' if changed else ''} "
        "(nothing has been called yet)",
        "",
    ]
    for resource in plan.resources:
        owner = f"  [{resource.variant}]" if resource.variant else ""
        mark = "~" if resource.kind is Kind.FUNCTION_CHANGE else "+"
        lines.append(f"{mark} {resource.kind}  {resource.name}{owner}")
        if resource.purpose:
            lines.append(f"    purpose: {resource.purpose}")
        for key, value in resource.settings.items():
            if key == "AssumeRolePolicyDocument":
                value = "lambda.amazonaws.com may assume it"
            if value in (None, {}, []):
                continue
            lines.append(f"    {key}: {_value(value)}")
        if resource.tags:
            lines.append(f"    tags: {_value(dict(resource.tags))}")
    lines += ["", "IAM actions the credentials running loadtest need:"]
    lines += [f"  {action}" for action in plan.operator_actions]
    lines += ["", "IAM actions granted to the functions (the execution role's inline policy):"]
    lines += [f"  {action}" for action in plan.function_actions]
    cost = plan.cost
    lines += [
        "",
        "Cost estimate (us-east-1 list prices, no redelivery; idle mapping polling not counted):",
        f"  messages: {cost.messages}   Lambda requests: {cost.invocations}",
        f"  GB-seconds: {cost.gb_s_expected:.3f} expected, {cost.gb_s_max:.3f} at most "
        "(every invocation to its timeout)",
        f"  SQS requests: {cost.sqs_requests}   DynamoDB write units: {cost.dynamodb_write_units}",
        f"  about ${cost.usd_expected:.4f} (at most ${cost.usd_max:.4f})",
    ]
    if plan.notes:
        lines += ["", "Notes:"]
        lines += [f"  - {note}" for note in plan.notes]
    return "\n".join(lines) + "\n"

"""The deploy plan's model: resources, names, the cost estimate's figures and the plan as text.

Owns the names of a deployed run's resources (``VariantNames``, ``role_name``,
``layer_name``), what a planned ``Resource`` and a ``Plan`` are, and ``render_plan``.
Which resources a mode creates is decided in ``loadtest.deploy.deploy_plan``;
IAM actions and the cost estimate in ``loadtest.deploy.plan_costs``. Pure: no
boto3, no clock, no files.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.observer.layer_environment import KEY_NAMES_ENV as KEY_NAMES_ENV
from loadtest.observer.layer_environment import OBSERVATION_QUEUE_ENV as OBSERVATION_QUEUE_ENV
from loadtest.observer.layer_environment import ORIGINAL_HANDLER_ENV as ORIGINAL_HANDLER_ENV
from loadtest.observer.layer_environment import WATCH_TABLE_ENV as WATCH_TABLE_ENV
from loadtest.observer.layer_environment import WRAPPER_HANDLER as WRAPPER_HANDLER

RUN_TAG = "loadtest:run"
"""The tag every resource of a run carries; ``loadtest cleanup`` deletes by it."""
RUNTIME = "python3.12"
MAX_CONCURRENCY_RANGE = (2, 1000)
"""ScalingConfig.MaximumConcurrency bounds (Lambda refuses values outside)."""
BASE_HANDLER_MS = 100
"""Assumed duration (in milliseconds) of one invocation besides the injected faults."""


class Kind(StrEnum):
    """What a planned resource is, in the order a deploy creates them."""

    ROLE = "iam-role"
    LAYER = "lambda-layer"
    TABLE = "dynamodb-table"
    SINK = "sink"
    """A topic, queue, bus, bucket or state machine the consumer sends effects to."""
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
    prices: str = ""
    """The price table the figures are priced at (``Prices.describe()``)."""
    prices_region: str = ""
    """The price table's region, told apart from the plan's when they differ."""


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
    prefix: str = ""
    """What the generated names of the variant's extra tables start with."""

    @staticmethod
    def for_run(run_id: str, index: int) -> VariantNames:
        base = f"loadtest-{run_id}-{index}"
        return VariantNames(
            function=f"{base}-fn",
            queue=f"{base}-jobs",
            dlq=f"{base}-dlq",
            table=f"{base}-orders",
            observations=f"{base}-observations",
            prefix=base,
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
        f"Cost estimate ({cost.prices}; no redelivery, idle mapping polling not counted):",
        f"  messages: {cost.messages}   Lambda requests: {cost.invocations}",
        f"  GB-seconds: {cost.gb_s_expected:.3f} expected, {cost.gb_s_max:.3f} at most "
        "(every invocation to its timeout)",
        f"  SQS requests: {cost.sqs_requests}   DynamoDB write units: {cost.dynamodb_write_units}",
        f"  about ${cost.usd_expected:.4f} (at most ${cost.usd_max:.4f})",
    ]
    if cost.prices_region and cost.prices_region != plan.region:
        lines.append(
            f"  (the prices are {cost.prices_region}'s, the plan's region is {plan.region}: "
            "pass --prices FILE with its rates)"
        )
    if plan.notes:
        lines += ["", "Notes:"]
        lines += [f"  - {note}" for note in plan.notes]
    return "\n".join(lines) + "\n"

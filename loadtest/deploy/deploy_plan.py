"""The deploy plan: every AWS resource a ``--target aws`` run would create, as data.

One owner for names, settings and tags of a deployed run. ``--plan`` prints
it; ``loadtest.deploy.lambda_deploy`` creates exactly these resources from it, so
"the plan matches what a deploy creates" holds by construction and is tested
resource by resource. Pure: no boto3, no clock, no files (the handler's
package is named, not read; the committed price table is read once when no
``prices`` are given, as for a run's report).

Per variant ``i`` of run ``R`` (names ``loadtest-R-i-...``): the function,
its queue and DLQ (redrive after ``max_receive_count``), the orders table
(the scenario's outcome key), an observation queue the write observer ships
its lines to, and the event source mapping. Once per run: the execution role
and the observer layer. Everything carries ``loadtest:run=R`` (a layer cannot
be tagged: its description carries the tag instead).

This module builds each mode's resources (``plan_deploy``, ``plan_attach``).
The model, names and rendering live in ``loadtest.deploy.plan_model``, IAM
actions and the cost estimate in ``loadtest.deploy.plan_costs``; both are
re-exported here, the import path callers use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from loadtest.aws.fifo import fifo_queue, refuse_window_fault
from loadtest.deploy.plan_costs import (
    ATTACH_ACTIONS,
    FUNCTION_ACTIONS,
    OPERATOR_ACTIONS,
    estimate_cost,
)
from loadtest.deploy.plan_model import (
    BASE_HANDLER_MS,
    KEY_NAMES_ENV,
    MAX_CONCURRENCY_RANGE,
    OBSERVATION_QUEUE_ENV,
    ORIGINAL_HANDLER_ENV,
    RUN_TAG,
    RUNTIME,
    WATCH_TABLE_ENV,
    WRAPPER_HANDLER,
    Cost,
    Kind,
    Plan,
    Resource,
    VariantNames,
    lambda_handler,
    layer_name,
    package_of,
    render_plan,
    role_name,
)
from loadtest.emulation.environment.handlers import HandlerRef, tables_for
from loadtest.errors import ScenarioError
from loadtest.model.cost import Prices
from loadtest.model.function_config import (
    RunResources,
    extra_table_name,
    render,
    table_names,
)
from loadtest.model.scenario import Scenario
from loadtest.observer.fault_env import deployed_fault_environment
from loadtest.observer.lambda_entry import CRASH_MID_HANDLER_EXIT
from loadtest.observer.layer_environment import ATTACHED_ENV, SIDE_TABLES_ENV

QUEUE_REFS = {"{queue_url}": "url", "{queue_arn}": "arn", "{dlq_url}": "dlq-url"}
"""Placeholders a function's variables keep in the plan: the deploy fills them in from the
queues it created (``EnvironmentRefs``: which queue each names)."""

__all__ = [
    "ATTACH_ACTIONS",
    "BASE_HANDLER_MS",
    "FUNCTION_ACTIONS",
    "KEY_NAMES_ENV",
    "MAX_CONCURRENCY_RANGE",
    "OBSERVATION_QUEUE_ENV",
    "OPERATOR_ACTIONS",
    "ORIGINAL_HANDLER_ENV",
    "RUNTIME",
    "RUN_TAG",
    "WATCH_TABLE_ENV",
    "WRAPPER_HANDLER",
    "Cost",
    "Kind",
    "Plan",
    "Resource",
    "VariantNames",
    "estimate_cost",
    "lambda_handler",
    "layer_name",
    "package_of",
    "plan_attach",
    "plan_deploy",
    "render_plan",
    "role_name",
]


def _observer_layer(run_id: str) -> Resource:
    """The observer layer both modes publish (a layer cannot be tagged: the run is in its
    description)."""
    return Resource(
        Kind.LAYER,
        layer_name(run_id),
        {
            "CompatibleRuntimes": [RUNTIME],
            "Description": f"loadtest write observer; {RUN_TAG}={run_id}",
            "EntryPoint": WRAPPER_HANDLER,
        },
        {},
        purpose="the write observer and its handler wrapper",
    )


def _table_settings(key_schema: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """An on-demand table keyed by ``key_schema`` (hash, then range; S, N or B)."""
    return {
        "KeySchema": [
            {"AttributeName": n, "KeyType": "HASH" if i == 0 else "RANGE"}
            for i, (n, _) in enumerate(key_schema)
        ],
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t in key_schema],
        "BillingMode": "PAY_PER_REQUEST",
    }


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


def variant_names(scenario: Scenario, run_id: str, index: int) -> VariantNames:
    """A variant's resource names in a deployed run: a FIFO scenario's queues end ``.fifo``,
    a table the scenario names is that table."""
    names = VariantNames.for_run(run_id, index)
    fifo = fifo_queue(scenario)
    if fifo:
        names = replace(names, queue=fifo.name(names.queue), dlq=fifo.name(names.dlq))
    if scenario.function.table_name:
        names = replace(names, table=scenario.function.table_name)
    return names


def _prices(prices: Prices | None) -> Prices:
    if prices is not None:
        return prices
    from loadtest.model.prices import default_prices

    return default_prices()


def plan_deploy(
    scenario: Scenario,
    refs: Sequence[HandlerRef],
    *,
    run_id: str,
    region: str,
    prices: Prices | None = None,
) -> Plan:
    """Every resource a deploy of ``refs`` under ``scenario`` creates, in creation order."""
    tags = {RUN_TAG: run_id}
    consumer = scenario.consumer
    fifo = fifo_queue(scenario)
    refuse_window_fault(fifo, real_aws=True)
    fifo_attributes = fifo.attributes() if fifo else {}
    setup = scenario.function
    key_schema = setup.key_schema(scenario.outcome.key_names)
    key_names = tuple(name for name, _ in key_schema)
    fixed = [setup.table_name, *(t.name for t in setup.tables)]
    if len(refs) > 1 and any(fixed):
        raise ScenarioError(
            f"{scenario.source}: a table the scenario names ({', '.join(n for n in fixed if n)}) "
            f"can serve one deployed variant at a time, and {len(refs)} were given: run them one "
            "by one, or let the run name its tables (leave out [table] name / [[tables]] name)"
        )
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
        _observer_layer(run_id),
    ]
    if scenario.faults.crash_after_write:
        notes.append("crash_after_write is not injected on Lambda (the runtime owns the process)")
    if scenario.faults.point:
        notes.append(
            "point faults (faults.point) are injected by local execution environments only, "
            "not on Lambda"
        )
    if scenario.faults.crash_mid_handler:
        notes.append(
            "crash_mid_handler is injected by the observer layer: the function's process exits "
            f"(status {CRASH_MID_HANDLER_EXIT}) right after a write to the table is answered"
        )
    for index, ref in enumerate(refs):
        names = variant_names(scenario, run_id, index)
        v = ref.variant
        resources.append(
            Resource(Kind.TABLE, names.table, _table_settings(key_schema), tags, v, "orders table")
        )
        tables = tables_for(ref, setup)
        for table in tables:
            resources.append(
                Resource(
                    Kind.TABLE,
                    extra_table_name(names.prefix, table),
                    _table_settings(table.key),
                    tags,
                    v,
                    table.purpose,
                )
            )
        environment = {
            "TABLE_NAME": names.table,
            ORIGINAL_HANDLER_ENV: lambda_handler(ref),
            WATCH_TABLE_ENV: names.table,
            KEY_NAMES_ENV: ",".join(key_names),
            OBSERVATION_QUEUE_ENV: names.observations,
        }
        if tables:
            environment[SIDE_TABLES_ENV] = ",".join(
                extra_table_name(names.prefix, t) for t in tables
            )
        environment.update(
            render(
                replace(setup, tables=tables),
                RunResources(
                    table=names.table,
                    queue_url="{queue_url}",
                    queue_arn="{queue_arn}",
                    dlq_url="{dlq_url}",
                    region=region,
                    tables=table_names(names.prefix, tables),
                ),
            )
        )
        environment |= deployed_fault_environment(scenario.faults)
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
                    "EnvironmentRefs": {
                        "url": names.queue,
                        "arn": names.queue,
                        "dlq-url": names.dlq,
                    },
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
        cost=estimate_cost(scenario, len(refs), _prices(prices)),
        notes=tuple(notes),
    )


def plan_attach(
    scenario: Scenario,
    *,
    function: str,
    function_role_arn: str,
    queue_url: str,
    table: str,
    run_id: str,
    region: str,
    prices: Prices | None = None,
) -> Plan:
    """What attach mode creates (layer, observation queue) and changes (the function).

    The function's own role gets no new permission: the observation queue's
    resource policy lets that role send to it, and goes with the queue.
    """
    tags = {RUN_TAG: run_id}
    layer = layer_name(run_id)
    observations = f"loadtest-{run_id}-observations"
    key_names = scenario.table_key_names
    resources = (
        _observer_layer(run_id),
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
                        ATTACHED_ENV,
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
        cost=estimate_cost(scenario, 1, _prices(prices)),
    )

"""One deployed variant's resources in the deploy plan: its tables, queues, function and mapping.

Owns what ``plan_deploy`` (``loadtest.deploy.deploy_plan``) creates per variant ``i`` of run
``R`` (names ``loadtest-R-i-...``, ``variant_names``): the orders table (the scenario's outcome
key), the consumer's extra tables and its sinks, the queue and its DLQ (redrive after
``max_receive_count``), the observation queue the write observer ships its lines to, the
function with its environment, and the event source mapping with its scaling (``scaling``).
Pure: no boto3, no clock, no files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from loadtest.aws.fifo import fifo_queue
from loadtest.deploy.plan_model import (
    KEY_NAMES_ENV,
    MAX_CONCURRENCY_RANGE,
    OBSERVATION_QUEUE_ENV,
    ORIGINAL_HANDLER_ENV,
    RUN_TAG,
    RUNTIME,
    WATCH_TABLE_ENV,
    WRAPPER_HANDLER,
    Kind,
    Resource,
    VariantNames,
    lambda_handler,
    layer_name,
    package_of,
    role_name,
)
from loadtest.emulation.environment.handlers import HandlerRef, tables_for
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.function_config import (
    RunResources,
    extra_table_name,
    render,
    table_names,
)
from loadtest.model.scenario.loading import Scenario
from loadtest.model.scenario.placeholders import Sink
from loadtest.observer.fault_env import deployed_fault_environment
from loadtest.observer.layer_environment import (
    DEAD_LETTER_QUEUES_ENV,
    SIDE_TABLES_ENV,
    SOURCE_QUEUES_ENV,
    side_tables_value,
)

QUEUE_REFS = {"{queue_url}": "url", "{queue_arn}": "arn", "{dlq_url}": "dlq-url"}
"""Placeholders a function's variables keep in the plan: the deploy fills them in from the
queues it created (``EnvironmentRefs``: which queue each names)."""


def sink_settings(sink: Sink, prefix: str) -> dict[str, Any]:
    """A sink's planned settings: what it is and, for a topic, bus or function, the queue that
    captures what it delivers (a function's role too)."""
    settings: dict[str, Any] = {
        "Kind": sink.kind.value,
        "Placeholder": f"{{{sink.placeholders[0]}}}",
    }
    if sink.fifo:
        on = "on" if sink.content_deduplication else "off"
        settings["Fifo"] = f"content-based deduplication {on}"
    if sink.kind in (EffectKind.TOPIC, EffectKind.BUS, EffectKind.FUNCTION):
        settings["CaptureQueue"] = sink.capture_name(prefix)
    if sink.kind in (EffectKind.FUNCTION, EffectKind.STATE_MACHINE):
        settings["Role"] = sink.role_name(prefix)
        settings["Code"] = "sends each event it is invoked with to its capture queue"
    return settings


def table_settings(key_schema: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """An on-demand table keyed by ``key_schema`` (hash, then range; S, N or B)."""
    return {
        "KeySchema": [
            {"AttributeName": n, "KeyType": "HASH" if i == 0 else "RANGE"}
            for i, (n, _) in enumerate(key_schema)
        ],
        "AttributeDefinitions": [{"AttributeName": n, "AttributeType": t} for n, t in key_schema],
        "BillingMode": "PAY_PER_REQUEST",
    }


def scaling(scenario: Scenario) -> tuple[dict[str, Any], int | None, list[str]]:
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


def variant_resources(
    scenario: Scenario, ref: HandlerRef, index: int, *, run_id: str, region: str
) -> list[Resource]:
    """The resources of the ``index``-th deployed variant (``ref``), in creation order: its
    tables, its queues, its function and the event source mapping between them."""
    tags = {RUN_TAG: run_id}
    consumer = scenario.consumer
    fifo = fifo_queue(scenario)
    fifo_attributes = fifo.attributes() if fifo else {}
    setup = scenario.function
    key_schema = setup.key_schema(scenario.outcome.key_names)
    key_names = tuple(name for name, _ in key_schema)
    scaled, reserved, _ = scaling(scenario)
    role = role_name(run_id)
    layer = layer_name(run_id)
    names = variant_names(scenario, run_id, index)
    v = ref.variant
    resources = [
        Resource(Kind.TABLE, names.table, table_settings(key_schema), tags, v, "orders table")
    ]
    tables = tables_for(ref, setup)
    for table in tables:
        resources.append(
            Resource(
                Kind.TABLE,
                extra_table_name(names.prefix, table),
                table_settings(table.key),
                tags,
                v,
                table.purpose,
            )
        )
    for sink in scenario.sinks:
        resources.append(
            Resource(
                Kind.SINK,
                sink.resource_name(names.prefix),
                sink_settings(sink, names.prefix),
                tags,
                v,
                f"{sink.service} the consumer sends effects to "
                f"({', '.join(f'{{{p}}}' for p in sink.placeholders)}): read back after the "
                "run, then deleted",
            )
        )
    environment = {
        "TABLE_NAME": names.table,
        ORIGINAL_HANDLER_ENV: lambda_handler(ref),
        WATCH_TABLE_ENV: names.table,
        KEY_NAMES_ENV: ",".join(key_names),
        OBSERVATION_QUEUE_ENV: names.observations,
        SOURCE_QUEUES_ENV: "{queue_url},{queue_arn}",
        DEAD_LETTER_QUEUES_ENV: "{dlq_url}",
    }
    if tables:
        environment[SIDE_TABLES_ENV] = side_tables_value(
            tuple((extra_table_name(names.prefix, t), t.key_names) for t in tables)
        )
    environment.update(
        render(
            replace(setup, tables=tables),
            RunResources(
                table=names.table,
                queue_url="{queue_url}",
                queue_arn="{queue_arn}",
                queue_name=names.queue,
                dlq_url="{dlq_url}",
                region=region,
                tables=table_names(names.prefix, tables),
                sinks={p: f"{{{p}}}" for sink in setup.sinks for p in sink.placeholders},
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
        "ScalingConfig": scaled,
    }
    resources.append(
        Resource(Kind.MAPPING, f"{names.queue} -> {names.function}", mapping, tags, v, "")
    )
    return resources

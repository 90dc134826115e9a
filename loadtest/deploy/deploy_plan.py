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

This module builds each mode's resources (``plan_deploy``, ``plan_attach``); a
deployed variant's own resources are ``loadtest.deploy.plan_variant``'s. The model,
names and rendering live in ``loadtest.deploy.plan_model``, IAM actions and the cost
estimate in ``loadtest.deploy.plan_costs``; their names are re-exported here, the
import path callers use.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadtest.aws.fifo import fifo_queue, refuse_window_fault
from loadtest.deploy.plan_costs import (
    ATTACH_ACTIONS,
    FUNCTION_ACTIONS,
    OPERATOR_ACTIONS,
    SINK_FUNCTION_ACTIONS,
    SINK_OPERATOR_ACTIONS,
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
from loadtest.deploy.plan_variant import QUEUE_REFS as QUEUE_REFS
from loadtest.deploy.plan_variant import scaling, variant_names, variant_resources
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.errors import ScenarioError
from loadtest.model.figures.cost import Prices
from loadtest.model.scenario.loading import Scenario
from loadtest.observer.fault_env import refuse_local_only
from loadtest.observer.lambda_entry import CRASH_MID_HANDLER_EXIT
from loadtest.observer.layer_environment import ATTACHED_ENV

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
    "variant_names",
]


SINKS_DEPLOYED = (
    "each sink is made before the functions (which are told its address), tagged with the "
    "run (`loadtest cleanup` finds it by that tag), read back after the run and deleted with "
    "the rest; a {state_machine:NAME} or {function:NAME} sink gets a role of its own, made "
    "and deleted with it"
)
"""What the plan says of a deployed run's sinks."""


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


def _prices(prices: Prices | None) -> Prices:
    if prices is not None:
        return prices
    from loadtest.model.figures.price_tables import default_prices

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
    refuse_local_only(scenario.faults)
    fifo = fifo_queue(scenario)
    refuse_window_fault(fifo, real_aws=True)
    setup = scenario.function
    fixed = [setup.table_name, *(t.name for t in setup.tables)]
    if len(refs) > 1 and any(fixed):
        raise ScenarioError(
            f"{scenario.source}: a table the scenario names ({', '.join(n for n in fixed if n)}) "
            f"can serve one deployed variant at a time, and {len(refs)} were given: run them one "
            "by one, or let the run name its tables (leave out [table] name / [[tables]] name)"
        )
    _, _, notes = scaling(scenario)
    sinks = scenario.sinks
    function_actions = FUNCTION_ACTIONS + (SINK_FUNCTION_ACTIONS if sinks else ())
    resources: list[Resource] = [
        Resource(
            Kind.ROLE,
            role_name(run_id),
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
                "InlinePolicyActions": list(function_actions),
                "InlinePolicyResources": "the run's queues and tables, its log groups",
            },
            tags,
            purpose="execution role of the run's functions",
        ),
        _observer_layer(run_id),
    ]
    if scenario.faults.crash_mid_handler:
        notes.append(
            "crash_mid_handler is injected by the observer layer: the function's process exits "
            f"(status {CRASH_MID_HANDLER_EXIT}) right after a write to the table is answered"
        )
    if sinks:
        notes.append(SINKS_DEPLOYED)
    for index, ref in enumerate(refs):
        resources += variant_resources(scenario, ref, index, run_id=run_id, region=region)
    return Plan(
        run_id=run_id,
        region=region,
        resources=tuple(resources),
        operator_actions=OPERATOR_ACTIONS + (SINK_OPERATOR_ACTIONS if sinks else ()),
        function_actions=function_actions,
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
    refuse_local_only(scenario.faults)
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

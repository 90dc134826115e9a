"""Attach on run: the workload through an already deployed consumer, observed for the run.

Publishes the observer layer and an observation queue for the run, redirects
the function to the observer's entry point (``lambda_attach.attached``), drives
the workload through its own mapping (``remote_run.drive``), then restores
the function exactly and deletes the layer version and the queue, also on
an error or Ctrl-C. Reads the mapping's settings (partial batch responses)
and the queue's DLQ (from its redrive policy) instead of choosing them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
from collections.abc import Iterator

import anyio

from loadtest.aws import clients as aws
from loadtest.deploy.deploy_plan import layer_name
from loadtest.deploy.lambda_attach import attached, observation_queue
from loadtest.deploy.lambda_deploy import Clients, layer_zip
from loadtest.deploy.remote_run import AttachTo, Endpoints, Journal, RemoteVariant, drive
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.errors import InputError
from loadtest.model.advice.lint import lint
from loadtest.model.scenario.loading import Scenario
from loadtest.observer.fault_env import deployed_fault_environment


@contextlib.contextmanager
def _attach_layer(clients: Clients, run_id: str) -> Iterator[str]:
    published = clients.lambda_.publish_layer_version(
        LayerName=layer_name(run_id),
        Description=f"loadtest write observer; loadtest:run={run_id}",
        Content={"ZipFile": layer_zip()},
        CompatibleRuntimes=["python3.12"],
    )
    arn = published["LayerVersionArn"]
    try:
        yield arn
    finally:
        with contextlib.suppress(*aws.ERRORS):
            name, version = arn.split(":")[-2:]
            clients.lambda_.delete_layer_version(LayerName=name, VersionNumber=int(version))


def run_attached(
    scenario: Scenario,
    attach: AttachTo,
    clients: Clients,
    target: aws.Target,
    *,
    run_id: str,
    journal: Journal | None = None,
) -> RemoteVariant:
    """Observe ``attach.function`` (its own handler) for one run and restore it exactly afterwards.

    Adds a layer version and an observation queue (deleted at the end), sends
    the workload to the user's queue and reads its DLQ from the redrive policy.
    """
    where_text = f"region {target.region}" + (
        f", endpoint {target.endpoint_url}" if target.endpoint_url else ""
    )
    config = clients.lambda_.get_function_configuration(FunctionName=attach.function)
    module, _, function = config["Handler"].rpartition(".")
    # Reported under the function's name: its own handler runs, not a built-in variant.
    ref = HandlerRef(f"attached:{attach.function}", module.replace("/", "."), None, function)
    mappings = clients.lambda_.list_event_source_mappings(FunctionName=attach.function)
    queue_arn = clients.sqs.get_queue_attributes(
        QueueUrl=attach.queue_url, AttributeNames=["QueueArn", "RedrivePolicy"]
    )["Attributes"]
    partial = any(
        m.get("EventSourceArn") == queue_arn.get("QueueArn")
        and "ReportBatchItemFailures" in m.get("FunctionResponseTypes", [])
        for m in mappings.get("EventSourceMappings", [])
    )
    dlq_url = None
    if "RedrivePolicy" in queue_arn:
        dlq_name = json.loads(queue_arn["RedrivePolicy"])["deadLetterTargetArn"].split(":")[-1]
        dlq_url = clients.sqs.get_queue_url(QueueName=dlq_name)["QueueUrl"]
    queue_name = f"loadtest-{run_id}-observations"
    observations = observation_queue(
        clients.sqs, queue_name, role_arn=config["Role"], run_id=run_id
    )
    try:
        with (
            _attach_layer(clients, run_id) as layer,
            attached(
                clients.lambda_,
                attach.function,
                layer_arn=layer,
                watch_table=attach.table,
                key_names=scenario.table_key_names,
                observation_queue=queue_name,
                run_id=run_id,
                faults=deployed_fault_environment(scenario.faults),
                dead_letter_queue=dlq_url or "",
            ),
        ):
            where = Endpoints(
                queue_url=attach.queue_url,
                dlq_url=dlq_url,
                observations_url=observations,
                table=attach.table,
                partial=partial,
            )
            names = aws.ResourceNames(
                queue=attach.queue_url.rsplit("/", 1)[-1],
                dlq=dlq_url.rsplit("/", 1)[-1] if dlq_url else "",
                table=attach.table,
            )
            result: RemoteVariant = anyio.run(
                functools.partial(drive, journal=journal),
                scenario,
                ref,
                target,
                where,
                names,
                backend="asyncio",
            )
            return dataclasses.replace(
                result, deployed_warnings=_deployed_warnings(clients, attach, where_text)
            )
    finally:
        with contextlib.suppress(*aws.ERRORS):
            clients.sqs.delete_queue(QueueUrl=observations)


def _deployed_warnings(clients: Clients, attach: AttachTo, where: str) -> list[str]:
    """What ``loadtest lint --function`` says of the attached consumer's mapping on this queue:
    its own settings, not the scenario's, are what the run exercised."""
    from loadtest.deploy.lint_aws import deployed_settings

    queue = attach.queue_url.rsplit("/", 1)[-1]
    try:
        found = deployed_settings(clients, attach.function, where=where)
    except (*aws.ERRORS, InputError) as exc:
        return [f"the deployed settings of {attach.function} could not be read to lint them: {exc}"]
    return [
        f"{settings.source}: {finding.message}"
        for settings in found
        if settings.source.endswith(f"queue {queue}")
        for finding in lint(settings)
    ]

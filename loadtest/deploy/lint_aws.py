"""Reading a deployed consumer's settings for ``loadtest lint --function NAME``.

One ``MappingSettings`` per SQS event source mapping of the function: the
mapping's batch size, window and MaximumConcurrency, the function's timeout
and reserved concurrency, the queue's visibility timeout and redrive policy.
Synchronous boto3, clients passed in; a function that does not exist is bad
input (``InputError``), other botocore errors are translated by the adapter.
"""

from __future__ import annotations

import json
from typing import Any

import botocore.exceptions

from loadtest.deploy.lambda_cleanup import translated
from loadtest.deploy.lambda_deploy import Clients
from loadtest.errors import InputError
from loadtest.model.advice.lint import MappingSettings


def deployed_settings(
    clients: Clients,
    function: str,
    *,
    idempotency_expiry_s: int | None = None,
    where: str = "AWS",
) -> list[MappingSettings]:
    """The settings of every SQS mapping that invokes ``function`` (empty if none).

    ``where`` names the profile and region in messages (``make_clients`` gives it).
    Raises ``InputError`` when the function does not exist.
    """
    with translated(f"read function {function}'s mappings", where):
        try:
            config = clients.lambda_.get_function_configuration(FunctionName=function)
        except botocore.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
                raise InputError(f"function {function} does not exist ({where})") from exc
            raise
        return _mappings(clients, function, config, idempotency_expiry_s)


def _mappings(
    clients: Clients, function: str, config: Any, idempotency_expiry_s: int | None
) -> list[MappingSettings]:
    lam = clients.lambda_
    reserved = lam.get_function_concurrency(FunctionName=function).get(
        "ReservedConcurrentExecutions"
    )
    found = []
    paginator = lam.get_paginator("list_event_source_mappings")
    for page in paginator.paginate(FunctionName=function):
        for mapping in page.get("EventSourceMappings", []):
            arn = mapping.get("EventSourceArn", "")
            if not arn.startswith("arn:aws:sqs:") and ":sqs:" not in arn:
                continue
            _, _, _, _, account, queue = arn.split(":", 5)
            url = clients.sqs.get_queue_url(QueueName=queue, QueueOwnerAWSAccountId=account)[
                "QueueUrl"
            ]
            attrs = clients.sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["VisibilityTimeout", "RedrivePolicy"]
            )["Attributes"]
            redrive = json.loads(attrs["RedrivePolicy"]) if attrs.get("RedrivePolicy") else None
            found.append(
                MappingSettings(
                    source=f"function {function} <- queue {queue}",
                    visibility_timeout_s=int(attrs.get("VisibilityTimeout", "30")),
                    function_timeout_s=int(config.get("Timeout", 3)),
                    batch_size=int(mapping.get("BatchSize", 10)),
                    batching_window_s=float(mapping.get("MaximumBatchingWindowInSeconds", 0)),
                    maximum_concurrency=mapping.get("ScalingConfig", {}).get("MaximumConcurrency"),
                    reserved_concurrency=reserved,
                    max_receive_count=int(redrive["maxReceiveCount"]) if redrive else None,
                    idempotency_expiry_s=idempotency_expiry_s,
                )
            )
    return found

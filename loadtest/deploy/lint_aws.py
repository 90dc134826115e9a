"""Reading a deployed consumer's settings for ``loadtest lint --function NAME``.

One ``MappingSettings`` per SQS event source mapping of the function: the
mapping's batch size, window and MaximumConcurrency, the function's timeout
and reserved concurrency, the queue's visibility timeout and redrive policy.
Synchronous boto3, clients passed in; botocore errors are left to the caller
to translate.
"""

from __future__ import annotations

import json

from loadtest.deploy.lambda_deploy import Clients
from loadtest.model.lint import MappingSettings


def deployed_settings(
    clients: Clients, function: str, *, idempotency_expiry_s: int | None = None
) -> list[MappingSettings]:
    """The settings of every SQS mapping that invokes ``function`` (empty if none)."""
    lam = clients.lambda_
    config = lam.get_function_configuration(FunctionName=function)
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

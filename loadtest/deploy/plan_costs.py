"""What a deployed run is allowed to call, and what it costs.

Owns the IAM actions of each mode (the credentials running loadtest:
``OPERATOR_ACTIONS``, ``ATTACH_ACTIONS``; the execution role:
``FUNCTION_ACTIONS``) and ``estimate_cost`` (requests and GB-seconds priced at
``Prices``). Pure: no boto3, no clock, no files.
"""

from __future__ import annotations

import math

from loadtest.deploy.plan_model import BASE_HANDLER_MS, Cost
from loadtest.model.figures.cost import Prices
from loadtest.model.scenario.loading import Scenario

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

SINK_FUNCTION_ACTIONS = (
    "sns:Publish",
    "sns:CreateTopic",
    "events:PutEvents",
    "s3:PutObject",
    "s3:GetObject",
    "s3:DeleteObject",
    "states:StartExecution",
    "lambda:InvokeFunction",
)
"""Added to the execution role for a scenario with sinks: what a consumer sends to them
(a queue sink's sends are ``sqs:SendMessage`` already), and ``CreateTopic``, which answers an
existing topic's ARN to a consumer that finds its topic by ``{topic_name:NAME}``. Scoped to
the run's sinks."""

SINK_OPERATOR_ACTIONS = (
    "sns:CreateTopic",
    "sns:TagResource",
    "sns:Subscribe",
    "sns:Unsubscribe",
    "sns:DeleteTopic",
    "sqs:SetQueueAttributes",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "events:CreateEventBus",
    "events:PutRule",
    "events:PutTargets",
    "events:TagResource",
    "events:RemoveTargets",
    "events:DeleteRule",
    "events:DeleteEventBus",
    "s3:CreateBucket",
    "s3:PutBucketTagging",
    "s3:ListBucket",
    "s3:GetObject",
    "s3:DeleteObject",
    "s3:DeleteBucket",
    "states:CreateStateMachine",
    "states:TagResource",
    "states:ListExecutions",
    "states:DescribeExecution",
    "states:DeleteStateMachine",
    "iam:ListRolePolicies",
)
"""Added to what the credentials running loadtest need for a scenario with sinks: making,
reading and deleting them (a function or state machine sink's role and function with the
run's own ``iam:`` and ``lambda:`` actions)."""


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


def _messages(scenario: Scenario) -> int:
    workload = scenario.workload
    if workload.messages:
        return sum(m.copies for m in workload.messages)
    return workload.distinct_ids * workload.copies


def estimate_cost(scenario: Scenario, variants: int, prices: Prices) -> Cost:
    """Requests and GB-seconds of one run of ``variants`` variants (no redelivery assumed),
    priced at ``prices`` (the same table a run's report uses: ``loadtest.model.figures.cost``)."""
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

    sqs_price = (
        prices.sqs_fifo_per_million_requests
        if consumer.fifo
        else prices.sqs_standard_per_million_requests
    )

    def usd(gb_s: float) -> float:
        return (
            invocations / 1e6 * prices.lambda_per_million_requests
            + gb_s * prices.lambda_per_gb_s
            + sqs_requests / 1e6 * sqs_price
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
        prices=prices.describe(),
        prices_region=prices.region,
    )

"""What the publishing variants share: the ``OrderPlaced`` event and how it is published.

The event goes to the SNS topic named by ``ORDERS_TOPIC_ARN``. On a FIFO topic (its ARN
ends in ``.fifo``) every publish carries a ``MessageGroupId`` (the business id: one
ordered stream per order) and the ``MessageDeduplicationId`` its variant chooses; on a
standard topic neither, which SNS would refuse. The variants differ only in when they
publish and with which deduplication id. Nothing here imports ``loadtest``.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import boto3

from consumer._orders import HANDLING_CENTS, UNIT_PRICE_CENTS

if TYPE_CHECKING:
    from mypy_boto3_sns.client import SNSClient

TOPIC_ENV = "ORDERS_TOPIC_ARN"
"""The variable that names the topic the order events are published to."""
EVENT_TYPE = "OrderPlaced"

_client: SNSClient | None = None


def sns() -> SNSClient:
    """The function's SNS client, created once per execution environment (endpoint and
    region from boto3's own settings, as ``consumer._orders.dynamodb``)."""
    global _client
    if _client is None:
        _client = boto3.client("sns")
    return _client


class TopicNotConfiguredError(KeyError):
    """The function's configuration names no topic."""


def topic_arn() -> str:
    try:
        return os.environ[TOPIC_ENV]
    except KeyError:
        raise TopicNotConfiguredError(
            f"{TOPIC_ENV} is not set; name the run's topic in the scenario: "
            f'[consumer] environment = {{ {TOPIC_ENV} = "{{topic:orders.fifo}}" }}'
        ) from None


def order_placed(order_id: str, quantity: int) -> str:
    """The event's text: the business id and the order's details, as stored."""
    event: dict[str, Any] = {
        "type": EVENT_TYPE,
        "id": order_id,
        "quantity": quantity,
        "total_cents": quantity * UNIT_PRICE_CENTS + HANDLING_CENTS,
    }
    return json.dumps(event, sort_keys=True)


def publish(order_id: str, message: str, *, dedup_id: str) -> str:
    """Publish ``message`` for ``order_id``; the topic's MessageId.

    ``dedup_id`` is the FIFO deduplication id (ignored on a standard topic): SNS drops a
    second publish with the same id within five minutes, and nothing else.
    """
    arn = topic_arn()
    if arn.endswith(".fifo"):
        answer = sns().publish(
            TopicArn=arn,
            Message=message,
            MessageGroupId=order_id,
            MessageDeduplicationId=dedup_id,
        )
    else:
        answer = sns().publish(TopicArn=arn, Message=message)
    return answer["MessageId"]

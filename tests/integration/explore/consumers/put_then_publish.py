"""The lab's guarded put, then a publish of the order to a topic it makes on first use: a
crash between the two loses the publish, for the redelivery's put is refused."""

from __future__ import annotations

import json
from typing import Any

import boto3
from _jobs import dynamodb, job, order_item, table  # type: ignore[import-not-found]

TOPIC = "effects-explore-orders"


def handler(event: dict[str, Any], context: Any) -> None:
    order_id, quantity, _ = job(event)
    sns = boto3.client("sns")
    topic = sns.create_topic(Name=TOPIC)["TopicArn"]
    try:
        dynamodb().put_item(
            TableName=table(),
            Item=order_item(order_id, quantity),
            ConditionExpression="attribute_not_exists(id)",
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        return
    sns.publish(TopicArn=topic, Message=json.dumps({"id": order_id, "quantity": quantity}))

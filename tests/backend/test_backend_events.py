"""EventBridge on the embedded backend: PutEvents reaches the SQS target of a matching rule
on a custom bus, and only of a matching one."""

from __future__ import annotations

import json

from tests.backend.aws_clients import events, queue, queue_arn, sqs, unique


def test_put_events_reaches_the_sqs_target_of_a_matching_rule(backend_url: str) -> None:
    client = events(backend_url)
    bus = unique("backend-test")
    client.create_event_bus(Name=bus)
    with queue(backend_url) as matched, queue(backend_url) as unmatched:
        for rule, source, target in (
            ("orders", "app.orders", matched),
            ("refunds", "app.refunds", unmatched),
        ):
            client.put_rule(
                Name=rule, EventBusName=bus, EventPattern=json.dumps({"source": [source]})
            )
            client.put_targets(
                Rule=rule,
                EventBusName=bus,
                Targets=[{"Id": "queue", "Arn": queue_arn(backend_url, target)}],
            )
        answer = client.put_events(
            Entries=[
                {
                    "EventBusName": bus,
                    "Source": "app.orders",
                    "DetailType": "OrderShipped",
                    "Detail": json.dumps({"order": "o-1"}),
                }
            ]
        )
        assert answer["FailedEntryCount"] == 0
        [entry] = answer["Entries"]

        got = sqs(backend_url).receive_message(QueueUrl=matched, WaitTimeSeconds=1)["Messages"]
        [event] = [json.loads(message["Body"]) for message in got]
        assert event["id"] == entry["EventId"]
        assert event["source"] == "app.orders"
        assert event["detail-type"] == "OrderShipped"
        assert event["detail"] == {"order": "o-1"}
        assert "Messages" not in sqs(backend_url).receive_message(QueueUrl=unmatched)
        for rule in ("orders", "refunds"):
            client.remove_targets(Rule=rule, EventBusName=bus, Ids=["queue"])
            client.delete_rule(Name=rule, EventBusName=bus)
    client.delete_event_bus(Name=bus)

"""loadtest.aws.sinks on the real embedded backend: each kind of sink is made, tagged, read
back as it really holds what was sent (a FIFO sink's own deduplication measured), drained,
and deleted leaving nothing behind and touching nothing the run did not make."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from loadtest.aws import clients as aws
from loadtest.errors import BackendError
from loadtest.model.history.records import EffectKind, SinkContents
from loadtest.model.scenario.placeholders import Sink

SINKS = (
    Sink(EffectKind.TOPIC, "orders"),
    Sink(EffectKind.TOPIC, "orders.fifo"),
    Sink(EffectKind.QUEUE, "outbox"),
    Sink(EffectKind.QUEUE, "outbox.fifo"),
    Sink(EffectKind.BUS, "events"),
    Sink(EffectKind.BUCKET, "receipts"),
    Sink(EffectKind.STATE_MACHINE, "ship"),
    Sink(EffectKind.FUNCTION, "notify"),
)


@pytest.fixture
def prefix() -> str:
    return f"loadtest-{uuid.uuid4().hex[:8]}-0"


@pytest.fixture
def made(backend_url: str, prefix: str) -> Iterator[tuple[aws.SinkClients, list[aws.MadeSink]]]:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    clients = aws.sink_clients(target)
    into: list[aws.MadeSink] = []
    try:
        aws.create_sinks(clients, SINKS, prefix, into=into, target=target)
        yield clients, into
    finally:
        aws.delete_sinks(clients, into)
        clients.close()


def _by_name(contents: tuple[SinkContents, ...]) -> dict[str, SinkContents]:
    return {f"{c.kind.value}:{c.name}": c for c in contents}


def _send_twice(clients: aws.SinkClients, made: list[aws.MadeSink]) -> None:
    """What a consumer that repeats every effect sends: each one twice, the same both times."""
    address = {f"{m.sink.kind.value}:{m.sink.name}": m.address for m in made}
    for _ in range(2):
        clients.sns.publish(TopicArn=address["topic:orders"], Message='{"id":"o-1"}')
        clients.sns.publish(
            TopicArn=address["topic:orders.fifo"],
            Message='{"id":"o-1"}',
            MessageGroupId="o-1",
            MessageDeduplicationId="o-1",
        )
        clients.sqs.send_message(QueueUrl=address["queue:outbox"], MessageBody="o-1")
        clients.sqs.send_message(
            QueueUrl=address["queue:outbox.fifo"],
            MessageBody="o-1",
            MessageGroupId="o-1",
            MessageDeduplicationId="o-1",
        )
        clients.events.put_events(
            Entries=[
                {
                    "EventBusName": address["bus:events"],
                    "Source": "app.orders",
                    "DetailType": "OrderShipped",
                    "Detail": json.dumps({"id": "o-1"}),
                }
            ]
        )
        clients.s3.put_object(Bucket=address["bucket:receipts"], Key="o-1", Body=b"\xff\x00o-1")
        try:
            clients.stepfunctions.start_execution(
                stateMachineArn=address["state_machine:ship"], name="o-1", input='{"id":"o-1"}'
            )
        except ClientError as exc:  # the second start, when it is refused
            assert exc.response["Error"]["Code"] == "ExecutionAlreadyExists"
        answer = clients.lambda_.invoke(
            FunctionName=address["function:notify"], InvocationType="Event", Payload=b'{"id":"o-1"}'
        )
        assert answer["StatusCode"] == 202


def test_each_sink_holds_what_it_really_received_and_says_what_it_deduplicates(
    backend_url: str, made: tuple[aws.SinkClients, list[aws.MadeSink]]
) -> None:
    clients, sinks = made
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    _send_twice(clients, sinks)

    read = _by_name(aws.read_sinks(clients, sinks, target))

    counts = {name: len(contents.messages) for name, contents in read.items()}
    # Measured, not assumed: a standard topic, queue and bus deliver both sends; a FIFO
    # topic and queue drop the repeated deduplication id; S3 keeps one object per key and
    # Step Functions one execution per name.
    assert counts == {
        "topic:orders": 2,
        "topic:orders.fifo": 1,
        "queue:outbox": 2,
        "queue:outbox.fifo": 1,
        "bus:events": 2,
        "bucket:receipts": 1,
        "state_machine:ship": 1,
        "function:notify": 2,
    }
    assert all(c.complete for c in read.values())
    assert [name for name, c in read.items() if c.fifo] == [
        "topic:orders.fifo",
        "queue:outbox.fifo",
    ]
    assert {name: c.deduplicated for name, c in read.items() if c.deduplicated} == {
        "topic:orders.fifo": "deduplication id within 5 minutes",
        "queue:outbox.fifo": "deduplication id within 5 minutes",
        "bucket:receipts": "one object per key",
        "state_machine:ship": "execution names are unique",
    }
    assert read["topic:orders"].messages[0].payload == '{"id":"o-1"}'  # the Message published
    fifo = dict(read["topic:orders.fifo"].messages[0].attributes)
    assert (fifo["MessageDeduplicationId"], fifo["MessageGroupId"]) == ("o-1", "o-1")
    assert dict(read["queue:outbox.fifo"].messages[0].attributes)["MessageDeduplicationId"] == "o-1"
    event = read["bus:events"].messages[0]
    assert event.payload == '{"id":"o-1"}'
    assert dict(event.attributes)["detail-type"] == "OrderShipped"
    assert dict(event.attributes)["source"] == "app.orders"
    [receipt] = read["bucket:receipts"].messages
    assert (receipt.key, receipt.payload) == ("o-1", "base64:/wBvLTE=")
    assert dict(receipt.attributes)["ETag"].startswith('"')
    [execution] = read["state_machine:ship"].messages
    assert (execution.key, execution.payload) == ("o-1", '{"id":"o-1"}')
    assert dict(execution.attributes)["status"] == "RUNNING"  # moto never runs a machine
    assert [m.payload for m in read["function:notify"].messages] == ['{"id":"o-1"}'] * 2
    addresses = {m.address for m in sinks}
    assert {c.address for c in read.values()} == addresses

    # Reading drained them: a second reading shows only what came after the first.
    again = _by_name(aws.read_sinks(clients, sinks, target))
    assert {name: len(c.messages) for name, c in again.items()} == dict.fromkeys(counts, 0)


def test_a_topic_and_a_queue_hold_each_message_with_its_message_attributes_and_subject(
    backend_url: str, made: tuple[aws.SinkClients, list[aws.MadeSink]]
) -> None:
    clients, sinks = made
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    address = {f"{m.sink.kind.value}:{m.sink.name}": m.address for m in sinks}
    # Eleven attributes: more than raw delivery passes on to a queue (ten, on AWS).
    attributes: dict[str, Any] = {
        f"tag{n:02}": {"DataType": "String", "StringValue": f"t{n}"} for n in range(9)
    }
    attributes["orderId"] = {"DataType": "String", "StringValue": "o-1"}
    attributes["digest"] = {"DataType": "Binary", "BinaryValue": b"\x00\xff"}
    clients.sns.publish(
        TopicArn=address["topic:orders"], Message="order placed", MessageAttributes=attributes
    )
    clients.sns.publish(
        TopicArn=address["topic:orders.fifo"],
        Message="order placed",
        Subject="Order o-1 placed",
        MessageGroupId="o-1",
        MessageDeduplicationId="o-1",
        MessageAttributes={"orderId": attributes["orderId"]},
    )
    clients.sqs.send_message(
        QueueUrl=address["queue:outbox"],
        MessageBody="ship",
        MessageAttributes={"orderId": attributes["orderId"]},
    )
    read = _by_name(aws.read_sinks(clients, sinks, target))
    [published] = read["topic:orders"].messages
    assert (published.payload, published.subject) == ("order placed", "")
    assert dict(published.message_attributes) == {
        **{f"tag{n:02}": f"t{n}" for n in range(9)},
        "orderId": "o-1",
        "digest": "base64:AP8=",
    }
    [fifo] = read["topic:orders.fifo"].messages
    assert (fifo.payload, fifo.message_attributes) == ("order placed", (("orderId", "o-1"),))
    assert fifo.subject == "Order o-1 placed"  # from the notification, beside the Message
    assert dict(fifo.attributes)["MessageDeduplicationId"] == "o-1"
    [shipped] = read["queue:outbox"].messages
    assert (shipped.payload, shipped.message_attributes) == ("ship", (("orderId", "o-1"),))


def test_a_queue_s_delayed_messages_are_waited_for_until_the_deadline(
    backend_url: str, made: tuple[aws.SinkClients, list[aws.MadeSink]]
) -> None:
    clients, sinks = made
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    [outbox] = [m for m in sinks if m.sink == Sink(EffectKind.QUEUE, "outbox")]
    clients.sqs.send_message(QueueUrl=outbox.address, MessageBody="soon", DelaySeconds=2)
    clients.sqs.send_message(QueueUrl=outbox.address, MessageBody="later", DelaySeconds=60)
    # Without a deadline nothing is waited for: both are counted as held back.
    (now,) = aws.read_sinks(clients, [outbox], target)
    assert (now.messages, now.complete, now.delayed) == ((), False, 2)
    # With one, the read waits: the first shows within it, the second does not.
    (waited,) = aws.read_sinks(clients, [outbox], target, deadline=time.monotonic() + 5)
    assert [m.payload for m in waited.messages] == ["soon"]
    assert (waited.complete, waited.delayed) == (False, 1)


def test_a_fifo_sink_refuses_a_message_without_a_deduplication_id(
    made: tuple[aws.SinkClients, list[aws.MadeSink]],
) -> None:
    clients, sinks = made
    address = {f"{m.sink.kind.value}:{m.sink.name}": m.address for m in sinks}
    # Content-based deduplication is off, as the run makes them: the consumer must give one.
    with pytest.raises(ClientError) as topic:
        clients.sns.publish(TopicArn=address["topic:orders.fifo"], Message="x", MessageGroupId="g")
    assert topic.value.response["Error"]["Code"] == "InvalidParameter"
    with pytest.raises(ClientError) as queue:
        clients.sqs.send_message(
            QueueUrl=address["queue:outbox.fifo"], MessageBody="x", MessageGroupId="g"
        )
    assert queue.value.response["Error"]["Code"] == "InvalidParameterValue"


def test_a_read_past_its_deadline_is_marked_incomplete(
    backend_url: str, made: tuple[aws.SinkClients, list[aws.MadeSink]]
) -> None:
    clients, sinks = made
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    _send_twice(clients, sinks)
    late = aws.read_sinks(clients, sinks, target, deadline=time.monotonic() - 1)
    assert [c.complete for c in late] == [False] * len(SINKS)
    assert [len(c.messages) for c in late] == [0] * len(SINKS)
    capped = _by_name(aws.read_sinks(clients, sinks, target, limit=1))
    assert not capped["queue:outbox"].complete
    assert len(capped["queue:outbox"].messages) == 1
    assert capped["queue:outbox.fifo"].complete


def test_sinks_are_tagged_and_deleted_leaving_nothing_and_touching_nothing_else(
    backend_url: str, prefix: str
) -> None:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    clients = aws.sink_clients(target)
    keep = f"keep-{uuid.uuid4().hex[:8]}"
    kept_topic = clients.sns.create_topic(Name=keep)["TopicArn"]
    clients.s3.create_bucket(Bucket=keep)
    kept_queue = clients.sqs.create_queue(QueueName=keep)["QueueUrl"]
    clients.events.create_event_bus(Name=keep)
    made: list[aws.MadeSink] = []
    aws.create_sinks(clients, SINKS, prefix, into=made, target=target)
    _send_twice(clients, made)
    by_kind = {m.sink: m for m in made}

    tag = {"Key": "created-by", "Value": "loadtest"}
    topic = by_kind[SINKS[0]]
    assert tag in clients.sns.list_tags_for_resource(ResourceArn=topic.address)["Tags"]
    assert clients.sqs.list_queue_tags(QueueUrl=topic.capture_url)["Tags"] == {
        "created-by": "loadtest"
    }
    assert clients.sqs.list_queue_tags(QueueUrl=by_kind[SINKS[2]].address)["Tags"] == {
        "created-by": "loadtest"
    }
    bus = by_kind[SINKS[4]]
    assert tag in clients.events.list_tags_for_resource(ResourceARN=bus.arn)["Tags"]
    bucket = by_kind[SINKS[5]]
    assert clients.s3.get_bucket_tagging(Bucket=bucket.name)["TagSet"] == [tag]
    machine = by_kind[SINKS[6]]
    assert {
        "key": "created-by",
        "value": "loadtest",
    } in clients.stepfunctions.list_tags_for_resource(resourceArn=machine.address)["tags"]
    function = by_kind[SINKS[7]]
    assert clients.lambda_.list_tags(Resource=function.address)["Tags"] == {
        "created-by": "loadtest"
    }
    assert tag in clients.iam.list_role_tags(RoleName=function.role)["Tags"]
    assert clients.sqs.list_queue_tags(QueueUrl=function.capture_url)["Tags"] == {
        "created-by": "loadtest"
    }

    assert aws.delete_sinks(clients, made) == []
    assert made == []

    def ours(names: list[str]) -> list[str]:
        return [n for n in names if prefix in n]

    topics = [t["TopicArn"] for t in clients.sns.list_topics()["Topics"]]
    queues = clients.sqs.list_queues().get("QueueUrls", [])
    buckets = [b["Name"] for b in clients.s3.list_buckets()["Buckets"]]
    buses = [b["Name"] for b in clients.events.list_event_buses()["EventBuses"]]
    machines = [m["name"] for m in clients.stepfunctions.list_state_machines()["stateMachines"]]
    subscriptions = [s["Endpoint"] for s in clients.sns.list_subscriptions()["Subscriptions"]]
    functions = [f["FunctionName"] for f in clients.lambda_.list_functions()["Functions"]]
    roles = [r["RoleName"] for r in clients.iam.list_roles()["Roles"]]
    everything = topics + queues + buckets + buses + machines + subscriptions + functions + roles
    assert ours(everything) == []
    # What the run did not make is untouched.
    assert kept_topic in topics and kept_queue in queues
    assert keep in buckets and keep in buses
    clients.sns.delete_topic(TopicArn=kept_topic)
    clients.s3.delete_bucket(Bucket=keep)
    clients.sqs.delete_queue(QueueUrl=kept_queue)
    clients.events.delete_event_bus(Name=keep)
    clients.close()


class _RefusingQueues:
    """An SQS client whose CreateQueue is refused (everything else is the real one's)."""

    def __init__(self, real: object) -> None:
        self.real = real

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def create_queue(self, **_: object) -> None:
        raise ClientError(
            {"Error": {"Code": "QueueDeletedRecently", "Message": "no"}}, "CreateQueue"
        )


def test_a_sink_made_halfway_is_deleted_as_far_as_it_exists(backend_url: str, prefix: str) -> None:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    clients = aws.sink_clients(target)
    refusing = clients.replace(sqs=_RefusingQueues(clients.sqs))
    made: list[aws.MadeSink] = []
    # The topic is made, then its capture queue is refused.
    with pytest.raises(BackendError, match="create the run's topic sink"):
        aws.create_sinks(
            refusing, [Sink(EffectKind.TOPIC, "orders")], prefix, into=made, target=target
        )
    [half] = made
    topic_arn = half.address
    assert topic_arn and not half.capture_url and not half.subscription_arn
    assert aws.delete_sinks(clients, made) == []
    assert made == []
    assert topic_arn not in [t["TopicArn"] for t in clients.sns.list_topics()["Topics"]]
    clients.close()


class _RefusingFunctions:
    """A Lambda client whose CreateFunction is refused (everything else is the real one's)."""

    def __init__(self, real: object) -> None:
        self.real = real

    def __getattr__(self, name: str) -> object:
        return getattr(self.real, name)

    def create_function(self, **_: object) -> None:
        raise ClientError(
            {"Error": {"Code": "InvalidParameterValueException", "Message": "no"}},
            "CreateFunction",
        )


def test_a_function_sink_made_halfway_leaves_neither_its_role_nor_its_queue(
    backend_url: str, prefix: str
) -> None:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    clients = aws.sink_clients(target)
    refusing = clients.replace(lambda_=_RefusingFunctions(clients.lambda_))
    made: list[aws.MadeSink] = []
    with pytest.raises(BackendError, match="create the run's function sink"):
        aws.create_sinks(
            refusing, [Sink(EffectKind.FUNCTION, "notify")], prefix, into=made, target=target
        )
    [half] = made
    assert half.capture_url and half.role and not half.address
    assert aws.delete_sinks(clients, made) == []
    assert made == []
    roles = [r["RoleName"] for r in clients.iam.list_roles()["Roles"]]
    queues = clients.sqs.list_queues().get("QueueUrls", [])
    assert [n for n in roles + queues if prefix in n] == []
    clients.close()


def test_an_invoke_of_a_function_that_is_no_sink_captures_nothing(
    made: tuple[aws.SinkClients, list[aws.MadeSink]], backend_url: str, prefix: str
) -> None:
    clients, sinks = made
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    [function] = [m for m in sinks if m.sink.kind is EffectKind.FUNCTION]
    other = clients.lambda_.create_function(
        FunctionName=f"{prefix}-other",
        Runtime="python3.12",
        Role=clients.iam.get_role(RoleName=function.role)["Role"]["Arn"],
        Handler="index.handler",
        Code={"ZipFile": aws.capture_zip()},
    )["FunctionArn"]
    try:
        clients.lambda_.invoke(FunctionName=other, Payload=b'{"id":"o-9"}')
        with pytest.raises(ClientError) as unknown:
            clients.lambda_.invoke(FunctionName=f"{prefix}-missing", Payload=b"{}")
        assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"
        read = _by_name(aws.read_sinks(clients, sinks, target))
        assert read["function:notify"].messages == ()
    finally:
        clients.lambda_.delete_function(FunctionName=other)


def test_a_made_sink_names_itself_by_address_arn_or_name_as_each_placeholder_asks() -> None:
    queue = aws.MadeSink(Sink(EffectKind.QUEUE, "out"), name="p-q-out", address="http://q/p-q-out")
    queue.arn = "arn:aws:sqs:us-east-1:1:p-q-out"
    topic = aws.MadeSink(
        Sink(EffectKind.TOPIC, "orders"), name="p-orders", address="arn:sns:p-orders"
    )
    assert queue.placeholder_values() == {
        "queue_url:out": "http://q/p-q-out",
        "queue_arn:out": "arn:aws:sqs:us-east-1:1:p-q-out",
        "queue_name:out": "p-q-out",
    }
    assert topic.placeholder_values() == {
        "topic:orders": "arn:sns:p-orders",
        "topic_name:orders": "p-orders",
    }

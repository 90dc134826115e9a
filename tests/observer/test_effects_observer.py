"""The observer records every effect a consumer sends beyond its table, against the real
embedded backend: through boto3's clients and resources and aioboto3's clients alike, one
record per entry, a refused entry as refused, a send to the queue that feeds the function
as no effect at all, and an S3 body as the bytes the bucket really stored."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError

from loadtest.model.history.log import EffectKind, EffectRecord, ObserverFault, UnobservedCall
from loadtest.model.history.observation import Observation, decode
from loadtest.model.history.records import UNJUDGED_REASON
from loadtest.observer import effects, lambda_entry, record_marks
from loadtest.observer.write_observer import WriteObserver

_CONFIG = Config(retries={"total_max_attempts": 1, "mode": "standard"})
_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


def _client(service: str, url: str) -> Any:
    return boto3.session.Session().client(
        service,  # type: ignore[call-overload]
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=_CONFIG,
    )


def _resource(service: str, url: str) -> Any:
    return boto3.session.Session().resource(
        service,  # type: ignore[call-overload]
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=_CONFIG,
    )


@dataclass(frozen=True)
class Sinks:
    """Sinks made for one test on the embedded backend."""

    url: str
    topic: str
    fifo_topic: str
    queue: str
    fifo_queue: str
    source: str
    source_arn: str
    bucket: str
    machine: str


@pytest.fixture()
def sinks(backend_url: str) -> Iterator[Sinks]:
    tag = uuid.uuid4().hex[:10]
    sns, sqs = _client("sns", backend_url), _client("sqs", backend_url)
    s3, sfn = _client("s3", backend_url), _client("stepfunctions", backend_url)
    topic = sns.create_topic(Name=f"effects-{tag}")["TopicArn"]
    fifo_topic = sns.create_topic(Name=f"effects-{tag}.fifo", Attributes={"FifoTopic": "true"})[
        "TopicArn"
    ]
    queue = sqs.create_queue(QueueName=f"effects-{tag}")["QueueUrl"]
    fifo_queue = sqs.create_queue(
        QueueName=f"effects-{tag}.fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    source = sqs.create_queue(QueueName=f"effects-{tag}-jobs")["QueueUrl"]
    source_arn = sqs.get_queue_attributes(QueueUrl=source, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    bucket = f"effects-{tag}"
    s3.create_bucket(Bucket=bucket)
    machine = sfn.create_state_machine(
        name=f"effects-{tag}",
        definition=_DEFINITION,
        roleArn="arn:aws:iam::123456789012:role/effects",
    )["stateMachineArn"]
    yield Sinks(
        backend_url, topic, fifo_topic, queue, fifo_queue, source, source_arn, bucket, machine
    )
    for listed in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        s3.delete_object(Bucket=bucket, Key=listed["Key"])
    s3.delete_bucket(Bucket=bucket)
    sfn.delete_state_machine(stateMachineArn=machine)
    for url in (queue, fifo_queue, source):
        sqs.delete_queue(QueueUrl=url)
    for arn in (topic, fifo_topic):
        sns.delete_topic(TopicArn=arn)


class Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def observations(self) -> list[Observation]:
        return [decode(line) for line in self.lines]

    def effects(self) -> list[EffectRecord]:
        return [o for o in self.observations() if isinstance(o, EffectRecord)]


@contextmanager
def observing(sources: tuple[str, ...] = ()) -> Iterator[tuple[WriteObserver, Recorder]]:
    recorder = Recorder()
    observer = WriteObserver("no-such-table", sink=recorder, source_queues=sources)
    observer.request_id = "req-1"
    observer.install()
    try:
        yield observer, recorder
    finally:
        observer.uninstall()


Row = tuple[str, EffectKind, str, str, str, str, str, bool, str | None]


def _rows(records: list[EffectRecord]) -> list[Row]:
    """What each record says: operation, kind, sink, payload, key, dedup and group ids,
    accepted, error code."""
    return [
        (
            r.operation,
            r.kind,
            r.sink,
            r.payload,
            r.key,
            r.dedup_id,
            r.group_id,
            r.accepted,
            r.error_code,
        )
        for r in records
    ]


def _queue_bodies(url: str, queue_url: str) -> list[str]:
    got = _client("sqs", url).receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
    )
    return sorted(m["Body"] for m in got.get("Messages", []))


def test_each_effect_call_of_a_client_is_recorded_entry_by_entry(sinks: Sinks) -> None:
    url = sinks.url
    sns, sqs, events = _client("sns", url), _client("sqs", url), _client("events", url)
    s3, sfn, lam = _client("s3", url), _client("stepfunctions", url), _client("lambda", url)
    record = record_marks.TrackedRecord({"messageId": "m-7", "body": "{}"})
    with observing((sinks.source,)) as (_, recorder):
        assert record["body"] == "{}"  # the handler is on record m-7 from here
        sns.publish(TopicArn=sinks.topic, Message="order o-1 placed")
        sns.publish(
            TopicArn=sinks.fifo_topic,
            Message="o-1",
            MessageGroupId="o-1",
            MessageDeduplicationId="o-1-placed",
        )
        sns.publish_batch(
            TopicArn=sinks.topic,
            PublishBatchRequestEntries=[{"Id": "a", "Message": "A"}, {"Id": "b", "Message": "B"}],
        )
        sqs.send_message(QueueUrl=sinks.queue, MessageBody="ship o-1")
        sqs.send_message(
            QueueUrl=sinks.fifo_queue,
            MessageBody="o-1",
            MessageGroupId="o-1",
            MessageDeduplicationId="o-1-shipped",
        )
        sqs.send_message_batch(
            QueueUrl=sinks.queue,
            Entries=[{"Id": "1", "MessageBody": "one"}, {"Id": "2", "MessageBody": "two"}],
        )
        events.put_events(
            Entries=[
                {"Source": "orders", "DetailType": "placed", "Detail": '{"id": "o-1"}'},
                {
                    "Source": "orders",
                    "DetailType": "placed",
                    "Detail": '{"id": "o-2"}',
                    "EventBusName": "default",
                },
            ]
        )
        s3.put_object(Bucket=sinks.bucket, Key="receipts/o-1.json", Body=b'{"total": 11}')
        s3.copy_object(
            Bucket=sinks.bucket,
            Key="archive/o 1.json",
            CopySource={"Bucket": sinks.bucket, "Key": "receipts/o-1.json"},
        )
        s3.delete_object(Bucket=sinks.bucket, Key="receipts/o-1.json")
        sfn.start_execution(stateMachineArn=sinks.machine, name="o-1", input='{"id": "o-1"}')
        with pytest.raises(ClientError) as missing:
            lam.invoke(FunctionName="notify", Payload=b'{"id": "o-1"}')
    assert missing.value.response["Error"]["Code"] == "ResourceNotFoundException"

    records = recorder.effects()
    topic, bucket = sinks.topic, sinks.bucket
    assert _rows(records) == [
        ("SNS.Publish", EffectKind.TOPIC, topic, "order o-1 placed", "", "", "", True, None),
        (
            "SNS.Publish",
            EffectKind.TOPIC,
            sinks.fifo_topic,
            "o-1",
            "",
            "o-1-placed",
            "o-1",
            True,
            None,
        ),
        ("SNS.PublishBatch", EffectKind.TOPIC, topic, "A", "", "", "", True, None),
        ("SNS.PublishBatch", EffectKind.TOPIC, topic, "B", "", "", "", True, None),
        ("SQS.SendMessage", EffectKind.QUEUE, sinks.queue, "ship o-1", "", "", "", True, None),
        (
            "SQS.SendMessage",
            EffectKind.QUEUE,
            sinks.fifo_queue,
            "o-1",
            "",
            "o-1-shipped",
            "o-1",
            True,
            None,
        ),
        ("SQS.SendMessageBatch", EffectKind.QUEUE, sinks.queue, "one", "", "", "", True, None),
        ("SQS.SendMessageBatch", EffectKind.QUEUE, sinks.queue, "two", "", "", "", True, None),
        (
            "EventBridge.PutEvents",
            EffectKind.BUS,
            "default",
            '{"id": "o-1"}',
            "",
            "",
            "",
            True,
            None,
        ),
        (
            "EventBridge.PutEvents",
            EffectKind.BUS,
            "default",
            '{"id": "o-2"}',
            "",
            "",
            "",
            True,
            None,
        ),
        (
            "S3.PutObject",
            EffectKind.BUCKET,
            bucket,
            '{"total": 11}',
            "receipts/o-1.json",
            "",
            "",
            True,
            None,
        ),
        (
            "S3.CopyObject",
            EffectKind.BUCKET,
            bucket,
            f"{bucket}/receipts/o-1.json",
            "archive/o 1.json",
            "",
            "",
            True,
            None,
        ),
        ("S3.DeleteObject", EffectKind.BUCKET, bucket, "", "receipts/o-1.json", "", "", True, None),
        (
            "StepFunctions.StartExecution",
            EffectKind.STATE_MACHINE,
            sinks.machine,
            '{"id": "o-1"}',
            "o-1",
            "",
            "",
            True,
            None,
        ),
        (
            "Lambda.Invoke",
            EffectKind.FUNCTION,
            "notify",
            '{"id": "o-1"}',
            "",
            "",
            "",
            False,
            "ResourceNotFoundException",
        ),
    ]
    # One call id per call, shared by a batch's entries; each tied to the invocation and
    # to the record the handler was on.
    calls = [r.call_id for r in records]
    assert len(set(calls)) == 12
    assert calls[2] == calls[3] and calls[6] == calls[7] and calls[8] == calls[9]
    assert {(r.request_id, r.record_id) for r in records} == {("req-1", "m-7")}
    assert all(r.started_ns <= r.ended_ns for r in records)
    # The calls went through unchanged: the sinks hold what was sent.
    assert _queue_bodies(url, sinks.queue) == ["one", "ship o-1", "two"]
    copied = s3.get_object(Bucket=bucket, Key="archive/o 1.json")["Body"].read()
    assert copied == b'{"total": 11}'


def test_entries_a_sink_refuses_are_recorded_as_refused(sinks: Sinks) -> None:
    url = sinks.url
    sns, sqs, events = _client("sns", url), _client("sqs", url), _client("events", url)
    with observing() as (_, recorder):
        answer = sns.publish_batch(
            TopicArn=sinks.topic,
            PublishBatchRequestEntries=[
                {"Id": "ok", "Message": "fits"},
                {"Id": "long", "Message": "x" * 300_000},  # over SNS's 256 KiB
            ],
        )
        assert [f["Id"] for f in answer["Failed"]] == ["long"]
        with pytest.raises(ClientError) as twice:
            sns.publish_batch(
                TopicArn=sinks.topic,
                PublishBatchRequestEntries=[
                    {"Id": "same", "Message": "a"},
                    {"Id": "same", "Message": "b"},
                ],
            )
        answer = sqs.send_message_batch(
            QueueUrl=sinks.queue,
            Entries=[
                {"Id": "late", "MessageBody": "too late", "DelaySeconds": 1000},
                {"Id": "ok", "MessageBody": "on time"},
            ],
        )
        assert [f["Id"] for f in answer["Failed"]] == ["late"]
        answer = events.put_events(
            Entries=[
                {"Source": "orders", "DetailType": "placed", "Detail": "not json"},
                {"Source": "orders", "DetailType": "placed", "Detail": "{}"},
                {"DetailType": "placed", "Detail": "{}"},
            ]
        )
        assert answer["FailedEntryCount"] == 2
    assert twice.value.response["Error"]["Code"] == "BatchEntryIdsNotDistinct"
    assert [(r.operation, r.payload[:8], r.accepted, r.error_code) for r in recorder.effects()] == [
        ("SNS.PublishBatch", "fits", True, None),
        ("SNS.PublishBatch", "x" * 8, False, "InvalidParameter"),
        ("SNS.PublishBatch", "a", False, "BatchEntryIdsNotDistinct"),
        ("SNS.PublishBatch", "b", False, "BatchEntryIdsNotDistinct"),
        ("SQS.SendMessageBatch", "too late", False, "InvalidParameterValue"),
        ("SQS.SendMessageBatch", "on time", True, None),
        ("EventBridge.PutEvents", "not json", False, "MalformedDetail"),
        ("EventBridge.PutEvents", "{}", True, None),
        ("EventBridge.PutEvents", "{}", False, "InvalidArgument"),
    ]
    assert _queue_bodies(url, sinks.queue) == ["on time"]


def test_each_entry_keeps_its_message_attributes(sinks: Sinks) -> None:
    url = sinks.url
    sns, sqs = _client("sns", url), _client("sqs", url)
    attributes: dict[str, Any] = {
        "orderId": {"DataType": "String", "StringValue": "o-1"},
        "quantity": {"DataType": "Number", "StringValue": "3"},
        "digest": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
    }
    with observing() as (_, recorder):
        sns.publish(TopicArn=sinks.topic, Message="order placed", MessageAttributes=attributes)
        sns.publish_batch(
            TopicArn=sinks.topic,
            PublishBatchRequestEntries=[
                {"Id": "a", "Message": "A", "MessageAttributes": attributes},
                {"Id": "b", "Message": "B"},
            ],
        )
        sqs.send_message(QueueUrl=sinks.queue, MessageBody="ship", MessageAttributes=attributes)
        sqs.send_message_batch(
            QueueUrl=sinks.queue,
            Entries=[{"Id": "1", "MessageBody": "one", "MessageAttributes": attributes}],
        )
    texts = (("digest", "base64:AP8="), ("orderId", "o-1"), ("quantity", "3"))
    assert [(r.payload, r.message_attributes) for r in recorder.effects()] == [
        ("order placed", texts),
        ("A", texts),
        ("B", ()),
        ("ship", texts),
        ("one", texts),
    ]


def test_each_sns_entry_keeps_its_subject(sinks: Sinks) -> None:
    sns = _client("sns", sinks.url)
    with observing() as (_, recorder):
        sns.publish(TopicArn=sinks.topic, Subject="Order o-1 placed", Message="placed")
        sns.publish_batch(
            TopicArn=sinks.topic,
            PublishBatchRequestEntries=[
                {"Id": "a", "Message": "A", "Subject": "Order o-2 placed"},
                {"Id": "b", "Message": "B"},
            ],
        )
    assert [(r.payload, r.subject) for r in recorder.effects()] == [
        ("placed", "Order o-1 placed"),
        ("A", "Order o-2 placed"),
        ("B", ""),
    ]


def test_a_send_to_the_queue_that_feeds_the_function_is_recorded_as_its_own_not_an_effect(
    sinks: Sinks,
) -> None:
    sqs = _client("sqs", sinks.url)
    with observing((sinks.source,)) as (observer, recorder):
        one = sqs.send_message(QueueUrl=sinks.source, MessageBody="again")
        batch = sqs.send_message_batch(
            QueueUrl=sinks.source, Entries=[{"Id": "1", "MessageBody": "x"}]
        )
        got = sqs.receive_message(QueueUrl=sinks.source, MaxNumberOfMessages=10)
        first, second = got["Messages"]
        # The invocation's messages, as the entry point tells them from its event.
        observer.set_receipts({first["ReceiptHandle"]: first["MessageId"]})
        sqs.delete_message(QueueUrl=sinks.source, ReceiptHandle=first["ReceiptHandle"])
        sqs.delete_message_batch(
            QueueUrl=sinks.source, Entries=[{"Id": "0", "ReceiptHandle": second["ReceiptHandle"]}]
        )
        sqs.send_message(QueueUrl=sinks.queue, MessageBody="onwards")
    # Each send back to the source queue keeps the message id the queue gave it: the run
    # waits for those messages to be delivered. Each delete of one of the function's own
    # messages keeps that message's id (none for a message the invocation was not given),
    # never its receipt handle. Only the other queue's send is an effect.
    sent_ids = [one["MessageId"], batch["Successful"][0]["MessageId"]]
    assert sorted([first["MessageId"], second["MessageId"]]) == sorted(sent_ids)
    records = recorder.effects()
    assert [(r.kind, r.operation, r.sink, r.payload, r.key) for r in records] == [
        (EffectKind.SOURCE, "SQS.SendMessage", sinks.source, "again", sent_ids[0]),
        (EffectKind.SOURCE, "SQS.SendMessageBatch", sinks.source, "x", sent_ids[1]),
        (EffectKind.SOURCE, "SQS.DeleteMessage", sinks.source, "", first["MessageId"]),
        (EffectKind.SOURCE, "SQS.DeleteMessageBatch", sinks.source, "", ""),
        (EffectKind.QUEUE, "SQS.SendMessage", sinks.queue, "onwards", ""),
    ]
    assert [(r.resent, r.deleted) for r in records] == [
        (sent_ids[0], ""),
        (sent_ids[1], ""),
        ("", first["MessageId"]),
        ("", ""),
        ("", ""),
    ]
    assert recorder.lines == [line for line in recorder.lines if '"t":"effect"' in line]
    assert not any(m["ReceiptHandle"] in "".join(recorder.lines) for m in got["Messages"])

    # A delete from a queue that does not feed the function is no record at all.
    with observing((sinks.source,)) as (observer, recorder):
        sqs.send_message(QueueUrl=sinks.queue, MessageBody="elsewhere")
        (other,) = sqs.receive_message(QueueUrl=sinks.queue)["Messages"]
        sqs.delete_message(QueueUrl=sinks.queue, ReceiptHandle=other["ReceiptHandle"])
    assert [r.operation for r in recorder.effects()] == ["SQS.SendMessage"]

    # Told by its ARN (as an event's eventSourceARN names it), the queue is the same.
    with observing() as (observer, recorder):
        sqs.send_message(QueueUrl=sinks.source, MessageBody="before")
        observer.add_source_queues([sinks.source_arn])
        sqs.send_message(QueueUrl=sinks.source, MessageBody="after")
    assert [(r.kind, r.payload) for r in recorder.effects()] == [
        (EffectKind.QUEUE, "before"),
        (EffectKind.SOURCE, "after"),
    ]
    sqs.purge_queue(QueueUrl=sinks.source)


def test_resources_are_observed_as_their_clients(sinks: Sinks) -> None:
    url = sinks.url
    with observing() as (_, recorder):
        _resource("sns", url).Topic(sinks.topic).publish(Message="from a topic")
        _resource("s3", url).Object(sinks.bucket, "o-2.txt").put(Body="two")
        _resource("sqs", url).Queue(sinks.queue).send_message(
            MessageBody="from a queue", DelaySeconds=0
        )
    assert _rows(recorder.effects()) == [
        ("SNS.Publish", EffectKind.TOPIC, sinks.topic, "from a topic", "", "", "", True, None),
        ("S3.PutObject", EffectKind.BUCKET, sinks.bucket, "two", "o-2.txt", "", "", True, None),
        ("SQS.SendMessage", EffectKind.QUEUE, sinks.queue, "from a queue", "", "", "", True, None),
    ]


class _Pipe:
    """A body that can be read once, like a socket's or a pipe's."""

    def __init__(self, data: bytes) -> None:
        self._data: bytes | None = data

    def read(self, size: int = -1) -> bytes:
        data, self._data = self._data or b"", b""
        return data


def test_a_put_object_body_is_recorded_as_the_bytes_stored(sinks: Sinks, tmp_path: Path) -> None:
    s3 = _client("s3", sinks.url)
    receipt = tmp_path / "receipt.json"
    receipt.write_bytes(b'{"file": true}')
    half_read = io.BytesIO(b"skip:the rest")
    half_read.read(5)
    binary = bytes(range(250, 256)) + b"\x00"
    with observing() as (_, recorder), receipt.open("rb") as opened:
        s3.put_object(Bucket=sinks.bucket, Key="file", Body=opened)
        s3.put_object(Bucket=sinks.bucket, Key="stream", Body=io.BytesIO(b"streamed"))
        s3.put_object(Bucket=sinks.bucket, Key="rest", Body=half_read)
        s3.put_object(Bucket=sinks.bucket, Key="pipe", Body=_Pipe(b"piped once"))
        s3.put_object(Bucket=sinks.bucket, Key="binary", Body=binary)
        s3.put_object(Bucket=sinks.bucket, Key="text", Body="grüße")
        s3.put_object(Bucket=sinks.bucket, Key="empty")
    stored = {
        key: s3.get_object(Bucket=sinks.bucket, Key=key)["Body"].read()
        for key in ("file", "stream", "rest", "pipe", "binary", "text", "empty")
    }
    assert stored == {
        "file": b'{"file": true}',
        "stream": b"streamed",
        "rest": b"the rest",
        "pipe": b"piped once",
        "binary": binary,
        "text": "grüße".encode(),
        "empty": b"",
    }
    recorded = {r.key: r.payload for r in recorder.effects()}
    assert recorded == {
        "file": '{"file": true}',
        "stream": "streamed",
        "rest": "the rest",
        "pipe": "piped once",
        "binary": "base64:+vv8/f7/AA==",
        "text": "grüße",
        "empty": "",
    }
    assert all(r.accepted for r in recorder.effects())


def test_an_effect_call_without_an_answer_is_recorded_as_refused(sinks: Sinks) -> None:
    closed = boto3.session.Session().client(
        "sns",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=1),
    )
    with observing() as (_, recorder), pytest.raises(EndpointConnectionError):
        closed.publish(TopicArn=sinks.topic, Message="lost?")
    [record] = recorder.effects()
    assert (record.payload, record.accepted, record.error_code) == ("lost?", False, "NoAnswer")


def test_the_observers_failure_on_an_effect_is_its_own(
    sinks: Sinks, monkeypatch: pytest.MonkeyPatch
) -> None:
    sns = _client("sns", sinks.url)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("observer broke")

    with observing() as (_, recorder):
        monkeypatch.setitem(effects.EFFECT_APIS, ("sns", "Publish"), broken)
        assert sns.publish(TopicArn=sinks.topic, Message="planned?")["MessageId"]
        monkeypatch.undo()
        monkeypatch.setattr("loadtest.observer.effect_calls.effect_records", broken)
        assert sns.publish(TopicArn=sinks.topic, Message="answered?")["MessageId"]
    faults = [o for o in recorder.observations() if isinstance(o, ObserverFault)]
    assert [(f.operation, f.error) for f in faults] == [
        ("Publish", "RuntimeError: observer broke"),
        ("SNS.Publish", "RuntimeError: observer broke"),
    ]
    assert recorder.effects() == []


def test_a_call_that_is_no_effect_is_not_planned(
    sinks: Sinks, monkeypatch: pytest.MonkeyPatch
) -> None:
    planned: list[tuple[str, str]] = []
    plan = effects.EffectPlanner.plan

    def counting(self: effects.EffectPlanner, service: str, operation: str, params: Any) -> Any:
        planned.append((service, operation))
        return plan(self, service, operation, params)

    monkeypatch.setattr(effects.EffectPlanner, "plan", counting)
    sqs, s3 = _client("sqs", sinks.url), _client("s3", sinks.url)
    with observing((sinks.source,)) as (_, recorder):
        sqs.receive_message(QueueUrl=sinks.queue, WaitTimeSeconds=0)
        sqs.get_queue_attributes(QueueUrl=sinks.queue, AttributeNames=["All"])
        s3.list_objects_v2(Bucket=sinks.bucket)
        s3.put_object(Bucket=sinks.bucket, Key="k", Body=b"v")
    assert planned == [("s3", "PutObject")]
    assert len(recorder.effects()) == 1


def test_the_entry_point_takes_each_events_source_queue_as_the_functions(sinks: Sinks) -> None:
    sqs = _client("sqs", sinks.url)

    def handler(event: Any, context: Any) -> Any:
        for record in event["Records"]:
            sqs.send_message(QueueUrl=sinks.source, MessageBody="retry " + record["body"])
            sqs.send_message(QueueUrl=sinks.queue, MessageBody="next " + record["body"])
        return None

    recorder = Recorder()
    state = lambda_entry.start(
        {lambda_entry.WATCH_TABLE_ENV: "no-such-table"},
        recorder,
        load=lambda: handler,
        invocation_lines=False,
    )
    try:
        event = {
            "Records": [
                {"messageId": "m-1", "body": "o-1", "eventSourceARN": sinks.source_arn},
            ]
        }
        lambda_entry.invoke(state, event, type("Context", (), {"aws_request_id": "r-1"})())
    finally:
        lambda_entry.stop(state)
    # The send back to the event's source queue is recorded as such, not as an effect.
    assert [(r.kind, r.sink, r.payload, r.record_id) for r in recorder.effects()] == [
        (EffectKind.SOURCE, sinks.source, "retry o-1", "m-1"),
        (EffectKind.QUEUE, sinks.queue, "next o-1", "m-1"),
    ]


def test_the_observers_own_lines_sent_to_their_queue_are_not_effects(sinks: Sinks) -> None:
    sqs = _client("sqs", sinks.url)
    name = sinks.queue.rsplit("/", 1)[-1]
    send = lambda_entry.queue_sink(name, sqs)
    sent: list[str] = []

    def bounded(line: str) -> None:
        # Were its own sends effects, each line would send another: stop after a few.
        if len(sent) >= 5:
            raise RuntimeError("the observer observes its own lines")
        sent.append(line)
        send(line)

    observer = WriteObserver("no-such-table", sink=bounded)
    observer.install()
    try:
        _client("sns", sinks.url).publish(TopicArn=sinks.topic, Message="once")
    finally:
        observer.uninstall()
    assert [decode(line) for line in _queue_bodies(sinks.url, sinks.queue)] == [
        decode(line) for line in sent
    ]
    assert [type(decode(line)).__name__ for line in sent] == ["EffectRecord"]


_AIO_CONSUMER = """
import asyncio, json, sys
from loadtest.observer.write_observer import WriteObserver

url, topic, queue, source, bucket, machine = sys.argv[1:7]
lines = []
observer = WriteObserver("no-such-table", sink=lines.append, source_queues=(source,))
observer.request_id = "aio-1"
observer.install()

import aioboto3

async def main():
    session = aioboto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    kwargs = {"endpoint_url": url}
    async with session.client("sns", **kwargs) as sns, session.client("sqs", **kwargs) as sqs, \\
            session.client("s3", **kwargs) as s3, session.client("events", **kwargs) as events, \\
            session.client("stepfunctions", **kwargs) as sfn:
        await sns.publish(TopicArn=topic, Message="aio publish")
        await sns.publish_batch(TopicArn=topic, PublishBatchRequestEntries=[
            {"Id": "ok", "Message": "fits"}, {"Id": "long", "Message": "x" * 300000}])
        await sqs.send_message(QueueUrl=source, MessageBody="to the source")
        await sqs.send_message(QueueUrl=queue, MessageBody="aio send")
        await sqs.send_message_batch(QueueUrl=queue, Entries=[
            {"Id": "late", "MessageBody": "too late", "DelaySeconds": 1000},
            {"Id": "ok", "MessageBody": "on time"}])
        await s3.put_object(Bucket=bucket, Key="aio.txt", Body=b"aio bytes")
        await s3.copy_object(Bucket=bucket, Key="copy.txt", CopySource=f"{bucket}/aio.txt")
        await s3.delete_object(Bucket=bucket, Key="copy.txt")
        await events.put_events(Entries=[{"Source": "s", "DetailType": "d", "Detail": "{}"}])
        await sfn.start_execution(stateMachineArn=machine, name="aio", input="{}")
        async with session.client("lambda", **kwargs) as lam:
            try:
                await lam.invoke(FunctionName="notify", Payload=b"{}")
            except lam.exceptions.ResourceNotFoundException:
                pass
        stored = await (await s3.get_object(Bucket=bucket, Key="aio.txt"))["Body"].read()
        return stored.decode()

stored = asyncio.run(main())
print(json.dumps({"lines": lines, "stored": stored}))
"""


def test_aiobotocore_clients_effects_are_recorded_as_boto3s(sinks: Sinks) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _AIO_CONSUMER,
            sinks.url,
            sinks.topic,
            sinks.queue,
            sinks.source,
            sinks.bucket,
            sinks.machine,
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["stored"] == "aio bytes"
    records = [decode(line) for line in result["lines"]]
    assert all(isinstance(r, EffectRecord) for r in records), records
    rows = _rows([r for r in records if isinstance(r, EffectRecord)])
    assert [row[:4] + row[7:] for row in rows] == [
        ("SNS.Publish", EffectKind.TOPIC, sinks.topic, "aio publish", True, None),
        ("SNS.PublishBatch", EffectKind.TOPIC, sinks.topic, "fits", True, None),
        (
            "SNS.PublishBatch",
            EffectKind.TOPIC,
            sinks.topic,
            "x" * 300000,
            False,
            "InvalidParameter",
        ),
        ("SQS.SendMessage", EffectKind.SOURCE, sinks.source, "to the source", True, None),
        ("SQS.SendMessage", EffectKind.QUEUE, sinks.queue, "aio send", True, None),
        (
            "SQS.SendMessageBatch",
            EffectKind.QUEUE,
            sinks.queue,
            "too late",
            False,
            "InvalidParameterValue",
        ),
        ("SQS.SendMessageBatch", EffectKind.QUEUE, sinks.queue, "on time", True, None),
        ("S3.PutObject", EffectKind.BUCKET, sinks.bucket, "aio bytes", True, None),
        ("S3.CopyObject", EffectKind.BUCKET, sinks.bucket, f"{sinks.bucket}/aio.txt", True, None),
        ("S3.DeleteObject", EffectKind.BUCKET, sinks.bucket, "", True, None),
        ("EventBridge.PutEvents", EffectKind.BUS, "default", "{}", True, None),
        ("StepFunctions.StartExecution", EffectKind.STATE_MACHINE, sinks.machine, "{}", True, None),
        ("Lambda.Invoke", EffectKind.FUNCTION, "notify", "{}", False, "ResourceNotFoundException"),
    ]
    s3_keys = [row[4] for row in rows if row[0].startswith("S3.")]
    assert s3_keys == ["aio.txt", "copy.txt", "copy.txt"]
    assert {r.request_id for r in records if isinstance(r, EffectRecord)} == {"aio-1"}


@pytest.mark.parametrize(
    ("service", "operation", "params", "words"),
    [
        (
            "sns",
            "Publish",
            {"TopicArn": "arn:aws:sns:us-east-1:1:orders", "Message": "m"},
            "publish to topic orders",
        ),
        (
            "sns",
            "PublishBatch",
            {
                "TopicArn": "arn:aws:sns:us-east-1:1:orders",
                "PublishBatchRequestEntries": [
                    {"Id": "a", "Message": "m"},
                    {"Id": "b", "Message": "n"},
                ],
            },
            "publish 2 messages to topic orders",
        ),
        (
            "sqs",
            "SendMessage",
            {"QueueUrl": "https://sqs/1/ship", "MessageBody": "b"},
            "send to queue ship",
        ),
        (
            "sqs",
            "SendMessageBatch",
            {"QueueUrl": "https://sqs/1/ship", "Entries": [{"Id": "1", "MessageBody": "b"}]},
            "send 1 message to queue ship",
        ),
        (
            "events",
            "PutEvents",
            {"Entries": [{"Detail": "{}"}, {"Detail": "{}", "EventBusName": "audit"}]},
            "put 2 events on bus default, audit",
        ),
        (
            "s3",
            "PutObject",
            {"Bucket": "receipts", "Key": "o-1.json", "Body": b"{}"},
            "put object o-1.json in bucket receipts",
        ),
        (
            "s3",
            "CopyObject",
            {"Bucket": "archive", "Key": "o-1.json", "CopySource": "receipts/o-1.json"},
            "copy receipts/o-1.json to object o-1.json in bucket archive",
        ),
        (
            "s3",
            "DeleteObject",
            {"Bucket": "receipts", "Key": "o-1.json"},
            "delete object o-1.json in bucket receipts",
        ),
        (
            "stepfunctions",
            "StartExecution",
            {"stateMachineArn": "arn:aws:states:us-east-1:1:stateMachine:fulfil", "name": "o-1"},
            "start execution o-1 of state machine fulfil",
        ),
        ("lambda", "Invoke", {"FunctionName": "notify", "Payload": "{}"}, "invoke function notify"),
    ],
)
def test_an_explored_step_names_the_effect_as_a_reader_says_it(
    service: str, operation: str, params: dict[str, Any], words: str
) -> None:
    planned = effects.EffectPlanner().plan(service, operation, params)
    assert planned is not None
    assert planned[1].describe() == words


def test_a_queue_is_the_same_by_its_url_or_its_arn() -> None:
    planner = effects.EffectPlanner(["https://sqs.us-east-1.amazonaws.com/123456789012/jobs"])
    assert planner.is_source("arn:aws:sqs:us-east-1:123456789012:jobs")
    assert planner.is_source("http://127.0.0.1:4566/123456789012/jobs")
    assert not planner.is_source("https://sqs.us-east-1.amazonaws.com/123456789012/jobs-dlq")
    assert not planner.is_source("https://sqs.us-east-1.amazonaws.com/210987654321/jobs")


def test_a_send_downstream_the_run_cannot_read_is_reported_as_not_judged(sinks: Sinks) -> None:
    kinesis = _client("kinesis", sinks.url)
    stream = f"orders-{uuid.uuid4().hex[:8]}"
    kinesis.create_stream(StreamName=stream, ShardCount=1)
    try:
        with observing() as (_, recorder):
            kinesis.put_record(StreamName=stream, PartitionKey="o-1", Data=b'{"id": "o-1"}')
            kinesis.describe_stream_summary(StreamName=stream)
        assert [o for o in recorder.observations() if not isinstance(o, EffectRecord)] == [
            UnobservedCall("kinesis PutRecord", UNJUDGED_REASON, "req-1")
        ]
    finally:
        kinesis.delete_stream(StreamName=stream)

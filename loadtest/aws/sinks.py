"""The run's sinks: creating the topics, queues, buses, buckets and state machines a consumer
sends effects to, reading back what each really holds, and deleting exactly what was made.

Each sink (``loadtest.model.scenario.placeholders.Sink``) is created under the run's
prefix, tagged ``created-by=loadtest``, and recorded in its ``MadeSink`` the moment each
of its parts exists, so a failure halfway still lets ``delete_sinks`` remove what was
made and nothing else. A topic gets a capture queue subscribed to it with raw delivery (a
FIFO one for a FIFO topic), a bus a rule matching every event of the bus's account with a
capture queue as its target: what they delivered is read from there.

``read_sinks`` drains the queues (so an explored schedule's reading also resets them for
the next one), lists a bucket's objects with their bytes and a state machine's
executions with their input. The reads stop at ``deadline`` or ``MAX_SINK_MESSAGES`` and
then say ``complete=False``.

Synchronous boto3 calls, passed their clients (``SinkClients``, made by
``loadtest.aws.clients.sink_clients``): the engine runs them in a worker thread, explore
in its own. Every failure goes through ``loadtest.aws.errors``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from loadtest.aws.errors import ERRORS, translated
from loadtest.aws.target import BackendKind, Target
from loadtest.errors import BackendError
from loadtest.model.history.records import EffectKind, SinkContents, SinkMessage
from loadtest.model.scenario.placeholders import Sink

if TYPE_CHECKING:
    from mypy_boto3_events import EventBridgeClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sns import SNSClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

CREATED_BY = ("created-by", "loadtest")
"""The tag every sink's resources carry, as the run's tables do."""
CAPTURE_RULE = "loadtest-capture"
"""The rule on a bus sink that sends every event of the bus to its capture queue."""
PASS_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})
"""A state machine sink's definition: one Pass state (its executions are what counts)."""
EMBEDDED_ROLE = "arn:aws:iam::123456789012:role/loadtest-state-machine"
"""The role a state machine sink names on a local backend, which checks none."""
MAX_SINK_MESSAGES = 100_000
"""The most entries read from one sink; past it the sink's contents say ``complete=False``."""


@dataclass
class SinkClients:
    """The boto3 clients sinks are made, read and deleted with."""

    sqs: SQSClient
    sns: SNSClient
    events: EventBridgeClient
    s3: S3Client
    stepfunctions: SFNClient

    def close(self) -> None:
        """Close each client's connections."""
        for client in (self.sqs, self.sns, self.events, self.s3, self.stepfunctions):
            client.close()


@dataclass
class MadeSink:
    """One sink's resources as far as they exist (each field set the moment its part does)."""

    sink: Sink
    name: str = ""
    """Its resource's name (``PREFIX-NAME``)."""
    address: str = ""
    """What the consumer is told: a topic's or state machine's ARN, a queue's URL, a bus's
    or bucket's name ("" until the resource exists)."""
    arn: str = ""
    """A queue sink's ARN (``{queue_arn:NAME}``); a bus's ARN."""
    capture_url: str = ""
    capture_arn: str = ""
    subscription_arn: str = ""
    rule: str = ""
    seen: set[str] = field(default_factory=set)
    """Executions already read (a state machine keeps them: explore reads each once)."""

    def placeholder_values(self) -> dict[str, str]:
        """What the sink's placeholders stand for (``RunResources.sinks``)."""
        return {
            placeholder: self.arn if placeholder.startswith("queue_arn:") else self.address
            for placeholder in self.sink.placeholders
        }

    def names(self) -> list[str]:
        """Every part that exists, by name, for a message."""
        return [part for part in (self.address, self.capture_url) if part]


def create_sinks(
    clients: SinkClients,
    sinks: Sequence[Sink],
    prefix: str,
    *,
    into: list[MadeSink],
    target: Target,
) -> None:
    """Create each sink's resources under ``prefix``, appending its ``MadeSink`` to ``into``
    before its first call, so teardown finds whatever part of it exists."""
    if target.kind is BackendKind.AWS and any(s.kind is EffectKind.STATE_MACHINE for s in sinks):
        raise BackendError(
            "a {state_machine:NAME} sink is created on local backends only: on AWS it needs "
            "an execution role, which the run does not make"
        )
    for sink in sinks:
        made = MadeSink(sink, name=sink.resource_name(prefix))
        into.append(made)
        with translated(f"create the run's {sink.kind.value} sink {made.name}", target):
            _create(clients, made, prefix, target)


def _fifo_queue_attributes(fifo: bool) -> dict[str, str]:
    return {"FifoQueue": "true", "ContentBasedDeduplication": "false"} if fifo else {}


def _queue(clients: SinkClients, name: str, fifo: bool, sender: str = "") -> tuple[str, str]:
    """Create a queue (FIFO for ``fifo``) that ``sender``'s service may send to; its URL and
    ARN."""
    url = clients.sqs.create_queue(
        QueueName=name,
        Attributes=_fifo_queue_attributes(fifo),  # type: ignore[arg-type]
        tags=dict([CREATED_BY]),
    )["QueueUrl"]
    arn = clients.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    if sender:
        service, source = sender.split(" ", 1)
        policy = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"Service": service},
                    "Action": "sqs:SendMessage",
                    "Resource": arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": source}},
                }
            ],
        }
        clients.sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    return url, arn


def _create(clients: SinkClients, made: MadeSink, prefix: str, target: Target) -> None:
    sink = made.sink
    tag_key, tag_value = CREATED_BY
    if sink.kind is EffectKind.QUEUE:
        made.address, made.arn = _queue(clients, made.name, sink.fifo)
    elif sink.kind is EffectKind.TOPIC:
        attributes = (
            {"FifoTopic": "true", "ContentBasedDeduplication": "false"} if sink.fifo else {}
        )
        made.address = clients.sns.create_topic(
            Name=made.name, Attributes=attributes, Tags=[{"Key": tag_key, "Value": tag_value}]
        )["TopicArn"]
        made.capture_url, made.capture_arn = _queue(
            clients, sink.capture_name(prefix), sink.fifo, f"sns.amazonaws.com {made.address}"
        )
        made.subscription_arn = clients.sns.subscribe(
            TopicArn=made.address,
            Protocol="sqs",
            Endpoint=made.capture_arn,
            Attributes={"RawMessageDelivery": "true"},
            ReturnSubscriptionArn=True,
        )["SubscriptionArn"]
    elif sink.kind is EffectKind.BUS:
        made.arn = clients.events.create_event_bus(
            Name=made.name, Tags=[{"Key": tag_key, "Value": tag_value}]
        )["EventBusArn"]
        made.address = made.name
        account = made.arn.split(":")[4]
        rule_arn = made.arn.replace(":event-bus/", ":rule/") + f"/{CAPTURE_RULE}"
        made.capture_url, made.capture_arn = _queue(
            clients, sink.capture_name(prefix), False, f"events.amazonaws.com {rule_arn}"
        )
        clients.events.put_rule(
            Name=CAPTURE_RULE,
            EventBusName=made.name,
            EventPattern=json.dumps({"account": [account]}),
            Tags=[{"Key": tag_key, "Value": tag_value}],
        )
        made.rule = CAPTURE_RULE
        clients.events.put_targets(
            Rule=CAPTURE_RULE,
            EventBusName=made.name,
            Targets=[{"Id": "capture", "Arn": made.capture_arn}],
        )
    elif sink.kind is EffectKind.BUCKET:
        location: Any = (
            {}
            if target.region == "us-east-1"
            else {"CreateBucketConfiguration": {"LocationConstraint": target.region}}
        )
        clients.s3.create_bucket(Bucket=made.name, **location)
        made.address = made.name
        clients.s3.put_bucket_tagging(
            Bucket=made.name, Tagging={"TagSet": [{"Key": tag_key, "Value": tag_value}]}
        )
    elif sink.kind is EffectKind.STATE_MACHINE:
        made.address = clients.stepfunctions.create_state_machine(
            name=made.name,
            definition=PASS_DEFINITION,
            roleArn=EMBEDDED_ROLE,
            tags=[{"key": tag_key, "value": tag_value}],
        )["stateMachineArn"]
    else:
        raise ValueError(f"no sink of kind {sink.kind}")


def read_sinks(
    clients: SinkClients,
    made: Iterable[MadeSink],
    target: Target,
    *,
    deadline: float | None = None,
    limit: int = MAX_SINK_MESSAGES,
) -> tuple[SinkContents, ...]:
    """What each sink holds now; the queues are drained and a bucket's objects deleted as
    they are read, so a second reading shows only what came after the first.

    ``deadline`` is a ``time.monotonic()`` instant: a sink still being read then, and
    every sink after it, says ``complete=False`` with what was read. Raises
    ``BackendError`` when the backend refuses a read.
    """
    out = []
    for one in made:
        if not one.address:
            continue
        with translated(f"read what the {one.sink.kind.value} sink {one.name} holds", target):
            messages, complete = _read(clients, one, target, deadline, limit)
        out.append(
            SinkContents(
                name=one.sink.name,
                kind=one.sink.kind,
                address=one.address,
                messages=tuple(messages),
                complete=complete,
                fifo=one.sink.fifo,
                deduplicated=one.sink.deduplicated,
            )
        )
    return tuple(out)


def _late(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _read(
    clients: SinkClients,
    made: MadeSink,
    target: Target,
    deadline: float | None,
    limit: int,
) -> tuple[list[SinkMessage], bool]:
    kind = made.sink.kind
    if kind is EffectKind.BUCKET:
        return _read_bucket(clients.s3, made.name, deadline, limit)
    if kind is EffectKind.STATE_MACHINE:
        return _read_executions(clients.stepfunctions, made, deadline, limit)
    url = made.address if kind is EffectKind.QUEUE else made.capture_url
    # AWS delivers a topic's or bus's messages a moment after the call, and a short poll
    # may miss a few: the last, empty receive waits there (and a second on an endpoint).
    wait_s = _LAST_RECEIVE_WAIT_S[target.kind]
    bodies, complete = _drain(clients.sqs, url, deadline, limit, wait_s)
    if kind is EffectKind.BUS:
        return [_unwrap_event(body, attributes) for body, attributes in bodies], complete
    return [SinkMessage(body, "", attributes) for body, attributes in bodies], complete


_LAST_RECEIVE_WAIT_S = {BackendKind.EMBEDDED: 0, BackendKind.ENDPOINT: 1, BackendKind.AWS: 5}
"""How long (in seconds) each receive of a sink's queue waits for a message: the embedded
backend delivers within the call, AWS within moments."""


def _drain(
    sqs: SQSClient, url: str, deadline: float | None, limit: int, wait_s: int
) -> tuple[list[tuple[str, tuple[tuple[str, str], ...]]], bool]:
    """Receive and delete until an empty receive: each body with its system attributes."""
    out: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    while True:
        if _late(deadline):
            return out, False
        if len(out) >= limit:
            # Left where it is (visible again at once): only whether there is more counts.
            more = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=0)
            return out, not more.get("Messages")
        got = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=min(10, limit - len(out)),
            WaitTimeSeconds=wait_s,
            VisibilityTimeout=60,
            MessageSystemAttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            return out, True
        for message in got:
            attributes = tuple(
                sorted((k, str(v)) for k, v in message.get("Attributes", {}).items())
            )
            out.append((message["Body"], attributes))
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
            ],
        )


def _unwrap_event(body: str, attributes: tuple[tuple[str, str], ...]) -> SinkMessage:
    """An EventBridge event as its target receives it, unwrapped to its ``detail`` (as JSON
    text); its detail-type, source and id kept in the attributes."""
    try:
        event = json.loads(body)
    except ValueError:
        return SinkMessage(body, "", attributes)
    if not isinstance(event, dict) or "detail" not in event:
        return SinkMessage(body, "", attributes)
    envelope = tuple(
        (name, str(event[name])) for name in ("detail-type", "source", "id") if name in event
    )
    detail = json.dumps(event["detail"], separators=(",", ":"))
    return SinkMessage(detail, "", tuple(sorted(attributes + envelope)))


def object_text(data: bytes) -> str:
    """An object's bytes as ``EffectRecord.payload`` gives them: UTF-8 text, else
    ``base64:`` and the base64."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode("ascii")


def _read_bucket(
    s3: S3Client, bucket: str, deadline: float | None, limit: int
) -> tuple[list[SinkMessage], bool]:
    out: list[SinkMessage] = []
    kwargs: dict[str, Any] = {"Bucket": bucket}
    while True:
        page = s3.list_objects_v2(**kwargs)
        for entry in page.get("Contents", []):
            if len(out) >= limit or _late(deadline):
                return out, False
            key = entry["Key"]
            data = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            out.append(SinkMessage(object_text(data), key, (("ETag", entry["ETag"]),)))
            s3.delete_object(Bucket=bucket, Key=key)
        if not page.get("IsTruncated"):
            return out, True
        kwargs["ContinuationToken"] = page["NextContinuationToken"]


def _read_executions(
    sfn: SFNClient, made: MadeSink, deadline: float | None, limit: int
) -> tuple[list[SinkMessage], bool]:
    out: list[SinkMessage] = []
    kwargs: dict[str, Any] = {"stateMachineArn": made.address}
    while True:
        page = sfn.list_executions(**kwargs)
        for entry in sorted(page["executions"], key=lambda e: e["startDate"]):
            arn = entry["executionArn"]
            if arn in made.seen:
                continue
            if len(out) >= limit or _late(deadline):
                return out, False
            described = sfn.describe_execution(executionArn=arn)
            out.append(
                SinkMessage(
                    described.get("input", ""), entry["name"], (("status", entry["status"]),)
                )
            )
            made.seen.add(arn)
        if not page.get("nextToken"):
            return out, True
        kwargs["nextToken"] = page["nextToken"]


def delete_sinks(clients: SinkClients, made: list[MadeSink]) -> list[str]:
    """Delete every part of each sink that exists (a bucket emptied first); return the
    problems by name instead of raising. What was wholly deleted leaves ``made``."""
    problems: list[str] = []
    for one in list(made):
        try:
            _delete(clients, one)
            made.remove(one)
        except ERRORS as exc:
            problems.append(f"{one.sink.kind.value} sink {one.name}: {exc}")
    return problems


def _delete(clients: SinkClients, made: MadeSink) -> None:
    kind = made.sink.kind
    if kind is EffectKind.TOPIC:
        if made.subscription_arn:
            clients.sns.unsubscribe(SubscriptionArn=made.subscription_arn)
            made.subscription_arn = ""
        if made.address:
            clients.sns.delete_topic(TopicArn=made.address)
            made.address = ""
    elif kind is EffectKind.BUS:
        if made.rule:
            clients.events.remove_targets(Rule=made.rule, EventBusName=made.name, Ids=["capture"])
            clients.events.delete_rule(Name=made.rule, EventBusName=made.name)
            made.rule = ""
        if made.arn:
            clients.events.delete_event_bus(Name=made.name)
            made.arn = made.address = ""
    elif kind is EffectKind.QUEUE:
        if made.address:
            clients.sqs.delete_queue(QueueUrl=made.address)
            made.address = ""
    elif kind is EffectKind.BUCKET:
        if made.address:
            _empty_bucket(clients.s3, made.name)
            clients.s3.delete_bucket(Bucket=made.name)
            made.address = ""
    elif kind is EffectKind.STATE_MACHINE and made.address:
        clients.stepfunctions.delete_state_machine(stateMachineArn=made.address)
        made.address = ""
    if made.capture_url:
        clients.sqs.delete_queue(QueueUrl=made.capture_url)
        made.capture_url = ""


def _empty_bucket(s3: S3Client, bucket: str) -> None:
    while True:
        page = s3.list_objects_v2(Bucket=bucket)
        keys = [{"Key": entry["Key"]} for entry in page.get("Contents", [])]
        if not keys:
            return
        s3.delete_objects(Bucket=bucket, Delete={"Objects": keys})  # type: ignore[typeddict-item]

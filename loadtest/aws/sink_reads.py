"""Reading what each of the run's sinks really holds (``loadtest.aws.sinks`` makes them).

``read_sinks`` drains the queues (a queue sink, a topic's or bus's capture queue), so an
explored schedule's reading also resets them for the next one; a topic's messages are
unwrapped from the notification its capture queue receives (its ``Message``,
``MessageAttributes`` and ``Subject``), a queue's read with their message attributes; it lists a bucket's
objects with their bytes (deleting each once read) and a state machine's executions
with their input (each read once). A queue sink holding messages sent with
``DelaySeconds`` is waited for until they show, up to ``deadline`` (a read without one
does not wait); those still delayed then are counted (``SinkContents.delayed``). The
reads stop at ``deadline`` or ``MAX_SINK_MESSAGES`` and then say ``complete=False``.
Synchronous boto3 calls on the clients passed in; every failure goes through
``loadtest.aws.errors``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from loadtest.aws.errors import translated
from loadtest.aws.sinks import MadeSink, SinkClients
from loadtest.aws.target import BackendKind, Target, is_loadtest_backend
from loadtest.model.history.records import (
    EffectKind,
    SinkContents,
    SinkMessage,
    attribute_texts,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_stepfunctions import SFNClient

MAX_SINK_MESSAGES = 100_000
"""The most entries read from one sink; past it the sink's contents say ``complete=False``."""


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
            messages, complete, delayed = _read(clients, one, target, deadline, limit)
        out.append(
            SinkContents(
                name=one.sink.name,
                kind=one.sink.kind,
                address=one.address,
                messages=tuple(messages),
                complete=complete,
                fifo=one.sink.fifo,
                deduplicated=one.sink.deduplicated,
                delayed=delayed,
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
) -> tuple[list[SinkMessage], bool, int]:
    """What one sink holds: its entries, whether they are all, and how many a queue still
    held back (delayed)."""
    kind = made.sink.kind
    if kind is EffectKind.BUCKET:
        return (*_read_bucket(clients.s3, made.name, deadline, limit), 0)
    if kind is EffectKind.STATE_MACHINE:
        return (*_read_executions(clients.stepfunctions, made, deadline, limit), 0)
    url = made.address if kind is EffectKind.QUEUE else made.capture_url
    # AWS delivers a topic's or bus's messages a moment after the call, and a short poll
    # may miss a few: the last, empty receive waits there (and a second on an endpoint).
    wait_s = _LAST_RECEIVE_WAIT_S[target.kind]
    if wait_s and target.kind is BackendKind.ENDPOINT and target.endpoint_url:
        # loadtest's own backend behind an endpoint delivers within the call, as embedded.
        wait_s = 0 if is_loadtest_backend(target.endpoint_url) else wait_s
    # Only a queue sink's sender chooses a delay: a capture queue's messages are never held.
    bodies, complete, delayed = _drain(
        clients.sqs, url, deadline, limit, wait_s, delays=kind is EffectKind.QUEUE
    )
    if kind is EffectKind.BUS:
        messages = [_unwrap_event(body, attributes) for body, attributes, _ in bodies]
    elif kind is EffectKind.TOPIC:
        messages = [_unwrap_notification(body, attributes) for body, attributes, _ in bodies]
    else:
        messages = [SinkMessage(body, "", attributes, sent) for body, attributes, sent in bodies]
    return messages, complete, delayed


_LAST_RECEIVE_WAIT_S = {BackendKind.EMBEDDED: 0, BackendKind.ENDPOINT: 1, BackendKind.AWS: 5}
"""How long (in seconds) each receive of a sink's queue waits for a message: the embedded
backend (and ``loadtest serve`` behind an endpoint) delivers within the call, AWS within
moments."""


Drained = tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]
"""A message received: its body, its system attributes and its message attributes."""


LONGEST_WAIT_S = 20
"""The longest long poll SQS takes (``WaitTimeSeconds``)."""


def _delayed(sqs: SQSClient, url: str) -> int:
    """How many messages the queue holds back for their ``DelaySeconds`` (SQS's count)."""
    answer = sqs.get_queue_attributes(
        QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"]
    )
    return int(answer.get("Attributes", {}).get("ApproximateNumberOfMessagesDelayed", 0))


def _drain(
    sqs: SQSClient,
    url: str,
    deadline: float | None,
    limit: int,
    wait_s: int,
    *,
    delays: bool = False,
) -> tuple[list[Drained], bool, int]:
    """Receive and delete until an empty receive: each body with its system and message
    attributes. With ``delays``, an empty receive while the queue still holds delayed
    messages waits for them (long polls) until ``deadline``; the last value is how many
    were still delayed when the read gave up (then it is not complete)."""
    out: list[Drained] = []
    poll_s = wait_s
    while True:
        if _late(deadline):
            return out, False, _delayed(sqs, url) if delays else 0
        if len(out) >= limit:
            # Left where it is (visible again at once): only whether there is more counts.
            more = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, VisibilityTimeout=0)
            return out, not more.get("Messages"), 0
        got = sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=min(10, limit - len(out)),
            WaitTimeSeconds=poll_s,
            VisibilityTimeout=60,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        ).get("Messages", [])
        if not got:
            held = _delayed(sqs, url) if delays else 0
            if not held:
                return out, True, 0
            if deadline is None:
                return out, False, held
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                return out, False, held
            # A long poll answers as soon as the first of them shows.
            poll_s = max(1, min(LONGEST_WAIT_S, int(left_s)))
            continue
        poll_s = wait_s
        for message in got:
            attributes = tuple(
                sorted((k, str(v)) for k, v in message.get("Attributes", {}).items())
            )
            sent = attribute_texts(message.get("MessageAttributes"))
            out.append((message["Body"], attributes, sent))
        sqs.delete_message_batch(
            QueueUrl=url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
            ],
        )


def _unwrap_notification(body: str, attributes: tuple[tuple[str, str], ...]) -> SinkMessage:
    """An SNS notification as its capture queue receives it, unwrapped to the ``Message``
    the consumer published and the ``MessageAttributes`` and ``Subject`` it published it
    with."""
    try:
        notification = json.loads(body)
    except ValueError:
        return SinkMessage(body, "", attributes)
    if not isinstance(notification, dict) or not isinstance(notification.get("Message"), str):
        return SinkMessage(body, "", attributes)
    subject = notification.get("Subject")
    return SinkMessage(
        notification["Message"],
        "",
        attributes,
        attribute_texts(notification.get("MessageAttributes")),
        subject if isinstance(subject, str) else "",
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

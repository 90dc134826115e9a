"""Effects beyond the table: which calls send one, and what each entry carries.

Owns the vocabulary of an effect call (``EFFECT_APIS``, by service and operation: SNS
``Publish`` and ``PublishBatch``; SQS ``SendMessage`` and ``SendMessageBatch`` to any
queue but the ones that feed the function (to those: work sent back, recorded as
``EffectKind.SOURCE``, as the handler's own ``DeleteMessage`` and ``DeleteMessageBatch``
of a message it was given are; to that queue's dead-letter queue: a record parked, recorded
as ``EffectKind.DEAD_LETTER``); EventBridge ``PutEvents``; S3 ``PutObject``,
``CopyObject`` and ``DeleteObject``; Step Functions ``StartExecution``; Lambda
``Invoke``), planning one (``EffectPlanner.plan``: an ``EffectCall`` of one ``Entry`` per
entry sent, its payload read as text, an SNS or SQS entry's message attributes and an SNS
entry's Subject with it)
and how the explorer's steps word it (``EffectCall.describe``). The observer's own calls (``own_calls``: its lines sent to the
observation queue) are never effects. Sending one and reading its answer is
``loadtest.observer.effect_calls``'.

A request body that is a stream (an S3 object's, a Lambda payload's) is read here, before
botocore serialises it: a seekable one is put back where it was, any other is replaced by
the bytes read, so what is sent is exactly what was recorded. Must not touch botocore
(``loadtest.observer.write_observer`` installs the hooks) nor emit anything. Ships in the
observer layer.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import inspect
import io
import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote, urlsplit

from loadtest.model.history.records import EffectKind, attribute_texts

_OWN: contextvars.ContextVar[bool] = contextvars.ContextVar("loadtest_own_call", default=False)


@contextlib.contextmanager
def own_calls() -> Iterator[None]:
    """The calls made in the block (in this thread or task) are the observer's own (its
    observation lines sent to their queue): never effects, or each would observe itself."""
    token = _OWN.set(True)
    try:
        yield
    finally:
        _OWN.reset(token)


EFFECTS = "loadtest_effects"
"""The request context's key under which a planned effect call waits for its request."""
NO_ANSWER = "NoAnswer"
"""The error code of an entry whose call raised before an answer came back."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry an effect call sends (a batch call has several)."""

    sink: str
    payload: str
    key: str = ""
    dedup_id: str = ""
    group_id: str = ""
    entry_id: str = ""
    """A batch entry's ``Id`` (what its answer's ``Failed`` names); "" otherwise."""
    message_attributes: tuple[tuple[str, str], ...] = ()
    """Its SNS or SQS ``MessageAttributes`` (``attribute_texts``)."""
    subject: str = ""
    """Its SNS ``Subject``."""


@dataclass(frozen=True, slots=True)
class EffectCall:
    """One effect call, between its parameters and its answer."""

    operation: str
    """``SNS.Publish``, ``S3.PutObject``, ... (``EffectRecord.operation``)."""
    kind: EffectKind
    entries: tuple[Entry, ...]
    call_id: str
    batch: str = ""
    """How the answer names a refused entry: ``failed`` (``Failed[].Id``), ``entries``
    (``Entries[i].ErrorCode``, positional), "" for a call of one entry."""

    def describe(self) -> str:
        """The call as an explored schedule's step names it: ``publish to topic orders``."""
        words = _WORDS[self.operation]
        first = self.entries[0] if self.entries else Entry("", "")
        sinks = list(dict.fromkeys(_short(e.sink) for e in self.entries)) or [""]
        n = len(self.entries)
        plural = "" if n == 1 else "s"
        return words.format(
            messages=f"{n} message{plural}",
            events=f"{n} event{plural}",
            sink=", ".join(sinks),
            key=first.key,
            payload=first.payload,
        )

    @property
    def sinks(self) -> frozenset[str]:
        """What the call touches, for deciding what commutes: ``topic:ARN``, ..."""
        return frozenset(f"{self.kind.value}:{e.sink}" for e in self.entries)


_WORDS = {
    "SNS.Publish": "publish to topic {sink}",
    "SNS.PublishBatch": "publish {messages} to topic {sink}",
    "SQS.SendMessage": "send to queue {sink}",
    "SQS.SendMessageBatch": "send {messages} to queue {sink}",
    "EventBridge.PutEvents": "put {events} on bus {sink}",
    "S3.PutObject": "put object {key} in bucket {sink}",
    "S3.CopyObject": "copy {payload} to object {key} in bucket {sink}",
    "S3.DeleteObject": "delete object {key} in bucket {sink}",
    "StepFunctions.StartExecution": "start execution {key} of state machine {sink}",
    "Lambda.Invoke": "invoke function {sink}",
    "SQS.DeleteMessage": "delete a message of queue {sink}",
    "SQS.DeleteMessageBatch": "delete {messages} of queue {sink}",
}


def _short(sink: str) -> str:
    """A sink's name as a reader knows it: the last part of an ARN or a queue's URL."""
    if sink.startswith("arn:"):
        return sink.rsplit(":", 1)[-1]
    if "://" in sink:
        return sink.rstrip("/").rsplit("/", 1)[-1]
    return sink


def queue_identity(address: str) -> str:
    """A queue's ``ACCOUNT/NAME`` from its URL (``https://host/ACCOUNT/NAME``) or ARN
    (``arn:aws:sqs:REGION:ACCOUNT:NAME``): the same queue however the call names it."""
    if address.startswith("arn:"):
        parts = address.split(":")
        return f"{parts[4]}/{parts[5]}" if len(parts) >= 6 else address
    path = [p for p in urlsplit(address).path.split("/") if p]
    return "/".join(path[-2:]) if len(path) >= 2 else address


def payload_text(data: bytes) -> str:
    """Bytes as ``EffectRecord.payload`` keeps them: UTF-8 text, else ``base64:`` and base64."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode("ascii")


def _read_body(body: Any) -> tuple[bytes, Any]:
    """A request body's bytes, and the body to send in its place (itself, unless it was a
    stream that cannot be read twice)."""
    if body is None:
        return b"", body
    if isinstance(body, bytes | bytearray):
        return bytes(body), body
    if isinstance(body, str):
        return body.encode("utf-8"), body
    read = getattr(body, "read", None)
    if read is None or inspect.iscoroutinefunction(read):
        raise TypeError(f"a request body of type {type(body).__name__} cannot be read")
    seekable = getattr(body, "seekable", None)
    if callable(seekable) and seekable():
        position = body.tell()
        data = read()
        body.seek(position)
        return _as_bytes(data), body
    data = _as_bytes(read())
    return data, io.BytesIO(data)


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, bytes | bytearray):
        return bytes(data)
    raise TypeError(f"a request body's read() gave {type(data).__name__}")


def _text(value: Any) -> str:
    return "" if value is None else str(value)


Planned = tuple[dict[str, Any], str, EffectKind, tuple[Entry, ...], str]
"""What a planner makes of a call: (parameters to send, operation, kind, entries, batch)."""


def _publish(params: dict[str, Any]) -> Planned:
    sink = _text(params.get("TopicArn") or params.get("TargetArn") or params.get("PhoneNumber"))
    entry = Entry(
        sink,
        _text(params.get("Message")),
        dedup_id=_text(params.get("MessageDeduplicationId")),
        group_id=_text(params.get("MessageGroupId")),
        message_attributes=attribute_texts(params.get("MessageAttributes")),
        subject=_text(params.get("Subject")),
    )
    return params, "SNS.Publish", EffectKind.TOPIC, (entry,), ""


def _publish_batch(params: dict[str, Any]) -> Planned:
    sink = _text(params.get("TopicArn"))
    entries = tuple(
        Entry(
            sink,
            _text(e.get("Message")),
            dedup_id=_text(e.get("MessageDeduplicationId")),
            group_id=_text(e.get("MessageGroupId")),
            entry_id=_text(e.get("Id")),
            message_attributes=attribute_texts(e.get("MessageAttributes")),
            subject=_text(e.get("Subject")),
        )
        for e in params.get("PublishBatchRequestEntries") or []
    )
    return params, "SNS.PublishBatch", EffectKind.TOPIC, entries, "failed"


def _send(params: dict[str, Any]) -> Planned:
    entry = Entry(
        _text(params.get("QueueUrl")),
        _text(params.get("MessageBody")),
        dedup_id=_text(params.get("MessageDeduplicationId")),
        group_id=_text(params.get("MessageGroupId")),
        message_attributes=attribute_texts(params.get("MessageAttributes")),
    )
    return params, "SQS.SendMessage", EffectKind.QUEUE, (entry,), ""


def _send_batch(params: dict[str, Any]) -> Planned:
    sink = _text(params.get("QueueUrl"))
    entries = tuple(
        Entry(
            sink,
            _text(e.get("MessageBody")),
            dedup_id=_text(e.get("MessageDeduplicationId")),
            group_id=_text(e.get("MessageGroupId")),
            entry_id=_text(e.get("Id")),
            message_attributes=attribute_texts(e.get("MessageAttributes")),
        )
        for e in params.get("Entries") or []
    )
    return params, "SQS.SendMessageBatch", EffectKind.QUEUE, entries, "failed"


def _delete_message(params: dict[str, Any]) -> Planned:
    # The receipt handle stands in ``key`` until ``EffectPlanner.plan`` turns it into the
    # message's id: a handle is never recorded.
    entry = Entry(_text(params.get("QueueUrl")), "", key=_text(params.get("ReceiptHandle")))
    return params, "SQS.DeleteMessage", EffectKind.SOURCE, (entry,), ""


def _delete_message_batch(params: dict[str, Any]) -> Planned:
    sink = _text(params.get("QueueUrl"))
    entries = tuple(
        Entry(sink, "", key=_text(e.get("ReceiptHandle")), entry_id=_text(e.get("Id")))
        for e in params.get("Entries") or []
        if isinstance(e, dict)
    )
    return params, "SQS.DeleteMessageBatch", EffectKind.SOURCE, entries, "failed"


def _put_events(params: dict[str, Any]) -> Planned:
    entries = tuple(
        Entry(_text(e.get("EventBusName")) or "default", _text(e.get("Detail")))
        for e in params.get("Entries") or []
    )
    return params, "EventBridge.PutEvents", EffectKind.BUS, entries, "entries"


def _put_object(params: dict[str, Any]) -> Planned:
    data, body = _read_body(params.get("Body"))
    if body is not params.get("Body"):
        params = {**params, "Body": body}
    entry = Entry(_text(params.get("Bucket")), payload_text(data), key=_text(params.get("Key")))
    return params, "S3.PutObject", EffectKind.BUCKET, (entry,), ""


def _copy_object(params: dict[str, Any]) -> Planned:
    source = params.get("CopySource")
    if isinstance(source, dict):
        text = f"{_text(source.get('Bucket'))}/{_text(source.get('Key'))}"
        if source.get("VersionId"):
            text += f"?versionId={source['VersionId']}"
    else:
        # botocore has quoted it for the header by now: the source as the consumer named it.
        text = unquote(_text(source))
    entry = Entry(_text(params.get("Bucket")), text, key=_text(params.get("Key")))
    return params, "S3.CopyObject", EffectKind.BUCKET, (entry,), ""


def _delete_object(params: dict[str, Any]) -> Planned:
    entry = Entry(_text(params.get("Bucket")), "", key=_text(params.get("Key")))
    return params, "S3.DeleteObject", EffectKind.BUCKET, (entry,), ""


def _start_execution(params: dict[str, Any]) -> Planned:
    entry = Entry(
        _text(params.get("stateMachineArn")),
        _text(params.get("input")),
        key=_text(params.get("name")),
    )
    return params, "StepFunctions.StartExecution", EffectKind.STATE_MACHINE, (entry,), ""


def _invoke(params: dict[str, Any]) -> Planned:
    data, payload = _read_body(params.get("Payload"))
    if payload is not params.get("Payload"):
        params = {**params, "Payload": payload}
    entry = Entry(_text(params.get("FunctionName")), payload_text(data))
    return params, "Lambda.Invoke", EffectKind.FUNCTION, (entry,), ""


EFFECT_APIS: dict[tuple[str, str], Callable[[dict[str, Any]], Planned]] = {
    ("sns", "Publish"): _publish,
    ("sns", "PublishBatch"): _publish_batch,
    ("sqs", "SendMessage"): _send,
    ("sqs", "SendMessageBatch"): _send_batch,
    ("sqs", "DeleteMessage"): _delete_message,
    ("sqs", "DeleteMessageBatch"): _delete_message_batch,
    ("events", "PutEvents"): _put_events,
    ("s3", "PutObject"): _put_object,
    ("s3", "CopyObject"): _copy_object,
    ("s3", "DeleteObject"): _delete_object,
    ("stepfunctions", "StartExecution"): _start_execution,
    ("lambda", "Invoke"): _invoke,
}
"""The effect calls, by botocore's service name and operation: what the observer looks up
for every call that is not DynamoDB's (one dict lookup; anything else passes untouched)."""
EFFECT_OPERATIONS: dict[str, frozenset[str]] = {
    service: frozenset(o for s, o in EFFECT_APIS if s == service) for service, _ in EFFECT_APIS
}
"""The effect calls' operations by service: what the observer asks of every call that is not
DynamoDB's (a call to another service is one dict lookup, and nothing more)."""


UNJUDGED_SENDS: dict[str, frozenset[str]] = {
    "kinesis": frozenset({"PutRecord", "PutRecords"}),
    "firehose": frozenset({"PutRecord", "PutRecordBatch"}),
    "ses": frozenset({"SendEmail", "SendRawEmail", "SendTemplatedEmail", "SendBulkTemplatedEmail"}),
    "sesv2": frozenset({"SendEmail", "SendBulkEmail"}),
    "pinpoint": frozenset({"SendMessages", "SendUsersMessages"}),
    "pinpoint-sms-voice-v2": frozenset({"SendTextMessage", "SendVoiceMessage"}),
    "iot-data": frozenset({"Publish"}),
    "scheduler": frozenset({"CreateSchedule"}),
    "stepfunctions": frozenset({"StartSyncExecution"}),
    "lambda": frozenset({"InvokeAsync", "InvokeWithResponseStream"}),
    "apigatewaymanagementapi": frozenset({"PostToConnection"}),
}
"""Calls that deliver something downstream (a stream record, an e-mail, a message, a
schedule) to where a run cannot read it back: each is reported as a call the observer
could not judge, so a run that makes one is inconclusive rather than passed on its
table alone."""


class EffectPlanner:
    """Plans the effect calls of one function (fed by ``source_queues``, whose dead letters
    go to ``dead_letter_queues``)."""

    def __init__(
        self, source_queues: Iterable[str] = (), dead_letter_queues: Iterable[str] = ()
    ) -> None:
        self._sources: frozenset[str] = frozenset(queue_identity(q) for q in source_queues if q)
        self._dead_letters = frozenset(queue_identity(q) for q in dead_letter_queues if q)
        self._added: set[str] = set()
        self._receipts: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._prefix = f"{os.getpid()}-{time.monotonic_ns()}-e"

    def add_sources(self, addresses: Iterable[str]) -> None:
        """Queues that feed the function too (their URLs or ARNs): sends to them are not effects."""
        for address in addresses:
            if address and address not in self._added:
                self._added.add(address)
                self._sources |= {queue_identity(address)}

    def set_receipts(self, receipts: dict[str, str]) -> None:
        """The messages being handled: each one's message id by its receipt handle (what a
        delete the handler makes itself names). Read, not copied: its owner may fill it."""
        self._receipts = receipts

    def is_source(self, address: str) -> bool:
        return bool(self._sources) and queue_identity(address) in self._sources

    def plan(
        self, service: str, operation: str, params: dict[str, Any]
    ) -> tuple[dict[str, Any], EffectCall] | None:
        """The effect call ``operation`` of ``service`` makes with ``params``, and the
        parameters to send; None when it is not one. A send to a source queue is planned
        as ``EffectKind.SOURCE``: recorded, not an effect."""
        planner = EFFECT_APIS.get((service, operation))
        if planner is None or _OWN.get():
            return None
        params, name, kind, entries, batch = planner(params)
        if kind is EffectKind.SOURCE:
            # A delete: of the function's own messages, an acknowledgement by the handler
            # (recorded by the id of the message it names); of any other queue, no effect.
            if not self.is_source(_text(params.get("QueueUrl"))):
                return None
            entries = tuple(replace(e, key=self._receipts.get(e.key, "")) for e in entries)
        elif service == "sqs" and (self._sources or self._dead_letters):
            queue = queue_identity(_text(params.get("QueueUrl")))
            if queue in self._sources:
                # Work sent back to the function's own queue: recorded (the run waits for
                # it to be delivered), never judged as an effect.
                kind = EffectKind.SOURCE
            elif queue in self._dead_letters:
                # A record parked on the dead-letter queue by the handler: dead-lettered.
                kind = EffectKind.DEAD_LETTER
        return params, EffectCall(name, kind, entries, f"{self._prefix}{next(self._ids)}", batch)

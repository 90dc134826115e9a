"""How a producer's body reaches the queue: an SNS notification or an EventBridge event
around it, and the SQS message attributes sent beside it.

Owns ``[workload] envelope`` and ``[workload] attributes``: their values (``Envelope``,
``MessageAttribute``), validating them from scenario data, wrapping a rendered body in its
envelope and rendering the attributes. Also owns the per-message values derived from the
seed and the message's index instead of a clock or a random source (``derived_uuid``,
``derived_time``), so a replay sends the same bytes. Pure. Templates and where a body's
business id lives are ``loadtest.model.scenario.body``'s.

The shapes follow AWS's documentation: "Fanout to Amazon SQS queues" (an SNS-to-SQS
subscription without raw message delivery delivers the notification JSON as the SQS body,
the published message a JSON string in ``Message``, publish attributes in
``MessageAttributes`` as ``{"Type", "Value"}``) and EventBridge's "event structure
reference" (``version``, ``id``, ``detail-type``, ``source``, ``account``, ``time``,
``region``, ``resources``, ``detail``; an SQS target receives the event as its body).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from loadtest.errors import ScenarioError


class EnvelopeKind(StrEnum):
    """What wraps the producer's body on the queue."""

    NONE = "none"
    """The body as it is (a producer sending to SQS directly, or SNS raw delivery)."""
    SNS = "sns"
    """An SNS notification: the body a JSON string in ``Message``."""
    EVENTBRIDGE = "eventbridge"
    """An EventBridge event: the body the object in ``detail``."""


DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "123456789012"
DEFAULT_TOPIC_ARN = f"arn:aws:sns:{DEFAULT_REGION}:{DEFAULT_ACCOUNT}:orders"

_ENVELOPE_KEYS = {
    EnvelopeKind.NONE: set(),
    EnvelopeKind.SNS: {"topic_arn", "subject"},
    EnvelopeKind.EVENTBRIDGE: {"source", "detail_type", "account", "region", "resources"},
}


@dataclass(frozen=True)
class Envelope:
    """An envelope and the fields a scenario may set on it (the rest are derived)."""

    kind: EnvelopeKind = EnvelopeKind.NONE
    topic_arn: str = DEFAULT_TOPIC_ARN
    """SNS: the topic the notification comes from (its region names the SNS endpoints)."""
    subject: str | None = None
    """SNS: the publish Subject; absent from the notification when not given, as in SNS."""
    source: str = "com.example.orders"
    """EventBridge: ``source``."""
    detail_type: str = "OrderPlaced"
    """EventBridge: ``detail-type``."""
    account: str = DEFAULT_ACCOUNT
    region: str = DEFAULT_REGION
    resources: tuple[str, ...] = ()

    def to_raw(self) -> str | dict[str, Any]:
        """As a scenario gives it: the kind alone, or a table with the fields set."""
        default = Envelope(self.kind)
        given = {
            name: list(value) if isinstance(value, tuple) else value
            for name in sorted(_ENVELOPE_KEYS[self.kind])
            if (value := getattr(self, name)) != getattr(default, name)
        }
        return {"type": self.kind.value, **given} if given else self.kind.value


def parse_envelope(raw: Any, source: str) -> Envelope:
    """``envelope = "sns"``, or ``envelope = { type = "sns", topic_arn = "..." }``."""
    allowed = ", ".join(repr(k.value) for k in EnvelopeKind)
    where = f"{source}: workload.envelope"
    if isinstance(raw, str):
        raw = {"type": raw}
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        raise ScenarioError(
            f"{where} must be one of {allowed}, or a table with type = one of them, got {raw!r}"
        )
    try:
        kind = EnvelopeKind(raw["type"])
    except ValueError:
        raise ScenarioError(
            f"{where} = {raw['type']!r} is not allowed; allowed: {allowed}"
        ) from None
    fields = _ENVELOPE_KEYS[kind]
    unknown = sorted(set(raw) - fields - {"type"})
    if unknown:
        raise ScenarioError(
            f"{where}.{unknown[0]} is not a field of a {kind.value!r} envelope; allowed: "
            f"{', '.join(sorted(fields)) or 'none'}"
        )
    given: dict[str, Any] = {}
    for name in fields & set(raw):
        value = raw[name]
        if name == "resources":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ScenarioError(f"{where}.resources must be a list of ARNs (strings)")
            given[name] = tuple(value)
        elif not isinstance(value, str) or not value:
            raise ScenarioError(f"{where}.{name} must be a non-empty string, got {value!r}")
        else:
            given[name] = value
    if "topic_arn" in given and not re.fullmatch(
        r"arn:aws[\w-]*:sns:[\w-]+:\d{12}:.+", given["topic_arn"]
    ):
        raise ScenarioError(
            f"{where}.topic_arn = {given['topic_arn']!r} is not an SNS topic ARN "
            "(arn:aws:sns:REGION:ACCOUNT:NAME)"
        )
    if "account" in given and not re.fullmatch(r"\d{12}", given["account"]):
        raise ScenarioError(f"{where}.account = {given['account']!r} must be 12 digits")
    return Envelope(kind, **given)


# --- values derived from the seed and the message's index ------------------------------

_EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


def _digest(seed: int, index: int, purpose: str) -> bytes:
    return hashlib.blake2b(f"{seed}:{index}:{purpose}".encode(), digest_size=32).digest()


def derived_uuid(seed: int, index: int, purpose: str = "uuid") -> str:
    """A version 4 UUID for message ``index`` of a run seeded ``seed``: the same in a replay,
    different per purpose (the body's ``{uuid}``, an SNS MessageId, an event id)."""
    raw = bytearray(_digest(seed, index, purpose)[:16])
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def derived_time(seed: int, offset_ns: int) -> datetime:
    """A message's timestamp: a start derived from the seed (within 2025) plus the message's
    intended send offset, so copies sent later carry later times and a replay the same."""
    return _start(seed) + timedelta(microseconds=offset_ns // 1000)


@functools.lru_cache(maxsize=16)
def _start(seed: int) -> datetime:
    start_s = int.from_bytes(_digest(seed, 0, "start")[:4], "big") % (365 * 86_400)
    return _EPOCH + timedelta(seconds=start_s)


def iso_millis(moment: datetime) -> str:
    """``2025-03-01T12:00:00.123Z``: SNS's Timestamp form, and the body's ``{timestamp}``."""
    return moment.isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"


# --- wrapping ----------------------------------------------------------------------------


def wrap(
    envelope: Envelope,
    body: Any,
    *,
    seed: int,
    index: int,
    offset_ns: int,
    attributes: tuple[tuple[str, str, str], ...] = (),
) -> str:
    """The queue message's body: ``body`` (a JSON value) as compact JSON, or inside its
    envelope. ``attributes`` (rendered, ``(name, data type, value)``) go in an SNS
    notification's ``MessageAttributes``, as SNS delivers publish attributes."""
    text = json.dumps(body, separators=(",", ":"))
    if envelope.kind is EnvelopeKind.NONE:
        return text
    moment = derived_time(seed, offset_ns)
    if envelope.kind is EnvelopeKind.SNS:
        cert_url, unsubscribe_url = _sns_urls(envelope.topic_arn, seed)
        fields: list[tuple[str, str]] = [
            ("Type", '"Notification"'),
            ("MessageId", f'"{derived_uuid(seed, index, "sns-message-id")}"'),
            ("TopicArn", json.dumps(envelope.topic_arn)),
        ]
        if envelope.subject is not None:
            fields.append(("Subject", json.dumps(envelope.subject)))
        # Not a real signature: a handler that verifies one would refuse every message.
        signature = base64.b64encode(_digest(seed, index, "signature") * 8).decode()
        fields += [
            ("Message", json.dumps(text)),
            ("Timestamp", f'"{iso_millis(moment)}"'),
            ("SignatureVersion", '"1"'),
            ("Signature", f'"{signature}"'),
            ("SigningCertURL", json.dumps(cert_url)),
            ("UnsubscribeURL", json.dumps(unsubscribe_url)),
        ]
        if attributes:
            entries = ",\n".join(
                f'    {json.dumps(name)} : {{\n      "Type" : {json.dumps(data_type)},\n'
                f'      "Value" : {json.dumps(value)}\n    }}'
                for name, data_type, value in attributes
            )
            fields.append(("MessageAttributes", f"{{\n{entries}\n  }}"))
        # As SNS writes its notification: indented, with " : " after each name (what
        # json.dumps(indent=2, separators=(",", " : ")) writes, without its slow encoder).
        return "{\n" + ",\n".join(f'  "{name}" : {value}' for name, value in fields) + "\n}"
    event = {
        "version": "0",
        "id": derived_uuid(seed, index, "event-id"),
        "detail-type": envelope.detail_type,
        "source": envelope.source,
        "account": envelope.account,
        "time": moment.isoformat(timespec="seconds").removesuffix("+00:00") + "Z",
        "region": envelope.region,
        "resources": list(envelope.resources),
        "detail": body,
    }
    return json.dumps(event, separators=(",", ":"))


@functools.lru_cache(maxsize=16)
def _sns_urls(topic_arn: str, seed: int) -> tuple[str, str]:
    """A topic's SigningCertURL and the subscription's UnsubscribeURL."""
    region = topic_arn.split(":")[3]
    cert = hashlib.md5(topic_arn.encode(), usedforsecurity=False).hexdigest()
    return (
        f"https://sns.{region}.amazonaws.com/SimpleNotificationService-{cert}.pem",
        f"https://sns.{region}.amazonaws.com/?Action=Unsubscribe&SubscriptionArn="
        f"{topic_arn}:{derived_uuid(seed, 0, 'subscription')}",
    )


# --- message attributes ------------------------------------------------------------------

_DATA_TYPE = re.compile(r"(String|Number|Binary)(\.[A-Za-z0-9_.-]{1,256})?")
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z0-9_-](?:[A-Za-z0-9_.-]{0,254}[A-Za-z0-9_-])?")
MAX_ATTRIBUTES = 10
"""SQS takes at most ten message attributes per message."""


@dataclass(frozen=True)
class MessageAttribute:
    """One SQS message attribute the producer sends with every message."""

    name: str
    data_type: str
    """``String``, ``Number`` or ``Binary``, optionally with a ``.custom`` suffix."""
    value: str
    """The value as text (a ``Binary`` one base64); may hold ``{id}``, ``{copy}``, ... ."""

    def to_raw(self) -> Any:
        if self.data_type == "String":
            return self.value
        return {"type": self.data_type, "value": self.value}


def parse_attributes(raw: Any, source: str) -> tuple[MessageAttribute, ...]:
    """``attributes = { source = "web", priority = 5, blob = { type = "Binary", value = "AAE=" } }``."""
    where = f"{source}: workload.attributes"
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{where} must be a table of name = value, got {raw!r}")
    if len(raw) > MAX_ATTRIBUTES:
        raise ScenarioError(f"{where} has {len(raw)} attributes; SQS allows {MAX_ATTRIBUTES}")
    out = []
    for name, value in raw.items():
        here = f"{where}.{name}"
        if (
            not _ATTRIBUTE_NAME.fullmatch(name)
            or ".." in name
            or name.lower().startswith(("aws.", "amazon."))
        ):
            raise ScenarioError(
                f"{here}: not a valid SQS attribute name (1-256 letters, digits, '_', '-' and "
                "'.', no '..', not starting or ending with '.', not starting with AWS. or Amazon.)"
            )
        if isinstance(value, str):
            data_type, text = "String", value
        elif isinstance(value, int | float) and not isinstance(value, bool):
            data_type, text = "Number", str(value)
        elif isinstance(value, Mapping) and set(value) == {"type", "value"}:
            data_type, text = value["type"], value["value"]
            if not isinstance(data_type, str) or not _DATA_TYPE.fullmatch(data_type):
                raise ScenarioError(
                    f"{here}.type = {data_type!r}; allowed: String, Number or Binary, "
                    "optionally with a .custom suffix"
                )
            if isinstance(text, int | float) and not isinstance(text, bool):
                text = str(text)
            if not isinstance(text, str):
                raise ScenarioError(f"{here}.value must be a string or a number, got {text!r}")
        else:
            raise ScenarioError(
                f"{here} = {value!r}; give a string (String), a number (Number) or "
                '{ type = "Binary", value = "<base64>" }'
            )
        if data_type.startswith("Binary"):
            try:
                base64.b64decode(text, validate=True)
            except binascii.Error:
                raise ScenarioError(
                    f"{here}: a Binary value is given as base64, got {text!r}"
                ) from None
        if data_type.startswith("Number"):
            try:
                float(text)
            except ValueError:
                raise ScenarioError(
                    f"{here}: a Number value must be a number, got {text!r}"
                ) from None
        if not text:
            raise ScenarioError(f"{here}: SQS refuses an empty attribute value")
        out.append(MessageAttribute(name, data_type, text))
    return tuple(out)


def sqs_attributes(attributes: tuple[tuple[str, str, str], ...]) -> dict[str, dict[str, Any]]:
    """Rendered attributes as SendMessage's ``MessageAttributes``."""
    out: dict[str, dict[str, Any]] = {}
    for name, data_type, value in attributes:
        if data_type.startswith("Binary"):
            out[name] = {"DataType": data_type, "BinaryValue": base64.b64decode(value)}
        else:
            out[name] = {"DataType": data_type, "StringValue": value}
    return out

"""A sample message as a first scenario's body: what ``loadtest new`` reads from it.

Owns turning a sample message into a body template, an envelope and attributes
(``sample_template``): the producer's body is unwrapped from a Lambda SQS event, an SNS
notification or an EventBridge event, the business id placed as ``{id}``, per-message
values as placeholders. Pure; templates themselves are ``loadtest.model.scenario.body``'s.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loadtest.errors import InputError
from loadtest.model.scenario.body import PLACEHOLDER, describe
from loadtest.model.scenario.envelopes import EnvelopeKind

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?")
_QUANTITY = re.compile(r"(?i)(quantity|qty)")
_ID_NAMES = re.compile(r"(?i)^(id|.*[a-z]Id|.*_id)$")


@dataclass
class Sample:
    """What a sample message says: its envelope, its body as a template, and notes."""

    envelope: EnvelopeKind = EnvelopeKind.NONE
    envelope_fields: dict[str, Any] = field(default_factory=dict)
    template: dict[str, Any] = field(default_factory=dict)
    id_path: str = "id"
    """Where the business id is in the body (``order.id``)."""
    id_key: str = "id"
    """The business id's own field name (``id`` for ``order.id``)."""
    notes: list[str] = field(default_factory=list)
    """Lines for the scenario's comments: what was guessed, replaced or left out."""
    attributes: dict[str, Any] = field(default_factory=dict)


def _unwrap(message: Any, sample: Sample, source: str) -> Any:
    """The producer's body inside a sample: a Lambda SQS event's first record's body, then
    an SNS notification's ``Message`` or an EventBridge event's ``detail``."""
    if isinstance(message, Mapping) and isinstance(message.get("Records"), list):
        records = message["Records"]
        if not records or not isinstance(records[0], Mapping) or "body" not in records[0]:
            raise InputError(f"{source}: an SQS event, but its first record has no body")
        record = records[0]
        for name, value in (record.get("messageAttributes") or {}).items():
            if isinstance(value, Mapping) and "stringValue" in value:
                data_type = str(value.get("dataType", "String"))
                text = str(value["stringValue"])
                sample.attributes[name] = (
                    text if data_type == "String" else {"type": data_type, "value": text}
                )
        sample.notes.append("the sample is a Lambda SQS event: its first record's body is used")
        try:
            message = json.loads(record["body"])
        except ValueError as exc:
            raise InputError(f"{source}: the first record's body is not JSON: {exc}") from exc
    if (
        isinstance(message, Mapping)
        and message.get("Type") == "Notification"
        and isinstance(message.get("Message"), str)
    ):
        sample.envelope = EnvelopeKind.SNS
        if isinstance(message.get("TopicArn"), str):
            sample.envelope_fields["topic_arn"] = message["TopicArn"]
        if isinstance(message.get("Subject"), str):
            sample.envelope_fields["subject"] = message["Subject"]
        for name, value in (message.get("MessageAttributes") or {}).items():
            if isinstance(value, Mapping) and "Value" in value:
                data_type = str(value.get("Type", "String"))
                text = str(value["Value"])
                sample.attributes[name] = (
                    text if data_type == "String" else {"type": data_type, "value": text}
                )
        try:
            return json.loads(message["Message"])
        except ValueError as exc:
            raise InputError(
                f"{source}: an SNS notification whose Message is not JSON ({exc}); "
                "loadtest generates JSON bodies"
            ) from exc
    if isinstance(message, Mapping) and {"detail-type", "source", "detail"} <= set(message):
        sample.envelope = EnvelopeKind.EVENTBRIDGE
        sample.envelope_fields |= {
            "source": message["source"],
            "detail_type": message["detail-type"],
        }
        for name in ("account", "region"):
            if isinstance(message.get(name), str):
                sample.envelope_fields[name] = message[name]
        return message["detail"]
    return message


def _find(body: Any, id_field: str) -> list[str | int] | None:
    """The path of ``id_field`` in ``body``: a dotted path (``order.id``, a list's element by
    its index: ``lines.0.sku``), or else the first key of that name anywhere (depth first,
    in document order)."""
    if "." in id_field:
        path: list[str | int] = []
        value = body
        for part in id_field.split("."):
            if isinstance(value, Mapping) and part in value:
                value = value[part]
                path.append(part)
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
                path.append(int(part))
            else:
                return None
        return path

    def walk(value: Any, path: list[str | int]) -> list[str | int] | None:
        if isinstance(value, Mapping):
            if id_field in value:
                return [*path, id_field]
            for key, inner in value.items():
                found = walk(inner, [*path, key])
                if found is not None:
                    return found
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                found = walk(inner, [*path, index])
                if found is not None:
                    return found
        return None

    return walk(body, [])


def _guess_id(body: Mapping[str, Any]) -> str | None:
    names = [k for k, v in body.items() if _ID_NAMES.match(k) and isinstance(v, str | int)]
    return names[0] if names else None


def sample_template(message: Any, id_field: str | None, source: str) -> Sample:
    """A body template from a sample message: ``{id}`` where ``id_field`` is, per-message
    values (uuids, timestamps) as placeholders, a quantity as ``{quantity}``."""
    sample = Sample()
    body = _unwrap(message, sample, source)
    if not isinstance(body, Mapping) or not body:
        raise InputError(f"{source}: the message body is not a JSON object: {body!r:.80}")
    if id_field is None:
        id_field = _guess_id(body)
        if id_field is None:
            raise InputError(
                f"{source}: no field looks like the business id (id, orderId, order_id, ...); "
                f"name it with --id-field (fields: {', '.join(body)})"
            )
        sample.notes.append(f"the business id is guessed to be {id_field!r}: --id-field names it")
    path = _find(body, id_field)
    if path is None:
        raise InputError(
            f"--id-field {id_field!r} is not a field of the message body in {source} "
            f"(its fields: {', '.join(body)}); a nested one is named with dots: order.id, "
            "an element of a list by its index: lines.0.sku"
        )
    sample.id_path = describe(tuple(path))
    sample.id_key = next((str(p) for p in reversed(path) if isinstance(p, str)), "id")
    sample.template = _templated(body, path, [], sample)
    return sample


def _templated(value: Any, id_path: list[str | int], here: list[str | int], sample: Sample) -> Any:
    where = describe(tuple(here))
    if here == id_path:
        return "{id}"
    if isinstance(value, Mapping):
        out = {}
        for key, inner in value.items():
            name = describe((*here, str(key)))
            if inner is None:
                sample.notes.append(f"{name} is null in the sample: TOML has no null, left out")
                continue
            if isinstance(inner, str) and PLACEHOLDER.search(inner):
                sample.notes.append(
                    f"{name} holds {{...}}, which a template reads as a placeholder: left out"
                )
                continue
            out[str(key)] = _templated(inner, id_path, [*here, str(key)], sample)
        return out
    if isinstance(value, list):
        return [
            _templated(inner, id_path, [*here, index], sample)
            for index, inner in enumerate(value)
            if inner is not None
        ]
    if isinstance(value, str) and _UUID.fullmatch(value):
        sample.notes.append(f"{where} (a uuid in the sample) is a fresh {{uuid}} per message")
        return "{uuid}"
    if isinstance(value, str) and _TIMESTAMP.fullmatch(value):
        sample.notes.append(f"{where} (a time in the sample) is the message's {{timestamp}}")
        return "{timestamp}"
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and here
        and isinstance(here[-1], str)
        and _QUANTITY.search(here[-1])
    ):
        sample.notes.append(
            f"{where} is the generated {{quantity}} (1..10; another value on a conflicting resend)"
        )
        return "{quantity}"
    return value

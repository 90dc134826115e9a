"""What a message said, and whether an item carries it.

Owns the checker's loose reading of values: a typed attribute or a JSON body
value as a comparable Python value (``plain``), a message's details (the fields
``loadtest.model.body``'s shape of the body names), whether an item holds those details or names a
business id (``carries``, ``carries_id``) and the shape of a key with its
varying parts named (``key_template``). What was sent is ``sent``'s.
DynamoDB's own, exact item equality is not here: that is
``loadtest.model.updates.same_item``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from loadtest.model.body import BodyShape

_FLAT = BodyShape()

if TYPE_CHECKING:
    from collections.abc import Mapping

    from loadtest.model.history import Invocation, InvocationRef, Record, TypedItem


def plain(value: Any) -> Any:
    """A typed attribute value (or a JSON body value) as a comparable Python value."""
    if isinstance(value, dict) and len(value) == 1:
        tag, inner = next(iter(value.items()))
        if tag == "S" or tag == "B":
            return str(inner)
        if tag == "N":
            return _number(inner)
        if tag == "BOOL":
            return bool(inner)
        if tag == "NULL":
            return None
        if tag == "M" and isinstance(inner, dict):
            return {k: plain(v) for k, v in inner.items()}
        if tag == "L" and isinstance(inner, list):
            return [plain(v) for v in inner]
        if tag in ("SS", "BS") and isinstance(inner, list):
            return frozenset(str(v) for v in inner)
        if tag == "NS" and isinstance(inner, list):
            return frozenset(_number(v) for v in inner)
    return _json_value(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    return value


def _number(value: Any) -> Any:
    try:
        return Decimal(str(value)).normalize()
    except (InvalidOperation, ValueError):
        return str(value)


def _plain_item(item: TypedItem | None) -> dict[str, Any]:
    return {name: plain(value) for name, value in (item or {}).items()}


def details_of(body: str, shape: BodyShape | None = None) -> dict[str, Any] | None:
    """A message's details: the fields ``shape`` says a body's details are (by default the
    flat JSON body's fields other than the business ``id``), as comparable values."""
    details = (shape or _FLAT).details(body)
    if details is None:
        return None
    return {k: _json_value(v) for k, v in details.items()}


def carries(item: TypedItem | None, details: Mapping[str, Any]) -> bool:
    """Whether an item holds each detail: under its own name, or else as some attribute's value."""
    if item is None:
        return False
    values = _plain_item(item)
    for name, wanted in details.items():
        if name in values and _equal(values[name], wanted):
            continue
        if any(_equal(v, wanted) for v in values.values()):
            continue
        return False
    return True


def _equal(stored: Any, wanted: Any) -> bool:
    if stored == wanted:
        return True
    # A number stored as a string, or the other way round.
    if isinstance(wanted, Decimal) and isinstance(stored, str):
        return bool(_number(stored) == wanted)
    if isinstance(stored, Decimal) and isinstance(wanted, str):
        return bool(_number(wanted) == stored)
    return False


def _token(business_id: str) -> re.Pattern[str]:
    """The business id as a whole token inside a longer string ("ORDER#a", not "audit")."""
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(business_id)}(?![A-Za-z0-9])")


def carries_id(item: TypedItem | None, key: TypedItem, business_id: str) -> bool:
    """Whether an item (or its key) names the business id, whole or as a token of a value."""
    for value in list((item or {}).values()) + list(key.values()):
        text = plain(value)
        # The token needs the id as a substring; compiling it per id (one each for a run's
        # thousands of ids, past ``re``'s cache) cost more than the whole search.
        if (
            isinstance(text, str)
            and business_id in text
            and (text == business_id or _token(business_id).search(text))
        ):
            return True
    return False


# --- key templates --------------------------------------------------------------------

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"\b[0-9a-fA-F]{16,}\b")
_DIGITS = re.compile(r"\d{4,}")


def key_template(key: TypedItem, invocation: Invocation | InvocationRef) -> str:
    """The shape of a key, its varying parts named: ``{id}``, ``{messageId}``, ``{uuid}``, ..."""
    parts = []
    for name, value in key.items():
        text = str(plain(value))
        for record in sorted(invocation.records, key=lambda r: -len(r.message_id)):
            text = text.replace(record.message_id, "{messageId}")
        for business_id in sorted(
            {r.business_id for r in invocation.records if r.business_id}, key=len, reverse=True
        ):
            if text == business_id:
                text = "{id}"
            elif business_id in text:  # the token needs the id as a substring
                text = _token(business_id).sub("{id}", text)
        text = text.replace(invocation.request_id, "{requestId}")
        text = _UUID.sub("{uuid}", text)
        text = _HEX.sub("{hex}", text)
        text = _DIGITS.sub("{n}", text)
        parts.append(f"{name}={text}")
    return ", ".join(parts)


def varies_per_delivery(template: str) -> bool:
    return any(tag in template for tag in ("{messageId}", "{requestId}", "{uuid}", "{hex}", "{n}"))


def records_of(invocation: Invocation | InvocationRef, business_id: str) -> list[Record]:
    return [r for r in invocation.records if r.business_id == business_id]

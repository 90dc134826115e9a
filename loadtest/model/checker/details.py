"""What a message said, and whether an item carries it.

Owns the checker's loose reading of values: a typed attribute or a JSON body
value as a comparable Python value (``plain``), a message's details (the leaves
of the fields ``loadtest.model.scenario.body``'s shape of the body names, without the
business id), where an item keeps values (``stored_leaves``: its attributes, and
inside its maps, lists, sets and JSON strings), whether an item holds a
message's details or names a business id (``carries``, ``carries_id``), whether it
lists one among others in a set or list (``lists_id``) and the
shape of a key with its varying parts named (``key_template``). What was sent is ``sent``'s.
DynamoDB's own, exact item equality is not here: that is
``loadtest.model.dynamodb.updates.same_item``.
"""

from __future__ import annotations

import bisect
import json
import re
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from loadtest.model.scenario.body import BodyShape

_FLAT = BodyShape()

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Mapping, Sequence

    from loadtest.model.history.log import Invocation, InvocationRef, Record, TypedItem


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


# --- where a value sits: the leaves of nested maps, lists and JSON strings -------------

_MOST_DEPTH = 8
"""How deep leaves are looked for (a map in a JSON string in a map ... is rarely deeper)."""


def _parsed_json(text: str) -> Any:
    """A string that holds a JSON object or array, parsed; None for any other string."""
    stripped = text.lstrip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict | list) else None


def _leaves(path: str, value: Any, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """Each leaf under a plain value as (its path, its value): a map's entries by
    ``path.name``, a list's or set's elements by ``path[i]``, a string holding a JSON
    object or array as what it holds."""
    if depth < _MOST_DEPTH:
        if isinstance(value, str):
            parsed = _parsed_json(value)
            if parsed is not None:
                yield from _leaves(path, _json_value(parsed), depth + 1)
                return
        elif isinstance(value, dict):
            for name, inner in value.items():
                yield from _leaves(f"{path}.{name}" if path else str(name), inner, depth + 1)
            return
        elif isinstance(value, list | frozenset):
            for index, inner in enumerate(value):
                yield from _leaves(f"{path}[{index}]", inner, depth + 1)
            return
    yield path, value


def leaf_name(path: str) -> str:
    """The name a leaf is stored under: its path's last map key (``Message.quantity``:
    ``quantity``; ``items[0].sku``: ``sku``; ``tags[1]``: ``tags``)."""
    return path.rpartition(".")[2].partition("[")[0]


_NESTED_TAGS = frozenset({"M", "L", "SS", "NS", "BS"})


def _nested(value: Any) -> bool:
    """Whether a typed attribute value may hold leaves (a map, a list, a set, a JSON string)."""
    if isinstance(value, dict) and len(value) == 1:
        text = value.get("S")
        if text is None:
            return not _NESTED_TAGS.isdisjoint(value)
        if not isinstance(text, str):
            return False
        first = text[:1]
        return first in ("{", "[") or (first.isspace() and text.lstrip()[:1] in ("{", "["))
    return True


def stored_leaves(item: TypedItem | None) -> dict[str, list[Any]]:
    """An item's leaves by name: its attributes, and what its maps, lists, sets and JSON
    strings hold, each under the name it is stored under (``leaf_name``)."""
    found: dict[str, list[Any]] = {}
    for name, value in (item or {}).items():
        if not _nested(value):
            found.setdefault(name, []).append(plain(value))
            continue
        for path, leaf in _leaves(name, plain(value)):
            found.setdefault(leaf_name(path), []).append(leaf)
    return found


def stored_names(item: TypedItem | None) -> set[str]:
    """The names an item stores values under (``stored_leaves``' names)."""
    if item is None:
        return set()
    if not any(_nested(v) for v in item.values()):
        return set(item)
    return set(stored_leaves(item))


def details_of(
    body: str, shape: BodyShape | None = None, business_id: str | None = None
) -> dict[str, Any] | None:
    """A message's details: the fields ``shape`` says a body's details are (by default the
    flat JSON body's fields other than the business ``id``), read down to their leaves
    (inside nested maps, lists and JSON strings, as an SNS envelope's ``Message``) by
    path, except any leaf whose value is ``business_id``."""
    fields = (shape or _FLAT).details(body)
    if fields is None:
        return None
    details: dict[str, Any] = {}
    for name, value in fields.items():
        for path, leaf in _leaves(name, _json_value(value)):
            if business_id is not None and leaf == business_id:
                continue
            details[path] = leaf
    return details


def carries(item: TypedItem | None, details: Mapping[str, Any]) -> bool:
    """Whether an item holds each detail, anywhere in it (``stored_leaves``): under its own
    name, or else, where unambiguous, as some leaf's value (a consumer that renamed the
    field). A value is unambiguous when no other detail of the message has it: a stored
    ``2`` under another name could be either of two details that are both ``2``."""
    if item is None:
        return False
    leaves = stored_leaves(item)
    values: list[Any] | None = None
    for path, wanted in details.items():
        if any(_equal(v, wanted) for v in leaves.get(leaf_name(path), ())):
            continue
        if sum(_equal(other, wanted) for other in details.values()) > 1:
            return False
        if values is None:
            values = [v for stored in leaves.values() for v in stored]
        if any(_equal(v, wanted) for v in values):
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
    """Whether an item (or its key) names the business id, whole or as a token of a value,
    anywhere in it (its maps, lists and JSON strings too)."""
    for value in list((item or {}).values()) + list(key.values()):
        if _names_id(plain(value), business_id):
            return True
    return False


def lists_id(item: TypedItem | None, business_id: str) -> bool:
    """Whether an item names the business id as an element of a set or list (``orders``
    of a running total), at its top level or inside its maps: where an aggregate keeps
    which messages it holds, unlike a scalar that names one (``last_order``)."""
    return any(_listed(plain(value), business_id) for value in (item or {}).values())


def _listed(value: Any, business_id: str) -> bool:
    if isinstance(value, dict):
        return any(_listed(v, business_id) for v in value.values())
    if isinstance(value, list | frozenset):
        return any(_names_id(v, business_id) for v in value)
    return False


def _names_id(value: Any, business_id: str) -> bool:
    if isinstance(value, str):
        # The token needs the id as a substring; compiling it per id (one each for a run's
        # thousands of ids, past ``re``'s cache) cost more than the whole search. A JSON
        # string holding the id holds it as a token (between quotes).
        return business_id in value and (
            value == business_id or bool(_token(business_id).search(value))
        )
    if isinstance(value, dict):
        return any(_names_id(v, business_id) for v in value.values())
    if isinstance(value, list | frozenset):
        return any(_names_id(v, business_id) for v in value)
    return False


def named_id(
    value: Any, key: str, known: Collection[str], longest: int | None = None
) -> str | None:
    """The one sent business id (among ``known``) a plain value (a payload, parsed) or its
    ``key`` names, as items are searched: a leaf equal to it (inside maps, lists and JSON
    strings), else the key, else a leaf or the key holding it as a token (as ``carries_id``
    finds one); None when it names none, or several (never a guess). ``longest``: the
    longest of ``known`` (measured when not given)."""
    strings = [v for _, v in _leaves("", value) if isinstance(v, str) and v]
    exact = {v for v in strings if v in known}
    if len(exact) == 1:
        return exact.pop()
    if exact:
        return None
    if key and key in known:
        return key
    if longest is None:
        longest = max(map(len, known), default=0)
    named = {
        token
        for text in ([*strings, key] if key else strings)
        for token in _tokens(text, longest)
        if token in known
    }
    return named.pop() if len(named) == 1 else None


_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _tokens(text: str, longest: int) -> Iterator[str]:
    """Every substring of ``text`` of at most ``longest`` characters that ``_token`` would
    find as a whole token (no letter or digit just before or after it): looked up in a set,
    instead of searching the text once per business id."""
    ends = [j for j in range(1, len(text) + 1) if j == len(text) or text[j] not in _ALNUM]
    for start in range(len(text)):
        if start and text[start - 1] in _ALNUM:
            continue
        for end in ends[bisect.bisect_right(ends, start) :]:
            if end - start > longest:
                break
            yield text[start:end]


def leaves_of(value: Any) -> list[tuple[str, Any]]:
    """A plain value's leaves as (path, value), by the paths ``details_of`` gives."""
    return list(_leaves("", value))


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


def details_named(template: str, details: Sequence[Mapping[str, Any]]) -> str:
    """A key template (``key_template``) with the message's text details named where they
    stand whole in it (``id=customer#cust-1``: ``id=customer#{customer}``), so the items
    of one kind (a customer's total) share one shape whatever the message said."""
    for detail in details[:1]:
        for path, value in sorted(detail.items(), key=lambda pv: -len(str(pv[1]))):
            if isinstance(value, str) and len(value) > 1 and value in template:
                template = _token(value).sub("{" + leaf_name(path) + "}", template)
    return template


def varies_per_delivery(template: str) -> bool:
    return any(tag in template for tag in ("{messageId}", "{requestId}", "{uuid}", "{hex}", "{n}"))


def records_of(invocation: Invocation | InvocationRef, business_id: str) -> list[Record]:
    return [r for r in invocation.records if r.business_id == business_id]

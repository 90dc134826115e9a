"""The observer's vocabulary of a call: a ``Call`` of ``Part``s (one item's write each), between
a DynamoDB call's parameters and its answer, and the pure rules read off a request.

Owns ``Call`` and ``Part``, which calls are reads (``READ_APIS``), a condition as a person
would write it (``readable_condition``), a key condition that requires an absent item
(``key_condition_absent``), the legacy ``AttributeUpdates`` as the update expression it
stands for (``legacy_update``) and a transaction's idempotency token (``idempotency``).
Planning a call is ``loadtest.observer.plans``'; reading its answer
``loadtest.observer.answers``'. Ships in the observer layer; touches no botocore.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.dynamodb.updates import (
    UpdateNotUnderstood,
    noop_when_present,
    replaces_what_it_sets,
)
from loadtest.model.history.log import TypedItem

READ_APIS = frozenset(
    {
        "GetItem",
        "BatchGetItem",
        "TransactGetItems",
        "Query",
        "Scan",
        "DescribeTable",
        "DescribeTimeToLive",
        "ListTagsOfResource",
        "DescribeContinuousBackups",
        "DescribeContributorInsights",
        "DescribeKinesisStreamingDestination",
        "DescribeTableReplicaAutoScaling",
    }
)
"""DynamoDB calls that never change an item: not writes, nothing to observe."""

_NAME = re.compile(r"#[A-Za-z0-9_]+")


def readable_condition(expression: str | None, names: Mapping[str, str] | None) -> str | None:
    """A condition with its ``#name`` placeholders replaced, as a person would write it."""
    if not expression:
        return None
    names = names or {}
    return _NAME.sub(lambda m: names.get(m.group(0), m.group(0)), expression)


@dataclass
class Part:
    """One item's write inside a call."""

    operation: str
    key: TypedItem
    condition: str | None
    requested: TypedItem | None = None
    """A put's item; for an update, filled in once the old image is known."""
    update: tuple[str, dict[str, str], dict[str, Any]] | None = None
    """An update's (expression, names, values)."""
    deletes: bool = False
    absent_before: bool = False
    """The write can only succeed on an absent item (INSERT, attribute_not_exists on the key)."""
    before_from_response: bool = False
    """The answer carries this part's old image."""
    after_from_response: bool = False
    """The answer carries the item after (the consumer asked for ALL_NEW)."""
    noop: bool = False
    replaces: bool = False
    """What it stores comes from the request alone (a put, ``SET p = :v``, ``REMOVE``):
    ``WriteRecord.replaces``."""
    added_rvoccf: bool = False


@dataclass
class Call:
    """One API call being observed, between its parameters and its answer."""

    operation: str
    call_id: str
    parts: list[Part]
    added_rv: bool = False
    added_rvoccf: bool = False
    added_returning: bool = False
    kind: str = "single"
    """single | batch | transact | partiql | partiql-batch | partiql-transact | read"""
    read_key: TypedItem | None = None
    """A read's key lookup; None for a read that is not one (Query, Scan, BatchGetItem,
    TransactGetItems): the race window follows it, no read record does."""
    consistent: bool = False
    positions: list[int] = field(default_factory=list)
    """For multi-item calls: each part's index in the request (answers are positional)."""
    table_ref: str = ""
    """How a batch named the table (its name or ARN): the key of its answer's unprocessed items."""
    idempotency: str = ""
    """A TransactWriteItems or ExecuteTransaction call's ClientRequestToken with a digest of
    its request (``WriteRecord.idempotency``); empty without a token."""


def key_condition_absent(condition: str | None, key_names: tuple[str, ...]) -> bool:
    """Whether a condition requires the item to be absent (``attribute_not_exists`` on a key)."""
    if not condition:
        return False
    compact = condition.replace(" ", "")
    if " OR " in condition.upper():
        return False
    return any(f"attribute_not_exists({name})" in compact for name in key_names)


Planned = tuple[dict[str, Any], Call]
"""The parameters to send (with what the observer added) and the call to observe."""

Unobserved = Callable[[str, str], None]
"""Reports a call to the watched table the observer cannot interpret: (operation, reason)."""


def idempotency(params: dict[str, Any]) -> str:
    """A transaction call's ClientRequestToken with a digest of its request, or "" without
    a token (``Call.idempotency``)."""
    token = params.get("ClientRequestToken")
    if not token:
        return ""
    request = json.dumps(params, sort_keys=True, default=repr).encode()
    return f"{token}:{hashlib.sha256(request).hexdigest()}"


def legacy_update(
    attribute_updates: Mapping[str, Any],
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """The update expression (with its names and values) that does what the legacy
    ``AttributeUpdates`` does: PUT sets, DELETE without a value removes, DELETE with a set
    takes its elements out, ADD adds a number or a set's elements (as the expression's ADD)
    and appends a list (which the expression's ADD cannot)."""
    actions: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": [], "DELETE": []}
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    for n, (attribute, change) in enumerate(attribute_updates.items()):
        name, value = f"#legacy{n}", f":legacy{n}"
        names[name] = attribute
        action = str(change.get("Action", "PUT")) if isinstance(change, Mapping) else ""
        given = change.get("Value") if isinstance(change, Mapping) else None
        if action == "PUT" and given is not None:
            actions["SET"].append(f"{name} = {value}")
        elif action == "DELETE" and given is None:
            actions["REMOVE"].append(name)
        elif action in ("ADD", "DELETE") and isinstance(given, Mapping) and "L" not in given:
            actions[action].append(f"{name} {value}")
        elif action == "ADD" and isinstance(given, Mapping):
            actions["SET"].append(f"{name} = list_append(if_not_exists({name}, :legacy), {value})")
            values[":legacy"] = {"L": []}
        else:
            raise UpdateNotUnderstood(f"{action or 'no'} action on {attribute!r} not understood")
        if given is not None:
            values[value] = given
    expression = " ".join(f"{verb} {', '.join(done)}" for verb, done in actions.items() if done)
    return expression, names, values


def safe_noop(expression: str, names: Mapping[str, str] | None) -> bool:
    try:
        return noop_when_present(expression, names)
    except UpdateNotUnderstood:
        return False


def update_part(
    part: Part, expression: str, names: Mapping[str, str] | None, values: Mapping[str, Any]
) -> None:
    """Give ``part`` its update expression and what the expression says of it."""
    part.update = (expression, dict(names or {}), dict(values))
    part.noop = safe_noop(expression, names)
    part.replaces = replaces_what_it_sets(expression, names)

"""Planning an observed call: a DynamoDB call's parameters in, the call to observe out.

Owns what the observer understands of each API's request (PutItem, UpdateItem,
DeleteItem, BatchWriteItem, TransactWriteItems, and the PartiQL calls
ExecuteStatement, BatchExecuteStatement, ExecuteTransaction): which items a call
writes, under which condition (the legacy ``Expected`` shown as given), what it
stores (the legacy ``AttributeUpdates`` read as the update expression it stands for,
``legacy_update``), and what the observer adds to the request so the
answer carries the item before (``ReturnValues=ALL_OLD``,
``ReturnValuesOnConditionCheckFailure=ALL_OLD``, ``RETURNING ALL OLD *``). The
result is a ``Call`` of ``Part``s that ``loadtest.observer.answers``
reads the answer against. Must not touch botocore (``loadtest.observer.write_observer``
installs the hooks) nor emit records beyond reporting a call it cannot interpret.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.history import TypedItem
from loadtest.model.partiql import Dml, StatementNotUnderstood, parse, with_returning_all_old
from loadtest.model.updates import UpdateNotUnderstood, noop_when_present

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


class CallPlanner:
    """Plans the observed calls of one table (keyed by ``key_names``)."""

    def __init__(
        self, table_name: str, key_names: tuple[str, ...], *, unobserved: Unobserved
    ) -> None:
        self.table_name = table_name
        self.key_names = key_names
        self._unobserved = unobserved
        self._ids = itertools.count(1)
        self._prefix = f"{os.getpid()}-{time.monotonic_ns()}"

    def watches(self, table: Any) -> bool:
        """Whether a request's ``TableName`` is the watched table: its name, or its ARN
        (``arn:aws:dynamodb:<region>:<account>:table/<name>``, which DynamoDB takes too)."""
        return table == self.table_name or (
            isinstance(table, str)
            and table.startswith("arn:")
            and table.endswith(f":table/{self.table_name}")
        )

    def plan(self, operation: str, params: dict[str, Any]) -> Planned | None:
        """The call to observe for ``operation`` with ``params``, or None (not the watched
        table's write or read); a watched call it does not understand is reported."""
        planner = _PLANNERS.get(operation)
        if planner is not None:
            return planner(self, params)
        if self.watches(params.get("TableName")) and operation not in READ_APIS:
            self._unobserved(operation, "not a call the observer understands")
        return None

    def _new_call(self, operation: str, parts: list[Part], **kwargs: Any) -> Call:
        return Call(operation, f"{self._prefix}-{next(self._ids)}", parts, **kwargs)

    def _key_of(self, item: TypedItem | None) -> TypedItem:
        item = item or {}
        return {k: item[k] for k in self.key_names if k in item}

    def _plan_get(self, params: dict[str, Any]) -> Planned | None:
        if not self.watches(params.get("TableName")):
            return None
        call = self._new_call("GetItem", [], kind="read")
        call.read_key = dict(params.get("Key") or {})
        call.consistent = bool(params.get("ConsistentRead"))
        return params, call

    def _plan_search(
        self, operation: str, params: dict[str, Any], tables: list[Any]
    ) -> Planned | None:
        """A read of the table that is not one key lookup: planned for the race window only."""
        if not any(self.watches(table) for table in tables):
            return None
        return params, self._new_call(operation, [], kind="read")

    def _plan_query(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_search("Query", params, [params.get("TableName")])

    def _plan_scan(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_search("Scan", params, [params.get("TableName")])

    def _plan_batch_get(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_search("BatchGetItem", params, list(params.get("RequestItems") or {}))

    def _plan_transact_get(self, params: dict[str, Any]) -> Planned | None:
        tables = [
            entry.get("Get", {}).get("TableName")
            for entry in params.get("TransactItems") or []
            if isinstance(entry, dict)
        ]
        return self._plan_search("TransactGetItems", params, tables)

    def _plan_single(self, operation: str, params: dict[str, Any]) -> Planned | None:
        if not self.watches(params.get("TableName")):
            return None
        params = dict(params)
        names = params.get("ExpressionAttributeNames")
        condition = readable_condition(params.get("ConditionExpression"), names)
        if params.get("Expected"):
            # The legacy condition: judged by the images like any other, shown as given.
            condition = f"Expected {json.dumps(params['Expected'], sort_keys=True)}"
            if params.get("ConditionalOperator"):
                condition += f" ConditionalOperator {params['ConditionalOperator']}"
        expression = params.get("UpdateExpression")
        values = params.get("ExpressionAttributeValues")
        if not expression and params.get("AttributeUpdates"):
            # The legacy update is an update expression written another way.
            try:
                expression, names, values = legacy_update(params["AttributeUpdates"])
            except UpdateNotUnderstood as exc:
                self._unobserved(operation, f"legacy parameter AttributeUpdates: {exc}")
        call = self._new_call(operation, [])
        asked = params.get("ReturnValues", "NONE")
        if asked == "NONE":
            params["ReturnValues"] = "ALL_OLD"
            call.added_rv = True
        if (params.get("ConditionExpression") or params.get("Expected")) and params.get(
            "ReturnValuesOnConditionCheckFailure", "NONE"
        ) == "NONE":
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            call.added_rvoccf = True
        before_known = params["ReturnValues"] == "ALL_OLD"
        if operation == "PutItem":
            item = dict(params.get("Item") or {})
            part = Part(operation, self._key_of(item), condition, requested=item)
        elif operation == "DeleteItem":
            part = Part(operation, dict(params.get("Key") or {}), condition, deletes=True)
        else:
            part = Part(operation, dict(params.get("Key") or {}), condition)
            if expression:
                part.update = (str(expression), dict(names or {}), dict(values or {}))
                part.noop = safe_noop(str(expression), names)
            part.after_from_response = params["ReturnValues"] == "ALL_NEW"
        part.before_from_response = before_known
        part.absent_before = key_condition_absent(condition, self.key_names)
        call.parts.append(part)
        return params, call

    def _plan_put(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_single("PutItem", params)

    def _plan_update(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_single("UpdateItem", params)

    def _plan_delete(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_single("DeleteItem", params)

    def _plan_batch(self, params: dict[str, Any]) -> Planned | None:
        request_items = params.get("RequestItems") or {}
        table_ref = next((table for table in request_items if self.watches(table)), None)
        requests = request_items.get(table_ref) if table_ref is not None else None
        if not requests:
            return None
        parts = []
        for request in requests:
            if "PutRequest" in request:
                item = dict(request["PutRequest"].get("Item") or {})
                parts.append(Part("BatchWriteItem.Put", self._key_of(item), None, requested=item))
            else:
                key = dict(request.get("DeleteRequest", {}).get("Key") or {})
                parts.append(Part("BatchWriteItem.Delete", key, None, deletes=True))
        return params, self._new_call("BatchWriteItem", parts, kind="batch", table_ref=table_ref)

    def _plan_transact(self, params: dict[str, Any]) -> Planned | None:
        entries = list(params.get("TransactItems") or [])
        watched = [
            (index, kind)
            for index, entry in enumerate(entries)
            for kind, body in entry.items()
            if kind in ("Put", "Update", "Delete") and self.watches(body.get("TableName"))
        ]
        if not watched:
            return None
        params = dict(params)
        entries = [dict(entry) for entry in entries]
        params["TransactItems"] = entries
        parts: list[Part | None] = [None] * len(entries)
        for index, kind in watched:
            body = dict(entries[index][kind])
            names = body.get("ExpressionAttributeNames")
            condition = readable_condition(body.get("ConditionExpression"), names)
            added = False
            if condition and body.get("ReturnValuesOnConditionCheckFailure", "NONE") == "NONE":
                body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
                added = True
            entries[index] = {**entries[index], kind: body}
            operation = f"TransactWriteItems.{kind}"
            if kind == "Put":
                item = dict(body.get("Item") or {})
                part = Part(operation, self._key_of(item), condition, requested=item)
            else:
                part = Part(
                    operation, dict(body.get("Key") or {}), condition, deletes=kind == "Delete"
                )
                if kind == "Update" and body.get("UpdateExpression"):
                    expression = str(body["UpdateExpression"])
                    part.update = (
                        expression,
                        dict(names or {}),
                        dict(body.get("ExpressionAttributeValues") or {}),
                    )
                    part.noop = safe_noop(expression, names)
            part.absent_before = key_condition_absent(condition, self.key_names)
            part.added_rvoccf = added
            parts[index] = part
        call = self._new_call("TransactWriteItems", [p for p in parts if p], kind="transact")
        call.positions = [i for i, p in enumerate(parts) if p]
        call.idempotency = _idempotency(params)
        return params, call

    # --- PartiQL ----------------------------------------------------------------

    def _parse(self, statement: str, parameters: Any) -> Dml | None:
        """The statement's meaning, or None when it is not about the watched table."""
        try:
            dml = parse(statement, parameters, self.key_names)
        except StatementNotUnderstood as exc:
            if self.table_name in statement:
                raise
            del exc
            return None
        return dml if dml.table == self.table_name else None

    def _dml_part(self, prefix: str, dml: Dml) -> Part | None:
        operation = f"{prefix}.{dml.kind}"
        if dml.kind == "INSERT":
            return Part(operation, dml.key, dml.condition, requested=dml.item, absent_before=True)
        if dml.kind == "DELETE":
            return Part(operation, dml.key, dml.condition, deletes=True)
        if dml.kind == "UPDATE":
            part = Part(operation, dml.key, dml.condition)
            if dml.update_expression:
                part.update = (dml.update_expression, dict(dml.names), dict(dml.values))
                part.noop = safe_noop(dml.update_expression, dml.names)
            return part
        return None

    def _plan_statement(self, params: dict[str, Any]) -> Planned | None:
        statement = str(params.get("Statement", ""))
        try:
            dml = self._parse(statement, params.get("Parameters"))
        except StatementNotUnderstood as exc:
            self._unobserved("ExecuteStatement", str(exc))
            return None
        if dml is None:
            return None
        if dml.kind == "SELECT":
            call = self._new_call("ExecuteStatement.SELECT", [], kind="read")
            call.read_key = dml.key or None
            call.consistent = bool(params.get("ConsistentRead"))
            return params, call
        part = self._dml_part("ExecuteStatement", dml)
        if part is None:
            return None
        params = dict(params)
        call = self._new_call("ExecuteStatement", [part], kind="partiql")
        if dml.kind in ("UPDATE", "DELETE"):
            if dml.returning is None:
                params["Statement"] = with_returning_all_old(statement)
                call.added_returning = True
                part.before_from_response = True
            elif dml.returning.upper().replace(" ", "") == "ALLOLD*":
                part.before_from_response = True
        if params.get("ReturnValuesOnConditionCheckFailure", "NONE") == "NONE":
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            call.added_rvoccf = True
        return params, call

    def _plan_statements(
        self, operation: str, params: dict[str, Any], list_key: str
    ) -> Planned | None:
        parts: list[Part | None] = []
        for entry in params.get(list_key) or []:
            statement = str(entry.get("Statement", ""))
            try:
                dml = self._parse(statement, entry.get("Parameters"))
            except StatementNotUnderstood as exc:
                self._unobserved(operation, str(exc))
                parts.append(None)
                continue
            parts.append(self._dml_part(operation, dml) if dml is not None else None)
        if not any(parts):
            return None
        kind = "partiql-transact" if operation == "ExecuteTransaction" else "partiql-batch"
        call = self._new_call(operation, [p for p in parts if p], kind=kind)
        call.positions = [i for i, p in enumerate(parts) if p]
        if operation == "ExecuteTransaction":
            call.idempotency = _idempotency(params)
        return params, call

    def _plan_batch_statement(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_statements("BatchExecuteStatement", params, "Statements")

    def _plan_transaction(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_statements("ExecuteTransaction", params, "TransactStatements")


def _idempotency(params: dict[str, Any]) -> str:
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


_PLANNERS: dict[str, Callable[[CallPlanner, dict[str, Any]], Planned | None]] = {
    "GetItem": CallPlanner._plan_get,
    "Query": CallPlanner._plan_query,
    "Scan": CallPlanner._plan_scan,
    "BatchGetItem": CallPlanner._plan_batch_get,
    "TransactGetItems": CallPlanner._plan_transact_get,
    "PutItem": CallPlanner._plan_put,
    "UpdateItem": CallPlanner._plan_update,
    "DeleteItem": CallPlanner._plan_delete,
    "BatchWriteItem": CallPlanner._plan_batch,
    "TransactWriteItems": CallPlanner._plan_transact,
    "ExecuteStatement": CallPlanner._plan_statement,
    "BatchExecuteStatement": CallPlanner._plan_batch_statement,
    "ExecuteTransaction": CallPlanner._plan_transaction,
}

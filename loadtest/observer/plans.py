"""Planning an observed call: a DynamoDB call's parameters in, the call to observe out.

Owns what the observer understands of each API's request (PutItem, UpdateItem,
DeleteItem, BatchWriteItem, TransactWriteItems, and the PartiQL calls
ExecuteStatement, BatchExecuteStatement, ExecuteTransaction): which items a call
writes, under which condition (the legacy ``Expected`` shown as given), what it
stores (the legacy ``AttributeUpdates`` read as the update expression it stands for,
``legacy_update``), and what the observer adds to the request so the
answer carries the item before (``ReturnValues=ALL_OLD``,
``ReturnValuesOnConditionCheckFailure=ALL_OLD``, ``RETURNING ALL OLD *``). The
result is a ``Call`` of ``Part``s (``loadtest.observer.calls``, re-exported here) that
``loadtest.observer.answers`` reads the answer against. Must not touch botocore (``loadtest.observer.write_observer``
installs the hooks) nor emit records beyond reporting a call it cannot interpret.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Callable
from typing import Any

from loadtest.model.dynamodb.partiql.statements import (
    Dml,
    StatementNotUnderstood,
    parse,
    with_returning_all_old,
)
from loadtest.model.dynamodb.updates import UpdateNotUnderstood
from loadtest.model.history.log import TypedItem
from loadtest.observer.calls import READ_APIS as READ_APIS
from loadtest.observer.calls import Call as Call
from loadtest.observer.calls import Part as Part
from loadtest.observer.calls import Planned as Planned
from loadtest.observer.calls import Unobserved as Unobserved
from loadtest.observer.calls import idempotency, update_part
from loadtest.observer.calls import key_condition_absent as key_condition_absent
from loadtest.observer.calls import legacy_update as legacy_update
from loadtest.observer.calls import readable_condition as readable_condition
from loadtest.observer.calls import safe_noop as safe_noop


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
            part = Part(operation, self._key_of(item), condition, requested=item, replaces=True)
        elif operation == "DeleteItem":
            part = Part(operation, dict(params.get("Key") or {}), condition, deletes=True)
        else:
            part = Part(operation, dict(params.get("Key") or {}), condition)
            if expression:
                update_part(part, str(expression), names, values or {})
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
                parts.append(
                    Part(
                        "BatchWriteItem.Put",
                        self._key_of(item),
                        None,
                        requested=item,
                        replaces=True,
                    )
                )
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
                part = Part(operation, self._key_of(item), condition, requested=item, replaces=True)
            else:
                part = Part(
                    operation, dict(body.get("Key") or {}), condition, deletes=kind == "Delete"
                )
                if kind == "Update" and body.get("UpdateExpression"):
                    update_part(
                        part,
                        str(body["UpdateExpression"]),
                        names,
                        body.get("ExpressionAttributeValues") or {},
                    )
            part.absent_before = key_condition_absent(condition, self.key_names)
            part.added_rvoccf = added
            parts[index] = part
        call = self._new_call("TransactWriteItems", [p for p in parts if p], kind="transact")
        call.positions = [i for i, p in enumerate(parts) if p]
        call.idempotency = idempotency(params)
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
                update_part(part, dml.update_expression, dml.names, dml.values)
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
            call.idempotency = idempotency(params)
        return params, call

    def _plan_batch_statement(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_statements("BatchExecuteStatement", params, "Statements")

    def _plan_transaction(self, params: dict[str, Any]) -> Planned | None:
        return self._plan_statements("ExecuteTransaction", params, "TransactStatements")


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

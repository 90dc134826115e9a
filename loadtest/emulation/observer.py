"""The write observer: records every DynamoDB write a consumer makes to one table.

Runs inside an execution environment (and, deployed, inside the function). It
wraps two private botocore methods every boto3 client and resource goes
through, so the consumer's code is unchanged:

- ``BaseClient._emit_api_params`` returns the request parameters *after*
  boto3's resource layer has turned native values and condition objects
  (``Attr("id").not_exists()``) into DynamoDB's typed wire form. The observer
  reads them there (so what it records is always plain JSON), and asks for
  the item before when the consumer did not: ``ReturnValues=ALL_OLD``,
  ``ReturnValuesOnConditionCheckFailure=ALL_OLD``, ``RETURNING ALL OLD *``.
- ``BaseClient._make_request`` sends the request and parses the answer. The
  observer reads the answer there, before any after-call handler, records the
  decision, and strips what it added so the consumer sees exactly the
  response it asked for.

The item before comes from the write's own old image, returned atomically by
the same request; the item after from the request (a put's item, an update
expression applied to the old image). A separate read would race the very
writes being observed.

Every write API is understood: PutItem, UpdateItem, DeleteItem,
BatchWriteItem, TransactWriteItems, ExecuteStatement, BatchExecuteStatement,
ExecuteTransaction. A call to the watched table it cannot interpret is
reported as unobserved, never ignored; a failure of the observer itself is
reported as the observer's, and the consumer's call goes ahead untouched.

Each observation is handed to ``sink`` as one encoded line the moment it is
made (``loadtest.model.observation``), so it survives the invocation dying.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from botocore.client import BaseClient

from loadtest.model.history import (
    ObserverFault,
    ReadRecord,
    TypedItem,
    UnobservedCall,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.observation import Observation, WriteBegun, encode
from loadtest.model.partiql import Dml, StatementNotUnderstood, parse, with_returning_all_old
from loadtest.model.updates import UpdateNotUnderstood, apply_update, noop_when_present

Sink = Callable[[str], None]

READ_APIS = frozenset(
    {
        "GetItem",
        "BatchGetItem",
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

_PENDING = "loadtest_observation"
_NAME = re.compile(r"#[A-Za-z0-9_]+")
_REJECTIONS = frozenset({"ConditionalCheckFailedException", "DuplicateItemException"})
_PART_REJECTIONS = frozenset({"ConditionalCheckFailed", "DuplicateItem"})


def readable_condition(expression: str | None, names: Mapping[str, str] | None) -> str | None:
    """A condition with its ``#name`` placeholders replaced, as a person would write it."""
    if not expression:
        return None
    names = names or {}
    return _NAME.sub(lambda m: names.get(m.group(0), m.group(0)), expression)


@dataclass
class _Part:
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
class _Call:
    """One API call being observed, between its parameters and its answer."""

    operation: str
    call_id: str
    parts: list[_Part]
    added_rv: bool = False
    added_rvoccf: bool = False
    added_returning: bool = False
    kind: str = "single"
    """single | batch | transact | partiql | partiql-batch | partiql-transact | read"""
    read_key: TypedItem | None = None
    consistent: bool = False
    positions: list[int] = field(default_factory=list)
    """For multi-item calls: each part's index in the request (answers are positional)."""


def _key_condition_absent(condition: str | None, key_names: tuple[str, ...]) -> bool:
    """Whether a condition requires the item to be absent (``attribute_not_exists`` on a key)."""
    if not condition:
        return False
    compact = condition.replace(" ", "")
    if " OR " in condition.upper():
        return False
    return any(f"attribute_not_exists({name})" in compact for name in key_names)


class WriteObserver:
    """Observes one table's writes for the process it is installed in."""

    def __init__(
        self,
        table_name: str,
        key_names: tuple[str, ...] = ("id",),
        *,
        sink: Sink,
        race_window_s: float = 0.0,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.table_name = table_name
        self.key_names = key_names
        self.sink = sink
        self.race_window_s = race_window_s
        """An injected pause after each read of the table (a labelled fault)."""
        self.request_id = ""
        """The invocation in progress; set by the execution environment."""
        self.clock = clock
        self._armed_s = 0.0
        self._arm_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._prefix = f"{os.getpid()}-{time.monotonic_ns()}"
        self._originals: tuple[Callable[..., Any], Callable[..., Any]] | None = None

    # --- the handler-duration fault -------------------------------------------

    def arm(self, delay_s: float) -> None:
        """Sleep ``delay_s`` before this invocation's first write (the handler-duration fault).

        Slow work sits between what a handler checked and what it writes — the
        window in which a redelivery of the same message can act on the same
        stale check.
        """
        self._armed_s = delay_s

    def disarm(self) -> None:
        """End of the invocation: a handler that wrote nothing still takes its duration."""
        self._before_write()

    def _before_write(self) -> None:
        with self._arm_lock:
            delay, self._armed_s = self._armed_s, 0.0
        if delay > 0:
            time.sleep(delay)

    # --- output -----------------------------------------------------------------

    def _emit(self, observation: Observation) -> None:
        self.sink(encode(observation))

    def _fault(self, operation: str, exc: BaseException) -> None:
        # If the sink itself fails, nothing more can be said.
        with contextlib.suppress(Exception):
            self._emit(ObserverFault(operation, f"{type(exc).__name__}: {exc}", self.request_id))

    # --- installation -------------------------------------------------------------

    def install(self) -> None:
        """Wrap botocore for this process (idempotent)."""
        if self._originals is not None:
            return
        observer = self
        # Private botocore methods, absent from the type stubs: hence getattr.
        original_emit: Callable[..., dict[str, Any]] = getattr(BaseClient, "_emit_api_params")  # noqa: B009
        original_request: Callable[..., Any] = getattr(BaseClient, "_make_request")  # noqa: B009

        def emit_api_params(
            client: BaseClient, api_params: dict[str, Any], operation_model: Any, context: Any
        ) -> dict[str, Any]:
            params = original_emit(client, api_params, operation_model, context)
            if client.meta.service_model.service_name != "dynamodb" or not isinstance(
                context, dict
            ):
                return params
            name = str(operation_model.name)
            try:
                planned = observer._plan(name, params)
            except Exception as exc:
                observer._fault(name, exc)
                return params
            if planned is None:
                return params
            new_params, call = planned
            context[_PENDING] = call
            return new_params

        def make_request(
            client: BaseClient, operation_model: Any, request_dict: Any, request_context: Any
        ) -> Any:
            call = request_context.get(_PENDING) if isinstance(request_context, dict) else None
            if not isinstance(call, _Call):
                return original_request(client, operation_model, request_dict, request_context)
            del request_context[_PENDING]  # a retry of the whole call is observed afresh
            return observer._send(
                call,
                lambda: original_request(client, operation_model, request_dict, request_context),
            )

        setattr(BaseClient, "_emit_api_params", emit_api_params)  # noqa: B010
        setattr(BaseClient, "_make_request", make_request)  # noqa: B010
        self._originals = (original_emit, original_request)

    def uninstall(self) -> None:
        """Put botocore back as it was (for observing inside a process that goes on)."""
        if self._originals is None:
            return
        original_emit, original_request = self._originals
        self._originals = None
        setattr(BaseClient, "_emit_api_params", original_emit)  # noqa: B010
        setattr(BaseClient, "_make_request", original_request)  # noqa: B010

    # --- planning: parameters in, the call to observe out -------------------------

    def _new_call(self, operation: str, parts: list[_Part], **kwargs: Any) -> _Call:
        return _Call(operation, f"{self._prefix}-{next(self._ids)}", parts, **kwargs)

    def _key_of(self, item: TypedItem | None) -> TypedItem:
        item = item or {}
        return {k: item[k] for k in self.key_names if k in item}

    def _plan(self, operation: str, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        planner = _PLANNERS.get(operation)
        if planner is not None:
            return planner(self, params)
        if params.get("TableName") == self.table_name and operation not in READ_APIS:
            self._emit(
                UnobservedCall(operation, "not a call the observer understands", self.request_id)
            )
        return None

    def _plan_get(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        if params.get("TableName") != self.table_name:
            return None
        call = self._new_call("GetItem", [], kind="read")
        call.read_key = dict(params.get("Key") or {})
        call.consistent = bool(params.get("ConsistentRead"))
        return params, call

    def _plan_single(
        self, operation: str, params: dict[str, Any]
    ) -> tuple[dict[str, Any], _Call] | None:
        if params.get("TableName") != self.table_name:
            return None
        params = dict(params)
        names = params.get("ExpressionAttributeNames")
        condition = readable_condition(params.get("ConditionExpression"), names)
        if params.get("Expected"):
            # The legacy condition: judged by the images like any other, shown as given.
            condition = f"Expected {json.dumps(params['Expected'], sort_keys=True)}"
        if params.get("AttributeUpdates"):
            # The legacy update: its result cannot be computed, so the item after is unknown.
            self._emit(
                UnobservedCall(
                    operation,
                    "legacy parameter AttributeUpdates is not interpreted",
                    self.request_id,
                )
            )
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
            part = _Part(operation, self._key_of(item), condition, requested=item)
        elif operation == "DeleteItem":
            part = _Part(operation, dict(params.get("Key") or {}), condition, deletes=True)
        else:
            expression = params.get("UpdateExpression")
            part = _Part(operation, dict(params.get("Key") or {}), condition)
            if expression:
                part.update = (
                    str(expression),
                    dict(names or {}),
                    dict(params.get("ExpressionAttributeValues") or {}),
                )
                part.noop = _safe_noop(str(expression), names)
            part.after_from_response = params["ReturnValues"] == "ALL_NEW"
        part.before_from_response = before_known
        part.absent_before = _key_condition_absent(condition, self.key_names)
        call.parts.append(part)
        return params, call

    def _plan_put(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        return self._plan_single("PutItem", params)

    def _plan_update(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        return self._plan_single("UpdateItem", params)

    def _plan_delete(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        return self._plan_single("DeleteItem", params)

    def _plan_batch(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        requests = (params.get("RequestItems") or {}).get(self.table_name)
        if not requests:
            return None
        parts = []
        for request in requests:
            if "PutRequest" in request:
                item = dict(request["PutRequest"].get("Item") or {})
                parts.append(_Part("BatchWriteItem.Put", self._key_of(item), None, requested=item))
            else:
                key = dict(request.get("DeleteRequest", {}).get("Key") or {})
                parts.append(_Part("BatchWriteItem.Delete", key, None, deletes=True))
        return params, self._new_call("BatchWriteItem", parts, kind="batch")

    def _plan_transact(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        entries = list(params.get("TransactItems") or [])
        watched = [
            (index, kind)
            for index, entry in enumerate(entries)
            for kind, body in entry.items()
            if kind in ("Put", "Update", "Delete") and body.get("TableName") == self.table_name
        ]
        if not watched:
            return None
        params = dict(params)
        entries = [dict(entry) for entry in entries]
        params["TransactItems"] = entries
        parts: list[_Part | None] = [None] * len(entries)
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
                part = _Part(operation, self._key_of(item), condition, requested=item)
            else:
                part = _Part(
                    operation, dict(body.get("Key") or {}), condition, deletes=kind == "Delete"
                )
                if kind == "Update" and body.get("UpdateExpression"):
                    expression = str(body["UpdateExpression"])
                    part.update = (
                        expression,
                        dict(names or {}),
                        dict(body.get("ExpressionAttributeValues") or {}),
                    )
                    part.noop = _safe_noop(expression, names)
            part.absent_before = _key_condition_absent(condition, self.key_names)
            part.added_rvoccf = added
            parts[index] = part
        call = self._new_call("TransactWriteItems", [p for p in parts if p], kind="transact")
        call.positions = [i for i, p in enumerate(parts) if p]
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

    def _dml_part(self, prefix: str, dml: Dml) -> _Part | None:
        operation = f"{prefix}.{dml.kind}"
        if dml.kind == "INSERT":
            return _Part(operation, dml.key, dml.condition, requested=dml.item, absent_before=True)
        if dml.kind == "DELETE":
            return _Part(operation, dml.key, dml.condition, deletes=True)
        if dml.kind == "UPDATE":
            part = _Part(operation, dml.key, dml.condition)
            if dml.update_expression:
                part.update = (dml.update_expression, dict(dml.names), dict(dml.values))
                part.noop = _safe_noop(dml.update_expression, dml.names)
            return part
        return None

    def _plan_statement(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        statement = str(params.get("Statement", ""))
        try:
            dml = self._parse(statement, params.get("Parameters"))
        except StatementNotUnderstood as exc:
            self._emit(UnobservedCall("ExecuteStatement", str(exc), self.request_id))
            return None
        if dml is None:
            return None
        if dml.kind == "SELECT":
            if not dml.key:
                return None
            call = self._new_call("ExecuteStatement.SELECT", [], kind="read")
            call.read_key = dml.key
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
    ) -> tuple[dict[str, Any], _Call] | None:
        parts: list[_Part | None] = []
        for entry in params.get(list_key) or []:
            statement = str(entry.get("Statement", ""))
            try:
                dml = self._parse(statement, entry.get("Parameters"))
            except StatementNotUnderstood as exc:
                self._emit(UnobservedCall(operation, str(exc), self.request_id))
                parts.append(None)
                continue
            parts.append(self._dml_part(operation, dml) if dml is not None else None)
        if not any(parts):
            return None
        kind = "partiql-transact" if operation == "ExecuteTransaction" else "partiql-batch"
        call = self._new_call(operation, [p for p in parts if p], kind=kind)
        call.positions = [i for i, p in enumerate(parts) if p]
        return params, call

    def _plan_batch_statement(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        return self._plan_statements("BatchExecuteStatement", params, "Statements")

    def _plan_transaction(self, params: dict[str, Any]) -> tuple[dict[str, Any], _Call] | None:
        return self._plan_statements("ExecuteTransaction", params, "TransactStatements")

    # --- sending and reading the answer ------------------------------------------

    def _send(self, call: _Call, send: Callable[[], Any]) -> Any:
        if call.kind == "read":
            return self._send_read(call, send)
        self._before_write()
        started = self.clock()
        try:
            self._emit(
                WriteBegun(
                    call.call_id,
                    call.operation,
                    self.request_id,
                    started,
                    tuple(p.key for p in call.parts),
                    tuple(p.requested for p in call.parts),
                )
            )
        except Exception as exc:
            self._fault(call.operation, exc)
        # No answer (a connection or read failure after botocore's retries)
        # raises here: the write may have happened, and the begin line above
        # stands for it as an indeterminate write.
        http, parsed = send()
        ended = self.clock()
        try:
            self._record(call, int(getattr(http, "status_code", 200)), parsed, started, ended)
        except Exception as exc:
            self._fault(call.operation, exc)
        return http, parsed

    def _send_read(self, call: _Call, send: Callable[[], Any]) -> Any:
        started = self.clock()
        http, parsed = send()
        ended = self.clock()
        if self.race_window_s:
            # Widen the gap between this read and the write the handler makes
            # next: the check-then-act race grows with it.
            time.sleep(self.race_window_s)
        try:
            if isinstance(parsed, dict) and int(getattr(http, "status_code", 200)) < 300:
                found = parsed.get("Item")
                if found is None and isinstance(parsed.get("Items"), list) and parsed["Items"]:
                    found = parsed["Items"][0]
                self._emit(
                    ReadRecord(
                        key=call.read_key or {},
                        found=found,
                        consistent=call.consistent,
                        started_ns=started,
                        ended_ns=ended,
                        request_id=self.request_id,
                    )
                )
        except Exception as exc:
            self._fault(call.operation, exc)
        return http, parsed

    def _record(
        self, call: _Call, status: int, parsed: dict[str, Any], started: int, ended: int
    ) -> None:
        error = parsed.get("Error", {}) if status >= 300 else {}
        code = str(error.get("Code", "")) if error else ""
        outcomes: list[tuple[WriteOutcome, str | None, TypedItem | None, bool]] = []
        # Per part: (outcome, error code, item before, before known).
        if call.kind in ("single", "partiql"):
            part = call.parts[0]
            if not code:
                before = _old_image(call, parsed) if part.before_from_response else None
                known = part.before_from_response or part.absent_before
                outcomes.append((WriteOutcome.ACCEPTED, None, before, known))
            elif code in _REJECTIONS:
                old = parsed.get("Item")
                if call.added_rvoccf:
                    parsed.pop("Item", None)
                outcomes.append((WriteOutcome.REJECTED, code, old, old is not None))
            else:
                outcomes.append((WriteOutcome.ERROR, code, None, False))
            if call.added_rv and not code:
                parsed.pop("Attributes", None)
        elif call.kind == "batch":
            unprocessed = (parsed.get("UnprocessedItems") or {}).get(self.table_name) or []
            for part in call.parts:
                if code:
                    outcomes.append((WriteOutcome.ERROR, code, None, False))
                elif _is_unprocessed(part, unprocessed):
                    outcomes.append((WriteOutcome.ERROR, "Unprocessed", None, False))
                else:
                    outcomes.append((WriteOutcome.ACCEPTED, None, None, part.absent_before))
        else:
            positions = call.positions
            reasons = parsed.get("CancellationReasons") or []
            responses = parsed.get("Responses") or []
            cancelled_by_condition = any(
                isinstance(r, dict) and r.get("Code") in _PART_REJECTIONS for r in reasons
            )
            for part, position in zip(call.parts, positions, strict=True):
                if call.kind == "partiql-batch" and not code:
                    entry = responses[position] if position < len(responses) else {}
                    part_error = entry.get("Error") if isinstance(entry, dict) else None
                    if part_error:
                        part_code = str(part_error.get("Code", ""))
                        rejected = part_code in _PART_REJECTIONS
                        old = part_error.get("Item")
                        outcomes.append(
                            (
                                WriteOutcome.REJECTED if rejected else WriteOutcome.ERROR,
                                part_code,
                                old,
                                old is not None,
                            )
                        )
                    else:
                        outcomes.append((WriteOutcome.ACCEPTED, None, None, part.absent_before))
                elif not code:
                    outcomes.append((WriteOutcome.ACCEPTED, None, None, part.absent_before))
                elif cancelled_by_condition:
                    reason = reasons[position] if position < len(reasons) else {}
                    old = reason.get("Item") if isinstance(reason, dict) else None
                    if part.added_rvoccf and isinstance(reason, dict):
                        reason.pop("Item", None)
                    part_code = str(reason.get("Code", "")) if isinstance(reason, dict) else ""
                    outcomes.append(
                        (WriteOutcome.REJECTED, part_code or code, old, old is not None)
                    )
                else:
                    outcomes.append((WriteOutcome.ERROR, code, None, False))
        for part, (outcome, code_of_part, before, before_known) in zip(
            call.parts, outcomes, strict=True
        ):
            self._emit(
                self._decision(
                    call, part, outcome, code_of_part, before, before_known, parsed, started, ended
                )
            )

    def _decision(
        self,
        call: _Call,
        part: _Part,
        outcome: WriteOutcome,
        code: str | None,
        before: TypedItem | None,
        before_known: bool,
        parsed: dict[str, Any],
        started: int,
        ended: int,
    ) -> WriteRecord:
        requested = part.requested
        after: TypedItem | None = None
        after_known = True
        if part.update is not None:
            expression, names, values = part.update
            if before_known:
                try:
                    requested = apply_update(before, part.key, expression, names, values)
                except UpdateNotUnderstood as exc:
                    after_known = False
                    self._emit(UnobservedCall(part.operation, str(exc), self.request_id))
            elif part.after_from_response and outcome is WriteOutcome.ACCEPTED:
                requested = dict(parsed.get("Attributes") or {}) or None
            else:
                after_known = False
        elif part.deletes:
            requested = None
        elif requested is None:
            after_known = False  # an update without an expression (legacy AttributeUpdates)
        if outcome is WriteOutcome.ACCEPTED:
            after = requested
        elif outcome is WriteOutcome.REJECTED:
            after = before
            after_known = before_known
        else:
            after_known = False
        return WriteRecord(
            operation=part.operation,
            key=part.key,
            condition=part.condition,
            outcome=outcome,
            item_before=before,
            item_after=after,
            before_known=before_known,
            started_ns=started,
            ended_ns=ended,
            error_code=code,
            call_id=call.call_id,
            requested=requested,
            after_known=after_known,
            noop_when_present=part.noop,
            request_id=self.request_id,
        )


def _old_image(call: _Call, parsed: dict[str, Any]) -> TypedItem | None:
    """The old image in a successful answer, removed when the observer asked for it."""
    if call.kind == "partiql":
        items = parsed.get("Items")
        if call.added_returning:
            parsed["Items"] = []  # what a write statement without RETURNING answers
        return dict(items[0]) if items else None
    attributes = parsed.get("Attributes")
    return dict(attributes) if attributes else None


def _is_unprocessed(part: _Part, unprocessed: list[dict[str, Any]]) -> bool:
    for entry in unprocessed:
        if "PutRequest" in entry and entry["PutRequest"].get("Item") == part.requested:
            return True
        if (
            "DeleteRequest" in entry
            and part.deletes
            and entry["DeleteRequest"].get("Key") == part.key
        ):
            return True
    return False


def _safe_noop(expression: str, names: Mapping[str, str] | None) -> bool:
    try:
        return noop_when_present(expression, names)
    except UpdateNotUnderstood:
        return False


_PLANNERS: dict[
    str, Callable[[WriteObserver, dict[str, Any]], tuple[dict[str, Any], _Call] | None]
] = {
    "GetItem": WriteObserver._plan_get,
    "PutItem": WriteObserver._plan_put,
    "UpdateItem": WriteObserver._plan_update,
    "DeleteItem": WriteObserver._plan_delete,
    "BatchWriteItem": WriteObserver._plan_batch,
    "TransactWriteItems": WriteObserver._plan_transact,
    "ExecuteStatement": WriteObserver._plan_statement,
    "BatchExecuteStatement": WriteObserver._plan_batch_statement,
    "ExecuteTransaction": WriteObserver._plan_transaction,
}

"""The write observer: records every DynamoDB write a consumer makes to one table.

Runs inside an execution environment. It wraps botocore's
``BaseClient._make_api_call`` — the one call every boto3 client and resource
goes through — so the consumer's code is unchanged (the lab's handler works
as written). For a write to the watched table it notes the operation, key,
condition, outcome, the item before and the item after, with timestamps.

The item before comes from the write's own old image, returned atomically by
the same request: the observer adds ``ReturnValues=ALL_OLD`` and
``ReturnValuesOnConditionCheckFailure=ALL_OLD`` when the consumer did not ask
for them, and strips what it added from the response before the consumer sees
it. A separate read would race the very writes being observed.

It must not change what the consumer observes, and records nothing for other
tables or services. Reads (GetItem) of the watched table are noted as well,
so a report can show what each delivery saw before it wrote.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from decimal import Decimal
from typing import Any, ClassVar

from boto3.dynamodb.types import TypeSerializer
from botocore.client import BaseClient
from botocore.exceptions import ClientError

Observation = dict[str, Any]

_TYPE_TAGS = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})
_serializer = TypeSerializer()


def _is_typed(item: dict[str, Any]) -> bool:
    return all(
        isinstance(v, dict) and len(v) == 1 and next(iter(v)) in _TYPE_TAGS for v in item.values()
    )


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return value.hex()
    if isinstance(value, Decimal):
        return str(value)
    return value


def typed(item: dict[str, Any] | None) -> dict[str, Any] | None:
    """An item in DynamoDB's typed form, whether it came from a client or a resource."""
    if item is None:
        return None
    if not _is_typed(item):
        # boto3's resource layer hands native values to _make_api_call.
        item = {k: _serializer.serialize(v) for k, v in item.items()}
    return dict(_jsonable(item))


class WriteObserver:
    """Collects observations for the invocation in progress."""

    def __init__(
        self, table_name: str, key_names: tuple[str, ...] = ("id",), race_window_s: float = 0.0
    ) -> None:
        self.table_name = table_name
        self.key_names = key_names
        self.race_window_s = race_window_s
        """An injected pause after each read of the table (a labelled fault)."""
        self._lock = threading.Lock()
        self._records: list[Observation] = []
        self._armed_s = 0.0
        self._installed: Callable[..., Any] | None = None

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
        delay, self._armed_s = self._armed_s, 0.0
        if delay > 0:
            time.sleep(delay)

    def drain(self) -> list[Observation]:
        with self._lock:
            out, self._records = self._records, []
        return out

    def _write(
        self,
        *,
        operation: str,
        key: dict[str, Any] | None,
        condition: str | None,
        outcome: str,
        started_ns: int,
        ended_ns: int,
        item_before: dict[str, Any] | None = None,
        item_after: dict[str, Any] | None = None,
        before_known: bool = False,
        error_code: str | None = None,
    ) -> None:
        """Note one write decision (the shape ``loadtest.runner`` reads back)."""
        self._add(
            {
                "operation": operation,
                "key": key or {},
                "condition": condition,
                "outcome": outcome,
                "item_before": item_before,
                "item_after": item_after,
                "before_known": before_known,
                "started_ns": started_ns,
                "ended_ns": ended_ns,
                "error_code": error_code,
            }
        )

    def _add(self, record: Observation) -> None:
        with self._lock:
            self._records.append(record)

    def _key(self, item: dict[str, Any] | None) -> dict[str, Any]:
        item = typed(item) or {}
        return {k: item[k] for k in self.key_names if k in item}

    def install(self) -> None:
        """Wrap ``BaseClient._make_api_call`` for this process (idempotent)."""
        if self._installed is not None:
            return
        # A private botocore method, absent from the type stubs: hence getattr.
        original: Callable[[BaseClient, str, dict[str, Any]], Any] = getattr(  # noqa: B009
            BaseClient, "_make_api_call"
        )
        observer = self

        def observed(client: BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
            if client.meta.service_model.service_name != "dynamodb":
                return original(client, operation_name, api_params)
            handler = observer._handlers.get(operation_name)
            if handler is None:
                return original(client, operation_name, api_params)
            return handler(
                observer, lambda params: original(client, operation_name, params), api_params
            )

        setattr(BaseClient, "_make_api_call", observed)  # noqa: B010
        self._installed = original

    # --- one handler per write operation ------------------------------------

    def _single(
        self, operation: str, call: Callable[[dict[str, Any]], Any], params: dict[str, Any]
    ) -> Any:
        if params.get("TableName") != self.table_name:
            return call(params)
        params = dict(params)
        added_rv = "ReturnValues" not in params
        if added_rv:
            params["ReturnValues"] = "ALL_OLD"
        before_known = params["ReturnValues"] == "ALL_OLD"
        added_rvc = False
        condition = params.get("ConditionExpression")
        if condition is not None and "ReturnValuesOnConditionCheckFailure" not in params:
            params["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
            added_rvc = True
        if operation == "PutItem":
            key = self._key(params.get("Item"))
            after = typed(params.get("Item"))
        else:
            key = dict(typed(params.get("Key")) or {})
            after = None  # an update's result is not observed; a delete stores nothing
        self._before_write()
        started = time.monotonic_ns()
        try:
            response = call(params)
        except ClientError as error:
            ended = time.monotonic_ns()
            raw: dict[str, Any] = error.response  # type: ignore[assignment]
            code = raw.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                old = raw.get("Item")
                wants_old = params.get("ReturnValuesOnConditionCheckFailure") == "ALL_OLD"
                if added_rvc:
                    raw.pop("Item", None)
                self._write(
                    operation=operation,
                    key=key,
                    condition=condition,
                    outcome="rejected",
                    item_before=typed(old),
                    item_after=typed(old),
                    before_known=wants_old,
                    started_ns=started,
                    ended_ns=ended,
                    error_code=code,
                )
            else:
                self._write(
                    operation=operation,
                    key=key,
                    condition=condition,
                    outcome="error",
                    started_ns=started,
                    ended_ns=ended,
                    error_code=code or type(error).__name__,
                )
            raise
        ended = time.monotonic_ns()
        old_image = response.get("Attributes") if before_known else None
        if added_rv:
            response.pop("Attributes", None)
        self._write(
            operation=operation,
            key=key,
            condition=condition,
            outcome="accepted",
            item_before=typed(old_image),
            item_after=after,
            before_known=before_known,
            started_ns=started,
            ended_ns=ended,
        )
        return response

    def _get(self, call: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        """Reads are noted too: the race timeline shows what each delivery saw."""
        if params.get("TableName") != self.table_name:
            return call(params)
        started = time.monotonic_ns()
        response = call(params)
        ended = time.monotonic_ns()
        if self.race_window_s:
            # Widen the gap between this read and the write the handler makes
            # next: the check-then-act race grows with it.
            time.sleep(self.race_window_s)
        self._add(
            {
                "operation": "GetItem",
                "key": typed(params.get("Key")) or {},
                "found": typed(response.get("Item")),
                "consistent": bool(params.get("ConsistentRead")),
                "started_ns": started,
                "ended_ns": ended,
            }
        )
        return response

    def _put(self, call: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        return self._single("PutItem", call, params)

    def _update(self, call: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        return self._single("UpdateItem", call, params)

    def _delete(self, call: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        return self._single("DeleteItem", call, params)

    def _transact(self, call: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        items = params.get("TransactItems", [])
        watched = [
            (index, kind, body)
            for index, entry in enumerate(items)
            for kind, body in entry.items()
            if kind in ("Put", "Update", "Delete") and body.get("TableName") == self.table_name
        ]
        if not watched:
            return call(params)
        self._before_write()
        started = time.monotonic_ns()
        try:
            response = call(params)
        except ClientError as error:
            ended = time.monotonic_ns()
            raw_error: dict[str, Any] = error.response  # type: ignore[assignment]
            code = raw_error.get("Error", {}).get("Code", "")
            reasons = raw_error.get("CancellationReasons", [])
            for index, kind, body in watched:
                reason = reasons[index] if index < len(reasons) else {}
                rejected = reason.get("Code") == "ConditionalCheckFailed"
                old = reason.get("Item")
                self._add(
                    {
                        "operation": f"TransactWriteItems.{kind}",
                        "key": self._key(body.get("Item"))
                        if kind == "Put"
                        else typed(body.get("Key")),
                        "condition": body.get("ConditionExpression"),
                        "outcome": "rejected" if rejected else "error",
                        "item_before": typed(old),
                        "item_after": typed(old),
                        "before_known": old is not None,
                        "started_ns": started,
                        "ended_ns": ended,
                        "error_code": reason.get("Code") or code,
                    }
                )
            raise
        ended = time.monotonic_ns()
        for _, kind, body in watched:
            condition = body.get("ConditionExpression")
            # An accepted "attribute_not_exists" put proves the item was absent before.
            absent_before = (
                kind == "Put" and condition is not None and "attribute_not_exists" in condition
            )
            self._write(
                operation=f"TransactWriteItems.{kind}",
                key=self._key(body.get("Item")) if kind == "Put" else typed(body.get("Key")),
                condition=condition,
                outcome="accepted",
                item_after=typed(body.get("Item")) if kind == "Put" else None,
                before_known=absent_before,
                started_ns=started,
                ended_ns=ended,
            )
        return response

    def _batch(self, call: Callable[[dict[str, Any]], Any], params: dict[str, Any]) -> Any:
        requests = params.get("RequestItems", {}).get(self.table_name)
        if not requests:
            return call(params)
        self._before_write()
        started = time.monotonic_ns()
        response = call(params)
        ended = time.monotonic_ns()
        unprocessed = response.get("UnprocessedItems", {}).get(self.table_name, [])
        for request in requests:
            if request in unprocessed:
                continue
            after: dict[str, Any] | None
            key: dict[str, Any]
            if "PutRequest" in request:
                item = request["PutRequest"].get("Item")
                op, key, after = "BatchWriteItem.Put", self._key(item), typed(item)
            else:
                op, key, after = (
                    "BatchWriteItem.Delete",
                    typed(request["DeleteRequest"].get("Key")) or {},
                    None,
                )
            self._write(
                operation=op,
                key=key,
                condition=None,
                outcome="accepted",
                item_after=after,
                started_ns=started,
                ended_ns=ended,
            )
        return response

    _handlers: ClassVar[
        dict[str, Callable[[WriteObserver, Callable[[dict[str, Any]], Any], dict[str, Any]], Any]]
    ] = {
        "GetItem": _get,
        "PutItem": _put,
        "UpdateItem": _update,
        "DeleteItem": _delete,
        "TransactWriteItems": _transact,
        "BatchWriteItem": _batch,
    }

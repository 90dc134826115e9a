"""The write observer of ``explore``: records as usual, and makes every DynamoDB call a point.

A ``WriteObserver`` whose calls made in a delivery's thread stop twice at the
explorer's ``Gate``: before the request is sent (``before_call``, which may
answer "throttle" instead of sending it) and after its answer has been
recorded, before the handler sees it (``after_call``). Calls to the watched
table are recorded as in a load run; calls to other DynamoDB tables (a lock
table, an idempotency table) are points too, not recorded. Calls made by
other threads (the explorer's own reads) pass straight through.

Only botocore's synchronous clients are gated (aiobotocore's are recorded,
not gated).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from botocore.client import BaseClient

from loadtest.model.explore.points import Access
from loadtest.model.history.log import key_string
from loadtest.observer.calls import Call
from loadtest.observer.record_marks import current_record
from loadtest.observer.write_observer import READ_APIS, Sink, WriteObserver

THROTTLED = "throttle"
THROTTLING_CODE = "ProvisionedThroughputExceededException"
_OTHER = "loadtest_explore_other"


class Gate(Protocol):
    """The explorer, as the observer sees it."""

    def in_delivery(self) -> bool: ...

    def before_call(self, operation: str, access: Access, target: str) -> str | None: ...

    def after_call(self, answer: str | None = None) -> None: ...


class _Throttled:
    """The HTTP answer of a throttled call (botocore reads its status code)."""

    status_code = 400
    headers: ClassVar[dict[str, str]] = {}
    content = b""
    text = ""


def _throttled() -> tuple[Any, dict[str, Any]]:
    return _Throttled(), {
        "Error": {
            "Code": THROTTLING_CODE,
            "Message": "The level of configured provisioned throughput for the table was "
            "exceeded (injected by loadtest explore)",
        },
        "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}, "RetryAttempts": 0},
    }


def _answer_text(answer: Any) -> str:
    """A call's answer in a word: ``ok``, or the error code it was answered with."""
    try:
        http, parsed = answer
        if int(getattr(http, "status_code", 200)) < 300:
            return "ok"
        return str(parsed.get("Error", {}).get("Code", "error"))
    except (TypeError, ValueError, AttributeError):
        return "answered"


def _describe_key(key: dict[str, Any] | None) -> str:
    if not key:
        return ""
    return ",".join(
        f"{name}={next(iter(v.values())) if isinstance(v, dict) and len(v) == 1 else v}"
        for name, v in key.items()
    )


class GatedObserver(WriteObserver):
    """Observes the watched table and stops each delivery's DynamoDB calls at the gate."""

    def __init__(
        self,
        table_name: str,
        key_names: tuple[str, ...],
        *,
        sink: Sink,
        clock: Callable[[], int],
        gate: Gate,
    ) -> None:
        self._local = threading.local()
        super().__init__(table_name, key_names, sink=sink, clock=clock)
        self.gate = gate

    @property
    def request_id(self) -> str:
        """The invocation of the calling thread (each delivery runs in its own)."""
        return getattr(self._local, "request_id", "")

    @request_id.setter
    def request_id(self, value: str) -> None:
        self._local.request_id = value

    def _planned(
        self, client: BaseClient, params: dict[str, Any], operation_model: Any, context: Any
    ) -> dict[str, Any]:
        planned = super()._planned(client, params, operation_model, context)
        if (
            isinstance(context, dict)
            and "loadtest_observation" not in context
            and client.meta.service_model.service_name == "dynamodb"
            and self.gate.in_delivery()
        ):
            name = str(operation_model.name)
            table = str(params.get("TableName", ""))
            kind = "read" if name in READ_APIS else "write"
            context[_OTHER] = (
                name,
                Access(kind, frozenset({f"table:{table}"}) if table else frozenset()),
                table,
            )
        return planned

    def _send_other(self, request_context: Any, send: Callable[[], Any]) -> Any:
        other = request_context.pop(_OTHER, None) if isinstance(request_context, dict) else None
        if other is None or not self.gate.in_delivery():
            return send()
        name, access, table = other
        if self.gate.before_call(name, access, f"table {table}") == THROTTLED:
            answer = _throttled()
        else:
            answer = send()
        self.gate.after_call(_answer_text(answer))
        return answer

    def _send(self, call: Call, send: Callable[[], Any]) -> Any:
        if not self.gate.in_delivery():
            return super()._send(call, send)
        if call.kind == "read":
            keys = frozenset({key_string(call.read_key)}) if call.read_key else frozenset()
            target = _describe_key(call.read_key)
            access = Access("read", keys)
        else:
            keys = frozenset(key_string(p.key) for p in call.parts)
            target = "; ".join(_describe_key(p.key) for p in call.parts)
            access = Access("write", keys)
        if self.gate.before_call(call.operation, access, target) == THROTTLED:
            answer = _throttled()
            if call.kind != "read":
                record_id = current_record()
                started = self._begin(call, record_id)
                self._answer(call, answer[0], answer[1], started, record_id)
        else:
            answer = super()._send(call, send)
        self.gate.after_call()
        return answer

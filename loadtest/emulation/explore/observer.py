"""The write observer of ``explore``: records as usual, and makes every DynamoDB call and
every effect call a point.

A ``WriteObserver`` whose calls made in a delivery's thread stop twice at the
explorer's ``Gate``: before the request is sent (``before_call``, which may
answer "throttle" instead of sending it) and after its answer has been
recorded, before the handler sees it (``after_call``). Calls to the watched
table are recorded as in a load run; calls to other DynamoDB tables (a lock
table, an idempotency table) are points too, not recorded; effect calls (a
publish, a send, an object put: ``loadtest.observer.effects``) are points and
recorded, their steps named as a reader says them (``publish to topic
orders``), and a throttle answers them with their own service's throttling
error. The queues are modelled: the handler's own delete of a message it was
given, or a record it parks on the dead-letter queue, is answered by the model.
A crash at the point after an effect's answer is the crash after a
guarded write and its publish, before the handler goes on. Calls made by
other threads pass straight through: the explorer's own reads, between
schedules; one made while a schedule runs (a thread or an executor of the
handler's) cannot be scheduled, and the gate notes it (``unscheduled``), which
leaves the schedule inconclusive rather than passed.

botocore's synchronous clients and aiobotocore's (aioboto3's clients and
resources) are gated alike. An aiobotocore call stops at the gate from its
coroutine, blocking the delivery's thread: the event loop it runs on is the
handler's own (``asyncio.run`` in the delivery's thread), and nothing else
of the delivery may run while it is parked.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, ClassVar, Protocol

from botocore.client import BaseClient

from loadtest.aws.user_agent import memoise_user_agent
from loadtest.model.explore.points import Access, dependent
from loadtest.model.history.log import EffectKind, EffectRecord, key_string
from loadtest.model.history.records import SOURCE_DELETES
from loadtest.observer.calls import Call
from loadtest.observer.effect_calls import take_effect
from loadtest.observer.effects import EFFECTS, EffectCall, Entry
from loadtest.observer.layer_environment import SideTables
from loadtest.observer.record_marks import current_record
from loadtest.observer.write_observer import READ_APIS, Sink, WriteObserver

THROTTLED = "throttle"
THROTTLING_CODE = "ProvisionedThroughputExceededException"
_OTHER = "loadtest_explore_other"


class Gate(Protocol):
    """The explorer, as the observer sees it."""

    def in_delivery(self) -> bool: ...

    def before_call(
        self, operation: str, access: Access, target: str, throttled_as: str = ...
    ) -> str | None: ...

    def after_call(self, answer: str | None = None) -> None: ...

    def deleted(self, message_ids: list[str]) -> None: ...

    def unscheduled(self, operation: str, target: str) -> None: ...

    def unordered(self, operation: str, target: str, other: str) -> None: ...


class _Throttled:
    """The HTTP answer of a throttled call (botocore reads its status code)."""

    status_code = 400
    headers: ClassVar[dict[str, str]] = {}
    content = b""
    text = ""


def _throttled(
    code: str = THROTTLING_CODE,
    message: str = "The level of configured provisioned throughput for the table was exceeded",
) -> tuple[Any, dict[str, Any]]:
    return _Throttled(), {
        "Error": {"Code": code, "Message": f"{message} (injected by loadtest explore)"},
        "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}, "RetryAttempts": 0},
    }


class _Answered:
    """The HTTP part of an answer the modelled queue gives itself."""

    headers: ClassVar[dict[str, str]] = {}
    content = b""
    text = ""

    def __init__(self, status_code: int) -> None:
        self.status_code = status_code


def _answered_meta() -> dict[str, Any]:
    """The ``ResponseMetadata`` of an answer the modelled queue gives itself (a new dict:
    the handler may keep or change what it is answered)."""
    return {"ResponseMetadata": {"HTTPStatusCode": 200, "HTTPHeaders": {}, "RetryAttempts": 0}}


def _modelled_park(effect: EffectCall) -> tuple[Any, dict[str, Any]]:
    """What the modelled dead-letter queue answers a record the handler parks there: taken,
    with a message id and its body's MD5 for each entry, as SQS answers."""
    meta = _answered_meta()

    def taken(entry: Entry) -> dict[str, str]:
        digest = hashlib.md5(entry.payload.encode(), usedforsecurity=False).hexdigest()
        return {"MessageId": str(uuid.uuid4()), "MD5OfMessageBody": digest}

    if effect.batch:
        successful = [{"Id": e.entry_id, **taken(e)} for e in effect.entries]
        return _Answered(200), {"Successful": successful, "Failed": [], **meta}
    return _Answered(200), {**taken(effect.entries[0]), **meta}


def _modelled_delete(effect: EffectCall) -> tuple[Any, dict[str, Any]]:
    """What the modelled queue answers the handler's own delete of its messages: done for
    each receipt handle of a message it delivered, ``ReceiptHandleIsInvalid`` otherwise."""
    meta = _answered_meta()
    invalid = {"Code": "ReceiptHandleIsInvalid", "SenderFault": True}
    if effect.batch:
        return _Answered(200), {
            "Successful": [{"Id": e.entry_id} for e in effect.entries if e.key],
            "Failed": [{"Id": e.entry_id, **invalid} for e in effect.entries if not e.key],
            **meta,
        }
    if all(e.key for e in effect.entries):
        return _Answered(200), meta
    return _Answered(400), {
        "Error": {**invalid, "Message": "The input receipt handle is invalid."},
        "ResponseMetadata": {**meta["ResponseMetadata"], "HTTPStatusCode": 400},
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


_EFFECT_THROTTLING = {
    EffectKind.TOPIC: "Throttled",
    EffectKind.QUEUE: "RequestThrottled",
    EffectKind.BUS: "ThrottlingException",
    EffectKind.BUCKET: "SlowDown",
    EffectKind.STATE_MACHINE: "ThrottlingException",
    EffectKind.FUNCTION: "TooManyRequestsException",
    EffectKind.SOURCE: "RequestThrottled",
    EffectKind.DEAD_LETTER: "RequestThrottled",
}
"""The error each kind of sink answers a throttled call with (its service's own code)."""


def _modelled(effect: EffectCall) -> Callable[[], tuple[Any, dict[str, Any]]] | None:
    """The modelled queues' own answer to ``effect``, when it acts on them: the handler
    deleting messages of the queue that feeds it, or parking a record on its dead-letter
    queue; None for any other effect (it is sent)."""
    if _deletes(effect):
        return lambda: _modelled_delete(effect)
    if effect.kind is EffectKind.DEAD_LETTER:
        return lambda: _modelled_park(effect)
    return None


def _deletes(effect: EffectCall) -> bool:
    """Whether ``effect`` is the handler deleting messages of the queue that feeds it: the
    explorer's modelled queue answers it, and acknowledges them."""
    return effect.kind is EffectKind.SOURCE and effect.operation in SOURCE_DELETES


def _effect_answer_text(records: list[EffectRecord]) -> str:
    """An effect call's answer in words: ``accepted``, ``refused (CODE)``, ``2 of 3 accepted``."""
    accepted = sum(1 for r in records if r.accepted)
    if records and accepted == len(records):
        return "accepted"
    codes = ", ".join(dict.fromkeys(str(r.error_code) for r in records if not r.accepted))
    if accepted == 0:
        return f"refused ({codes})" if codes else "answered"
    return f"{accepted} of {len(records)} accepted (refused: {codes})"


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
        source_queues: tuple[str, ...] = (),
        dead_letter_queues: tuple[str, ...] = (),
        side_tables: SideTables = (),
    ) -> None:
        self._local = threading.local()
        super().__init__(
            table_name,
            key_names,
            sink=sink,
            clock=clock,
            side_tables=side_tables,
            source_queues=source_queues,
            dead_letter_queues=dead_letter_queues,
        )
        self.gate = gate
        # Per event loop (a delivery's): the lock its calls take turns on, and those started.
        self._in_flight: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, tuple[asyncio.Lock, list[tuple[str, Access]]]
        ] = weakref.WeakKeyDictionary()
        self._in_flight_guard = threading.Lock()

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
        # Time is the explorer's here and a call's CPU is never measured: the handler's
        # clients may build their User-Agent once (the same header) instead of per call.
        memoise_user_agent(client)
        planned = super()._planned(client, params, operation_model, context)
        if client.meta.service_model.service_name != "dynamodb":
            effect = context.get(EFFECTS) if isinstance(context, dict) else None
            if isinstance(effect, EffectCall):
                self._effect_point(effect, context)
            return planned
        if not self.gate.in_delivery():
            self.gate.unscheduled(str(operation_model.name), f"table {params.get('TableName', '')}")
            return planned
        if isinstance(context, dict) and "loadtest_observation" not in context:
            name = str(operation_model.name)
            table = str(params.get("TableName", ""))
            kind = "read" if name in READ_APIS else "write"
            context[_OTHER] = (
                name,
                Access(kind, frozenset({f"table:{table}"}) if table else frozenset()),
                table,
            )
        return planned

    def _effect_point(self, effect: EffectCall, context: dict[str, Any]) -> None:
        """An effect call is a point like a call to another table: it writes its sinks."""
        if not self.gate.in_delivery():
            self.gate.unscheduled(effect.operation, effect.describe())
            return
        context[_OTHER] = (effect.describe(), Access("write", effect.sinks), "")

    def _other_point(self, request_context: Any) -> tuple[str, Access, str] | None:
        """The point a call to another table (or an effect call) makes in a delivery, if it
        is one: how the steps name it, what it touches, the table ("" for an effect)."""
        other = request_context.pop(_OTHER, None) if isinstance(request_context, dict) else None
        if other is None or not self.gate.in_delivery():
            return None
        name, access, table = other
        return str(name), access, str(table)

    def _send_other(self, request_context: Any, send: Callable[[], Any]) -> Any:
        point = self._other_point(request_context)
        if point is None:
            return super()._send_other(request_context, send)
        name, access, table = point
        effect = take_effect(request_context)
        if effect is None:
            if self.gate.before_call(name, access, f"table {table}") == THROTTLED:
                answer = _throttled()
            else:
                answer = send()
            self.gate.after_call(_answer_text(answer))
            return answer
        code = _EFFECT_THROTTLING[effect.kind]
        if self.gate.before_call(name, access, "", code) == THROTTLED:
            answer, records = self._throttle_effect(effect, code)
        elif (modelled := _modelled(effect)) is not None:
            answer, records = self._answer_modelled(effect, modelled)
        else:
            answer, records = self._send_effect(effect, send)
        self.gate.after_call(_effect_answer_text(records))
        return answer

    async def _send_other_async(
        self, request_context: Any, send: Callable[[], Awaitable[Any]]
    ) -> Any:
        point = self._other_point(request_context)
        if point is None:
            return await super()._send_other_async(request_context, send)
        name, access, table = point
        async with self._one_at_a_time(name, access, f"table {table}" if table else ""):
            effect = take_effect(request_context)
            if effect is None:
                if self.gate.before_call(name, access, f"table {table}") == THROTTLED:
                    answer = _throttled()
                else:
                    answer = await send()
                self.gate.after_call(_answer_text(answer))
                return answer
            code = _EFFECT_THROTTLING[effect.kind]
            if self.gate.before_call(name, access, "", code) == THROTTLED:
                answer, records = self._throttle_effect(effect, code)
            elif (modelled := _modelled(effect)) is not None:
                answer, records = self._answer_modelled(effect, modelled)
            else:
                answer, records = await self._send_effect_async(effect, send)
            self.gate.after_call(_effect_answer_text(records))
            return answer

    @asynccontextmanager
    async def _one_at_a_time(self, name: str, access: Access, target: str) -> AsyncIterator[None]:
        """Hold the delivery's event loop to this call from its call point to its answer
        point; a call made meanwhile waits, and is noted when the two do not commute."""
        loop = asyncio.get_running_loop()
        with self._in_flight_guard:
            lock, started = self._in_flight.setdefault(loop, (asyncio.Lock(), []))
        for other, other_access in started:
            if dependent(other_access, access):
                self.gate.unordered(name, target, other)
                break
        mine = (f"{name} {target}".strip(), access)
        started.append(mine)
        try:
            async with lock:
                yield
        finally:
            started.remove(mine)

    def _answer_modelled(
        self, effect: EffectCall, answer_of: Callable[[], tuple[Any, dict[str, Any]]]
    ) -> tuple[Any, list[EffectRecord]]:
        """A call to the modelled queues, answered by the model (its entries recorded); each
        message the handler deleted of the queue that feeds it acknowledged by the gate."""
        answer, records = self._send_effect(effect, answer_of)
        self.gate.deleted([r.deleted for r in records if r.deleted])
        return answer, records

    def _throttle_effect(self, effect: EffectCall, code: str) -> tuple[Any, list[EffectRecord]]:
        """The throttling answer given instead of sending ``effect`` (its entries recorded
        as refused with it)."""
        answer = _throttled(code, f"Rate exceeded for {effect.operation}")
        record_id = current_record()
        return answer, self._effect_answer(effect, answer, self.clock(), record_id)

    @staticmethod
    def _point(call: Call) -> tuple[Access, str]:
        """The access a call to the watched table makes, and how the steps name its target."""
        if call.kind == "read":
            keys = frozenset({key_string(call.read_key)}) if call.read_key else frozenset()
            return Access("read", keys), _describe_key(call.read_key)
        keys = frozenset(key_string(p.key) for p in call.parts)
        return Access("write", keys), "; ".join(_describe_key(p.key) for p in call.parts)

    def _throttle(self, call: Call) -> tuple[Any, dict[str, Any]]:
        """The throttling answer given instead of sending ``call`` (a write's is recorded)."""
        answer = _throttled()
        if call.kind != "read":
            record_id = current_record()
            started = self._begin(call, record_id)
            self._answer(call, answer[0], answer[1], started, record_id)
        return answer

    def _send(self, call: Call, send: Callable[[], Any]) -> Any:
        if not self.gate.in_delivery():
            return super()._send(call, send)
        access, target = self._point(call)
        if self.gate.before_call(call.operation, access, target) == THROTTLED:
            answer = self._throttle(call)
        else:
            answer = super()._send(call, send)
        self.gate.after_call()
        return answer

    async def _send_async(self, call: Call, send: Callable[[], Awaitable[Any]]) -> Any:
        if not self.gate.in_delivery():
            return await super()._send_async(call, send)
        access, target = self._point(call)
        async with self._one_at_a_time(call.operation, access, target):
            if self.gate.before_call(call.operation, access, target) == THROTTLED:
                answer = self._throttle(call)
            else:
                answer = await super()._send_async(call, send)
            self.gate.after_call()
            return answer

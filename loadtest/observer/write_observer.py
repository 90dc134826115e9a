"""The write observer: records every DynamoDB write a consumer makes to one table, and
every effect it sends beyond it.

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

aiobotocore (aioboto3) clients override both methods with coroutines of their
own and never reach botocore's: the observer wraps ``AioBaseClient``'s the
same way, when a consumer imports ``aiobotocore.client`` (at once if it
already has; otherwise from an import hook, so an environment whose
consumer never uses it does not import it).

Every write API is understood: PutItem, UpdateItem, DeleteItem,
BatchWriteItem, TransactWriteItems, ExecuteStatement, BatchExecuteStatement,
ExecuteTransaction. A call to the watched table it cannot interpret is
reported as unobserved, never ignored; a failure of the observer itself is
reported as the observer's, and the consumer's call goes ahead untouched.

An effect call (an SNS publish, an SQS send to a queue other than the ones that feed the
function, EventBridge PutEvents, an S3 put, copy or delete, a Step Functions execution, a
Lambda invoke; ``loadtest.observer.effects`` says which) is recorded through the same two
methods (``loadtest.observer.effect_calls``, the observer's part around it), one ``EffectRecord`` per entry once its answer is parsed (refused, ``NoAnswer``,
when it raised instead). Any other call costs one dict lookup.

This module owns the hooks' installation and lifecycle (the wrappers themselves are
``loadtest.observer.hooks``'), the handler-duration
and race-window faults, the point after each write's answer (``after_write``,
where the entry point's crash-mid-handler fault acts), the points before and after
every call to the table (``before_call``, ``after_call``: where its point faults act), and the order of what is emitted around a call
(begin line, answer, read record). What a request means is planned in
``loadtest.observer.plans``; what its answer decided is read in
``loadtest.observer.answers``.

Each observation is handed to ``sink`` as one encoded line the moment it is
made (``loadtest.model.history.observation``), so it survives the invocation dying.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

from botocore.client import BaseClient

from loadtest.model.history.log import ObserverFault, ReadRecord, UnobservedCall
from loadtest.model.history.observation import Observation, WriteBegun, encode
from loadtest.model.history.records import UNJUDGED_REASON
from loadtest.observer.answers import (
    keep_resource,
    keep_side_call,
    keep_side_writes,
    missing_line,
    one_item_table,
    record_answer,
    side_writes,
)
from loadtest.observer.effect_calls import EffectSending
from loadtest.observer.effects import (
    EFFECT_OPERATIONS,
    UNJUDGED_SENDS,
    EffectPlanner,
)
from loadtest.observer.hooks import (
    AIO_CLIENT,
    PENDING,
    AfterImport,
    Methods,
    restore,
    wrap_async,
    wrap_sync,
)
from loadtest.observer.layer_environment import SideTables
from loadtest.observer.plans import (
    READ_APIS,
    Call,
    CallPlanner,
    readable_condition,
)
from loadtest.observer.record_marks import current_record

__all__ = ["READ_APIS", "Sink", "WriteObserver", "readable_condition"]

Sink = Callable[[str], None]

_MISSING_KEPT = 20
"""Refused calls one invocation keeps (each is also logged)."""


def _ignored(operation: str, reason: str) -> None:
    """An extra table's call the planner does not understand: counted, never unobserved."""


class WriteObserver(EffectSending):
    """Observes one table's writes for the process it is installed in."""

    def __init__(
        self,
        table_name: str,
        key_names: tuple[str, ...] = ("id",),
        *,
        sink: Sink,
        race_window_s: float = 0.0,
        clock: Callable[[], int] = time.monotonic_ns,
        side_tables: SideTables = (),
        source_queues: tuple[str, ...] = (),
        dead_letter_queues: tuple[str, ...] = (),
    ) -> None:
        self.table_name = table_name
        self._side_planners = {
            name: CallPlanner(name, keys, unobserved=_ignored) for name, keys in side_tables
        }
        """The consumer's extra tables (name, then key attributes), each with its planner:
        their writes are side writes."""
        self._side_tables = frozenset(self._side_planners)
        self.key_names = key_names
        self.sink = sink
        self.race_window_s = race_window_s
        """An injected pause after each read of the table (a labelled fault)."""
        self.request_id = ""
        """The invocation in progress; set by the execution environment."""
        self.clock = clock
        self.after_write: Callable[[], None] | None = None
        """Called once each write's answer is recorded, before the handler sees it: where
        the crash-mid-handler fault stops the environment between two writes."""
        self.before_call: Callable[[str], tuple[Any, Any] | None] | None = None
        """Called with the operation before each call to the table is sent: an answer
        (``(http, parsed)``) it returns is the call's instead, and nothing is sent (where
        the point faults' throttle acts)."""
        self.after_call: Callable[[str], None] | None = None
        """Called with the operation once each call's answer (a read's or a write's) is
        recorded, before the handler sees it (where the other point faults act)."""
        self._armed_s = 0.0
        self._arm_lock = threading.Lock()
        self._planner = CallPlanner(table_name, key_names, unobserved=self._unobserved)
        self._effects = EffectPlanner(source_queues, dead_letter_queues)
        """The effect calls' planner; ``source_queues`` (URLs or ARNs) feed the function, so
        a send to one of them is not an effect, nor one to ``dead_letter_queues`` (theirs)."""
        self._originals: Methods | None = None
        self._aio_originals: tuple[type, Methods] | None = None
        self._import_hook: AfterImport | None = None
        self.missing: list[str] = []
        """This invocation's calls refused for something the run does not provide, one line
        each (the environment takes them with ``take_missing``)."""

    def take_missing(self) -> list[str]:
        """The lines of ``missing`` since the last call, each once."""
        lines, self.missing = list(dict.fromkeys(self.missing)), []
        return lines

    def _after(self, operation_model: Any, result: Any, context: Any) -> None:
        """Any call's answer: writes it made to the extra tables (side writes), and a
        refusal for a missing table, queue or permission, noted (and logged, as a runtime
        would): the harness's gap, never to be blamed on the consumer."""
        try:
            for side in side_writes(
                str(operation_model.name), result, context, self.request_id, current_record()
            ):
                self._emit(side)
            line = missing_line(
                str(operation_model.name),
                result,
                context,
                str(operation_model.service_model.service_name),
            )
            if line is None:
                return
            if len(self.missing) < _MISSING_KEPT:
                self.missing.append(line)
            sys.stderr.write(line + "\n")
        except Exception as exc:
            self._fault("missing-resource check", exc)

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
        delay = self._take_delay()
        if delay > 0:
            time.sleep(delay)

    def _take_delay(self) -> float:
        with self._arm_lock:
            delay, self._armed_s = self._armed_s, 0.0
        return delay

    # --- output -----------------------------------------------------------------

    def _emit(self, observation: Observation) -> None:
        self.sink(encode(observation))

    def _unobserved(self, operation: str, reason: str) -> None:
        self._emit(UnobservedCall(operation, reason, self.request_id))

    def _fault(self, operation: str, exc: BaseException) -> None:
        # If the sink itself fails, nothing more can be said.
        with contextlib.suppress(Exception):
            self._emit(ObserverFault(operation, f"{type(exc).__name__}: {exc}", self.request_id))

    # --- installation -------------------------------------------------------------

    def install(self) -> None:
        """Wrap botocore for this process, and aiobotocore once it is imported (idempotent)."""
        if self._originals is not None:
            return
        self._originals = wrap_sync(self)
        aio = sys.modules.get(AIO_CLIENT)
        if aio is not None:
            self._wrap_async(aio)
        else:
            self._import_hook = AfterImport(AIO_CLIENT, self._wrap_async)
            sys.meta_path.insert(0, self._import_hook)

    def _wrap_async(self, module: ModuleType) -> None:
        if self._originals is None or self._aio_originals is not None:
            return
        try:
            aio_class: type = module.AioBaseClient
        except AttributeError as exc:
            self._fault(AIO_CLIENT, exc)
            return
        self._aio_originals = (aio_class, wrap_async(self, aio_class))

    def uninstall(self) -> None:
        """Put botocore back as it was (for observing inside a process that goes on)."""
        if self._originals is None:
            return
        originals, self._originals = self._originals, None
        restore(BaseClient, originals)
        if self._import_hook is not None:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(self._import_hook)
            self._import_hook = None
        if self._aio_originals is not None:
            aio_class, aio_originals = self._aio_originals
            self._aio_originals = None
            restore(aio_class, aio_originals)

    def _planned(
        self, client: BaseClient, params: dict[str, Any], operation_model: Any, context: Any
    ) -> dict[str, Any]:
        """The parameters to send; a call to observe (a DynamoDB call to the watched table,
        an effect) is left in ``context`` for the request."""
        service = client.meta.service_model.service_name
        try:
            keep_resource(params, context)
            if self._side_planners and service == "dynamodb":
                params = self._side_planned(str(operation_model.name), params, context)
        except Exception as exc:
            self._fault(str(operation_model.name), exc)
        if service != "dynamodb" or not isinstance(context, dict):
            operations = EFFECT_OPERATIONS.get(service)
            if operations is not None and operation_model.name in operations:
                return self._planned_effect(service, str(operation_model.name), params, context)
            unjudged = UNJUDGED_SENDS.get(service)
            if unjudged is not None and operation_model.name in unjudged:
                self._unobserved(f"{service} {operation_model.name}", UNJUDGED_REASON)
            return params
        name = str(operation_model.name)
        try:
            planned = self._planner.plan(name, params)
        except Exception as exc:
            self._fault(name, exc)
            return params
        if planned is None:
            return params
        new_params, call = planned
        context[PENDING] = call
        return new_params

    def _side_planned(self, operation: str, params: dict[str, Any], context: Any) -> dict[str, Any]:
        """The parameters to send for a call to the extra tables: a write of one item is
        planned as the watched table's are (its old image asked for); any other write's
        items are counted."""
        tables = self._side_tables
        table = one_item_table(operation, params, tables)
        planned = None if table is None else self._side_planners[table].plan(operation, params)
        if table is not None and planned is not None:
            new_params, call = planned
            keep_side_call(context, table, call)
            return new_params
        keep_side_writes(operation, params, context, tables)
        return params

    # --- sending: around the request, in the order the records must be emitted ---

    def _instead(self, call: Call) -> tuple[Any, Any] | None:
        """The answer ``before_call`` gives instead of sending ``call``, if any."""
        return None if self.before_call is None else self.before_call(call.operation)

    def _called(self, call: Call) -> None:
        if self.after_call is not None:
            self.after_call(call.operation)

    def _send(self, call: Call, send: Callable[[], Any]) -> Any:
        instead = self._instead(call)
        if instead is not None:
            return instead
        if call.kind == "read":
            started = self.clock()
            http, parsed = send()
            ended = self.clock()
            if self.race_window_s:
                # Widen the gap between this read and the write the handler makes
                # next: the check-then-act race grows with it.
                time.sleep(self.race_window_s)
            self._read(call, http, parsed, started, ended)
            self._called(call)
            return http, parsed
        self._before_write()
        record_id = current_record()
        started = self._begin(call, record_id)
        # No answer (a connection or read failure after botocore's retries)
        # raises here: the write may have happened, and the begin line
        # stands for it as an indeterminate write.
        http, parsed = send()
        self._answer(call, http, parsed, started, record_id)
        self._answered()
        self._called(call)
        return http, parsed

    async def _send_async(self, call: Call, send: Callable[[], Awaitable[Any]]) -> Any:
        """``_send`` for aiobotocore: the faults' pauses let the event loop run."""
        # Here, not at the top: aiobotocore has imported it by now, and an
        # environment whose consumer never uses it need not (nor its zygote).
        import asyncio

        instead = self._instead(call)
        if instead is not None:
            return instead
        if call.kind == "read":
            started = self.clock()
            http, parsed = await send()
            ended = self.clock()
            if self.race_window_s:
                await asyncio.sleep(self.race_window_s)
            self._read(call, http, parsed, started, ended)
            self._called(call)
            return http, parsed
        delay = self._take_delay()
        if delay > 0:
            await asyncio.sleep(delay)
        record_id = current_record()
        started = self._begin(call, record_id)
        http, parsed = await send()
        self._answer(call, http, parsed, started, record_id)
        self._answered()
        self._called(call)
        return http, parsed

    def _begin(self, call: Call, record_id: str) -> int:
        """Emit the write's begin line; return its start time."""
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
                    record_id,
                )
            )
        except Exception as exc:
            self._fault(call.operation, exc)
        return started

    def _answer(self, call: Call, http: Any, parsed: Any, started: int, record_id: str) -> None:
        ended = self.clock()
        try:
            record_answer(
                call,
                int(getattr(http, "status_code", 200)),
                parsed,
                started,
                ended,
                table_name=self.table_name,
                request_id=self.request_id,
                emit=self._emit,
                record_id=record_id,
            )
        except Exception as exc:
            self._fault(call.operation, exc)

    def _answered(self) -> None:
        """The write's answer is recorded (and sent): the point between two writes."""
        if self.after_write is not None:
            self.after_write()

    def _read(self, call: Call, http: Any, parsed: Any, started: int, ended: int) -> None:
        if call.read_key is None:
            return  # not a key lookup: nothing to record beyond the race window
        try:
            if isinstance(parsed, dict) and int(getattr(http, "status_code", 200)) < 300:
                found = parsed.get("Item")
                if found is None and isinstance(parsed.get("Items"), list) and parsed["Items"]:
                    found = parsed["Items"][0]
                self._emit(
                    ReadRecord(
                        key=call.read_key,
                        found=found,
                        consistent=call.consistent,
                        started_ns=started,
                        ended_ns=ended,
                        request_id=self.request_id,
                    )
                )
        except Exception as exc:
            self._fault(call.operation, exc)

"""The observer layer's handler: installs the write observer, then calls the function's own.

Shipped in the observer layer (``loadtest.observer.layer``) and activated the
way tracing and APM layers are: the function's handler is set to
``loadtest.observer.lambda_entry.handler`` and its original handler moves to
``LOADTEST_ORIGINAL_HANDLER``. On the first invocation of an execution
environment (Lambda's cold start) it installs ``WriteObserver`` on the table
named by ``LOADTEST_WATCH_TABLE``, with a sink that sends each observation
line to the queue named by ``LOADTEST_OBSERVATION_QUEUE`` as it happens, then
imports the original handler; every invocation then runs it unchanged.

Around each invocation it sends two lines of its own on the same channel, so
a collector can rebuild the history the local runner records (deliveries,
acknowledgements, redeliveries, invocations that never ended)::

    {"t": "invoke", "request_id", "env", "records": [{"message_id", "receive_count",
     "sent_ms"}], "started_ns"}
    {"t": "invoked", "request_id", "env", "ended_ns", "outcome": "ok" | "batchItemFailures"
     | "exception", "failed": [message ids], "error", "lines": observation lines sent}

Times are wall-clock nanoseconds (``time.time_ns``): a deployed function's
monotonic clock means nothing outside its host. ``lines`` counts the
observations this invocation sent before its end line, so the collector knows
when it holds all of them. A start without an end is a timeout or a crash.
A local execution environment's parent times and records invocations itself:
there these two lines are not sent (``start(invocation_lines=False)``).

Must not import the rest of loadtest beyond the observer and what it imports:
the layer carries only those modules. Never sends a receipt handle anywhere but to SQS
itself (the redeliver point fault of a local run, ``loadtest.observer.point_faults``).
"""

from __future__ import annotations

import importlib
import os
import random
import secrets
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from loadtest.model.history.observation import json_line_writer
from loadtest.observer import left_work, point_faults, record_marks, runtime_marshal
from loadtest.observer.effects import own_calls
from loadtest.observer.layer_environment import (
    CRASH_MID_HANDLER_ENV,
    DEAD_LETTER_QUEUES_ENV,
    HANDLER_DURATION_ENV,
    HANDLER_JITTER_ENV,
    RACE_WINDOW_ENV,
    SIDE_TABLES_ENV,
    SOURCE_QUEUES_ENV,
    side_tables_of,
)
from loadtest.observer.layer_environment import KEY_NAMES_ENV as KEY_NAMES_ENV
from loadtest.observer.layer_environment import OBSERVATION_QUEUE_ENV as OBSERVATION_QUEUE_ENV
from loadtest.observer.layer_environment import ORIGINAL_HANDLER_ENV as ORIGINAL_HANDLER_ENV
from loadtest.observer.layer_environment import WATCH_TABLE_ENV as WATCH_TABLE_ENV
from loadtest.observer.write_observer import Sink, WriteObserver

CRASH_MID_HANDLER_EXIT = 86
"""The exit status of an environment stopped by the crash-mid-handler fault (Lambda
reports it as ``Runtime exited with error: exit status 86``)."""
CRASH_MID_HANDLER_MESSAGE = (
    "Runtime exited right after a write was answered, before the handler saw the answer "
    "(injected crash mid-handler)"
)

Handler = Callable[[Any, Any], Any]


def load_original(spec: str) -> Handler:
    """Import a Lambda handler string (``pkg.module.function`` or ``dir/module.function``)."""
    module_path, _, function = spec.replace("/", ".").rpartition(".")
    if not module_path or not function:
        raise ValueError(f"{ORIGINAL_HANDLER_ENV}={spec!r} is not module.function")
    handler = getattr(importlib.import_module(module_path), function, None)
    if not callable(handler):
        raise AttributeError(f"{spec!r}: {module_path} has no callable {function!r}")
    return handler  # type: ignore[no-any-return]


def queue_sink(queue_name: str, sqs: Any = None) -> Sink:
    """Send each observation line as one message to ``queue_name`` (SQS client passed or made)."""
    if sqs is None:
        import boto3

        sqs = boto3.client("sqs")
    url = sqs.get_queue_url(QueueName=queue_name)["QueueUrl"]

    def send(line: str) -> None:
        with own_calls():
            sqs.send_message(QueueUrl=url, MessageBody=line)

    return send


INVOKE_TAG = "invoke"
INVOKED_TAG = "invoked"


class _CountingSink:
    """The observer's sink, counting the lines it sent (per invocation)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.sent = 0

    def __call__(self, line: str) -> None:
        self.sink(line)
        self.sent += 1


@dataclass
class _State:
    observer: WriteObserver
    original: Handler
    duration_ms: int
    jitter_ms: int
    rng: random.Random
    sink: _CountingSink
    environment: str
    """Identifies this execution environment (one per cold start)."""
    clock: Callable[[], int]
    invocation_lines: bool
    """Whether each invocation sends its start and end lines."""
    work: left_work.LeftWork
    """The threads, pool calls and asyncio tasks its invocations start, until they finish."""
    points: point_faults.PointFaults | None = None
    """The point faults drawn in this environment, when any is on."""
    left: list[list[str]] = field(default_factory=list)
    """The work the last invocation left running when it returned (``LeftWork.returned``)."""


_state: _State | None = None


def start(
    environ: dict[str, str] | None = None,
    sink: Sink | None = None,
    *,
    clock: Callable[[], int] = time.time_ns,
    load: Callable[[], Handler] | None = None,
    rng: random.Random | None = None,
    invocation_lines: bool = True,
) -> _State:
    """Install the observer, then import the original handler (once per environment).

    On Lambda everything comes from the environment. A local execution
    environment (``loadtest.emulation.environment.child_host``) runs this same code with its
    own sink (a file), the monotonic ``clock`` its parent shares, its own
    handler loader (``load``: it also takes ``path/file.py:function``), its
    seeded fault ``rng``, and without the invocation lines its parent has no use for.
    """
    env = dict(os.environ if environ is None else environ)
    counting = _CountingSink(sink or queue_sink(env[OBSERVATION_QUEUE_ENV]))
    observer = WriteObserver(
        env[WATCH_TABLE_ENV],
        tuple(env.get(KEY_NAMES_ENV, "id").split(",")),
        sink=counting,
        race_window_s=int(env.get(RACE_WINDOW_ENV, "0")) / 1000,
        clock=clock,
        side_tables=side_tables_of(env.get(SIDE_TABLES_ENV, "")),
        source_queues=tuple(q for q in env.get(SOURCE_QUEUES_ENV, "").split(",") if q),
        dead_letter_queues=tuple(q for q in env.get(DEAD_LETTER_QUEUES_ENV, "").split(",") if q),
    )
    rng = rng if rng is not None else random.Random()
    crash_p = float(env.get(CRASH_MID_HANDLER_ENV, "0"))
    if crash_p > 0:
        observer.after_write = _crash_mid_handler(crash_p, rng)
    points = None
    probabilities = point_faults.parse(env)
    if probabilities:
        points = point_faults.PointFaults(probabilities, rng, _exit_environment)
        observer.before_call = points.before_call
        observer.after_call = points.after_call
    observer.install()
    left_work.install()
    environment = secrets.token_hex(6)
    original = load() if load is not None else load_original(env[ORIGINAL_HANDLER_ENV])
    return _State(
        observer=observer,
        original=original,
        duration_ms=int(env.get(HANDLER_DURATION_ENV, "0")),
        jitter_ms=int(env.get(HANDLER_JITTER_ENV, "0")),
        rng=rng,
        points=points,
        sink=counting,
        environment=environment,
        clock=clock,
        invocation_lines=invocation_lines,
        work=left_work.LeftWork(environment),
    )


def stop(state: _State) -> None:
    """Take out what ``start`` installed in this process (the observer's hooks, the patches
    that follow work left running): for code that ran the entry point in its own process
    rather than in an execution environment of its own."""
    state.observer.uninstall()
    left_work.uninstall()


def _crash_mid_handler(probability: float, rng: random.Random) -> Callable[[], None]:
    """The crash-mid-handler fault: after a write is answered, with ``probability``, the
    process ends at once, as a killed execution environment does. The write and its
    observation are made (the sink sends each line before returning); no end line, no
    answer: the invocation fails and its messages come back after the visibility timeout."""

    def maybe_crash() -> None:
        if rng.random() < probability:
            _exit_environment(CRASH_MID_HANDLER_MESSAGE, CRASH_MID_HANDLER_EXIT)

    return maybe_crash


def _exit_environment(message: str, status: int) -> NoReturn:
    """End the execution environment at once, as a killed one ends: what was written and
    observed stays, nothing else runs (the crash faults' and the timeout point fault's end)."""
    os.write(2, f"loadtest: {message}\n".encode())
    os._exit(status)


def _records(event: Any) -> list[dict[str, Any]]:
    """Each SQS record's messageId, receive count and send time (never its receipt handle)."""
    records = event.get("Records", []) if isinstance(event, dict) else []
    out = []
    for record in records:
        if not isinstance(record, dict):
            continue
        attributes = record.get("attributes") or {}
        out.append(
            {
                "message_id": str(record.get("messageId", "")),
                "receive_count": int(attributes.get("ApproximateReceiveCount", 1)),
                "sent_ms": int(attributes.get("SentTimestamp", 0)),
            }
        )
    return out


def _event_sources(event: Any) -> list[str]:
    """The queues an SQS event's records came from (``eventSourceARN``)."""
    records = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(records, list):
        return []
    return [
        r["eventSourceARN"]
        for r in records
        if isinstance(r, dict) and isinstance(r.get("eventSourceARN"), str)
    ]


def _receipts(event: Any) -> dict[str, str]:
    """An SQS event's message ids by receipt handle."""
    records = event.get("Records") if isinstance(event, dict) else None
    if not isinstance(records, list):
        return {}
    return {
        r["receiptHandle"]: r["messageId"]
        for r in records
        if isinstance(r, dict)
        and isinstance(r.get("receiptHandle"), str)
        and isinstance(r.get("messageId"), str)
    }


INVALID_ID = ""
"""Stands for an entry Lambda cannot read (not an object, or no string identifier): no
message has this id, so the collector treats the whole batch as failed, as Lambda does."""


def _failed_ids(result: Any) -> list[str] | None:
    """The messageIds of a partial batch response (the JSON Lambda reads), or None when the
    answer is not one."""
    if not isinstance(result, dict) or result.get("batchItemFailures") is None:
        return None
    failures = result["batchItemFailures"]
    if not isinstance(failures, list):
        return [INVALID_ID]
    return [
        f["itemIdentifier"]
        if isinstance(f, dict) and isinstance(f.get("itemIdentifier"), str)
        else INVALID_ID
        for f in failures
    ]


ENVIRON_NOTE = " [os.environ has no {name!r}]"
"""Added to a KeyError raised by ``os.environ[...]`` (``loadtest.model.checker.harness``
reads it): a variable the function expects and the run does not set."""


def environ_note(exc: BaseException) -> str:
    """``ENVIRON_NOTE`` when ``exc`` (or an exception it was raised from or during) is a
    KeyError raised by ``os.environ``'s lookup, else ``""``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, KeyError) and current.args:
            frames = [frame for frame, _ in traceback.walk_tb(current.__traceback__)]
            if (
                frames
                and frames[-1].f_code.co_name == "__getitem__"
                and frames[-1].f_globals.get("__name__") == "os"
            ):
                return ENVIRON_NOTE.format(name=str(current.args[0]))
        current = current.__cause__ or current.__context__
    return ""


_json_text = json_line_writer()


def _line(body: dict[str, Any]) -> str:
    return _json_text(body) + "\n"


def handler(event: Any, context: Any) -> Any:
    """Lambda's entry point: the original handler's answer, observed."""
    global _state
    if _state is None:
        _state = start()
    return invoke(_state, event, context)


def invoke(state: _State, event: Any, context: Any) -> Any:
    """One invocation: its start line, the original handler observed, its end line."""
    request_id = str(getattr(context, "aws_request_id", ""))
    state.observer.request_id = request_id
    if not state.invocation_lines:
        return _observed(state, event, context)
    state.sink.sink(
        _line(
            {
                "t": INVOKE_TAG,
                "request_id": request_id,
                "env": state.environment,
                "records": _records(event),
                "started_ns": state.clock(),
            }
        )
    )
    state.sink.sent = 0
    end: dict[str, Any] = {"t": INVOKED_TAG, "request_id": request_id, "env": state.environment}
    try:
        result = _observed(state, event, context)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}{environ_note(exc)}"
        end |= {"outcome": "exception", "error": error, "failed": []}
        raise
    else:
        # The runtime marshals the result after this wrapper returns it, unchanged: the
        # end line says what it will answer, refusal included (runtime_marshal).
        end |= _answer(result, event)
        return result
    finally:
        # A BaseException that is not an Exception (the runtime stopping us) sends no
        # end: the collector then sees an invocation that never ended.
        if "outcome" in end:
            end |= {"ended_ns": state.clock(), "lines": state.sink.sent}
            end |= left_lines(state)
            missing = state.observer.take_missing()
            if missing:
                # Calls refused for what the run does not provide: the harness's gaps.
                end["missing"] = missing
            state.sink.sink(_line(end))


def left_lines(state: _State) -> dict[str, Any]:
    """What a reply or end line says of work left running (``loadtest.observer.left_work``):
    ``left``, what this invocation left unfinished, and ``ended``, what earlier ones left
    that has finished since; nothing when there is neither."""
    out: dict[str, Any] = {}
    if state.left:
        out["left"] = state.left
        state.left = []
    ended = state.work.take_ended()
    if ended:
        out["ended"] = ended
    return out


def _answer(result: Any, event: Any) -> dict[str, Any]:
    """The end line's outcome for ``result``, as the runtime and the mapping will take it."""
    try:
        is_json, value = runtime_marshal.response_value(runtime_marshal.marshal_response(result))
    except runtime_marshal.MarshalError as exc:
        return {"outcome": "exception", "error": runtime_marshal.error_line(exc), "failed": []}
    if not is_json:
        # Not JSON: a mapping with partial batch responses fails the whole batch.
        every = [record["message_id"] for record in _records(event)]
        return {"outcome": "batchItemFailures", "failed": every}
    failed = _failed_ids(value)
    return {"outcome": "ok" if failed is None else "batchItemFailures", "failed": failed or []}


def _observed(state: _State, event: Any, context: Any) -> Any:
    """The original handler, with the injected handler duration armed before its first write."""
    jitter = state.rng.uniform(0, state.jitter_ms) if state.jitter_ms else 0.0
    state.observer.arm((state.duration_ms + jitter) / 1000)
    record_marks.clear()
    state.observer.add_source_queues(_event_sources(event))
    state.observer.set_receipts(_receipts(event))
    if state.points is not None:
        state.points.begin(event)
    tracking = state.work.begin()
    try:
        # Each record marks itself when the handler reads it, so each write can be tied
        # to the record it was made for.
        return state.original(record_marks.tracked(event), context)
    finally:
        state.observer.disarm()
        state.left = state.work.returned(tracking)

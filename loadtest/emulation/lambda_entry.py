"""The observer layer's handler: installs the write observer, then calls the function's own.

Shipped in the observer layer (``loadtest.lambda_layer``) and activated the
way tracing and APM layers are: the function's handler is set to
``loadtest.emulation.lambda_entry.handler`` and its original handler moves to
``LOADTEST_ORIGINAL_HANDLER``. On the first invocation of an execution
environment (Lambda's cold start) it installs ``WriteObserver`` on the table
named by ``LOADTEST_WATCH_TABLE``, with a sink that sends each observation
line to the queue named by ``LOADTEST_OBSERVATION_QUEUE`` as it happens, then
imports the original handler; every invocation then runs it unchanged.

Must not import the rest of loadtest beyond the observer and what it imports:
the layer carries only those modules. Never sends a receipt handle anywhere.
"""

from __future__ import annotations

import importlib
import os
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from loadtest.emulation.observer import Sink, WriteObserver

ORIGINAL_HANDLER_ENV = "LOADTEST_ORIGINAL_HANDLER"
WATCH_TABLE_ENV = "LOADTEST_WATCH_TABLE"
KEY_NAMES_ENV = "LOADTEST_KEY_NAMES"
OBSERVATION_QUEUE_ENV = "LOADTEST_OBSERVATION_QUEUE"

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
        sqs.send_message(QueueUrl=url, MessageBody=line)

    return send


@dataclass
class _State:
    observer: WriteObserver
    original: Handler
    duration_ms: int
    jitter_ms: int
    rng: random.Random


_state: _State | None = None


def start(environ: dict[str, str] | None = None, sink: Sink | None = None) -> _State:
    """Install the observer and import the original handler (once per environment)."""
    env = dict(os.environ if environ is None else environ)
    observer = WriteObserver(
        env[WATCH_TABLE_ENV],
        tuple(env.get(KEY_NAMES_ENV, "id").split(",")),
        sink=sink or queue_sink(env[OBSERVATION_QUEUE_ENV]),
        race_window_s=int(env.get("LOADTEST_RACE_WINDOW_MS", "0")) / 1000,
    )
    observer.install()
    return _State(
        observer=observer,
        original=load_original(env[ORIGINAL_HANDLER_ENV]),
        duration_ms=int(env.get("LOADTEST_HANDLER_DURATION_MS", "0")),
        jitter_ms=int(env.get("LOADTEST_HANDLER_JITTER_MS", "0")),
        rng=random.Random(),
    )


def handler(event: Any, context: Any) -> Any:
    """Lambda's entry point: the original handler's answer, observed."""
    global _state
    if _state is None:
        _state = start()
    state = _state
    state.observer.request_id = str(getattr(context, "aws_request_id", ""))
    jitter = state.rng.uniform(0, state.jitter_ms) if state.jitter_ms else 0.0
    state.observer.arm((state.duration_ms + jitter) / 1000)
    try:
        return state.original(event, context)
    finally:
        state.observer.disarm()

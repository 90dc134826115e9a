"""The doctor's sink checks: the sinks a consumer's effects reach keep, drop and refuse what
loadtest's effect counts assume they do.

Owns the five checks below and the sinks they make (one of each kind, through
``loadtest.aws.sinks``, under the doctor's ``loadtest-doctor-<hex>`` prefix, recorded the moment
each part exists and deleted at the end on every path). What a sink holds is read as a run
reads it (``loadtest.aws.sink_reads``), so these checks measure that reading too. Must not
touch any other resource.

* ``topic-delivers-each-publish`` - a standard topic delivers each of two identical publishes
  to its subscribed queue: a topic does not deduplicate, so a consumer's second publish is a
  second announcement.
* ``fifo-topic-deduplication`` - a FIFO topic given one deduplication id twice delivers once:
  the run counts the second as deduplicated by the sink, not as a duplicate effect.
* ``bus-rule-delivers-detail`` - an event put on a bus reaches the rule's queue with the
  ``Detail`` the consumer sent.
* ``bucket-one-object-per-key`` - two puts of one key hold one object, the last bytes: an
  S3 receipt keyed by the business id is idempotent by construction, a rewrite with other
  bytes a conflicting effect.
* ``execution-name-unique`` - a second execution of a used name with another input is
  refused (``ExecutionAlreadyExists``): an execution named by the business id starts once.

A backend that does not serve a service fails its check with what that means: a run whose
scenario names such a sink cannot run there; runs without sinks are unaffected.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable

from loadtest.aws import clients as aws
from loadtest.aws.errors import ERRORS
from loadtest.aws.sink_reads import read_sinks
from loadtest.aws.sinks import MadeSink, SinkClients, create_sinks, delete_sinks
from loadtest.doctor.checks import (
    BUCKET_KEY,
    BUS_DELIVERS,
    EXECUTION_NAME,
    FIFO_TOPIC_DEDUP,
    RESOURCE_PREFIX,
    TOPIC_DELIVERS,
    CheckResult,
)
from loadtest.errors import BackendError
from loadtest.model.history.records import EffectKind, SinkContents
from loadtest.model.scenario.placeholders import Sink

SINK_CHECK_TIMEOUT_S = 60.0
"""Bound (in seconds) on all the sink checks together."""

_SINKS: tuple[tuple[str, Sink], ...] = (
    (TOPIC_DELIVERS, Sink(EffectKind.TOPIC, "topic")),
    (FIFO_TOPIC_DEDUP, Sink(EffectKind.TOPIC, "topic.fifo")),
    (BUS_DELIVERS, Sink(EffectKind.BUS, "bus")),
    (BUCKET_KEY, Sink(EffectKind.BUCKET, "bucket")),
    (EXECUTION_NAME, Sink(EffectKind.STATE_MACHINE, "machine")),
)
_SERVICE = {
    EffectKind.TOPIC: "SNS",
    EffectKind.BUS: "EventBridge",
    EffectKind.BUCKET: "S3",
    EffectKind.STATE_MACHINE: "Step Functions",
}
_PLACEHOLDER = {
    EffectKind.TOPIC: "{topic:NAME}",
    EffectKind.BUS: "{bus:NAME}",
    EffectKind.BUCKET: "{bucket:NAME}",
    EffectKind.STATE_MACHINE: "{state_machine:NAME}",
}
_ORDER = json.dumps({"id": "doctor-order", "quantity": 4})


def check_sinks(target: aws.Target) -> list[CheckResult]:
    """Make one sink of each kind, run the five checks on them and delete them; synchronous
    (run it in a worker thread). A sink the backend cannot make fails its check."""
    prefix = f"{RESOURCE_PREFIX}{secrets.token_hex(4)}"
    clients = aws.sink_clients(target)
    made: list[MadeSink] = []
    results: list[CheckResult] = []
    try:
        for name, sink in _SINKS:
            results.append(_one(clients, target, prefix, name, sink, made))
    finally:
        problems = delete_sinks(clients, made)
        clients.close()
    if problems:
        results.append(
            CheckResult(
                "cleanup",
                False,
                f"could not delete {len(problems)} of the doctor's sinks: " + "; ".join(problems),
                {"left_behind": len(problems)},
            )
        )
    return results


def _one(
    clients: SinkClients,
    target: aws.Target,
    prefix: str,
    name: str,
    sink: Sink,
    made: list[MadeSink],
) -> CheckResult:
    try:
        create_sinks(clients, [sink], prefix, into=made, target=target)
    except BackendError as exc:
        return CheckResult(
            name,
            False,
            f"could not make a {sink.kind.value} sink ({exc}): this backend does not serve "
            f"{_SERVICE[sink.kind]} as loadtest needs; a scenario naming "
            f"{_PLACEHOLDER[sink.kind]} cannot run here (runs without sinks are unaffected)",
            {"made": 0},
        )
    one = made[-1]
    try:
        return _CHECKS[name](clients, target, one)
    except (*ERRORS, BackendError) as exc:
        return CheckResult(
            name,
            False,
            f"the {_SERVICE[sink.kind]} calls failed ({type(exc).__name__}: {exc}); a scenario "
            f"naming {_PLACEHOLDER[sink.kind]} cannot be judged here",
            {"made": 1},
        )


def _held(clients: SinkClients, target: aws.Target, one: MadeSink) -> SinkContents:
    (contents,) = read_sinks(clients, [one], target)
    return contents


def _topic(clients: SinkClients, target: aws.Target, one: MadeSink) -> CheckResult:
    for _ in range(2):
        clients.sns.publish(TopicArn=one.address, Message=_ORDER)
    held = _held(clients, target, one)
    payloads = [m.payload for m in held.messages]
    ok = payloads == [_ORDER, _ORDER]
    return CheckResult(
        TOPIC_DELIVERS,
        ok,
        f"two identical publishes to a standard topic: its queue received {len(payloads)} "
        f"(expected 2, each as published{'' if ok else '; got ' + repr(payloads)[:120]})",
        {"published": 2, "delivered": len(payloads)},
    )


def _fifo_topic(clients: SinkClients, target: aws.Target, one: MadeSink) -> CheckResult:
    for _ in range(2):
        clients.sns.publish(
            TopicArn=one.address,
            Message=_ORDER,
            MessageGroupId="doctor",
            MessageDeduplicationId="doctor-order",
        )
    held = _held(clients, target, one)
    ok = [m.payload for m in held.messages] == [_ORDER]
    return CheckResult(
        FIFO_TOPIC_DEDUP,
        ok,
        f"one deduplication id published twice to a FIFO topic: its FIFO queue received "
        f"{len(held.messages)} (expected 1: the topic drops a repeat within 5 minutes)",
        {"published": 2, "delivered": len(held.messages)},
    )


def _bus(clients: SinkClients, target: aws.Target, one: MadeSink) -> CheckResult:
    answer = clients.events.put_events(
        Entries=[
            {
                "EventBusName": one.address,
                "Source": "loadtest.doctor",
                "DetailType": "OrderPlaced",
                "Detail": _ORDER,
            }
        ]
    )
    held = _held(clients, target, one)
    details = [json.loads(m.payload) for m in held.messages]
    ok = answer.get("FailedEntryCount", 0) == 0 and details == [json.loads(_ORDER)]
    return CheckResult(
        BUS_DELIVERS,
        ok,
        f"one event put on a bus: its rule's queue received {len(details)} with the detail "
        f"sent {'' if ok else 'NOT '}(expected 1, detail {_ORDER})",
        {"put": 1, "failed_entries": answer.get("FailedEntryCount", 0), "delivered": len(details)},
    )


def _bucket(clients: SinkClients, target: aws.Target, one: MadeSink) -> CheckResult:
    clients.s3.put_object(Bucket=one.address, Key="receipts/doctor-order.json", Body=b"first")
    clients.s3.put_object(Bucket=one.address, Key="receipts/doctor-order.json", Body=b"second")
    held = _held(clients, target, one)
    objects = [(m.key, m.payload) for m in held.messages]
    ok = objects == [("receipts/doctor-order.json", "second")]
    return CheckResult(
        BUCKET_KEY,
        ok,
        f"two puts of one key: the bucket holds {len(objects)} object(s) "
        f"{'with the last bytes' if ok else repr(objects)[:120]} (expected 1, the last bytes)",
        {"puts": 2, "objects": len(objects)},
    )


def _execution(clients: SinkClients, target: aws.Target, one: MadeSink) -> CheckResult:
    clients.stepfunctions.start_execution(
        stateMachineArn=one.address, name="doctor-order", input=_ORDER
    )
    refused = ""
    try:
        clients.stepfunctions.start_execution(
            stateMachineArn=one.address, name="doctor-order", input=json.dumps({"id": "other"})
        )
    except clients.stepfunctions.exceptions.ExecutionAlreadyExists as exc:
        refused = exc.response.get("Error", {}).get("Code", "ExecutionAlreadyExists")
    held = _held(clients, target, one)
    ok = bool(refused) and len(held.messages) == 1
    return CheckResult(
        EXECUTION_NAME,
        ok,
        "a second execution of a used name with another input was "
        f"{'refused (' + refused + ')' if refused else 'started'}; the machine holds "
        f"{len(held.messages)} execution(s) (expected: refused, 1)",
        {"refused": int(bool(refused)), "executions": len(held.messages)},
    )


_CHECKS: dict[str, Callable[[SinkClients, aws.Target, MadeSink], CheckResult]] = {
    TOPIC_DELIVERS: _topic,
    FIFO_TOPIC_DEDUP: _fifo_topic,
    BUS_DELIVERS: _bus,
    BUCKET_KEY: _bucket,
    EXECUTION_NAME: _execution,
}

__all__ = ["SINK_CHECK_TIMEOUT_S", "check_sinks"]

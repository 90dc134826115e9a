"""``loadtest.doctor.sinks`` on the real embedded backend: each sink check passes, leaves
nothing behind, and fails, saying what it means, when a sink does not behave."""

from __future__ import annotations

import dataclasses

import pytest

from loadtest.aws import clients as aws
from loadtest.aws.sink_reads import read_sinks
from loadtest.aws.sinks import create_sinks
from loadtest.doctor import sinks as doctor_sinks
from loadtest.doctor.checks import RESOURCE_PREFIX, SINK_CHECK_NAMES
from loadtest.errors import BackendError
from loadtest.model.history.records import EffectKind, SinkContents


def _target(backend_url: str) -> aws.Target:
    return aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)


def _left(backend_url: str) -> list[str]:
    """Whatever the doctor's prefix names on the backend: topics, queues, buses, buckets,
    state machines."""
    target = _target(backend_url)
    clients = aws.sink_clients(target)
    try:
        names = [t["TopicArn"] for t in clients.sns.list_topics()["Topics"]]
        names += clients.sqs.list_queues().get("QueueUrls", [])
        names += [b["Name"] for b in clients.events.list_event_buses()["EventBuses"]]
        names += [b["Name"] for b in clients.s3.list_buckets()["Buckets"]]
        machines = clients.stepfunctions.list_state_machines()["stateMachines"]
        names += [m["name"] for m in machines]
    finally:
        clients.close()
    return [name for name in names if RESOURCE_PREFIX in name]


def test_every_sink_check_passes_on_the_embedded_backend_and_leaves_nothing(
    backend_url: str,
) -> None:
    results = doctor_sinks.check_sinks(_target(backend_url))
    assert [r.name for r in results] == list(SINK_CHECK_NAMES)
    assert all(r.ok for r in results), [r.summary for r in results if not r.ok]
    by_name = {r.name: r.details for r in results}
    assert by_name["topic-delivers-each-publish"]["delivered"] == 2
    assert by_name["fifo-topic-deduplication"]["delivered"] == 1
    assert by_name["bucket-one-object-per-key"]["objects"] == 1
    assert by_name["execution-name-unique"]["refused"] == 1
    assert _left(backend_url) == []


def test_a_sink_that_holds_what_it_should_have_dropped_fails_its_check(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = read_sinks

    def doubled(*args: object, **kwargs: object) -> tuple[SinkContents, ...]:
        held = real(*args, **kwargs)  # type: ignore[arg-type]
        return tuple(dataclasses.replace(c, messages=c.messages * 2) for c in held)

    monkeypatch.setattr("loadtest.doctor.sinks.read_sinks", doubled)
    results = {r.name: r for r in doctor_sinks.check_sinks(_target(backend_url))}
    assert not results["fifo-topic-deduplication"].ok
    assert "received 2 (expected 1" in results["fifo-topic-deduplication"].summary
    assert not results["topic-delivers-each-publish"].ok
    assert not results["bucket-one-object-per-key"].ok
    assert _left(backend_url) == []


def test_a_service_the_backend_does_not_serve_fails_naming_the_placeholder(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = create_sinks

    def no_buses(clients: object, sinks: list[object], *args: object, **kwargs: object) -> None:
        if any(getattr(s, "kind", None) is EffectKind.BUS for s in sinks):
            raise BackendError("the endpoint answered 404 for events:CreateEventBus")
        real(clients, sinks, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("loadtest.doctor.sinks.create_sinks", no_buses)
    results = {r.name: r for r in doctor_sinks.check_sinks(_target(backend_url))}
    bus = results["bus-rule-delivers-detail"]
    assert not bus.ok
    assert "does not serve EventBridge" in bus.summary
    assert "{bus:NAME} cannot run here" in bus.summary
    assert results["topic-delivers-each-publish"].ok
    assert _left(backend_url) == []

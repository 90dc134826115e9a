"""loadtest.backend.sqs.fifo, in process on a fake clock: FIFO deduplication
holds for the window even after a delete, the window fault shortens it, groups stay in
order after a timeout, and what moto alone gives (a group blocked while in flight)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any
from unittest import mock

import pytest
from moto.sqs.models import SQSBackend, sqs_backends

from loadtest.aws.fifo import DEDUP_WINDOW_TAG
from loadtest.backend import patches
from loadtest.backend.sqs import fifo as fifo_patches

patches.apply()


class FakeClock:
    """Stands in for ``moto.core.utils.utcnow``, the clock all of moto's SQS reads."""

    def __init__(self) -> None:
        self.now = datetime.datetime(2025, 1, 1, 12, 0, 0)

    def __call__(self) -> datetime.datetime:
        return self.now

    def advance_s(self, seconds: float) -> None:
        self.now += datetime.timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    fake = FakeClock()
    with mock.patch("moto.core.utils.utcnow", fake):
        yield fake


@pytest.fixture
def backend() -> SQSBackend:
    return sqs_backends["123456789012"]["us-east-1"]


@pytest.fixture
def fifo(backend: SQSBackend) -> Iterator[str]:
    name = backend.create_queue(f"q-{uuid.uuid4().hex[:12]}.fifo", FifoQueue="true").name
    yield name
    backend.delete_queue(name)


def _drain(backend: SQSBackend, name: str) -> list[str]:
    """Receive and delete until the queue is empty; the bodies in delivery order."""
    bodies = []
    while found := backend.receive_message(name, 10, 0, 30):
        for message in found:
            bodies.append(message.body)
            backend.delete_message(name, message.receipt_handle or "")
    return bodies


def _send(backend: SQSBackend, name: str, body: str, dedup: str, group: str = "g") -> Any:
    return backend.send_message(name, body, group_id=group, deduplication_id=dedup)


def test_deduplication_holds_after_the_message_was_deleted(
    backend: SQSBackend, fifo: str, clock: FakeClock
) -> None:
    first = _send(backend, fifo, "one", "A")
    assert _drain(backend, fifo) == ["one"]
    clock.advance_s(299)
    again = _send(backend, fifo, "one again", "A")
    assert again.id == first.id  # accepted, answered with the first message's id
    assert _drain(backend, fifo) == []
    clock.advance_s(2)  # 301 s after the first send: outside SQS's five minutes
    _send(backend, fifo, "one, later", "A")
    assert _drain(backend, fifo) == ["one, later"]


def test_sequence_numbers_increase_within_a_group(backend: SQSBackend, fifo: str) -> None:
    # SQS: "SequenceNumber continues to increase for a particular MessageGroupId"; moto
    # drew 20 random digits, so a consumer applying only newer messages was misjudged.
    sent = [_send(backend, fifo, f"m{i}", f"d{i}", group="g" if i % 2 else "h") for i in range(40)]
    numbers = [int(m.sequence_number) for m in sent]
    assert all(len(m.sequence_number) == 20 for m in sent)
    for group in (numbers[0::2], numbers[1::2]):
        assert group == sorted(group) and len(set(group)) == len(group)
    duplicate = _send(backend, fifo, "m1 again", "d1", group="g")
    assert duplicate.sequence_number == sent[1].sequence_number  # SQS answers the first's


def test_batch_duplicates_each_get_their_entry_id(backend: SQSBackend, fifo: str) -> None:
    entries: dict[str, dict[str, Any]] = {
        str(i): {
            "Id": str(i),
            "MessageBody": "same",
            "MessageAttributes": {},
            "DelaySeconds": None,
            "MessageGroupId": "g",
            "MessageDeduplicationId": "A",
        }
        for i in range(3)
    }
    sent, failed = backend.send_message_batch(fifo, entries)
    assert not failed
    assert sorted(m.user_id for m in sent) == ["0", "1", "2"]  # type: ignore[attr-defined]
    assert len({m.id for m in sent}) == 1
    assert _drain(backend, fifo) == ["same"]


def test_the_window_fault_shortens_deduplication(backend: SQSBackend, clock: FakeClock) -> None:
    name = backend.create_queue(
        f"w-{uuid.uuid4().hex[:12]}.fifo", FifoQueue="true", tags={DEDUP_WINDOW_TAG: "2"}
    ).name
    try:
        assert fifo_patches.dedup_window_s(backend.get_queue(name)) == 2
        _send(backend, name, "first", "A")
        clock.advance_s(1.5)
        _send(backend, name, "inside", "A")
        clock.advance_s(1)
        _send(backend, name, "after", "A")
        assert _drain(backend, name) == ["first", "after"]
    finally:
        backend.delete_queue(name)


def test_content_based_deduplication_hashes_the_body(backend: SQSBackend) -> None:
    name = backend.create_queue(
        f"c-{uuid.uuid4().hex[:12]}.fifo", FifoQueue="true", ContentBasedDeduplication="true"
    ).name
    try:
        for body in ("x", "x", "y"):
            backend.send_message(name, body, group_id="g")
        assert _drain(backend, name) == ["x", "y"]
        backend.send_message(name, "x", group_id="g")  # deleted, still inside the window
        assert _drain(backend, name) == []
    finally:
        backend.delete_queue(name)


def test_a_group_is_blocked_while_in_flight_and_resumes_in_order_after_a_timeout(
    backend: SQSBackend, fifo: str, clock: FakeClock
) -> None:
    for body in "abc":
        _send(backend, fifo, body, body)
    _send(backend, fifo, "other", "o", group="h")
    first = backend.receive_message(fifo, 2, 0, 5)
    assert [m.body for m in first] == ["a", "b"]
    # moto alone: the group is blocked while its messages are in flight; others flow.
    assert [m.body for m in backend.receive_message(fifo, 10, 0, 5)] == ["other"]
    clock.advance_s(6)
    # Both timed out: the oldest comes first (moto alone hands out "b").
    assert [m.body for m in backend.receive_message(fifo, 1, 0, 5)] == ["a"]


def test_standard_queues_are_not_deduplicated(backend: SQSBackend) -> None:
    name = backend.create_queue(f"s-{uuid.uuid4().hex[:12]}").name
    try:
        for _ in range(2):
            backend.send_message(name, "same")
        assert _drain(backend, name) == ["same", "same"]
    finally:
        backend.delete_queue(name)

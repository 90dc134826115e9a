"""loadtest.backend.patches, in process: moto's SQS semantics kept, work independent of depth.

These drive moto's ``SQSBackend`` directly (no server) on a fake clock, so visibility
timeouts and delays are exercised without sleeping and every assertion is deterministic.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import inspect
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto.dynamodb.models import DynamoDBBackend
from moto.sqs import models as sqs_models
from moto.sqs.exceptions import PurgeQueueInProgress, ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend, sqs_backends

from loadtest.backend import patches
from loadtest.backend.errors import BackendError, UnsupportedMotoVersion
from loadtest.backend.sqs import patches as sqs_patches
from loadtest.backend.sqs import store as sqs_store
from loadtest.backend.sqs.message import CompactMessage, MotoMessage

ACCOUNT = "123456789012"
REGION = "us-east-1"

patches.apply()


class FakeClock:
    """Stands in for ``moto.core.utils.utcnow``, the clock all of moto's SQS reads."""

    def __init__(self) -> None:
        self.now = datetime.datetime(2025, 1, 1, 12, 0, 0)

    def __call__(self) -> datetime.datetime:
        return self.now

    def advance_ms(self, ms: int) -> None:
        self.now += datetime.timedelta(milliseconds=ms)


def _backend() -> SQSBackend:
    return sqs_backends[ACCOUNT][REGION]


@pytest.fixture
def clock() -> Iterator[FakeClock]:
    fake = FakeClock()
    with mock.patch("moto.core.utils.utcnow", fake):
        yield fake


def _queue_name(prefix: str = "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@dataclass
class Redriven:
    """A source queue with a dead-letter queue, deleted afterwards."""

    source: str
    dlq: str
    max_receive_count: int
    names: list[str] = field(default_factory=list)

    @classmethod
    def create(cls, max_receive_count: int = 2) -> Redriven:
        backend = _backend()
        dlq = backend.create_queue(_queue_name("dlq"))
        policy = {"deadLetterTargetArn": dlq.queue_arn, "maxReceiveCount": max_receive_count}
        source = backend.create_queue(_queue_name("src"), RedrivePolicy=json.dumps(policy))
        return cls(source.name, dlq.name, max_receive_count)

    def delete(self) -> None:
        _backend().delete_queue(self.source)
        _backend().delete_queue(self.dlq)


def _members(queue: Queue) -> list[Message]:
    return list(queue._messages)


def _moto_counts(queue: Queue) -> tuple[int, int, int]:
    """What moto 5.2's unpatched properties compute: full scans with Message.visible/delayed."""
    members = _members(queue)
    return (
        sum(1 for m in members if m.visible and not m.delayed),
        sum(1 for m in members if not m.visible),
        sum(1 for m in members if m.delayed),
    )


def _patched_counts(queue: Queue) -> tuple[int, int, int]:
    return (
        queue.approximate_number_of_messages,
        queue.approximate_number_of_messages_not_visible,
        queue.approximate_number_of_messages_delayed,
    )


def _expected_receive(queue: Queue, count: int) -> tuple[list[str], list[str]]:
    """moto 5.2's selection, replayed on a snapshot: (ids returned, ids sent to the DLQ)."""
    returned: list[str] = []
    dead_lettered: list[str] = []
    policy = queue.redrive_policy
    for message in (m for m in _members(queue) if m.visible and not m.delayed):
        if len(returned) >= count:
            break
        if (
            queue.dead_letter_queue is not None
            and policy
            and message.approximate_receive_count >= policy["maxReceiveCount"]
        ):
            dead_lettered.append(message.id)
            continue
        returned.append(message.id)
    return returned, dead_lettered


Op = tuple[str, int, int]

OPERATIONS = st.one_of(
    st.tuples(st.just("send"), st.sampled_from([0, 0, 0, 2]), st.just(0)),
    st.tuples(st.just("receive"), st.integers(1, 10), st.sampled_from([0, 1, 3, 30])),
    st.tuples(st.just("delete"), st.integers(0, 10_000), st.just(0)),
    st.tuples(st.just("change_visibility"), st.integers(0, 10_000), st.sampled_from([0, 2])),
    st.tuples(st.just("tick"), st.integers(1, 4000), st.just(0)),
    st.tuples(st.just("purge"), st.just(0), st.just(0)),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(operations=st.lists(OPERATIONS, max_size=60))
def test_index_agrees_with_moto_after_any_history(operations: list[Op], clock: FakeClock) -> None:
    backend = _backend()
    queues = Redriven.create(max_receive_count=2)
    source = backend.get_queue(queues.source)
    dlq = backend.get_queue(queues.dlq)
    handles: list[str] = []
    try:
        for kind, a, b in operations:
            if kind == "send":
                backend.send_message(queues.source, "body", delay_seconds=a)
            elif kind == "receive":
                expected, expected_dead = _expected_receive(source, count=a)
                received = backend.receive_message(queues.source, a, 0, b)
                assert [m.id for m in received] == expected
                assert {m.id for m in _members(dlq)} >= set(expected_dead)
                handles.extend(m.receipt_handle for m in received if m.receipt_handle)
            elif kind == "delete" and handles:
                handle = handles[a % len(handles)]
                owner = [m for m in _members(source) if m.had_receipt_handle(handle)]
                if handle in source.deleted_messages or owner:
                    backend.delete_message(queues.source, handle)
                    assert not any(m.had_receipt_handle(handle) for m in _members(source))
                else:
                    with pytest.raises(ReceiptHandleIsInvalid):
                        backend.delete_message(queues.source, handle)
            elif kind == "change_visibility" and handles:
                handle = handles[a % len(handles)]
                owner = [m for m in _members(source) if m.had_receipt_handle(handle)]
                if owner:
                    backend.change_message_visibility(queues.source, handle, b)
                    assert owner[0].visible_at > 0
                else:
                    with pytest.raises(ReceiptHandleIsInvalid):
                        backend.change_message_visibility(queues.source, handle, b)
            elif kind == "tick":
                clock.advance_ms(a)
            elif kind == "purge":
                with contextlib.suppress(PurgeQueueInProgress):  # one per 60 s, as in SQS
                    backend.purge_queue(queues.source)
            for queue in (source, dlq):
                assert _patched_counts(queue) == _moto_counts(queue)
                store = queue._messages
                assert isinstance(store, patches.IndexedMessages)
                for message in _members(queue):
                    for known in message.all_receipt_handles:
                        if known is not None:
                            assert store.find(known) is message
    finally:
        queues.delete()


def test_received_message_returns_after_its_visibility_timeout(clock: FakeClock) -> None:
    backend = _backend()
    name = backend.create_queue(_queue_name()).name
    try:
        backend.send_message(name, "hello")
        (first,) = backend.receive_message(name, 10, 0, 5)
        assert backend.receive_message(name, 10, 0, 5) == []
        assert _patched_counts(backend.get_queue(name)) == (0, 1, 0)
        clock.advance_ms(5001)
        (second,) = backend.receive_message(name, 10, 0, 5)
        assert (second.id, second.approximate_receive_count) == (first.id, 2)
        assert second.receipt_handle != first.receipt_handle
        backend.delete_message(name, first.receipt_handle or "")  # any handle it ever had
        backend.delete_message(name, first.receipt_handle or "")  # and again
        assert _patched_counts(backend.get_queue(name)) == (0, 0, 0)
    finally:
        backend.delete_queue(name)


def test_delayed_message_is_counted_and_held_back(clock: FakeClock) -> None:
    backend = _backend()
    name = backend.create_queue(_queue_name()).name
    try:
        backend.send_message(name, "later", delay_seconds=3)
        assert _patched_counts(backend.get_queue(name)) == (0, 0, 1)
        assert backend.receive_message(name, 1, 0, 30) == []
        clock.advance_ms(3000)
        assert [m.body for m in backend.receive_message(name, 1, 0, 30)] == ["later"]
    finally:
        backend.delete_queue(name)


def test_redrive_moves_the_message_with_its_attributes(clock: FakeClock) -> None:
    backend = _backend()
    queues = Redriven.create(max_receive_count=2)
    try:
        attributes = {"kind": {"DataType": "String", "StringValue": "order"}}
        sent = backend.send_message(queues.source, "payload", message_attributes=attributes)
        for receive_count in (1, 2):
            (message,) = backend.receive_message(queues.source, 1, 0, 0)
            assert message.approximate_receive_count == receive_count
        assert backend.receive_message(queues.source, 1, 0, 0) == []
        (dead,) = backend.receive_message(queues.dlq, 1, 0, 30, ["All"])
        assert (dead.id, dead.body, dead.message_attributes) == (sent.id, "payload", attributes)
        assert dead.attribute_md5 == sent.attribute_md5
        assert _patched_counts(backend.get_queue(queues.source)) == (0, 0, 0)
    finally:
        queues.delete()


def test_fifo_queue_keeps_moto_group_semantics(clock: FakeClock) -> None:
    backend = _backend()
    name = backend.create_queue(
        _queue_name() + ".fifo", FifoQueue="true", ContentBasedDeduplication="true"
    ).name
    try:
        for body in ("a", "b", "c"):
            backend.send_message(name, body, group_id="g")
        (first,) = backend.receive_message(name, 1, 0, 30)
        assert first.body == "a"
        assert backend.receive_message(name, 10, 0, 30) == []  # group g is in flight
        assert _patched_counts(backend.get_queue(name)) == _moto_counts(backend.get_queue(name))
        backend.delete_message(name, first.receipt_handle or "")
        assert [m.body for m in backend.receive_message(name, 1, 0, 30)] == ["b"]
    finally:
        backend.delete_queue(name)


class WorkCounter:
    """Counts every per-message examination the SQS code paths can make."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.visits = 0
        self._count(monkeypatch, sqs_store, "_is_available")
        self._count(monkeypatch, sqs_store, "_is_live")  # each heap entry looked at
        stored = sqs_models.Message  # the class queues store, as installed
        self._count(monkeypatch, stored, "had_receipt_handle")
        for name in ("visible", "delayed"):
            getter = getattr(stored, name).fget
            monkeypatch.setattr(stored, name, property(self._counting(getter)))
        iterate = patches.IndexedMessages.__iter__
        monkeypatch.setattr(patches.IndexedMessages, "__iter__", self._counting(iterate))

    def _count(self, monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> None:
        monkeypatch.setattr(owner, name, self._counting(getattr(owner, name)))

    def _counting(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            self.visits += 1
            return function(*args, **kwargs)

        return counted


def _work_at_depth(depth: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Per-message examinations for a fixed mix of calls on a queue ``depth`` deep."""
    backend = _backend()
    name = backend.create_queue(_queue_name()).name
    try:
        for index in range(depth):
            backend.send_message(name, f"filler {index}")
        with monkeypatch.context() as patch:
            counter = WorkCounter(patch)
            entries: dict[str, dict[str, Any]] = {
                str(i): {
                    "Id": str(i),
                    "MessageBody": "x",
                    "MessageAttributes": {},
                    "DelaySeconds": None,
                }
                for i in range(10)
            }
            backend.send_message_batch(name, entries)
            received = backend.receive_message(name, 10, 0, 30, ["All"])
            backend.change_message_visibility(name, received[0].receipt_handle or "", 60)
            backend.delete_message_batch(
                name, [{"Id": m.id, "ReceiptHandle": m.receipt_handle} for m in received]
            )
            backend.get_queue_attributes(name, ["All"])
            backend.receive_message(name, 10, 1, 0)
            return counter.visits
    finally:
        backend.delete_queue(name)


def test_work_per_call_does_not_depend_on_queue_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    shallow = _work_at_depth(20, monkeypatch)
    deep = _work_at_depth(5000, monkeypatch)
    assert shallow > 0  # the counter does see the work
    assert deep == shallow


def _work_per_send(in_flight: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Examinations ten ``SendMessage`` calls make with ``in_flight`` messages received."""
    backend = _backend()
    name = backend.create_queue(_queue_name()).name
    try:
        for index in range(in_flight):
            backend.send_message(name, f"filler {index}")
        while len(backend.receive_message(name, 10, 0, 300)) == 10:
            pass
        with monkeypatch.context() as patch:
            counter = WorkCounter(patch)
            for _ in range(10):
                backend.send_message(name, "x")
            backend.get_queue_attributes(name, ["All"])  # reads the queue's counts
            return counter.visits
    finally:
        backend.delete_queue(name)


def test_sending_does_not_walk_the_messages_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    few = _work_per_send(10, monkeypatch)
    many = _work_per_send(2000, monkeypatch)
    assert few > 0  # the counter does see the work
    assert many == few


def test_a_standard_queue_send_is_moto_s_without_the_queue_s_attributes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    moto_send_message = inspect.unwrap(SQSBackend.send_message)
    assert sqs_patches._make_send_message(moto_send_message) is sqs_patches._send_message
    backend = _backend()
    name = backend.create_queue(_queue_name()).name
    fifo = backend.create_queue(
        f"{_queue_name()}.fifo", FifoQueue="true", ContentBasedDeduplication="true"
    ).name
    try:
        with monkeypatch.context() as patch:
            read: list[Queue] = []
            attributes = Queue.attributes

            def reading(queue: Queue) -> dict[str, Any]:
                read.append(queue)
                return attributes.fget(queue)  # type: ignore[attr-defined, no-any-return]

            patch.setattr(Queue, "attributes", property(reading))
            sent = backend.send_message(name, "x", delay_seconds=2)
            assert read == []
            first = backend.send_message(fifo, "y", group_id="g")
            assert read and all(queue.name == fifo for queue in read)
        assert sent.body == "x" and sent.deduplication_id is None
        assert first.deduplication_id == hashlib.sha256(b"y").hexdigest()
        assert backend.get_queue_attributes(name, ["All"])["ApproximateNumberOfMessagesDelayed"]
    finally:
        backend.delete_queue(name)
        backend.delete_queue(fifo)


def test_apply_is_idempotent_and_installs_every_replacement() -> None:
    patches.apply()
    patches.apply()
    assert patches.is_applied()
    assert Queue.delete_message is patches._queue_delete_message
    assert isinstance(Queue.__dict__["_messages"], property)
    assert SQSBackend.change_message_visibility is patches._change_message_visibility
    for name in ("execute_statement", "batch_execute_statement", "execute_transaction"):
        assert hasattr(getattr(DynamoDBBackend, name), "__wrapped__"), name


@pytest.mark.parametrize("version", ["5.3.0", "6.0.0", "4.2.14", "5.2.4", "5.2.6", "5", "dev"])
def test_other_moto_releases_are_refused(version: str) -> None:
    with pytest.raises(UnsupportedMotoVersion, match=f"moto {version} is installed"):
        patches.check_moto_version(version)
    assert issubclass(UnsupportedMotoVersion, BackendError)


@pytest.mark.parametrize("version", ["5.2.5", "5.2.5.post1"])
def test_the_mirrored_release_is_accepted(version: str) -> None:
    patches.check_moto_version(version)


@pytest.mark.parametrize("message_class", [CompactMessage, MotoMessage])
def test_store_behaves_like_the_list_moto_expects(
    clock: FakeClock, message_class: type[Message]
) -> None:
    first, second = message_class("1", "a"), message_class("2", "b")
    store = patches.IndexedMessages([first])
    store.append(second)
    assert (list(store), len(store), second in store) == ([first, second], 2, True)
    store.remove(first)
    assert list(store) == [second]
    with pytest.raises(ValueError, match="not in queue"):
        store.remove(first)


def test_deleted_receipt_handles_are_remembered_up_to_a_limit() -> None:
    from loadtest.backend.patches import RecentHandles

    handles = RecentHandles(limit=3)
    handles.update(["a", "b", None])
    handles.update(["c", "d"])
    assert "a" not in handles and "b" in handles and "d" in handles
    assert "c" in handles and len(handles) == 3
    assert None not in handles and "never issued" not in handles


def test_deleted_receipt_handles_keep_the_latest_limit_across_generations() -> None:
    from loadtest.backend.patches import RecentHandles

    handles = RecentHandles(limit=160)
    issued = [f"handle-{i}" for i in range(1000)]
    for first in range(0, len(issued), 7):
        handles.update(issued[first : first + 7])
    assert all(handle in handles for handle in issued[-160:])
    assert not any(handle in handles for handle in issued[:800])
    assert 160 <= len(handles) < 160 + 160 // RecentHandles.GENERATIONS

"""The moto SQS functions that go through the indexed store: queue depth, delete, receive
(standard queues here, FIFO via ``fifo_patches``), visibility changes, purge, and the lock
around queue creation and deletion.

Owns the replacement functions ``loadtest.backend.patches`` installs on moto's
``Queue`` and ``SQSBackend`` (the why is in that module's docstring). Must not touch
DynamoDB or install anything itself.
"""

from __future__ import annotations

import hashlib
import string
import threading
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any, cast

from moto.core import utils as moto_utils
from moto.moto_api._internal import mock_random
from moto.sqs import models as sqs_models
from moto.sqs.exceptions import InvalidParameterValue, ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend

from loadtest.backend.core import random_strings
from loadtest.backend.core.mirrors import mirrors
from loadtest.backend.sqs import fifo as fifo_patches
from loadtest.backend.sqs.store import IndexedMessages, RecentHandles, _now_ms

_STORE_ATTR = "_loadtest_messages"
_MAXIMUM_TOTAL_VISIBILITY_MS = 43_200 * 1000  # moto's "Total VisibilityTimeout" limit
# Queue creation looks a dead-letter queue up by iterating SQSBackend.queues; a concurrent
# CreateQueue or DeleteQueue would change the dict under it ("dictionary changed size").
_QUEUES_LOCK = threading.RLock()


def _store(queue: Queue) -> IndexedMessages:
    return cast(IndexedMessages, queue._messages)


# -- Queue ------------------------------------------------------------------------------------
def _get_messages(queue: Queue) -> IndexedMessages:
    store = queue.__dict__.get(_STORE_ATTR)
    if store is None:  # a queue created before apply(): index what it holds
        store = IndexedMessages(queue.__dict__.pop("_messages", []))
        queue.__dict__[_STORE_ATTR] = store
    return cast(IndexedMessages, store)


def _set_messages(queue: Queue, messages: Iterable[Message]) -> None:
    # Queue.__init__ and purge_queue assign a list.
    if not isinstance(messages, IndexedMessages):
        messages = IndexedMessages(messages)
    queue.__dict__[_STORE_ATTR] = messages


def _approximate_number_of_messages(queue: Queue) -> int:
    with queue._messages_lock:
        return _store(queue).count_available(_now_ms())


def _approximate_number_of_messages_not_visible(queue: Queue) -> int:
    with queue._messages_lock:
        return _store(queue).count_not_visible(_now_ms())


def _approximate_number_of_messages_delayed(queue: Queue) -> int:
    with queue._messages_lock:
        return _store(queue).count_delayed(_now_ms())


def _queue_delete_message(queue: Queue, receipt_handle: str) -> None:
    with queue._messages_lock:
        if receipt_handle in queue.deleted_messages:
            return  # already deleted: moto (and SQS) accept it again
        store = _store(queue)
        message = store.find(receipt_handle)
        if message is None:
            raise ReceiptHandleIsInvalid()
        queue.pending_messages.discard(message)
        deleted: Any = queue.deleted_messages  # moto's set until the first delete here
        if not isinstance(deleted, RecentHandles):
            deleted = RecentHandles(deleted)
            queue.deleted_messages = deleted
        deleted.update(cast(list[str], message.all_receipt_handles))
        store.remove(message)
        queue._messages_lock.notify_all()  # a FIFO long poll may wait for this group


# -- SQSBackend -------------------------------------------------------------------------------
_Receive = Callable[..., list[Message]]


def _make_receive_message(moto_receive_message: _Receive) -> _Receive:
    def receive_message(
        backend: SQSBackend,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> list[Message]:
        queue = backend.get_queue(queue_name)
        if queue.fifo_queue:
            # Message groups make FIFO selection stateful; keep moto's selection for it, one
            # poller at a time, then re-index (see fifo_patches.receive).
            return fifo_patches.receive(
                moto_receive_message,
                backend,
                queue_name,
                count,
                wait_seconds_timeout,
                visibility_timeout,
                message_attribute_names,
                reindex=_store(queue).rebuild,
            )
        return _receive_standard(
            queue, count, wait_seconds_timeout, visibility_timeout, message_attribute_names or []
        )

    receive_message.__wrapped__ = moto_receive_message  # type: ignore[attr-defined]
    return receive_message


def _receive_standard(
    queue: Queue,
    count: int,
    wait_seconds_timeout: int,
    visibility_timeout: int,
    message_attribute_names: list[str],
) -> list[Message]:
    """moto's ``SQSBackend.receive_message`` for a standard queue, indexed and locked."""
    lock = queue._messages_lock
    polling_end_s = moto_utils.unix_time() + wait_seconds_timeout
    while True:
        dead_letters: list[tuple[Queue, Message]] = []
        with lock:
            result = _select(
                queue, count, visibility_timeout, message_attribute_names, dead_letters
            )
        # Outside this queue's lock: add_message takes the dead-letter queue's.
        for dead_letter_queue, message in dead_letters:
            dead_letter_queue.add_message(message)
        if result or not wait_seconds_timeout:
            return result
        with lock:
            remaining_s = polling_end_s - moto_utils.unix_time()
            if remaining_s <= 0:
                return result
            next_ms = _store(queue).ms_until_available(_now_ms())
            if next_ms != 0.0:
                # Woken by add_message / change_message_visibility (notify_all); otherwise
                # sleep until the next in-flight message may become visible again.
                timeout_s = remaining_s if next_ms is None else min(remaining_s, next_ms / 1000)
                lock.wait(timeout_s)


def _select(
    queue: Queue,
    count: int,
    visibility_timeout: int,
    message_attribute_names: list[str],
    dead_letters: list[tuple[Queue, Message]],
) -> list[Message]:
    """One pass over the available messages, under the queue's lock (mirrors moto's loop)."""
    store = _store(queue)
    now_ms = _now_ms()
    result: list[Message] = []
    taken: list[Message] = []
    try:
        while len(result) < count:
            message = store.pop_available(now_ms)
            if message is None:
                break
            taken.append(message)
            if message in queue.pending_messages:
                # Visible again while pending: the previous consumer timed out.
                queue.pending_messages.remove(message)
            policy = queue.redrive_policy
            dead_letter_queue = queue.dead_letter_queue
            if (
                dead_letter_queue is not None
                and policy
                and message.approximate_receive_count >= policy["maxReceiveCount"]
            ):
                store.remove(message)
                dead_letters.append((dead_letter_queue, message))
                continue
            queue.pending_messages.add(message)
            message.mark_received(visibility_timeout=visibility_timeout)
            store.register_receipt_handle(message)
            # A copy, so filtering attributes for this response leaves the message intact.
            message_copy = deepcopy(message)
            sqs_models._filter_message_attributes(message_copy, message_attribute_names)
            retention_s = int(queue.message_retention_period)  # type: ignore[attr-defined]
            if retention_s + cast(int, message.sent_timestamp) / 1000 <= moto_utils.unix_time():
                break  # moto: past retention, marked received but not returned
            result.append(message_copy)
    finally:
        # Popped messages go back on the schedule before anyone else can take the lock;
        # received ones are now filed under their new visibility timeout.
        for message in taken:
            store.reschedule(message)
    return result


def _change_message_visibility(
    backend: SQSBackend, queue_name: str, receipt_handle: str, visibility_timeout: int
) -> None:
    queue = backend.get_queue(queue_name)
    with queue._messages_lock:
        message = _store(queue).find(receipt_handle)
        if message is None:
            raise ReceiptHandleIsInvalid()
        given_visible_at_ms = _now_ms() + int(visibility_timeout) * 1000
        if given_visible_at_ms - cast(int, message.sent_timestamp) > _MAXIMUM_TOTAL_VISIBILITY_MS:
            raise InvalidParameterValue(
                f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. "
                "Reason: Total VisibilityTimeout for the message is beyond the limit "
                "[43200 seconds]"
            )
        message.change_visibility(visibility_timeout)
        _store(queue).reschedule(message)
        if message.visible and message in queue.pending_messages:
            queue.pending_messages.remove(message)
        queue._messages_lock.notify_all()  # a long poll may now have a message


def _make_purge_queue(moto_purge_queue: Callable[[SQSBackend, str], None]) -> Callable[..., None]:
    def purge_queue(backend: SQSBackend, queue_name: str) -> None:
        with backend.get_queue(queue_name)._messages_lock:
            moto_purge_queue(backend, queue_name)

    return purge_queue


def _serialised(moto_function: Callable[..., Any]) -> Callable[..., Any]:
    def serialised(*args: Any, **kwargs: Any) -> Any:
        with _QUEUES_LOCK:
            return moto_function(*args, **kwargs)

    serialised.__name__ = moto_function.__name__
    return serialised


def _make_list_of_moto_modules(
    moto_list_of_moto_modules: Callable[[], Iterable[str]],
) -> Callable[[], tuple[str, ...]]:
    modules = tuple(moto_list_of_moto_modules())

    def list_of_moto_modules() -> tuple[str, ...]:
        return modules

    return list_of_moto_modules


_RECEIPT_HANDLE_LENGTH = 185  # moto's, after SQS's documented maximum


def _generate_receipt_handle() -> str:
    # moto draws the 185 letters one random.choice call at a time (~3% of a
    # ReceiveMessage's CPU); random bytes mapped to letters draw the same kind of handle
    # from the same (seedable) generator (``random_strings`` says how).
    return random_strings.draw(mock_random, string.ascii_lowercase, _RECEIPT_HANDLE_LENGTH)


SEND_MESSAGE_SOURCE_SHA256 = "bf161af09a9e6b860e3dd5d8f58ccc802623caa86883fab9b2ffb333f8f70330"
"""SHA-256 of moto 5.2.5's ``SQSBackend.send_message`` source, which ``_send_message``
mirrors."""


def _make_send_message(moto_send_message: Callable[..., Message]) -> Callable[..., Message]:
    """``_send_message`` while moto's ``SQSBackend.send_message`` is the source it mirrors,
    else moto's own."""
    if not mirrors(moto_send_message, SEND_MESSAGE_SOURCE_SHA256):
        return moto_send_message
    _send_message.__wrapped__ = moto_send_message  # type: ignore[attr-defined]
    return _send_message


def _send_message(
    self: SQSBackend,
    queue_name: str,
    message_body: str,
    message_attributes: dict[str, Any] | None = None,
    delay_seconds: int | None = None,
    deduplication_id: str | None = None,
    group_id: str | None = None,
    system_attributes: dict[str, Any] | None = None,
    validate_group_id: bool = True,
) -> Message:
    """moto's ``SQSBackend.send_message``, line for line, but for one step: moto builds
    the queue's whole ``attributes`` (14 of them, the three message counts included) for
    every message only to read ``ContentBasedDeduplication``, which only a FIFO queue's
    attributes hold; a standard queue's answer (None) is known without them (~4% of the
    backend's CPU over a run's per-message calls)."""
    queue = self.get_queue(queue_name)

    self._validate_message(
        queue,
        message_body=message_body,
        delay_seconds=int(delay_seconds or 0),
        deduplication_id=deduplication_id,
        group_id=group_id,
        validate_group_id=validate_group_id,
    )

    if delay_seconds is not None:  # noqa: SIM108 - moto's lines, as they are
        delay_seconds = int(delay_seconds)
    else:
        delay_seconds = queue.delay_seconds  # type: ignore[attr-defined]

    message_id = str(mock_random.uuid4())
    message = sqs_models.Message(message_id, message_body, system_attributes)

    # if content based deduplication is set then set sha256 hash of the message
    # as the deduplication_id
    if queue.fifo_queue and queue.attributes.get("ContentBasedDeduplication") == "true":
        sha256 = hashlib.sha256()
        sha256.update(message_body.encode("utf-8"))
        message.deduplication_id = sha256.hexdigest()

    # Attributes, but not *message* attributes
    if deduplication_id is not None:
        message.deduplication_id = deduplication_id
        message.sequence_number = "".join(mock_random.choice(string.digits) for _ in range(20))

    if group_id is not None:
        message.group_id = group_id

    if message_attributes:
        message.message_attributes = message_attributes

    if delay_seconds > sqs_models.MAXIMUM_MESSAGE_DELAY:
        msg = (
            f"Value {delay_seconds} for parameter DelaySeconds is invalid. "
            "Reason: DelaySeconds must be >= 0 and <= 900."
        )
        raise InvalidParameterValue(msg)

    message.mark_sent(delay_seconds=delay_seconds)

    queue.add_message(message)

    return message

"""Narrow monkeypatches that make moto 5.2.x's server fast enough, its SQS thread-safe and
its PartiQL writes behave like DynamoDB's.

Owns: the indexed store that replaces ``Queue._messages``, the handful of moto SQS
functions that must go through it, a cache for the server's service lookup, and the three
DynamoDB PartiQL entry points (``DynamoDBBackend.execute_statement``,
``batch_execute_statement``, ``execute_transaction``) for INSERT / UPDATE / DELETE.
``apply()`` installs them once per process (it is idempotent) and refuses any moto outside
the 5.2 series, whose ``moto/sqs/models.py``, ``moto/dynamodb/models/__init__.py`` and
``moto/moto_server`` this mirrors. Must not touch: the rest of DynamoDB (its races are
closed by serialising requests in ``loadtest.adapters.backend.embedded``), PartiQL SELECT (moto's
own), any other service, or anything a client can observe except speed and the PartiQL
answers below.

Why, measured on moto 5.2.5's threaded server:

* Dispatch. Every request, whatever the service, looks its service up through
  ``moto.backends.list_of_moto_modules``, which lists moto's package directory and
  ``stat``s each of its ~270 entries - under the dispatcher's global lock
  (``DomainDispatcherApplication.get_application``). That is ~0.7 ms of serialised
  filesystem calls per SQS request, a third of a conditional ``PutItem``.
* Depth. ``Queue._messages`` is a list and every question is a scan of it.
  ``SQSBackend.send_message`` reads ``Queue.attributes``, which counts visible,
  in-flight and delayed messages (three scans); ``SQSBackend.receive_message`` scans
  ``Queue.messages`` and then, per message returned, calls
  ``is_message_valid_based_on_retention_period`` (three more ``Queue.attributes``);
  ``Queue.delete_message`` and ``SQSBackend.change_message_visibility`` scan for the receipt
  handle and rebuild the list. Sends fell from 151/s to 42/s as a queue grew to 300
  messages; a receive of 10 fell from 19.8 to 0.9 calls/s at depth 1,000.
* Threads. Nothing but ``add_message`` takes the queue's lock, so two pollers can pick the
  same visible message::

      poller A                          poller B
      snapshot Queue.messages: [m1]
                                        snapshot Queue.messages: [m1]
      m1.mark_received()  -> handle hA
                                        m1.mark_received()  -> handle hB
      returns m1                        returns m1        (one message, two consumers)

  and a delete that rebuilds the list can drop a message appended meanwhile::

      DeleteMessage                     SendMessage
      new = [m for m in _messages ...]
                                        _messages.append(m9)
      _messages = new                   (m9 is gone: acknowledged by nobody, lost)

What changes:

* ``moto.backends.list_of_moto_modules`` returns the list it computed once: moto's own
  subpackages do not change while it runs.

and on ``moto.sqs.models``:

* ``Queue._messages`` becomes a property holding an ``IndexedMessages``: arrival-ordered
  members, a receipt-handle index, and two heaps (available oldest-first; in-flight or
  delayed by the time they become available). It still iterates, appends and removes like
  the list moto's unpatched code expects.
* ``Queue.approximate_number_of_messages``, ``..._not_visible`` and ``..._delayed`` read
  the store (work proportional to in-flight messages, not queue depth). That alone makes
  ``Queue.attributes`` - and so ``SendMessage`` and ``GetQueueAttributes`` - cheap.
* ``Queue.delete_message`` and ``SQSBackend.change_message_visibility`` find the message by
  its receipt handle in O(1).
* ``SQSBackend.receive_message`` for standard queues pops available messages off the heap
  under the queue's lock (``Queue._messages_lock``); the long-poll wait releases that lock
  and sleeps until a send, a visibility change, the next message becoming visible again, or
  the end of the poll. FIFO queues keep moto's own selection, serialised per queue (the
  long poll is ``fifo_patches.receive``), and the index is rebuilt after it (O(n), as
  moto is).
* ``SQSBackend.purge_queue`` runs under the queue's lock; queue creation, deletion,
  listing and attribute changes run under one lock, since ``Queue._setup_dlq`` iterates
  ``SQSBackend.queues``.

PartiQL, measured on moto 5.2.5 (py-partiql-parser 0.6.3), which hands every statement to
py-partiql-parser and stores whatever item it returns:

* ``INSERT INTO "t" VALUE {...}`` of a stored key overwrites it (DynamoDB:
  ``DuplicateItemException``, "Duplicate primary key exists in table"); so does an INSERT
  inside BatchExecuteStatement (DynamoDB: that entry's ``Error.Code`` is ``DuplicateItem``)
  and ExecuteTransaction, which also keeps the other statements' writes (DynamoDB:
  ``TransactionCanceledException``, reasons ``[None, DuplicateItem]``, nothing written).
* A parameterised INSERT (``VALUE {'id': ?}``) and any DELETE with a ``?`` fail with a
  server error (``TypeError`` / ``AssertionError``), as does any RETURNING clause and any
  WHERE condition beyond the key equalities other than a function call.
* ``UPDATE ... WHERE id = ?`` of a missing key answers success, and an extra
  ``AND attribute_not_exists(x)`` is ignored: the update is applied (DynamoDB: both
  ``ConditionalCheckFailedException``; PartiQL UPDATE never creates an item).

What changes: INSERT, UPDATE and DELETE are read by ``loadtest.model.partiql`` (key from the
table's schema, SET/REMOVE as an UpdateExpression, the other WHERE conjuncts as a
ConditionExpression) and run through moto's own ``put_item`` / ``update_item`` /
``delete_item``: INSERT refuses a stored key, UPDATE a missing one, DELETE of a missing
key succeeds deleting nothing, extra conditions are evaluated by moto's condition
evaluator, and ``RETURNING ALL OLD * | MODIFIED OLD * | ALL NEW * | MODIFIED NEW *``
fills ``Items``. A transaction checks every statement before applying any. Each call is
atomic because ``SerialisedDynamoDB`` runs one DynamoDB request at a time. A statement
the parser cannot read is a ``ValidationException``; SELECT stays moto's.

Kept exactly as moto does it: the order messages are handed out (arrival order among
visible ones), visibility timeout and ``ApproximateReceiveCount``, redrive to the dead-letter
queue when a message due for delivery has reached ``maxReceiveCount``, deleting by any
receipt handle a message ever had (and again, silently), message attributes and their MD5,
retention, and what ``GetQueueAttributes`` counts.
"""

from __future__ import annotations

import copy
import heapq
import itertools
import threading
from collections.abc import Callable, Iterable, Iterator
from copy import deepcopy
from dataclasses import dataclass
from typing import Any, cast

import moto
import moto.backends
from moto.core.exceptions import JsonRESTError
from moto.core.utils import unix_time, unix_time_millis
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ERROR_TYPE_PREFIX,
    ConditionalCheckFailed,
    DynamodbException,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
)
from moto.dynamodb.models import DynamoDBBackend
from moto.sqs import models as sqs_models
from moto.sqs.exceptions import InvalidParameterValue, ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend

from loadtest.adapters.backend import fifo_patches
from loadtest.adapters.backend.errors import UnsupportedMotoVersion
from loadtest.model import partiql

__all__ = [
    "SUPPORTED_MOTO_SERIES",
    "DuplicateItemException",
    "IndexedMessages",
    "apply",
    "check_moto_version",
    "is_applied",
]

SUPPORTED_MOTO_SERIES = (5, 2)
"""The (major, minor) moto series whose ``moto/sqs/models.py`` these patches mirror."""

_MARKER = "_loadtest_patched"
_STORE_ATTR = "_loadtest_messages"
_MAXIMUM_TOTAL_VISIBILITY_MS = 43_200 * 1000  # moto's "Total VisibilityTimeout" limit
_APPLY_LOCK = threading.Lock()
# Queue creation looks a dead-letter queue up by iterating SQSBackend.queues; a concurrent
# CreateQueue or DeleteQueue would change the dict under it ("dictionary changed size").
_QUEUES_LOCK = threading.RLock()


def _now_ms() -> float:
    # moto's own clock (moto.core.utils.utcnow), the one Message.visible reads.
    return unix_time_millis()


def _is_available(message: Message, now_ms: float) -> bool:
    """``message.visible and not message.delayed``, evaluated at one instant."""
    return now_ms > message.visible_at and not now_ms < message.delayed_until


def _available_at_ms(message: Message) -> float:
    return max(message.visible_at, message.delayed_until)


class IndexedMessages:
    """List-compatible stand-in for ``Queue._messages``, indexed for the hot paths.

    * ``_arrival``: member -> arrival number, in arrival order (O(1) membership and removal).
    * ``_by_receipt``: every receipt handle a member ever had -> the member.
    * ``_ready``: heap of ``(arrival, token, message)``, messages available now, oldest first.
    * ``_waiting``: heap of ``(available_at_ms, arrival, token, message)``, messages in flight
      or delayed, soonest first; ``_promote`` moves them to ``_ready`` when their time comes.

    A member has exactly one live heap entry, the one carrying its current token; entries
    left behind by a reschedule or a removal are dropped when they surface. Every method
    expects the caller to hold the owning queue's ``_messages_lock`` (iteration snapshots,
    so moto's unpatched readers may iterate without it).
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._arrival: dict[Message, int] = {}
        self._by_receipt: dict[str, Message] = {}
        self._ready: list[tuple[int, int, Message]] = []
        self._waiting: list[tuple[float, int, int, Message]] = []
        self._token: dict[Message, int] = {}
        self._ready_live: set[Message] = set()
        self._waiting_live: set[Message] = set()
        self._arrivals = itertools.count()
        self._tokens = itertools.count()
        for message in messages:
            self.append(message)

    # -- the list protocol moto's own code uses -------------------------------------------
    def __iter__(self) -> Iterator[Message]:
        return iter(list(self._arrival))

    def __len__(self) -> int:
        return len(self._arrival)

    def __contains__(self, message: object) -> bool:
        return message in self._arrival

    def append(self, message: Message) -> None:
        if message in self._arrival:  # moto never adds a message twice; stay a set of members
            self.reschedule(message)
            return
        self._arrival[message] = next(self._arrivals)
        for handle in message.all_receipt_handles:  # a dead-lettered message keeps its handles
            if handle is not None:
                self._by_receipt[handle] = message
        self._schedule(message, _now_ms())

    def remove(self, message: Message) -> None:
        if message not in self._arrival:
            raise ValueError("IndexedMessages.remove(x): x not in queue")
        del self._arrival[message]
        self._token.pop(message, None)
        self._ready_live.discard(message)
        self._waiting_live.discard(message)
        for handle in message.all_receipt_handles:
            if handle is not None and self._by_receipt.get(handle) is message:
                del self._by_receipt[handle]

    # -- indexed operations -----------------------------------------------------------------
    def find(self, receipt_handle: str) -> Message | None:
        """The member that has or ever had ``receipt_handle``, else None."""
        return self._by_receipt.get(receipt_handle)

    def register_receipt_handle(self, message: Message) -> None:
        """Index the handle ``Message.mark_received`` just issued."""
        if message in self._arrival and message.receipt_handle is not None:
            self._by_receipt[message.receipt_handle] = message

    def reschedule(self, message: Message) -> None:
        """Re-file a member after its visibility changed (no-op for non-members)."""
        if message in self._arrival:
            self._schedule(message, _now_ms())

    def rebuild(self) -> None:
        """Re-derive every index from the members (after moto's own code mutated them)."""
        members = list(self._arrival)
        self._arrival.clear()
        self._by_receipt.clear()
        self._ready.clear()
        self._waiting.clear()
        self._token.clear()
        self._ready_live.clear()
        self._waiting_live.clear()
        for message in members:
            self.append(message)

    def pop_available(self, now_ms: float) -> Message | None:
        """Take the oldest available member out of the schedule.

        The caller must hand it back with ``reschedule`` (or ``remove`` it) before it
        releases the queue's lock; until then no other poller can see it.
        """
        self._promote(now_ms)
        while self._ready:
            _, token, message = heapq.heappop(self._ready)
            if self._token.get(message) != token:
                continue  # superseded entry
            del self._token[message]
            self._ready_live.discard(message)
            return message
        return None

    def ms_until_available(self, now_ms: float) -> float | None:
        """0 if a message is available, else ms until the next one may be; None if none."""
        self._promote(now_ms)
        if self._ready_live:
            return 0.0
        self._drop_stale_waiting()
        if not self._waiting:
            return None
        return max(0.0, self._waiting[0][0] - now_ms)

    def count_available(self, now_ms: float) -> int:
        """Members visible and not delayed (moto's ``len(Queue.messages)``)."""
        self._promote(now_ms)
        return len(self._ready_live)

    def count_not_visible(self, now_ms: float) -> int:
        """Members in flight; only scheduled-later members can be, so only they are read."""
        self._promote(now_ms)
        return sum(1 for m in self._waiting_live if not now_ms > m.visible_at)

    def count_delayed(self, now_ms: float) -> int:
        """Members still delayed (``DelaySeconds``)."""
        self._promote(now_ms)
        return sum(1 for m in self._waiting_live if now_ms < m.delayed_until)

    # -- internals ------------------------------------------------------------------------
    def _schedule(self, message: Message, now_ms: float) -> None:
        token = next(self._tokens)
        self._token[message] = token
        arrival = self._arrival[message]
        if _is_available(message, now_ms):
            self._waiting_live.discard(message)
            self._ready_live.add(message)
            heapq.heappush(self._ready, (arrival, token, message))
        else:
            self._ready_live.discard(message)
            self._waiting_live.add(message)
            entry = (_available_at_ms(message), arrival, token, message)
            heapq.heappush(self._waiting, entry)
        self._compact_if_sparse()

    def _promote(self, now_ms: float) -> None:
        waiting = self._waiting
        while waiting:
            _, arrival, token, message = waiting[0]
            if self._token.get(message) != token:
                heapq.heappop(waiting)
                continue
            if not _is_available(message, now_ms):
                break  # ordered by available_at: nothing behind it is due either
            heapq.heappop(waiting)
            self._waiting_live.discard(message)
            self._ready_live.add(message)
            heapq.heappush(self._ready, (arrival, token, message))

    def _drop_stale_waiting(self) -> None:
        while self._waiting and self._token.get(self._waiting[0][3]) != self._waiting[0][2]:
            heapq.heappop(self._waiting)

    def _compact_if_sparse(self) -> None:
        # Superseded entries are dropped when they surface; this bounds how many can pile
        # up below the surface (e.g. messages deleted long before their timeout expires).
        if len(self._ready) + len(self._waiting) <= 2 * len(self._token) + 1024:
            return
        live = self._token
        self._ready = [e for e in self._ready if live.get(e[2]) == e[1]]
        self._waiting = [e for e in self._waiting if live.get(e[3]) == e[2]]
        heapq.heapify(self._ready)
        heapq.heapify(self._waiting)


DELETED_HANDLES_KEPT = 100_000
"""Receipt handles of deleted messages each queue remembers (the most recent ones)."""


class RecentHandles:
    """Stand-in for ``Queue.deleted_messages``: the handles of the latest deleted messages.

    moto keeps every receipt handle of every deleted message, so that deleting one again
    succeeds, as it does on SQS; that set grew with every message a run ever acknowledged.
    This keeps the most recent ``limit`` (insertion-ordered) and forgets older ones: a
    delete with a forgotten handle, long after its message was deleted, is refused as
    invalid, as SQS refuses an expired handle.
    """

    def __init__(self, handles: Iterable[str] = (), limit: int = DELETED_HANDLES_KEPT) -> None:
        self.limit = limit
        self._handles: dict[str, None] = {}
        self.update(handles)

    def __contains__(self, handle: object) -> bool:
        return handle in self._handles

    def __len__(self) -> int:
        return len(self._handles)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._handles))

    def update(self, handles: Iterable[str | None]) -> None:
        for handle in handles:
            if handle is not None:
                self._handles[handle] = None
        excess = len(self._handles) - self.limit
        if excess > 0:
            for handle in list(itertools.islice(self._handles, excess)):
                del self._handles[handle]


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
    polling_end_s = unix_time() + wait_seconds_timeout
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
            remaining_s = polling_end_s - unix_time()
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
            if retention_s + cast(int, message.sent_timestamp) / 1000 <= unix_time():
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


# -- DynamoDB: PartiQL writes -----------------------------------------------------------------
class DuplicateItemException(DynamodbException):
    """DynamoDB's answer to a PartiQL INSERT whose primary key is already stored."""

    error_type = ERROR_TYPE_PREFIX + "DuplicateItemException"
    message_text = "Duplicate primary key exists in table"

    def __init__(self) -> None:
        super().__init__(self.error_type, self.message_text)


_CONDITION_FAILED = ("ConditionalCheckFailed", "The conditional request failed")
# Error codes of a BatchExecuteStatement entry (BatchStatementErrorCodeEnum), by exception.
_BATCH_ERROR_CODES = {
    "DuplicateItemException": "DuplicateItem",
    "ConditionalCheckFailedException": "ConditionalCheckFailed",
    "ResourceNotFoundException": "ResourceNotFound",
    "ValidationException": "ValidationError",
}
_MAX_TRANSACTION_STATEMENTS = 100


@dataclass(frozen=True)
class _PartiqlWrite:
    """One INSERT, UPDATE or DELETE statement, interpreted against its table's key schema."""

    table_name: str
    dml: partiql.Dml
    condition: partiql.Condition | None


def _is_select(statement: str) -> bool:
    return statement.lstrip().lstrip("(").lstrip()[:6].upper() == "SELECT"


def _compile(backend: DynamoDBBackend, statement: str, parameters: Any) -> _PartiqlWrite:
    """The write a statement makes; ValidationException for what it cannot be."""
    try:
        name = partiql.table_name(statement)
    except partiql.StatementNotUnderstood as exc:
        raise MockValidationException(
            f"Statement wasn't well formed, can't be processed: {exc}"
        ) from exc
    table = backend.get_table(name)  # ResourceNotFoundException
    key_names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
    try:
        dml, condition = partiql.parse_with_condition(statement, parameters or [], key_names)
    except partiql.StatementNotUnderstood as exc:
        raise MockValidationException(
            f"Statement wasn't well formed, can't be processed: {exc}"
        ) from exc
    return _PartiqlWrite(table.name, dml, condition)


def _refusal(write: _PartiqlWrite, current: Any) -> tuple[str, str] | None:
    """(code, message) if DynamoDB refuses ``write`` given the stored ``current`` item."""
    kind = write.dml.kind
    if kind == "INSERT":
        return ("DuplicateItem", DuplicateItemException.message_text) if current else None
    if current is None:
        # UPDATE never creates an item; DELETE of a missing key succeeds, deleting nothing.
        return _CONDITION_FAILED if kind == "UPDATE" else None
    if write.condition is not None:
        condition = get_filter_expression(
            write.condition.expression, write.condition.names, write.condition.values
        )
        if not condition.expr(current):
            return _CONDITION_FAILED
    return None


def _attributes(item: Any) -> dict[str, Any] | None:
    return None if item is None else copy.deepcopy(item.to_json()["Attributes"])


def _returned(returning: str | None, old: dict[str, Any], new: dict[str, Any]) -> list[Any]:
    """An UPDATE's ``Items`` for its RETURNING clause (moto's UPDATED_* rule: changed keys)."""
    if returning is None:
        return []
    if returning == "ALL OLD *":
        return [old]
    if returning == "ALL NEW *":
        return [new]
    changed = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
    image = old if returning == "MODIFIED OLD *" else new
    modified = {k: v for k, v in image.items() if k in changed}
    return [modified] if modified else []


def _apply(backend: DynamoDBBackend, write: _PartiqlWrite) -> list[Any]:
    """Run one write as DynamoDB does; its ``Items``. Atomic under ``SerialisedDynamoDB``."""
    dml = write.dml
    current = backend.get_item(write.table_name, dml.key)
    refusal = _refusal(write, current)
    if refusal is not None:
        raise (
            DuplicateItemException() if refusal[0] == "DuplicateItem" else ConditionalCheckFailed()
        )
    old = _attributes(current)
    if dml.kind == "INSERT":
        assert dml.item is not None
        backend.put_item(write.table_name, dml.item)
        return []
    if old is None:  # DELETE of a missing key
        return []
    if dml.kind == "DELETE":
        backend.delete_item(write.table_name, dml.key)
        return [old] if dml.returning else []
    assert dml.update_expression is not None
    updated = backend.update_item(
        write.table_name, dml.key, dml.update_expression, dml.names, dml.values
    )
    return _returned(dml.returning, old, _attributes(updated) or {})


def _restore(backend: DynamoDBBackend, write: _PartiqlWrite, old: dict[str, Any] | None) -> None:
    table = backend.get_table(write.table_name)
    if old is not None:
        table.put_item(old)
        return
    hash_value, range_value = backend.get_keys_value(table, write.dml.key)
    if table.get_item(hash_value, range_value) is not None:
        table.delete_item(hash_value, range_value)


def _make_execute_statement(
    moto_execute_statement: Callable[..., list[Any]],
) -> Callable[..., list[Any]]:
    def execute_statement(
        backend: DynamoDBBackend, statement: str, parameters: list[dict[str, Any]]
    ) -> list[Any]:
        if _is_select(statement):
            return moto_execute_statement(backend, statement, parameters)
        return _apply(backend, _compile(backend, statement, parameters))

    execute_statement.__wrapped__ = moto_execute_statement  # type: ignore[attr-defined]
    return execute_statement


def _batch_entry(backend: DynamoDBBackend, statement: dict[str, Any]) -> dict[str, Any]:
    table_name: str | None = None
    try:
        write = _compile(backend, statement["Statement"], statement.get("Parameters"))
        table_name = write.table_name
        _apply(backend, write)
    except JsonRESTError as exc:
        relative = exc.error_type.rpartition("#")[2]
        code = _BATCH_ERROR_CODES.get(relative, relative.removesuffix("Exception"))
        entry: dict[str, Any] = {"Error": {"Code": code, "Message": exc.message}}
        if table_name is not None:
            entry["TableName"] = table_name
        return entry
    return {"TableName": write.table_name}


def _make_batch_execute_statement(
    moto_batch_execute_statement: Callable[..., list[dict[str, Any]]],
) -> Callable[..., list[dict[str, Any]]]:
    def batch_execute_statement(
        backend: DynamoDBBackend, statements: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        responses: list[dict[str, Any]] = []
        for statement in statements:
            if _is_select(statement["Statement"]):
                responses.extend(moto_batch_execute_statement(backend, [statement]))
            else:
                responses.append(_batch_entry(backend, statement))
        return responses

    batch_execute_statement.__wrapped__ = moto_batch_execute_statement  # type: ignore[attr-defined]
    return batch_execute_statement


def _make_execute_transaction(
    moto_execute_transaction: Callable[..., list[dict[str, Any]]],
) -> Callable[..., list[dict[str, Any]]]:
    def execute_transaction(
        backend: DynamoDBBackend, statements: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        selects = [_is_select(statement["Statement"]) for statement in statements]
        if all(selects):
            return moto_execute_transaction(backend, statements)
        if any(selects):
            raise MockValidationException("A transaction cannot mix reads (SELECT) and writes")
        if len(statements) > _MAX_TRANSACTION_STATEMENTS:
            raise TooManyTransactionsException()
        writes = [
            _compile(backend, statement["Statement"], statement.get("Parameters"))
            for statement in statements
        ]
        targets = {(w.table_name, repr(sorted(w.dml.key.items()))) for w in writes}
        if len(targets) != len(writes):
            raise MultipleTransactionsException()
        # All or nothing: every statement is checked against the stored items first,
        # then all are applied (no other request runs in between: SerialisedDynamoDB).
        currents = [backend.get_item(w.table_name, w.dml.key) for w in writes]
        refusals = [_refusal(w, current) for w, current in zip(writes, currents, strict=True)]
        if any(refusals):
            raise TransactionCanceledException(
                [(r[0], r[1], None) if r else (None, None, None) for r in refusals]
            )
        olds = [_attributes(current) for current in currents]
        done = 0
        try:
            for write in writes:
                _apply(backend, write)
                done += 1
        except Exception:
            for write, old in zip(writes[: done + 1], olds, strict=False):
                _restore(backend, write, old)
            raise
        return []

    execute_transaction.__wrapped__ = moto_execute_transaction  # type: ignore[attr-defined]
    return execute_transaction


def _replacements() -> dict[tuple[object, str], object]:
    """(moto class or module, attribute) -> what ``apply()`` installs there."""
    replacements: dict[tuple[object, str], object] = {
        (moto.backends, "list_of_moto_modules"): _make_list_of_moto_modules(
            moto.backends.list_of_moto_modules
        ),
        (Queue, "_messages"): property(_get_messages, _set_messages),
        (Queue, "approximate_number_of_messages"): property(_approximate_number_of_messages),
        (Queue, "approximate_number_of_messages_not_visible"): property(
            _approximate_number_of_messages_not_visible
        ),
        (Queue, "approximate_number_of_messages_delayed"): property(
            _approximate_number_of_messages_delayed
        ),
        (Queue, "delete_message"): _queue_delete_message,
        (SQSBackend, "receive_message"): _make_receive_message(SQSBackend.receive_message),
        (SQSBackend, "change_message_visibility"): _change_message_visibility,
        (SQSBackend, "purge_queue"): _make_purge_queue(SQSBackend.purge_queue),
        (SQSBackend, "send_message"): fifo_patches.make_send_message(SQSBackend.send_message),
        (DynamoDBBackend, "execute_statement"): _make_execute_statement(
            DynamoDBBackend.execute_statement
        ),
        (DynamoDBBackend, "batch_execute_statement"): _make_batch_execute_statement(
            DynamoDBBackend.batch_execute_statement
        ),
        (DynamoDBBackend, "execute_transaction"): _make_execute_transaction(
            DynamoDBBackend.execute_transaction
        ),
    }
    for name in (
        "create_queue",
        "delete_queue",
        "list_queues",
        "set_queue_attributes",
        "list_dead_letter_source_queues",
    ):
        replacements[SQSBackend, name] = _serialised(getattr(SQSBackend, name))
    return replacements


# -- installation -----------------------------------------------------------------------------
def check_moto_version(version: str = moto.__version__) -> None:
    """Raise ``UnsupportedMotoVersion`` unless ``version`` is in ``SUPPORTED_MOTO_SERIES``."""
    try:
        series = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        series = ()
    if series != SUPPORTED_MOTO_SERIES:
        expected = ".".join(map(str, SUPPORTED_MOTO_SERIES))
        raise UnsupportedMotoVersion(
            f"loadtest's patches mirror moto {expected}.x's moto/sqs/models.py and "
            "moto/dynamodb/models/__init__.py, "
            f"but moto {version} is installed; install 'moto[server]>={expected}.5,<5.3' "
            "or port loadtest/adapters/backend/patches.py to the new moto first"
        )


def is_applied() -> bool:
    """Whether ``apply()`` has patched moto in this process."""
    return bool(getattr(Queue, _MARKER, False))


def apply() -> None:
    """Install the patches (idempotent, thread-safe); refuse an unsupported moto."""
    with _APPLY_LOCK:
        if is_applied():
            return
        check_moto_version()
        for (owner, name), replacement in _replacements().items():
            setattr(owner, name, replacement)
        fifo_patches.disable_moto_dedup()
        setattr(Queue, _MARKER, True)

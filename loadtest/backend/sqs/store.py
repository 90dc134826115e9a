"""The indexed message store that replaces moto's ``Queue._messages`` list, and the bounded
record of deleted receipt handles.

Owns ``IndexedMessages`` (arrival order, receipt-handle index, available and waiting heaps)
and ``RecentHandles``. Pure data structures over moto's ``Message``: they take no lock
themselves (callers hold the queue's) and install nothing; ``loadtest.backend.patches``
explains why they exist and installs them.
"""

from __future__ import annotations

import array
import bisect
import collections
import heapq
import itertools
from collections.abc import Iterable, Iterator

from moto.core.utils import unix_time_millis
from moto.sqs.models import Message

# One sequence for every store: a dead-lettered message carries its token to another
# queue's store, and the entries it left behind must never match its new one.
_TOKENS = itertools.count()


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
    * ``_ready_count`` and ``_waiting_count``: the live entries of each heap.
    * ``_latest_delay_ms``: the latest ``delayed_until`` of any member filed; once it has
      passed, no member is delayed and every member still waiting is in flight, so the
      approximate counts moto reads on every ``SendMessage`` cost O(1), not a walk of the
      waiting heap.

    A member has exactly one live heap entry, the one carrying its current token, which the
    member itself holds (``store_token``, with ``store_ready`` saying which heap): per queued
    message, two attributes instead of a dict entry and a set entry. Entries left behind by
    a reschedule or a removal are dropped when they surface. Every method expects the caller
    to hold the owning queue's ``_messages_lock`` (iteration snapshots, so moto's unpatched
    readers may iterate without it).
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._arrival: dict[Message, int] = {}
        self._by_receipt: dict[str, Message] = {}
        self._ready: list[tuple[int, int, Message]] = []
        self._waiting: list[tuple[float, int, int, Message]] = []
        self._ready_count = 0
        self._waiting_count = 0
        self._latest_delay_ms = float("-inf")
        self._arrivals = itertools.count()
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
        _set_entry(message, None, False)
        for handle in message.all_receipt_handles:  # a dead-lettered message keeps its handles
            if handle is not None:
                self._by_receipt[handle] = message
        self._schedule(message, _now_ms())

    def remove(self, message: Message) -> None:
        if message not in self._arrival:
            raise ValueError("IndexedMessages.remove(x): x not in queue")
        del self._arrival[message]
        self._unschedule(message)
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
        self._ready_count = 0
        self._waiting_count = 0
        self._latest_delay_ms = float("-inf")
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
            if not _is_live(message, token):
                continue  # superseded entry
            self._unschedule(message)
            return message
        return None

    def ms_until_available(self, now_ms: float) -> float | None:
        """0 if a message is available, else ms until the next one may be; None if none."""
        self._promote(now_ms)
        if self._ready_count:
            return 0.0
        self._drop_stale_waiting()
        if not self._waiting:
            return None
        return max(0.0, self._waiting[0][0] - now_ms)

    def count_available(self, now_ms: float) -> int:
        """Members visible and not delayed (moto's ``len(Queue.messages)``)."""
        self._promote(now_ms)
        return self._ready_count

    def count_not_visible(self, now_ms: float) -> int:
        """Members in flight; only scheduled-later members can be, so only they are read.

        Once every delay has passed (strictly), each member still waiting after
        ``_promote`` has ``visible_at >= now_ms``: it is in flight, and they are counted.
        """
        self._promote(now_ms)
        if now_ms > self._latest_delay_ms:
            return self._waiting_count
        return sum(1 for m in self._waiting_members() if not now_ms > m.visible_at)

    def count_delayed(self, now_ms: float) -> int:
        """Members still delayed (``DelaySeconds``)."""
        self._promote(now_ms)
        if now_ms > self._latest_delay_ms:
            return 0
        return sum(1 for m in self._waiting_members() if now_ms < m.delayed_until)

    # -- internals ------------------------------------------------------------------------
    def _waiting_members(self) -> Iterator[Message]:
        """Each member scheduled for later, once (the live entries of ``_waiting``)."""
        return (entry[3] for entry in self._waiting if _is_live(entry[3], entry[2]))

    def _unschedule(self, message: Message) -> None:
        """Retire the member's live entry (it stays in its heap, superseded)."""
        if message.store_token is not None:  # type: ignore[attr-defined]
            if message.store_ready:  # type: ignore[attr-defined]
                self._ready_count -= 1
            else:
                self._waiting_count -= 1
        _set_entry(message, None, False)

    def _schedule(self, message: Message, now_ms: float) -> None:
        self._unschedule(message)
        token = next(_TOKENS)
        arrival = self._arrival[message]
        self._latest_delay_ms = max(self._latest_delay_ms, message.delayed_until)
        if _is_available(message, now_ms):
            _set_entry(message, token, True)
            self._ready_count += 1
            heapq.heappush(self._ready, (arrival, token, message))
        else:
            _set_entry(message, token, False)
            self._waiting_count += 1
            entry = (_available_at_ms(message), arrival, token, message)
            heapq.heappush(self._waiting, entry)
        self._compact_if_sparse()

    def _promote(self, now_ms: float) -> None:
        waiting = self._waiting
        while waiting:
            _, arrival, token, message = waiting[0]
            if not _is_live(message, token):
                heapq.heappop(waiting)
                continue
            if not _is_available(message, now_ms):
                break  # ordered by available_at: nothing behind it is due either
            heapq.heappop(waiting)
            _set_entry(message, token, True)
            self._waiting_count -= 1
            self._ready_count += 1
            heapq.heappush(self._ready, (arrival, token, message))

    def _drop_stale_waiting(self) -> None:
        while self._waiting and not _is_live(self._waiting[0][3], self._waiting[0][2]):
            heapq.heappop(self._waiting)

    def _compact_if_sparse(self) -> None:
        # Superseded entries are dropped when they surface; this bounds how many can pile
        # up below the surface (e.g. messages deleted long before their timeout expires).
        if len(self._ready) + len(self._waiting) <= 2 * len(self._arrival) + 1024:
            return
        self._ready = [e for e in self._ready if _is_live(e[2], e[1])]
        self._waiting = [e for e in self._waiting if _is_live(e[3], e[2])]
        heapq.heapify(self._ready)
        heapq.heapify(self._waiting)


def _set_entry(message: Message, token: int | None, ready: bool) -> None:
    """File ``token`` as the member's live entry, in the ready heap or the waiting one."""
    message.store_token = token  # type: ignore[attr-defined]
    message.store_ready = ready  # type: ignore[attr-defined]


def _is_live(message: Message, token: int) -> bool:
    return message.store_token == token  # type: ignore[attr-defined, no-any-return]


DELETED_HANDLES_KEPT = 100_000
"""Receipt handles of deleted messages each queue remembers (the most recent ones)."""


class RecentHandles:
    """Stand-in for ``Queue.deleted_messages``: the handles of the latest deleted messages.

    moto keeps every receipt handle of every deleted message, so that deleting one again
    succeeds, as it does on SQS; that set grew with every message a run ever acknowledged.
    This keeps at least the most recent ``limit`` (and fewer than ``limit`` plus a
    generation, ``limit // GENERATIONS``) and forgets older ones: a delete with a forgotten
    handle, long after its message was deleted, is refused as invalid, as SQS refuses an
    expired handle.

    It keeps each handle's ``hash`` (a 64-bit int), not the 185-character handle. The
    newest generation is a set; a full one is frozen into a sorted ``array`` of 8 bytes a
    hash (a lookup bisects each of at most ``GENERATIONS + 1``), and the oldest frozen
    generation is dropped once the others hold ``limit``. Measured with tracemalloc, a
    dict of the hashes had cost 94 bytes per deleted message up to ``limit``: the whole
    growth of the backend per message served at a steady rate. A handle that was never
    issued would be taken for a deleted one only if its hash equalled one of those kept
    (odds of about ``limit`` in 2**64).
    """

    GENERATIONS = 16
    """Frozen generations ``limit`` is split into."""

    def __init__(self, handles: Iterable[str] = (), limit: int = DELETED_HANDLES_KEPT) -> None:
        self.limit = limit
        self._generation_size = max(1, limit // self.GENERATIONS)
        self._newest: set[int] = set()
        self._frozen: collections.deque[array.array[int]] = collections.deque()
        self._frozen_count = 0
        self.update(handles)

    def __contains__(self, handle: object) -> bool:
        if not isinstance(handle, str):
            return False
        hashed = hash(handle)
        if hashed in self._newest:
            return True
        for generation in self._frozen:
            at = bisect.bisect_left(generation, hashed)
            if at < len(generation) and generation[at] == hashed:
                return True
        return False

    def __len__(self) -> int:
        return len(self._newest) + self._frozen_count

    def update(self, handles: Iterable[str | None]) -> None:
        newest = self._newest
        for handle in handles:
            if handle is None:
                continue
            newest.add(hash(handle))
            if len(newest) >= self._generation_size:
                self._freeze()
                newest = self._newest

    def _freeze(self) -> None:
        generation = array.array("q", sorted(self._newest))
        self._newest = set()
        self._frozen.append(generation)
        self._frozen_count += len(generation)
        while self._frozen_count - len(self._frozen[0]) >= self.limit:
            self._frozen_count -= len(self._frozen.popleft())

"""What a run has sent and settled: the live counters (``Progress``) and whether every sent
message is settled, acknowledged or dead-lettered (``Settlement``), the messages the
consumer sent to its own queue included.

Owns the in-flight bookkeeping the pollers, the DLQ watcher and the producers report to;
must not receive, invoke or delete anything (``loadtest.emulation.mapping.poller`` does).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import anyio
import anyio.lowlevel


@dataclass
class Progress:
    """Live counters for a progress display; written by the runner only."""

    sent: int = 0
    received: int = 0
    in_flight: int = 0
    acked: int = 0
    dead_lettered: int = 0
    duplicate_writes: int = 0
    handler_errors: int = 0
    rate_note: str = ""
    """Set while the requested arrival rate is not being reached (both figures, the backlog)."""
    backlog_peak: int = 0
    """The most messages sent and not yet settled at once."""
    stopped_early: str | None = None
    """Why sending stopped before the workload was sent (``max_backlog``)."""


FIFO_REPEAT_S = 360
"""How long (in seconds) a FIFO queue may answer a resend with a settled message's id: SQS's
deduplication interval (300 s, counted from the first send) and a minute's margin."""


class Settlement:
    """Tracks whether every sent message is settled (acknowledged or dead-lettered).

    Holds what is in flight, not what is done, so its memory follows the backlog
    rather than the run: the message ids sent and not yet settled, and those settled
    before their send was known (a delivery can overtake the answer to its send, and
    producer processes report what they sent in batches), or, once every send is known,
    without being pending (a second delete; a message the consumer sent to its own
    queue, delivered before its sender's reply was read: ``resent`` claims it, and
    waits for one not yet settled). A FIFO queue answers a
    resend inside its deduplication interval with the first message's id: with
    ``remember_s`` (``FIFO_REPEAT_S``) a settled id is kept that long, so such a
    resend counts as settled, as it is. ``first_copies`` keeps the settled business
    ids for ``first_settled`` (resends after completion); without it nobody may wait.
    """

    def __init__(
        self,
        *,
        first_copies: bool = False,
        remember_s: float = 0,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.done = anyio.Event()
        self._pending: set[str] = set()
        """Sent, not yet settled."""
        self._early: set[str] | None = set()
        """Settled before their send was known; None once every send is known."""
        self._late: set[str] = set()
        """Settled after every send was known without being pending: a second delete, or
        a message the consumer sent itself whose sender's reply has not been read yet."""
        self._remember_ns = int(remember_s * 1e9)
        self._recent: dict[str, int] = {}
        """Settled ids (oldest first) -> when, kept ``remember_s``."""
        self._clock = clock
        self._first_copies = first_copies
        self._settled_business_ids: set[str] = set()
        # Events only for the ids someone waits on: an event per business id of the
        # run (a few hundred bytes each) grew with the traffic though few are awaited.
        self._waiting: dict[str, anyio.Event] = {}

    def sent(self, message_ids: Iterable[str]) -> None:
        """Messages the queue took (their ids, repeats included)."""
        early, recent = self._early, self._recent
        for message_id in message_ids:
            if early is not None and message_id in early:
                early.discard(message_id)
            elif message_id not in recent:
                self._pending.add(message_id)

    def resent(self, message_ids: Iterable[str]) -> None:
        """Messages the consumer sent to the queue that feeds it (work deferred with
        ``DelaySeconds``, a retry later): the run is not settled until they are too, as
        Lambda would deliver them. Told before the sender's own message is settled, so
        the run cannot end in between."""
        early = self._early
        for message_id in message_ids:
            if early is not None and message_id in early:
                early.discard(message_id)
            elif message_id in self._late:
                self._late.discard(message_id)
            else:
                self._pending.add(message_id)

    def settle(self, message_id: str, business_id: str | None) -> None:
        if message_id in self._pending:
            self._pending.discard(message_id)
        elif self._early is None:
            self._late.add(message_id)
        elif message_id not in self._recent:
            self._early.add(message_id)
        if self._remember_ns:
            now_ns = self._clock()
            recent = self._recent
            recent.setdefault(message_id, now_ns)
            # One forgotten per settle keeps pace: at most one is added.
            oldest = next(iter(recent))
            if now_ns - recent[oldest] > self._remember_ns:
                del recent[oldest]
        if business_id is not None and self._first_copies:
            self._settled_business_ids.add(business_id)
            waiting = self._waiting.pop(business_id, None)
            if waiting is not None:
                waiting.set()
        self.check()

    async def first_settled(self, business_id: str) -> None:
        """Return once any message of ``business_id`` was settled (needs ``first_copies``)."""
        if not self._first_copies:
            raise RuntimeError("first_settled needs a Settlement made with first_copies")
        if business_id in self._settled_business_ids:
            await anyio.lowlevel.checkpoint()  # as waiting on a set event does
            return
        waiting = self._waiting.get(business_id)
        if waiting is None:
            waiting = self._waiting[business_id] = anyio.Event()
        await waiting.wait()

    def expect(self, message_ids: Iterable[str] = ()) -> None:
        """Sending ended: every send is known (``message_ids`` are sent too)."""
        self.sent(message_ids)
        # What is left was settled twice (a second delete of an acknowledged message), or
        # the consumer sent it to its own queue and its sender's reply is still to come.
        if self._early:
            self._late |= self._early
        self._early = None
        self.check()

    def check(self) -> None:
        if self._early is None and not self._pending:
            self.done.set()

    def unsettled(self) -> int:
        """How many messages known sent are not settled yet: after ``done``, the messages
        the consumer sent itself that were learned of late (``resent``)."""
        return len(self._pending)

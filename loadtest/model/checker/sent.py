"""What was sent, and how each message was settled, in a few bytes a message.

Owns the checker's table of a run's messages (``Messages``): each business id
with the distinct details its messages said, and per message (by its position
among the messages the queue took) its business id, its body, whether it was
planted poison, acknowledged or dead-lettered. Judging a million-message run
then holds no message id: an acknowledgement's or dead letter's message is
found by its id in an ``IdIndex``. Which fields of a body are its details, and
what they are, is ``details``' to say.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loadtest.model.checker.details import details_of, leaf_name
from loadtest.model.workload.ids import IdIndex

if TYPE_CHECKING:
    from loadtest.model.history.log import Ack, DeadLetter, SentMessage
    from loadtest.model.scenario.body import BodyShape

ACKED = 1
DEAD_LETTERED = 2
POISON = 4
"""A message's flags (bits: it may be acknowledged and dead-lettered both)."""


class Messages:
    """What was sent: business ids, details and planted poison, and how each was settled.

    A message's details are the body's leaves the consumer stores: a leaf whose
    name no written item holds anywhere (a timestamp, a trace id, an envelope's
    fields) is left out, unless no leaf is held by name at all, when every leaf
    is looked for by value (``keep_stored``).
    """

    def __init__(self, sent: Sequence[SentMessage], shape: BodyShape | None = None) -> None:
        """``shape``: where a body's details are (``loadtest.model.scenario.body.body_shape``);
        by default the flat body's fields other than ``id``."""
        self.count = 0
        """Messages sent (those the queue took)."""
        self.failures = 0
        """Messages the queue refused (no messageId)."""
        self.business_ids: list[str] = []
        """Each business id once, in the order of its first message."""
        self._business_index: dict[str, int] = {}
        self._bodies_of: list[list[int]] = []
        """Each business id's distinct bodies, in the order first sent."""
        self._body_index: dict[str, int] = {}
        self._details: list[dict[str, Any] | None] = []
        """Each distinct body's details (one dict per body: its copies share it)."""
        self._business = array("i")
        """Each message's business id's index, or -1 (no id: a poison body)."""
        self._body = array("i")
        self._flags = bytearray()
        self._ids = IdIndex(len(sent))
        for m in sent:
            if m.message_id is None:
                self.failures += 1
                continue
            self.count += 1
            business = -1
            if m.business_id is not None:
                business = self._business_index.get(m.business_id, -1)
                if business < 0:
                    business = self._business_index[m.business_id] = len(self.business_ids)
                    self.business_ids.append(m.business_id)
                    self._bodies_of.append([])
            body = self._body_index.get(m.body, -1)
            if body < 0:
                body = self._body_index[m.body] = len(self._details)
                self._details.append(details_of(m.body, shape, m.business_id))
                if business >= 0:
                    self._bodies_of[business].append(body)
            self._business.append(business)
            self._body.append(body)
            self._flags.append(POISON if m.poison else 0)
            self._ids.add(m.message_id)
        self._ids.settle(lambda: (m.message_id for m in sent if m.message_id is not None))
        del self._body_index  # bodies are not looked up again
        self._distinct: list[list[dict[str, Any]]] = []
        self._position: list[int] = []
        self._settle_details()

    # --- settlement ------------------------------------------------------------------

    def settle(
        self, acks: Iterable[Ack], dead_letters: Iterable[DeadLetter], parked: Iterable[str] = ()
    ) -> None:
        """Mark each sent message acknowledged and dead-lettered, from the run's records and
        the ids of the messages the consumer ``parked`` on its dead-letter queue itself (an
        id the run did not send is passed over)."""
        flags = self._flags
        for ack in acks:
            for index in self._ids.positions(ack.message_id):
                flags[index] |= ACKED
        for message_id in itertools.chain((d.message_id for d in dead_letters), parked):
            for index in self._ids.positions(message_id):
                flags[index] |= DEAD_LETTERED

    def each(self) -> Iterator[tuple[int, int, int]]:
        """Each message's business id's index (-1: none), its details' position in
        ``details_for`` of that id (-1: the body has none) and its flags."""
        position = self._position
        for business, body, flags in zip(self._business, self._body, self._flags, strict=True):
            yield business, position[body], flags

    # --- details ---------------------------------------------------------------------

    def keep_stored(self, stored_names: set[str]) -> None:
        """Keep of each message's details the fields some written item holds by name
        (``stored_names``), unless it holds none of them by name."""
        kept = {leaf_name(path) for d in self._details if d is not None for path in d}
        kept &= stored_names
        if not kept:
            return
        self._details = [
            None if d is None else {k: v for k, v in d.items() if leaf_name(k) in kept}
            for d in self._details
        ]
        self._settle_details()

    def _settle_details(self) -> None:
        """Each business id's distinct details, and each body's position among its id's."""
        self._distinct = []
        self._position = [-1] * len(self._details)
        for bodies in self._bodies_of:
            distinct: list[dict[str, Any]] = []
            for body in bodies:
                details = self._details[body]
                if details is None:
                    continue
                if details not in distinct:
                    distinct.append(details)
                self._position[body] = distinct.index(details)
            self._distinct.append(distinct)

    @property
    def business_index(self) -> Mapping[str, int]:
        """Each business id's position in ``business_ids``."""
        return self._business_index

    def details_for(self, business_id: str) -> list[dict[str, Any]]:
        """The distinct details the messages of a business id said, in the order sent."""
        index = self._business_index.get(business_id)
        return [] if index is None else self._distinct[index]

    def details_at(self, business: int) -> list[dict[str, Any]]:
        """``details_for`` the business id at ``business`` in ``business_ids``."""
        return self._distinct[business]

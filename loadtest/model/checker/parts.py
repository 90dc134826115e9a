"""Where an outcome's accepted writes wait to be judged together, and judging them part by part.

Owns ``Parts``: the accepted writes of outcome items grouped by business id, in parts of
at most ``WRITES_PER_PART`` writes kept where the history keeps its logs, and
``judge_parts``, which judges each outcome's writes a part at a time (the rules are
``roles``' ``judge_outcome``), so judging holds one part's writes, not the run's.
"""

from __future__ import annotations

from array import array
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.checker.details import carries
from loadtest.model.checker.roles import Judged, Takeover, Write, judge_outcome, message_id
from loadtest.model.checker.sent import Messages
from loadtest.model.checker.shared import judge_shared
from loadtest.model.checker.verdict import Decision, DecisionLog, Role
from loadtest.model.history.log import FrameStores, TypedItem, key_string

WRITES_PER_PART = 4096
"""Accepted writes of outcome items judged at once, at most: a run with more groups them
by business id into parts, so judging holds one part's writes, not the run's."""
MOST_PARTS = 128
"""Parts at most (each is a file while its writes wait): past ``MOST_PARTS`` times
``WRITES_PER_PART`` writes (a million), a part holds more."""


class Parts:
    """The accepted writes of outcome items, waiting to be judged with their outcome's others.

    When the run accepted at most ``WRITES_PER_PART`` writes (``expected``, of any item),
    they wait as writes in memory; past that, each is kept as its decision (compressed,
    where ``frames`` says) in the part of its business id's hash, and read back a part at
    a time.
    """

    def __init__(self, expected: int, frames: FrameStores) -> None:
        self._count = min(MOST_PARTS, max(1, -(-expected // WRITES_PER_PART)))
        self._held: list[tuple[int, Write]] = []
        self._logs = [DecisionLog(frames=frames) for _ in range(self._count)]
        self._at = [array("q") for _ in range(self._count)]

    def add(self, position: int, w: Write) -> None:
        if self._count == 1:
            self._held.append((position, w))
            return
        part = hash(w.business_id) % self._count
        self._logs[part].append(Decision(w.write, w.invocation, w.business_id, None, Role.FIRST))
        self._at[part].append(position)

    def each(self) -> Iterator[list[tuple[int, Write]]]:
        """Each part's writes with their positions, in order; a part is let go of once
        the next is asked for."""
        if self._count == 1:
            held, self._held = self._held, []
            yield held
            return
        for part in range(self._count):
            log, at = self._logs[part], self._at[part]
            self._logs[part], self._at[part] = DecisionLog(), array("q")
            yield [
                (position, Write(d.write, d.invocation, "", d.business_id))
                for position, d in zip(at, log, strict=True)
            ]


@dataclass
class PartsJudged:
    """What judging the accepted outcome writes found, part by part."""

    judged: Judged = field(default_factory=Judged)
    log: DecisionLog = field(default_factory=DecisionLog)
    """Their decisions, a part's after another's, each part's in order."""
    at: array[int] = field(default_factory=lambda: array("q"))
    """Each decision's position among the run's writes."""
    carried: dict[str, int] = field(default_factory=dict)
    """For each business id written, which of its details (bits, by their position in
    ``Messages.details_for``) an item its accepted writes left carries."""
    changed: dict[str, set[str]] = field(default_factory=dict)
    """Under the shared model: for each business id, the aggregate items (``key_string``
    of their keys, attributes by name) an accepted write changed on its behalf."""
    listed: dict[str, set[str]] = field(default_factory=dict)
    """Under the shared model: for each business id, those of its ``changed`` items a write
    for it left listing it (``shared.lists_id``): whether they still hold its change shows."""


def item_name(w: Write) -> str:
    """The item a write is of, whatever order its key's attributes came in."""
    return key_string(dict(sorted(w.write.key.items())))


def judge_parts(
    parts: Parts,
    messages: Messages,
    copies: bool,
    frames: FrameStores,
    shared: bool = False,
    takeover: Takeover | None = None,
) -> PartsJudged:
    """Judge each outcome's accepted writes, a part at a time (``judge_outcome``, with
    ``takeover``; under the shared model, each business id's writes of each item:
    ``judge_shared``)."""
    found = PartsJudged()
    log, at = DecisionLog(frames=frames), array("q")
    """Every part's decisions, a part after another, each part's in order."""
    for part in parts.each():
        by_business: dict[str, list[Write]] = defaultdict(list)
        for _, w in part:
            by_business[str(w.business_id)].append(w)
        if shared:
            _judge_shared_part(by_business, found)
        for business_id, group in () if shared else by_business.items():
            details = messages.details_for(business_id)
            judge_outcome(business_id, group, copies, found.judged, details, takeover)
            afters = [w.write.item_after for w in group if w.write.after_known]
            found.carried[business_id] = carried_bits(afters, details)
        del by_business
        for position, w in part:
            log.append(
                Decision(
                    w.write,
                    w.invocation,
                    w.business_id,
                    message_id(w.invocation, w.business_id, w.copy_index),
                    w.role,
                    w.order,
                )
            )
            at.append(position)
    found.log, found.at = log, at
    return found


def _judge_shared_part(by_business: dict[str, list[Write]], found: PartsJudged) -> None:
    for business_id, group in by_business.items():
        by_item: dict[str, list[Write]] = defaultdict(list)
        for w in group:
            by_item[item_name(w)].append(w)
        for item, writes in by_item.items():
            judged = judge_shared(writes, found.judged)
            if judged.deliveries:
                found.changed.setdefault(business_id, set()).add(item)
            if judged.listed:
                found.listed.setdefault(business_id, set()).add(item)


def carried_bits(items: Sequence[TypedItem | None], details: Sequence[Mapping[str, Any]]) -> int:
    """Which of ``details`` (bits, by position) some of ``items`` carries."""
    bits = 0
    for position, d in enumerate(details):
        if any(item and carries(item, d) for item in items):
            bits |= 1 << position
    return bits

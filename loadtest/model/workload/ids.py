"""Finding a run's messages by their ids, and counting distinct times, in a few bytes each.

Owns ``IdIndex``: the positions of string ids (a run's SQS messageIds, in the
order sent) kept as arrays of their hashes in an open-addressing table, so
joining an acknowledgement, a dead letter or a delivery to the message it is
of holds no id string and no dictionary entry per message: 16 bytes a message
instead of about 150. Exact: ids that share a hash are told apart by the ids
themselves, read again once. And ``count_distinct``: how many distinct
integers (times) a log holds, in 16 bytes each instead of a set's 60.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable

_EMPTY = -1
_SHARED = -2
"""A slot whose hash two or more ids share: the ids' own strings decide."""


class IdIndex:
    """Positions of ids added in order (``add``), found by id (``positions``).

    After the last ``add``, ``settle`` must be given the same ids again in the same
    order: it reads them only when two of them shared a hash (about once in 10**7
    million-id indexes).
    """

    def __init__(self, expected: int = 0) -> None:
        """``expected``: about how many ids will be added (the table is sized for them
        and grows past them)."""
        size = 1024
        while size < 2 * expected:
            size *= 2
        self._slots = array("i", [_EMPTY]) * size
        self._hashes = array("q")
        self._filled = 0
        self._shared_hashes: set[int] = set()
        self._shared: dict[str, list[int]] = {}
        """The ids whose hash another id shares, and their positions (an id added twice
        has two)."""

    def __len__(self) -> int:
        return len(self._hashes)

    def add(self, text: str) -> None:
        """The next position's id."""
        if (self._filled + 1) * 2 > len(self._slots):
            self._grow()
        key = hash(text)
        slot = self._probe(key)
        self._hashes.append(key)
        if self._slots[slot] != _EMPTY:
            self._slots[slot] = _SHARED
            self._shared_hashes.add(key)
            return
        self._slots[slot] = len(self._hashes) - 1
        self._filled += 1

    def settle(self, again: Callable[[], Iterable[str]]) -> None:
        """Tell apart the ids that share a hash, reading every id again from ``again``."""
        if not self._shared_hashes:
            return
        for position, text in enumerate(again()):
            if hash(text) in self._shared_hashes:
                self._shared.setdefault(text, []).append(position)

    def positions(self, text: str) -> list[int]:
        """The positions of this id: one, or none (an id never added)."""
        if self._shared_hashes and text in self._shared:
            return self._shared[text]
        # An id never added that shares an added id's hash is taken for it: about once
        # in 10**13 lookups in a million-id index.
        held = self._slots[self._probe(hash(text))]
        return [held] if held >= 0 else []

    def _probe(self, key: int) -> int:
        """The slot holding ``key``'s position (or marked shared for it), else the empty
        slot where it would go."""
        slots, mask = self._slots, len(self._slots) - 1
        slot = key & mask
        while (held := slots[slot]) != _EMPTY:
            if self._hashes[held] == key if held >= 0 else key in self._shared_hashes:
                return slot
            slot = (slot + 1) & mask
        return slot

    def _grow(self) -> None:
        old = self._slots
        self._slots = array("i", [_EMPTY]) * (len(old) * 2)
        for held in old:
            if held >= 0:
                self._slots[self._probe(self._hashes[held])] = held
        for key in self._shared_hashes:
            self._slots[self._probe(key)] = _SHARED


def count_distinct(values: Iterable[int]) -> int:
    """How many distinct values there are (64-bit integers, such as nanosecond times)."""
    table = array("q", [_NO_VALUE]) * 1024
    count = 0
    previous = _NO_VALUE
    for value in values:
        if value == previous:
            if value == _NO_VALUE:
                raise ValueError("count_distinct takes 64-bit integers above -2**63")
            continue  # the most common repeat: a call's messages, one after another
        previous = value
        if (count + 1) * 2 > len(table):
            table = _regrown(table)
        mask = len(table) - 1
        slot = hash(value) & mask
        while (held := table[slot]) != _NO_VALUE:
            if held == value:
                break
            slot = (slot + 1) & mask
        else:
            table[slot] = value
            count += 1
    return count


_NO_VALUE = -(2**63)


def _regrown(table: array[int]) -> array[int]:
    grown = array("q", [_NO_VALUE]) * (len(table) * 2)
    mask = len(grown) - 1
    for value in table:
        if value != _NO_VALUE:
            slot = hash(value) & mask
            while grown[slot] != _NO_VALUE:
                slot = (slot + 1) & mask
            grown[slot] = value
    return grown

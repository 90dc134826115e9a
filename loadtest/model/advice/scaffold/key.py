"""The table key ``loadtest new`` reads from a dry run's first write to the watched table.

Owns choosing the key from what the handler asked to store (``choose_key``): the dry run's
table is keyed on an attribute no handler writes, so every write is refused and the
observer's record of the request is all there is. An update, a delete or a PartiQL
``UPDATE`` names its key; a put (an ``INSERT``, a batch's or a transaction's put) names
only its item, and the key is picked among its attributes. Pure: the dry run itself is
``loadtest.engine.dry_run``'s.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.model.history.log import WriteRecord

DRY_RUN_KEY = "loadtest-dry-run-key"
"""The dry run's table key: an attribute name no handler writes, so no write is accepted
and each shows the key the handler meant."""

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_TYPES = ("S", "N", "B")


@dataclass(frozen=True)
class KeyChoice:
    """The table key a dry run showed, and why (a line for the scenario's comments)."""

    key: tuple[tuple[str, str], ...]
    """Attribute name and type (S, N or B): hash, then optional range."""
    why: str


def choose_key(
    writes: Sequence[WriteRecord], *, business_id: str, message_id: str
) -> KeyChoice | str:
    """The key of the first write in ``writes`` (in the order they began), or why none can be
    read. ``business_id`` and ``message_id`` are the dry run's message's."""
    if not writes:
        return "the handler wrote nothing to its table"
    first = min(writes, key=lambda w: w.started_ns)
    named = {k: v for k, v in first.key.items() if k != DRY_RUN_KEY}
    if named and not _put_like(first):
        typed = [(name, _type(value)) for name, value in named.items()]
        if all(t is not None for _, t in typed):
            names = ", ".join(named)
            return KeyChoice(
                tuple((n, str(t)) for n, t in typed),
                f"its first write ({first.operation}) names the key {names}",
            )
    item = first.requested or {}
    typed_attributes = [(name, _type(value), value) for name, value in item.items()]
    candidates = [(n, t, v) for n, t, v in typed_attributes if t is not None]
    if not candidates:
        return f"its first write ({first.operation}) stores no string, number or binary attribute"
    for name, kind, value in candidates:
        reason = _reason(value, business_id, message_id)
        if reason is not None:
            others = [
                n for n, _, v in candidates if n != name and _reason(v, business_id, message_id)
            ]
            also = f" ({', '.join(others)} also could be)" if others else ""
            return KeyChoice(
                ((name, str(kind)),),
                f"its first write ({first.operation}) stores {name} = {reason}, "
                f"the first such attribute{also}",
            )
    name, kind, _ = candidates[0]
    return KeyChoice(
        ((name, str(kind)),),
        f"its first write ({first.operation}) stores no business id, messageId or uuid: "
        f"{name} is the first attribute it wrote",
    )


def _put_like(write: WriteRecord) -> bool:
    return write.operation.endswith(("PutItem", ".Put", ".INSERT"))


def _type(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1:
        (kind,) = value
        return kind if kind in _TYPES else None
    return None


def _reason(value: Any, business_id: str, message_id: str) -> str | None:
    (scalar,) = value.values()
    if scalar == business_id:
        return "the business id"
    if scalar == message_id:
        return "the messageId"
    if isinstance(scalar, str) and _UUID.fullmatch(scalar):
        return "a uuid"
    return None

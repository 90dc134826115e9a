"""The history file's format: a header, then length-prefixed, checksummed records.

Owns the bytes of a durable history (``loadtest run --history PATH``): the
header (``MAGIC``, then ``FORMAT_VERSION`` as a big-endian u16 and a u16 of
flags, zero), every record's framing, the payload of each record kind, and the
scan that reads them back (``scan``), stopping cleanly at a torn last record.
Pure: bytes in, bytes out; the engine writes and reads the file.

A record is ``length`` (u32, big-endian: the bytes of kind and payload), then
``crc32`` of those bytes (u32), then the kind (one byte) and its payload:

- ``M`` (meta), ``B`` (backend), ``V`` (a variant run starts), ``C`` (a
  checkpoint: the runs' clocks, written with every flush), ``E`` (a variant run
  ended: its end state and the rest of what judged it), ``Z`` (the run closed):
  a ``marshal`` (version 4) of a dict of plain values.
- ``F`` (a frame): ``>IBI`` (the run's index, the log's index in ``LOGS``, the
  frame's index in its log), then the log's frame exactly as
  ``loadtest.model.history.frames.RecordLog`` keeps it (``zlib`` of the
  ``marshal`` of ``FRAME_RECORDS`` encoded records).
- ``R`` (rows not yet framed, flushed on the timer): ``>IBI`` (run, log, the
  index of the first row in its log), then ``zlib`` of the ``marshal`` of the
  encoded rows. A later ``F`` or ``R`` may carry some of the same rows again:
  a reader keeps each row once, by its index.
- ``O`` (observation lines a deployed run drained, in the order it read them)
  and ``D`` (a dead letter it found): a ``marshal`` of a dict of plain values.
  A deployed run's ``V`` record says how its lines are read (``collect``); a
  reader without an ``E`` for that run rebuilds its invocations, acknowledgements
  and dead letters from them as the run does (``loadtest.deploy.collect``).

Unknown kinds are skipped (a later format version may add kinds without
breaking older readers only where it says so; any other change raises
``FORMAT_VERSION``).
"""

from __future__ import annotations

import marshal
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from loadtest.model.history.records import EffectKind, EndState, SinkContents, SinkMessage

MAGIC = b"\x89LTHIST\n"
"""The first 8 bytes of every history file (the high byte catches a text-mode copy)."""
FORMAT_VERSION = 1
HEADER = MAGIC + struct.pack(">HH", FORMAT_VERSION, 0)
_RECORD_HEAD = struct.Struct(">II")
_LOG_HEAD = struct.Struct(">IBI")
MAX_RECORD_BYTES = 1 << 30
"""A longer length is not a record's (a corrupt length field)."""

LOGS = ("sent", "invocations", "acks", "dead_letters")
"""The logs of a ``History``, by the index ``F`` and ``R`` records name them with."""

META, BACKEND, VARIANT, CHECKPOINT, ENDED, CLOSED = b"M", b"B", b"V", b"C", b"E", b"Z"
FRAME, ROWS = b"F", b"R"
LINES, DEAD_LETTER = b"O", b"D"


class JournalError(ValueError):
    """Bytes that are not a history this version reads: ``offset`` says where (in bytes)."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def record(kind: bytes, payload: bytes) -> bytes:
    """One record's bytes: its length, checksum, kind and payload."""
    body = kind + payload
    return _RECORD_HEAD.pack(len(body), zlib.crc32(body)) + body


def values(kind: bytes, data: Mapping[str, Any]) -> bytes:
    """A record of plain values (``M``, ``B``, ``V``, ``C``, ``E``, ``Z``, ``O``, ``D``)."""
    return record(kind, marshal.dumps(dict(data), 4))


def frame(run: int, log: int, index: int, data: bytes) -> tuple[bytes, int]:
    """An ``F`` record holding one log's compressed frame, and where in it the frame starts."""
    head = _LOG_HEAD.pack(run, log, index)
    return record(FRAME, head + data), _RECORD_HEAD.size + 1 + len(head)


def rows(run: int, log: int, first: int, encoded: list[tuple[Any, ...]]) -> bytes:
    """An ``R`` record: a log's rows from index ``first`` on, not yet in a frame."""
    return record(ROWS, _LOG_HEAD.pack(run, log, first) + zlib.compress(marshal.dumps(encoded), 1))


@dataclass(frozen=True)
class Entry:
    """One record read back: where it starts (in bytes), its kind and payload."""

    offset: int
    kind: bytes
    payload: bytes

    def values(self) -> dict[str, Any]:
        data = _loads(self.payload, self.offset)
        if not isinstance(data, dict):
            raise JournalError(f"record {self.kind!r} holds no mapping", self.offset)
        return data

    def log_rows(self) -> tuple[int, int, int, list[tuple[Any, ...]]]:
        """An ``F`` or ``R`` record's run, log, index and rows (``F``: the index is the frame's)."""
        if len(self.payload) < _LOG_HEAD.size:
            raise JournalError(f"record {self.kind!r} is too short", self.offset)
        run, log, index = _LOG_HEAD.unpack_from(self.payload)
        if log >= len(LOGS):
            raise JournalError(
                f"record {self.kind!r} names log {log}, not one of LOGS", self.offset
            )
        try:
            plain = zlib.decompress(self.payload[_LOG_HEAD.size :])
        except zlib.error as exc:
            raise JournalError(
                f"record {self.kind!r} does not decompress: {exc}", self.offset
            ) from exc
        found = _loads(plain, self.offset)
        if not isinstance(found, list):
            raise JournalError(f"record {self.kind!r} holds no rows", self.offset)
        return run, log, index, found


def _loads(data: bytes, offset: int) -> Any:
    try:
        return marshal.loads(data)
    except (EOFError, ValueError, TypeError) as exc:
        raise JournalError(f"record does not decode: {exc}", offset) from exc


@dataclass(frozen=True)
class Scan:
    """A history file's records, up to the end or to a torn last record."""

    entries: tuple[Entry, ...]
    size: int
    """The file's length (in bytes)."""
    torn_at: int | None = None
    """Where a torn last record starts (the file ends inside it), or None."""


def scan(data: bytes) -> Scan:
    """Every whole record of a history file's bytes.

    A last record the file ends inside of (a write cut by a kill), or whose checksum
    fails with nothing after it, is left out and reported as ``torn_at``. Raises
    ``JournalError`` (with the offset) for bytes that are not a history file, a newer
    format version, or a record whose checksum fails with records after it.
    """
    if len(data) < len(HEADER) or not data.startswith(MAGIC):
        raise JournalError("not a loadtest history file (its header is missing)", 0)
    (version, _flags) = struct.unpack_from(">HH", data, len(MAGIC))
    if version > FORMAT_VERSION:
        raise JournalError(
            f"history format version {version} is newer than this loadtest reads "
            f"({FORMAT_VERSION}): read it with a newer loadtest",
            len(MAGIC),
        )
    entries: list[Entry] = []
    offset, size = len(HEADER), len(data)
    while offset < size:
        if offset + _RECORD_HEAD.size > size:
            return Scan(tuple(entries), size, offset)
        length, crc = _RECORD_HEAD.unpack_from(data, offset)
        start = offset + _RECORD_HEAD.size
        end = start + length
        if length == 0 or length > MAX_RECORD_BYTES:
            if not data[offset:].strip(b"\0"):
                # Zeros to the end: space the file system gave a write that never landed.
                return Scan(tuple(entries), size, offset)
            raise JournalError(f"corrupt record: length {length}", offset)
        if end > size:
            return Scan(tuple(entries), size, offset)
        body = data[start:end]
        if zlib.crc32(body) != crc:
            if end == size:
                return Scan(tuple(entries), size, offset)
            raise JournalError("corrupt record: its checksum does not match", offset)
        entries.append(Entry(offset, body[:1], body[1:]))
        offset = end
    return Scan(tuple(entries), size)


def plain(value: Any) -> Any:
    """``value`` with every enum made its plain value (``marshal`` takes exact types only)."""
    if isinstance(value, Enum):
        return plain(value.value)
    if isinstance(value, str) and type(value) is not str:
        return str(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    return value


def encode_end_state(end: EndState) -> dict[str, Any]:
    """What the backend held at the end, as plain values (``decode_end_state``)."""
    return {
        "queue_visible": end.queue_visible,
        "queue_in_flight": end.queue_in_flight,
        "dlq_messages": end.dlq_messages,
        "table_items": end.table_items,
        "side_tables": tuple(end.side_tables),
        "sinks": tuple(
            (
                s.name,
                s.kind.value,
                s.address,
                tuple(
                    (m.payload, m.key, m.attributes, m.message_attributes, m.subject)
                    if m.subject
                    else (m.payload, m.key, m.attributes, m.message_attributes)
                    if m.message_attributes
                    else (m.payload, m.key, m.attributes)
                    for m in s.messages
                ),
                s.complete,
                s.fifo,
                s.deduplicated,
                *((s.delayed,) if s.delayed else ()),
            )
            for s in end.sinks
        ),
    }


def _sink_message(
    payload: str, key: str, attributes: Any, message_attributes: Any = (), subject: str = ""
) -> SinkMessage:
    """A sink's message as ``encode_end_state`` kept it (its message attributes, then its
    subject, only when it had them)."""
    return SinkMessage(
        payload,
        key,
        tuple(tuple(a) for a in attributes),
        tuple(tuple(a) for a in message_attributes),
        subject,
    )


def _sink_contents(
    name: str,
    kind: str,
    address: str,
    messages: Any,
    complete: bool,
    fifo: bool,
    deduplicated: str,
    delayed: int = 0,
) -> SinkContents:
    """A sink's contents as ``encode_end_state`` kept them (its delayed count only when
    some were)."""
    return SinkContents(
        name,
        EffectKind(kind),
        address,
        tuple(_sink_message(*m) for m in messages),
        complete,
        fifo,
        deduplicated,
        delayed,
    )


def decode_end_state(data: Mapping[str, Any]) -> EndState:
    return EndState(
        data["queue_visible"],
        data["queue_in_flight"],
        data["dlq_messages"],
        dict(data["table_items"]),
        tuple(tuple(t) for t in data["side_tables"]),
        tuple(_sink_contents(*row) for row in data["sinks"]),
    )

"""The history file's format: records read back whole, a torn last record left out, a
corrupt middle or a foreign file refused at its byte offset."""

from __future__ import annotations

import struct

import pytest

from loadtest.model.history import journal
from loadtest.model.history.log import (
    EffectKind,
    EndState,
    SinkContents,
    SinkMessage,
)


def _file(*records: bytes) -> bytes:
    return journal.HEADER + b"".join(records)


META = journal.values(journal.META, {"format": 1, "command": "loadtest run x"})
ROWS = journal.rows(0, 1, 0, [("a", 1), ("b", 2)])
CLOSED = journal.values(journal.CLOSED, {"incomplete": None})


def test_records_are_read_back_in_order() -> None:
    scanned = journal.scan(_file(META, ROWS, CLOSED))
    assert [e.kind for e in scanned.entries] == [journal.META, journal.ROWS, journal.CLOSED]
    assert scanned.entries[0].values() == {"format": 1, "command": "loadtest run x"}
    assert scanned.entries[1].log_rows() == (0, 1, 0, [("a", 1), ("b", 2)])
    assert scanned.torn_at is None


@pytest.mark.parametrize("cut", [1, 3, 8, len(CLOSED) - 1])
def test_a_torn_last_record_reads_up_to_the_record_before(cut: int) -> None:
    whole = _file(META, ROWS, CLOSED)
    scanned = journal.scan(whole[:-cut])
    assert [e.kind for e in scanned.entries] == [journal.META, journal.ROWS]
    assert scanned.torn_at == len(whole) - len(CLOSED)


def test_a_last_record_with_a_bad_checksum_is_torn_and_zeros_at_the_end_are_no_record() -> None:
    whole = bytearray(_file(META, ROWS, CLOSED))
    whole[-1] ^= 0xFF
    assert [e.kind for e in journal.scan(bytes(whole)).entries] == [journal.META, journal.ROWS]
    padded = journal.scan(_file(META, ROWS) + b"\0" * 4096)
    assert len(padded.entries) == 2
    assert padded.torn_at == len(_file(META, ROWS))


def test_a_corrupt_record_in_the_middle_is_refused_at_its_offset() -> None:
    whole = bytearray(_file(META, ROWS, CLOSED))
    at = len(journal.HEADER) + len(META)
    whole[at + 12] ^= 0xFF  # a byte of the rows record's payload
    with pytest.raises(journal.JournalError) as raised:
        journal.scan(bytes(whole))
    assert raised.value.offset == at
    garbage = bytearray(_file(META, ROWS, CLOSED))
    garbage[at : at + 4] = b"\xff\xff\xff\xff"  # a length no record has
    with pytest.raises(journal.JournalError) as raised:
        journal.scan(bytes(garbage))
    assert raised.value.offset == at


def test_a_file_that_is_not_a_history_or_of_a_newer_version_is_refused() -> None:
    with pytest.raises(journal.JournalError, match="not a loadtest history") as raised:
        journal.scan(b'{"schema_version": 1}')
    assert raised.value.offset == 0
    newer = journal.MAGIC + struct.pack(">HH", journal.FORMAT_VERSION + 1, 0) + META
    with pytest.raises(journal.JournalError, match="newer") as raised:
        journal.scan(newer)
    assert raised.value.offset == len(journal.MAGIC)


def test_an_end_state_with_sinks_round_trips() -> None:
    end = EndState(
        1,
        2,
        3,
        {"k": {"id": {"S": "k"}, "blob": {"B": b"\x00\x01"}}},
        (("locks", 4),),
        (
            SinkContents(
                "orders",
                EffectKind.TOPIC,
                "arn:aws:sns:us-east-1:1:orders",
                (
                    SinkMessage("hello", "", (("MessageGroupId", "g"),)),
                    SinkMessage("placed", "", (), (("orderId", "o-1"),)),
                    SinkMessage("placed", "", (), (), "Order o-2 placed"),
                ),
                complete=False,
                fifo=True,
                deduplicated="by id",
                delayed=3,
            ),
        ),
    )
    plain = journal.plain(journal.encode_end_state(end))
    record = journal.values(journal.ENDED, {"end_state": plain})
    read = journal.scan(_file(record)).entries[0].values()
    assert journal.decode_end_state(read["end_state"]) == end


def test_plain_makes_enums_plain() -> None:
    assert journal.plain({"kind": EffectKind.BUS, "xs": [EffectKind.TOPIC]}) == {
        "kind": "bus",
        "xs": ["topic"],
    }
    assert type(journal.plain(EffectKind.BUS)) is str

"""The history writer: frames and the rows not yet framed reach the file, a failing disk
(ENOSPC) is said once and the run goes on, and the file reads back as what was written
(a deployed run's, without its end record, from the lines and dead letters it drained)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest

from loadtest.api import history_meta, prepare
from loadtest.aws.clients import ResourceNames
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.engine.recording import HistoryPathError, HistoryWriter, check_history_path
from loadtest.engine.replay import replay
from loadtest.model.history import journal
from loadtest.model.history.frames import decode_invocation, decode_sent
from loadtest.model.history.log import (
    FRAME_RECORDS,
    Ack,
    DeadLetter,
    EffectKind,
    EffectRecord,
    Invocation,
    InvocationOutcome,
    Record,
    SentMessage,
    WriteOutcome,
    WriteRecord,
)
from loadtest.observer.lambda_entry import INVOKE_TAG, INVOKED_TAG

NAMES = ResourceNames("q", "d", "t")
REF = parse_ref("conditional")


def _sent(i: int) -> SentMessage:
    return SentMessage(i, f"id-{i}", f'{{"id": "id-{i}"}}', i * 10, i * 10 + 1, f"m-{i}")


def _sent_rows(path: Path) -> list[SentMessage]:
    rows: list[tuple[object, ...]] = []
    for entry in journal.scan(path.read_bytes()).entries:
        if entry.kind in (journal.FRAME, journal.ROWS):
            _run, log, index, found = entry.log_rows()
            first = index * FRAME_RECORDS if entry.kind == journal.FRAME else index
            if log == 0 and first <= len(rows):
                rows.extend(found[len(rows) - first :])
    return [decode_sent(r) for r in rows]


def test_frames_and_flushed_rows_reach_the_file_once_each(tmp_path: Path) -> None:
    path = tmp_path / "h.history"
    writer = HistoryWriter(path, {"format": 1})
    history = writer.history(0, REF, NAMES, 0)
    expected = [_sent(i) for i in range(FRAME_RECORDS + 100)]
    history.sent.extend(expected[:50])
    writer.flush()  # 50 rows, not yet framed
    assert _sent_rows(path) == expected[:50]
    history.sent.extend(expected[50:])  # a whole frame (repeating the 50) and 100 more
    assert _sent_rows(path) == expected[:FRAME_RECORDS]
    writer.flush()
    assert _sent_rows(path) == expected
    assert list(history.sent) == expected  # the frames read back from the file


class _FullDisk:
    """A sink that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, room: int) -> None:
        self.room = room
        self.data = bytearray()

    def write(self, data: bytes, /) -> None:
        if len(self.data) + len(data) > self.room:
            raise OSError(errno.ENOSPC, "No space left on device")
        self.data += data

    def sync(self) -> None:
        pass

    def read(self, offset: int, length: int, /) -> bytes:
        return bytes(self.data[offset : offset + length])

    def close(self) -> None:
        pass


def test_a_full_disk_is_said_once_and_the_run_goes_on_without_the_history(
    tmp_path: Path,
) -> None:
    problems: list[str] = []
    sink = _FullDisk(room=4096)
    writer = HistoryWriter(
        tmp_path / "h.history", {"format": 1}, sink=sink, on_problem=problems.append
    )
    history = writer.history(0, REF, NAMES, 0)
    expected = [_sent(i) for i in range(3 * FRAME_RECORDS + 7)]
    for chunk in range(0, len(expected), 100):
        history.sent.extend(expected[chunk : chunk + 100])
        writer.flush()
    writer.close(None)
    assert len(problems) == 1, problems
    assert "No space left on device" in problems[0] and "goes on without it" in problems[0]
    assert writer.problem == problems[0]
    assert list(history.sent) == expected  # nothing the run measured was lost
    kept = tmp_path / "kept.history"
    kept.write_bytes(bytes(sink.data))
    scanned = journal.scan(kept.read_bytes())
    assert scanned.entries[0].kind == journal.META
    assert all(e.kind != journal.CLOSED for e in scanned.entries)  # read as a cut history
    assert _sent_rows(kept) == expected[: len(_sent_rows(kept))]


def test_a_history_that_cannot_be_created_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HistoryPathError, match="does not exist"):
        check_history_path(tmp_path / "missing" / "h.history")
    with pytest.raises(HistoryPathError, match="is a directory"):
        check_history_path(tmp_path)
    with pytest.raises(HistoryPathError, match="cannot write history"):
        HistoryWriter(tmp_path / "missing" / "h.history", {})
    with pytest.raises(HistoryPathError, match="No space left"):
        HistoryWriter(tmp_path / "h.history", {}, sink=_FullDisk(room=4))
    assert not (tmp_path / "missing").exists()


def test_invocations_keep_their_writes_and_effects_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "h.history"
    writer = HistoryWriter(path, {"format": 1})
    history = writer.history(0, REF, NAMES, 0)
    effect = EffectRecord(
        "SNS.Publish",
        EffectKind.TOPIC,
        "arn:aws:sns:us-east-1:1:orders",
        "{}",
        True,
        5,
        6,
        dedup_id="d",
        group_id="g",
        call_id="c",
        request_id="r",
        record_id="m-1",
    )
    write = WriteRecord(
        "PutItem",
        {"id": {"S": "a"}},
        "attribute_not_exists(id)",
        WriteOutcome.ACCEPTED,
        None,
        {"id": {"S": "a"}},
        True,
        3,
        4,
        request_id="r",
    )
    invocation = Invocation(
        "r",
        0,
        (Record("m-1", 1, "a"),),
        1,
        2,
        7,
        InvocationOutcome.SUCCESS,
        None,
        (write,),
        effects=(effect,),
    )
    history.invocations.append(invocation)
    writer.flush()
    rows = [
        row
        for entry in journal.scan(path.read_bytes()).entries
        if entry.kind == journal.ROWS
        for row in entry.log_rows()[3]
        if entry.log_rows()[1] == journal.LOGS.index("invocations")
    ]
    assert [decode_invocation(row) for row in rows] == [invocation]


def _deployed_history(path: Path, incomplete: str | None) -> None:
    """A deployed run's history as the run leaves it before its end record: the sent log,
    one invocation's lines (a start, an end) and a dead letter; closed with ``incomplete``,
    or cut (None)."""
    writer = HistoryWriter(path, history_meta(prepare("seed-lab"), None))
    history = writer.collecting(0, REF, NAMES, partial=False, wall_offset_ns=1_000)
    history.started_ns = 5
    history.sent.extend([_sent(0), _sent(1)])
    start = {
        "t": INVOKE_TAG,
        "request_id": "r-1",
        "env": "e-1",
        "records": [{"message_id": "m-1", "receive_count": 1, "sent_ms": 0}],
        "started_ns": 1_020,
    }
    end = {"t": INVOKED_TAG, "request_id": "r-1", "outcome": "ok", "ended_ns": 1_030}
    writer.lines(0, [json.dumps(start), "not a line of loadtest's"])
    writer.lines(0, [json.dumps(end)])
    writer.dead_letter(0, "m-0", 3, 40)
    writer.flush()
    if incomplete is not None:
        writer.close(incomplete)


@pytest.mark.parametrize("incomplete", [None, "interrupted by SIGINT"], ids=["cut", "closed"])
def test_a_deployed_run_without_its_end_is_rebuilt_from_its_lines_and_dead_letters(
    tmp_path: Path, incomplete: str | None
) -> None:
    path = tmp_path / "h.history"
    _deployed_history(path, incomplete)
    replayed = replay(path)
    assert replayed.closed is (incomplete is not None)
    (run,) = replayed.result.runs
    (invocation,) = run.history.invocations
    assert (invocation.request_id, invocation.records) == ("r-1", (Record("m-1", 1, "id-1"),))
    # The lines' wall clock, on the run's monotonic one (wall_offset_ns = 1000).
    assert (invocation.started_ns, invocation.ended_ns) == (20, 30)
    assert list(run.history.acks) == [Ack("m-1", 30)]
    assert list(run.history.dead_letters) == [DeadLetter("m-0", 3, 40)]
    assert (run.check.counts.acked, run.check.counts.dead_lettered) == (1, 1)
    assert run.cold_starts == 1
    assert "1 lines on the observation queue were not loadtest's" in run.warnings
    assert run.incomplete is not None
    if incomplete is not None:
        assert run.incomplete == incomplete
    else:
        assert run.incomplete.startswith("cut short: the history ends at its last record")

"""``--history`` and ``loadtest report HISTORY``: a closed history gives the run's own
report byte for byte, the default history is removed when the run ends normally, and bad
input exits 2 naming the file and the byte offset, never with a traceback."""

from __future__ import annotations

import errno
import json
import os
import struct
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest import api
from loadtest.cli import running
from loadtest.cli.app import app
from loadtest.engine import recording
from loadtest.engine.replay import replay
from loadtest.engine.results import Salvage
from loadtest.model.history import journal

runner = CliRunner()


def _run(backend_url: str, tmp_path: Path, *extra: str) -> tuple[int, str]:
    result = runner.invoke(
        app,
        [
            *("compare", "race-burst", "--variants", "read-then-write,conditional"),
            # Four environments, not race-burst's eight: each is a cold start, and four
            # race read-then-write's copies as well (a history is what is checked here).
            *("--distinct-ids", "12", "--concurrency", "4", "--seed", "5"),
            *("--endpoint-url", backend_url),
            *("--out", str(tmp_path / "out"), "--quiet"),
            *extra,
        ],
    )
    return result.exit_code, result.output


def test_a_closed_history_rebuilds_the_runs_report_byte_for_byte(
    backend_url: str, tmp_path: Path
) -> None:
    history = tmp_path / "run.history"
    ran = tmp_path / "ran.json"
    code, output = _run(backend_url, tmp_path, "--json", str(ran), "--history", str(history))
    assert code in (0, 1), output
    rebuilt = tmp_path / "rebuilt.json"
    page = tmp_path / "rebuilt.html"
    result = runner.invoke(
        app, ["report", str(history), "--json", str(rebuilt), "--html", str(page), "--quiet"]
    )
    assert result.exit_code == code, result.output
    assert rebuilt.read_bytes() == ran.read_bytes()
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # A threshold added when judging again is judged on the same records.
    again = runner.invoke(
        app, ["report", str(history), "--threshold", "conditional: writes_accepted > 10000"]
    )
    assert again.exit_code == 1, again.output
    assert "writes_accepted > 10000" in again.output


@pytest.mark.parametrize(
    "command",
    [
        ["sweep", "race-burst", "--variants", "conditional", "--batch-size", "1,5"],
        ["run", "race-burst", "--variant", "conditional", "--repeat", "2"],
    ],
    ids=["sweep", "repeat"],
)
def test_a_sweeps_or_repeats_history_rebuilds_its_report_byte_for_byte(
    backend_url: str, tmp_path: Path, command: list[str]
) -> None:
    history = tmp_path / "cells.history"
    ran = tmp_path / "ran.json"
    metric = ["--metric", "cost"] if command[0] == "sweep" else []
    result = runner.invoke(
        app,
        [
            *command,
            *metric,
            *("--distinct-ids", "6", "--concurrency", "2", "--endpoint-url", backend_url),
            *("--json", str(ran), "--history", str(history), "--quiet"),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    rebuilt = tmp_path / "rebuilt.json"
    again = runner.invoke(app, ["report", str(history), "--json", str(rebuilt), "--quiet"])
    assert again.exit_code == result.exit_code, again.output
    assert rebuilt.read_bytes() == ran.read_bytes()


def test_the_default_history_is_removed_when_the_run_ends_unless_kept(
    backend_url: str, tmp_path: Path
) -> None:
    code, output = _run(backend_url, tmp_path, "--variants", "conditional")
    assert code == 0, output
    out = tmp_path / "out"
    assert sorted(p.suffix for p in out.iterdir()) == [".html", ".json"]
    code, output = _run(backend_url, tmp_path, "--variants", "conditional", "--keep-history")
    assert code == 0, output
    kept = sorted(out.glob("*.history"))
    assert len(kept) == 1
    assert kept[0].with_suffix(".json").exists()
    shown = runner.invoke(app, ["report", str(kept[0]), "--quiet"])
    assert shown.exit_code == 0, shown.output


def test_a_history_in_a_missing_directory_is_refused_before_anything_is_made(
    backend_url: str, tmp_path: Path
) -> None:
    missing = tmp_path / "nowhere" / "run.history"
    code, output = _run(backend_url, tmp_path, "--history", str(missing))
    assert code == 2, output
    assert "does not exist" in output and str(missing) in output
    assert not (tmp_path / "nowhere").exists()
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _history_bytes(backend_url: str, tmp_path: Path) -> bytes:
    history = tmp_path / "run.history"
    code, output = _run(
        backend_url, tmp_path, "--variants", "conditional", "--history", str(history)
    )
    assert code == 0, output
    return history.read_bytes()


def test_bad_histories_exit_two_naming_the_file_and_the_offset(
    backend_url: str, tmp_path: Path
) -> None:
    data = _history_bytes(backend_url, tmp_path)
    entries = journal.scan(data).entries
    middle = entries[len(entries) // 2]
    corrupt = bytearray(data)
    corrupt[middle.offset + 9] ^= 0xFF  # the record's kind byte: its checksum fails
    cases = {
        "corrupt.history": (bytes(corrupt), f"at byte {middle.offset}"),
        "newer.history": (
            journal.MAGIC + struct.pack(">HH", journal.FORMAT_VERSION + 1, 0) + data[12:],
            "newer",
        ),
        "foreign.history": (journal.MAGIC + b"\x00\x01" + b"junk", "at byte"),
        "text.json": (b"not a report", "text.json"),
    }
    for name, (content, expected) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        result = runner.invoke(app, ["report", str(path), "--json", str(tmp_path / "x.json")])
        assert result.exit_code == 2, (name, result.output)
        assert expected in result.output and name in result.output, (name, result.output)
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_torn_last_record_reads_up_to_the_record_before(backend_url: str, tmp_path: Path) -> None:
    data = _history_bytes(backend_url, tmp_path)
    entries = journal.scan(data).entries
    assert entries[-1].kind == journal.CLOSED
    torn = tmp_path / "torn.history"
    torn.write_bytes(data[:-3])
    out = tmp_path / "torn.json"
    result = runner.invoke(app, ["report", str(torn), "--json", str(out), "--quiet"])
    assert result.exit_code == 4, result.output
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["incomplete"] is True
    assert f"a torn record at byte {entries[-1].offset}" in report["incomplete_reason"]
    # Everything before the close was kept: the run's counts are the run's own.
    assert report["runs"][0]["counts"]["writes_accepted"] == 12


def test_a_full_disk_at_the_start_exits_two_before_anything_is_made(
    backend_url: str, tmp_path: Path
) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    code, output = _run(backend_url, tmp_path, "--history", "/dev/full")
    assert code == 2, output
    assert "cannot write history '/dev/full'" in output and "No space left" in output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


class _FillingFile(recording.FileSink):
    """A history file on a disk that fills after its first 20 kB."""

    def write(self, data: bytes, /) -> None:
        if os.lseek(self.fd, 0, os.SEEK_END) + len(data) > 20_000:
            raise OSError(errno.ENOSPC, "No space left on device")
        super().write(data)


def test_a_disk_that_fills_mid_run_is_said_once_and_the_run_goes_on(
    backend_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recording, "FileSink", _FillingFile)
    history = tmp_path / "run.history"
    ran = tmp_path / "ran.json"
    result = runner.invoke(
        app,
        [
            # 50 ids: some 45 kB of history, cut at 20 kB.
            *("run", "race-burst", "--variant", "conditional", "--distinct-ids", "50"),
            *("--concurrency", "2"),
            *("--endpoint-url", backend_url, "--json", str(ran), "--history", str(history)),
            "--quiet",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(ran.read_text(encoding="utf-8"))
    assert report["incomplete"] is False
    assert report["runs"][0]["counts"]["writes_accepted"] == 50  # nothing measured was lost
    assert 0 < history.stat().st_size <= 20_000
    again = runner.invoke(app, ["report", str(history), "--json", str(tmp_path / "cut.json")])
    assert again.exit_code == 4, again.output  # what reached the file: a cut history
    assert json.loads((tmp_path / "cut.json").read_text(encoding="utf-8"))["incomplete"] is True


def test_the_warning_for_a_full_disk_is_printed_once(
    backend_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recording, "FileSink", _FillingFile)
    said: list[str] = []
    monkeypatch.setattr(running, "history_problem", said.append)
    # 200 ids: the run outlasts several flushes of the history after the disk is full.
    code, output = _run(backend_url, tmp_path, "--variants", "conditional", "--distinct-ids", "200")
    assert code == 0, output
    assert len(said) == 1, said
    assert "No space left on device" in said[0] and "goes on without it" in said[0]


def test_a_run_that_measured_nothing_leaves_no_default_history(
    backend_url: str, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no import')\n\ndef handler(event, context):\n    pass\n")
    result = runner.invoke(
        app,
        [
            *("run", "race-burst", "--handler", f"{broken}:handler", "--distinct-ids", "4"),
            *("--endpoint-url", backend_url, "--out", str(tmp_path / "out"), "--quiet"),
        ],
    )
    assert result.exit_code not in (0, 130), result.output
    assert not list((tmp_path / "out").glob("*.history")), result.output


def test_a_run_with_a_sink_rebuilds_its_report_and_end_state_from_its_history(
    backend_url: str, tmp_path: Path
) -> None:
    from tests.integration.test_sinks import HANDLER, SCENARIO

    (tmp_path / "publisher.py").write_text(textwrap.dedent(HANDLER))
    (tmp_path / "sinks.toml").write_text(SCENARIO)
    history = tmp_path / "sinks.history"
    plan = api.prepare(
        tmp_path / "sinks.toml",
        handler=f"{tmp_path / 'publisher.py'}:handler",
        endpoint_url=backend_url,
    )
    salvage = Salvage()
    report = api.execute(plan, salvage=salvage, history=history)
    [run] = salvage.runs
    assert len(run.end_state.sinks[0].messages) == 6
    replayed = replay(history)
    assert replayed.closed
    [again] = replayed.result.runs
    assert again.end_state == run.end_state  # the sink's messages, as the run read them
    assert list(again.history.invocations) == list(run.history.invocations)
    rebuilt = api.report_from_history(history)
    assert json.dumps(rebuilt.to_dict(), indent=2) == json.dumps(report.to_dict(), indent=2)

"""A run killed hard (SIGKILL, mid-schedule) keeps what it measured in its history file, and
leaves no process and no temporary folder behind, its environments forked (the zygote ends
them) or started directly (their guards do, ``loadtest.emulation.environment.child_guard``).

The run is a real ``python -m loadtest run steady-rate --history P`` on the embedded backend,
sending at a steady rate for about 10 s; it is killed about 5 s in. Its processes are found by
a variable unique to the test (``test_harness_death``'s approach), its temporary folders in a
``TMPDIR`` of the test's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from loadtest.model.history import journal
from tests.integration.test_harness_death import GONE_WITHIN_S, TAG_ENV, _tagged, _wait_for

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

KILL_AFTER_S = 5.0
"""How long (in seconds) the run sends before it is killed: the schedule takes 10 s."""


def _sent_rows(path: Path) -> int:
    """Sent messages the history already holds (0 while it has none, or no file)."""
    try:
        scanned = journal.scan(path.read_bytes())
    except (OSError, journal.JournalError):
        return 0
    count = 0
    for entry in scanned.entries:
        if entry.kind in (journal.FRAME, journal.ROWS):
            _run, log, index, rows = entry.log_rows()
            first = index * 512 if entry.kind == journal.FRAME else index
            if log == 0:
                count = max(count, first + len(rows))
    return count


@pytest.mark.slow
@pytest.mark.process
@pytest.mark.parametrize("zygote", ["1", "0"], ids=["forked", "direct"])
def test_a_run_killed_hard_leaves_a_history_that_judges_what_it_measured(
    tmp_path: Path, zygote: str
) -> None:
    history = tmp_path / "run.history"
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    tag = uuid.uuid4().hex
    env = {
        **os.environ,
        TAG_ENV: tag,
        "TMPDIR": str(scratch),
        "LOADTEST_ZYGOTE": zygote,
        "NO_COLOR": "1",
    }
    if os.environ.get("PYTHONPATH"):
        # The run starts in tmp_path: the same loadtest as this test's, whatever the cwd.
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) for p in os.environ["PYTHONPATH"].split(os.pathsep)
        )
    harness = subprocess.Popen(
        [
            *(sys.executable, "-m", "loadtest", "run", "steady-rate"),
            *("--distinct-ids", "200", "--history", str(history)),
            *("--out", str(tmp_path / "out"), "--quiet"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 90
        while not _sent_rows(history) and harness.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # the history holds its first rows about 1 s after sending starts
        assert _sent_rows(history), ("the run never started sending", harness.poll())
        time.sleep(KILL_AFTER_S - 1)
        assert harness.poll() is None, "the run ended before it was killed"
        harness.send_signal(signal.SIGKILL)
        harness.wait()
        survivors = _wait_for(tag, lambda seen: not seen, GONE_WITHIN_S)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        for pid in _tagged(tag):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert not survivors, f"outlived the killed harness: {survivors}"
    left = sorted(p.name for p in scratch.iterdir())
    # The zygote (forked) or the environments' guards (direct) removed the run's folder.
    assert not left, f"left behind: {left}"

    out = tmp_path / "cut.json"
    judged = subprocess.run(
        [sys.executable, "-m", "loadtest", "report", str(history), "--json", str(out)],
        capture_output=True,
        text=True,
        env={**env, "TMPDIR": str(tmp_path)},
        timeout=120,
    )
    assert judged.returncode == 4, judged.stdout + judged.stderr
    assert "Traceback" not in judged.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["incomplete"] is True
    assert report["incomplete_reason"].startswith("cut short: the history ends at")
    (run,) = report["runs"]
    assert run["incomplete"] is True and run["verdict"] == "inconclusive"
    counts = run["counts"]
    # Killed about 5 s into a 10 s schedule at 40 messages/s: well under the 400 planned.
    assert 40 <= counts["messages_sent"] < 400, counts
    assert counts["writes_accepted"] > 0, counts
    assert run["latency_us"]["end_to_end"]["count"] > 0
    assert run["latency_us"]["end_to_end"]["p50"] > 0

"""Pure ceilings and guards: handle fragments, report validation, the capacity estimate, report names."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.emulation.environment.capacity import (
    CapacityError,
    Machine,
    estimate,
    refuse_beyond,
)
from loadtest.emulation.mapping.runner import REDACTED, redact
from loadtest.reports.reportcheck import missing_keys

HANDLE = "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a" * 3
SAMPLE = Path(__file__).parent.parent / "reports" / "sample_report.json"


@pytest.mark.parametrize(
    "text",
    [
        f"failed for {HANDLE[:40]}…",
        f"handle={urllib.parse.quote(HANDLE[5:60], safe='')}",
        f"x{HANDLE[10:50]}y",
    ],
)
def test_fragments_of_a_handle_are_redacted(text: str) -> None:
    assert REDACTED in redact(text, {HANDLE})
    assert HANDLE[10:40] not in redact(text, {HANDLE})


def test_ordinary_text_is_untouched() -> None:
    text = "ConditionalCheckFailedException: order-00001 already stored"
    assert redact(text, {HANDLE}) == text


def test_a_complete_report_has_nothing_missing() -> None:
    assert missing_keys(json.loads(SAMPLE.read_text())) == []


def test_missing_counts_are_named() -> None:
    report = json.loads(SAMPLE.read_text())
    del report["runs"][0]["counts"]["duplicate_writes"]
    del report["runs"][0]["verdict"]
    assert missing_keys(report) == ["runs[0].verdict", "runs[0].counts.duplicate_writes"]


def test_report_and_diff_refuse_an_incomplete_report(tmp_path: Path) -> None:
    report = json.loads(SAMPLE.read_text())
    del report["runs"][0]["counts"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(report))
    for args in (["report", str(bad)], ["diff", str(SAMPLE), str(bad)]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "runs[0].counts" in result.output


def test_quiet_is_accepted_everywhere() -> None:
    assert CliRunner().invoke(app, ["scenarios", "--quiet"]).exit_code == 0
    assert CliRunner().invoke(app, ["report", str(SAMPLE), "--quiet"]).exit_code in (0, 1)


def test_an_impossible_run_is_refused_with_the_estimate() -> None:
    need = estimate(concurrency=1000, messages=1_000_000_000)
    with pytest.raises(CapacityError, match="MB of memory"):
        refuse_beyond(need, Machine(available_mb=16_000, max_processes=None, max_open_files=None))
    refuse_beyond(estimate(concurrency=4, messages=600), Machine(16_000, 4096, 1024))


@pytest.mark.process
def test_a_large_parent_does_not_make_a_small_environment_out_of_memory() -> None:
    """Linux carries ru_maxrss across exec from the forked parent; the peak check must not."""
    import subprocess
    import sys

    ballast = b"x" * (300 * 1024 * 1024)  # the harness after a long session
    code = "from loadtest.emulation.environment.child_guard import over_memory_peak; print(over_memory_peak(128))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"
    assert len(ballast) == 300 * 1024 * 1024


@pytest.mark.process
def test_an_environment_past_its_memory_reports_its_peak() -> None:
    import subprocess
    import sys

    code = (
        "from loadtest.emulation.environment.child_guard import over_memory_peak\n"
        "hog = b'x' * (200 * 1024 * 1024)\n"
        "del hog\n"
        "print(over_memory_peak(128))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout) >= 200


def test_a_result_whose_repr_raises_is_refused_without_its_repr() -> None:
    from loadtest.observer.runtime_marshal import MarshalError, marshal_response

    class Hostile:
        def __repr__(self) -> str:
            raise RuntimeError("no repr for you")

    with pytest.raises(MarshalError) as refused:
        marshal_response(Hostile())
    assert str(refused.value) == (
        "Unable to marshal response: Object of type Hostile is not JSON serializable"
    )
    assert marshal_response({"ok": 1}).body == '{"ok": 1}'


@pytest.mark.process
def test_the_sampler_stops_an_environment_that_holds_too_much_memory() -> None:
    """The watchdog (not the peak check after the invocation) stops a handler that is still
    running past ``memory_mb``, with its own exit code and line."""
    import subprocess
    import sys

    from loadtest.emulation.environment.child_guard import OUT_OF_MEMORY_EXIT

    code = (
        "import time\n"
        "from loadtest.emulation.environment.child_guard import enforce_memory\n"
        "enforce_memory(128).invocation_started()\n"
        "hog = bytearray(200 * 1024 * 1024)\n"
        "time.sleep(10)\n"
        "print('survived')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == OUT_OF_MEMORY_EXIT
    assert "survived" not in out.stdout
    assert "loadtest: out of memory" in out.stderr and "memory_mb = 128" in out.stderr


def test_the_sampler_waits_while_no_invocation_runs() -> None:
    """Once no invocation has run for a few samples the watchdog sleeps (a Lambda environment
    is frozen between invocations); the next invocation's start wakes it and its first
    sample stops a process over the limit."""
    import subprocess
    import sys

    from loadtest.emulation.environment.child_guard import OUT_OF_MEMORY_EXIT

    code = (
        "import time\n"
        "from loadtest.emulation.environment.child_guard import MEMORY_IDLE_POLLS, MEMORY_POLL_S, enforce_memory\n"
        "watch = enforce_memory(128)\n"
        "watch.invocation_started()\n"
        "watch.invocation_ended()\n"
        "time.sleep(3 * MEMORY_IDLE_POLLS * MEMORY_POLL_S)\n"
        "hog = bytearray(200 * 1024 * 1024)\n"
        "time.sleep(0.5)\n"
        "print('idle', flush=True)\n"
        "watch.invocation_started()\n"
        "time.sleep(10)\n"
        "print('survived')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == OUT_OF_MEMORY_EXIT
    assert out.stdout == "idle\n"
    assert "loadtest: out of memory" in out.stderr

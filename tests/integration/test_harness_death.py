"""A harness killed mid-run (SIGKILL: no clean-up of its own) leaves no process and no folder of its run.

The run is a real ``python -m loadtest run`` on the embedded backend, its handler mid-invocation
and holding processes of its own: a spawned process-pool worker (with multiprocessing's
resource tracker), in the environment's process group, and a ``sleep`` in a session of its
own. Every process of the run carries a variable unique to this test in its environment
(``/proc/PID/environ``), so other runs on the machine are never counted or touched. The run's
``loadtest-envs-PID-*`` folder is named by the harness's pid, so only this run's is looked at.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from loadtest.emulation.environment import parent_zygote as zygotes
from loadtest.emulation.environment.parent_runs import LOG_DIR_PREFIX
from loadtest.observer import layer

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
    pytest.mark.skipif(not zygotes.available(), reason="environments are forked on Linux"),
]

TAG_ENV = "LOADTEST_TEST_RUN_TAG"
GONE_WITHIN_S = 5.0
"""How long (in seconds) the run's processes may take to end once the harness is killed."""

HANDLER = """
import multiprocessing, subprocess, time
from concurrent.futures import ProcessPoolExecutor

def nap(seconds):
    time.sleep(seconds)

def handler(event, context):
    # Left behind by the handler: one process in the environment's group, one in a session
    # of its own; both outlive the invocation unless something ends them.
    subprocess.Popen(["sleep", "120"], start_new_session=True)
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pool.submit(nap, 0.01).result()
        time.sleep(120)
"""


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name; None once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _tagged(tag: str) -> dict[int, str]:
    """This test's run's live processes (zombies excluded), with their command lines."""
    marker = f"{TAG_ENV}={tag}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone, or another user's
            continue
        if marker not in environ.split(b"\0"):
            continue
        fields = _stat(int(entry.name))
        if fields is None or fields[0] in (b"Z", b"X"):
            continue
        found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode("utf-8", "replace")
    return found


def _wait_for(
    tag: str, ready: Callable[[dict[int, str]], bool], timeout_s: float
) -> dict[int, str]:
    deadline = time.monotonic() + timeout_s
    seen = _tagged(tag)
    while not ready(seen) and time.monotonic() < deadline:
        time.sleep(0.2)
        seen = _tagged(tag)
    return seen


def _run_folders(harness_pid: int) -> list[Path]:
    """The harness's own ``loadtest-envs-PID-*`` folders (``parent_runs.new_log_dir``)."""
    return sorted(Path(tempfile.gettempdir()).glob(f"{LOG_DIR_PREFIX}{harness_pid}-*"))


@dataclass(frozen=True)
class Killed:
    """What a run killed mid-run had, and what was left of it ``GONE_WITHIN_S`` later."""

    before: dict[int, str]
    """The run's live processes just before the kill (pid: command line)."""
    survivors: dict[int, str]
    """Those still alive (not zombies) ``GONE_WITHIN_S`` after the kill."""
    folders_before: list[Path]
    """The run's ``loadtest-envs-*`` folders just before the kill."""
    folders_after: list[Path]
    """Those still there ``GONE_WITHIN_S`` after the kill."""


def _kill_mid_run(
    tmp_path: Path,
    handler_source: str,
    busy: Callable[[dict[int, str]], bool],
    env: dict[str, str],
    *options: str,
) -> Killed:
    """Run ``race-burst`` with the handler (and ``options``), SIGKILL the harness once ``busy`` says its
    processes are there; return them and its folders, and those still there ``GONE_WITHIN_S`` later."""
    handler = tmp_path / "handler_under_test.py"
    handler.write_text(handler_source)
    tag = uuid.uuid4().hex
    harness = subprocess.Popen(
        [
            *(sys.executable, "-m", "loadtest", "run", "race-burst"),
            *("--handler", f"{handler}:handler", "--distinct-ids", "4", "--concurrency", "2"),
            *("--out", str(tmp_path / "out"), "--quiet"),
            *options,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env, TAG_ENV: tag, "NO_COLOR": "1"},
        cwd=tmp_path,
    )
    try:
        before = _wait_for(tag, busy, 90)
        assert busy(before), (f"the run's processes never got going: {before}", harness.poll())
        folders_before = _run_folders(harness.pid)
        harness.kill()
        harness.wait()
        survivors = _wait_for(tag, lambda seen: not seen, GONE_WITHIN_S)
        deadline = time.monotonic() + GONE_WITHIN_S
        while _run_folders(harness.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        folders_after = _run_folders(harness.pid)
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
        for pid in _tagged(tag):  # never leave this test's own processes behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for folder in _run_folders(harness.pid):
            shutil.rmtree(folder, ignore_errors=True)
    return Killed(before, survivors, folders_before, folders_after)


def _count(seen: dict[int, str], text: str) -> int:
    return sum(text in command for command in seen.values())


@pytest.mark.slow
def test_no_process_of_a_run_outlives_its_killed_harness(tmp_path: Path) -> None:
    """Forked environments (the default): the zygote, the environments and every process
    their handlers started end with the harness."""

    killed = _kill_mid_run(tmp_path, HANDLER, _handler_busy, {})
    kinds = {
        "backend": "loadtest.backend.embedded",
        "zygote and environments": layer.ZYGOTE_MARKER,
        **_HANDLER_KINDS,
    }
    for kind, text in kinds.items():
        assert _count(killed.before, text), f"no {kind} among {killed.before}"
    assert not killed.survivors, f"outlived the killed harness: {killed.survivors}"
    assert len(killed.folders_before) == 1, killed.folders_before
    assert not killed.folders_after, f"outlived the killed harness: {killed.folders_after}"


_HANDLER_KINDS = {
    "resource tracker": "multiprocessing.resource_tracker",
    "pool worker": "multiprocessing.spawn",
    "session of its own": "sleep 120",
}
"""What ``HANDLER`` leaves running, by the text in its command line."""


def _handler_busy(seen: dict[int, str]) -> bool:
    """Both environments are inside ``HANDLER``, each with its pool worker and its sleep."""
    return _count(seen, "multiprocessing.spawn") >= 2 and _count(seen, "sleep 120") >= 2


@pytest.mark.slow
def test_directly_started_environments_die_with_a_killed_harness(tmp_path: Path) -> None:
    """``LOADTEST_ZYGOTE=0``: each environment is the harness's own child, mid-invocation."""
    sleeper = "import time\n\ndef handler(event, context):\n    time.sleep(120)\n"

    def busy(seen: dict[int, str]) -> bool:
        return _count(seen, "child_host.main()") >= 2

    killed = _kill_mid_run(tmp_path, sleeper, busy, {"LOADTEST_ZYGOTE": "0"})
    assert _count(killed.before, "loadtest.backend.embedded") == 1, killed.before
    assert _count(killed.before, layer.ZYGOTE_MARKER) == 0, killed.before
    assert not killed.survivors, f"outlived the killed harness: {killed.survivors}"
    assert len(killed.folders_before) == 1, killed.folders_before
    assert not killed.folders_after, f"outlived the killed harness: {killed.folders_after}"


@pytest.mark.slow
def test_what_a_directly_started_handler_started_dies_with_a_killed_harness(
    tmp_path: Path,
) -> None:
    """``LOADTEST_ZYGOTE=0`` with ``HANDLER``: no zygote is there to end the pool worker, its
    resource tracker and the sleep in a session of its own; each environment's guard
    (``loadtest.emulation.environment.child_guard``) does, and removes the run's folder."""
    killed = _kill_mid_run(tmp_path, HANDLER, _handler_busy, {"LOADTEST_ZYGOTE": "0"})
    assert _count(killed.before, layer.ZYGOTE_MARKER) == 0, killed.before
    for kind, text in _HANDLER_KINDS.items():
        assert _count(killed.before, text), f"no {kind} among {killed.before}"
    assert not killed.survivors, f"outlived the killed harness: {killed.survivors}"
    assert len(killed.folders_before) == 1, killed.folders_before
    assert not killed.folders_after, f"outlived the killed harness: {killed.folders_after}"


@pytest.mark.slow
def test_producer_processes_die_with_a_killed_harness(tmp_path: Path) -> None:
    """``--producers 2`` mid-schedule: the producer processes (and multiprocessing's
    resource tracker) end with the harness, as do the environments and the backend."""
    sleeper = "import time\n\ndef handler(event, context):\n    time.sleep(120)\n"

    def busy(seen: dict[int, str]) -> bool:
        return _count(seen, "multiprocessing.spawn") >= 2 and _count(seen, layer.ZYGOTE_MARKER) >= 3

    killed = _kill_mid_run(
        tmp_path, sleeper, busy, {}, "--producers", "2", "--distinct-ids", "400", "--rate", "4"
    )
    assert _count(killed.before, "multiprocessing.resource_tracker") == 1, killed.before
    assert not killed.survivors, f"outlived the killed harness: {killed.survivors}"
    assert len(killed.folders_before) == 1, killed.folders_before
    assert not killed.folders_after, f"outlived the killed harness: {killed.folders_after}"

"""The guard of a directly started environment (``child_guard.start_guard``), on its own.

A small harness process starts one environment process the way ``parent_environments`` does
without a zygote (its child, a session of its own, ``LOADTEST_PARENT_PID`` and
``LOADTEST_OBSERVATIONS`` in a ``loadtest-envs-*`` folder); the environment arms its guards
(``die_with_parent``) and then starts what a handler might. Processes are found by a variable
unique to the test (``test_harness_death``'s approach).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import loadtest
from loadtest.emulation.environment.child_guard import RUN_FOLDER_PREFIX
from tests.integration.test_harness_death import GONE_WITHIN_S, TAG_ENV, _stat, _tagged, _wait_for

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux guard; reads /proc"),
    pytest.mark.process,
]

HARNESS = """
import os, subprocess, sys, time
environment = subprocess.Popen(
    [sys.executable, "-c", sys.argv[1]],
    env={**os.environ, "LOADTEST_PARENT_PID": str(os.getpid())},
    stdin=subprocess.PIPE,
    stdout=subprocess.PIPE,
    start_new_session=True,
)
print(environment.pid, flush=True)
environment.stdout.readline()  # the environment is set up
print("ready", flush=True)
print(environment.wait(), flush=True)
time.sleep(120)
"""

ENVIRONMENT = """
import os, signal, subprocess, sys, time
from loadtest.emulation.environment.child_guard import die_with_parent
die_with_parent()
what = {what!r}
if what == "exit":
    print("set up", flush=True)
    os._exit(7)
subprocess.Popen(["sleep", "120"], start_new_session=True)  # a session of its own
subprocess.Popen(["sleep", "121"])  # in the environment's group
print("set up", flush=True)
if what == "frozen":
    os.killpg(0, signal.SIGSTOP)  # as child_host's freeze: the environment and its group
time.sleep(120)
"""


def _start(tmp_path: Path, what: str) -> tuple[subprocess.Popen[str], int, Path, str]:
    """Start the harness and its environment; return them, the run's folder and the tag."""
    folder = tmp_path / f"{RUN_FOLDER_PREFIX}test"
    folder.mkdir()
    (folder / "env-0.log").write_text("")
    tag = uuid.uuid4().hex
    package_root = str(Path(loadtest.__file__).resolve().parent.parent)
    harness = subprocess.Popen(
        [sys.executable, "-c", HARNESS, ENVIRONMENT.format(what=what)],
        stdout=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            TAG_ENV: tag,
            "PYTHONPATH": package_root,
            "LOADTEST_OBSERVATIONS": str(folder / "env-0.observations"),
        },
    )
    assert harness.stdout is not None
    environment = int(harness.stdout.readline())
    assert harness.stdout.readline() == "ready\n"
    return harness, environment, folder, tag


def _end(harness: subprocess.Popen[str], tag: str) -> None:
    if harness.poll() is None:
        harness.kill()
        harness.wait()
    for pid in _tagged(tag):  # never leave this test's own processes behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if harness.stdout is not None:
        harness.stdout.close()


@pytest.mark.parametrize("what", ["running", "frozen"])
def test_a_killed_harness_leaves_nothing_of_its_environment(tmp_path: Path, what: str) -> None:
    harness, environment, folder, tag = _start(tmp_path, what)
    try:
        before = _wait_for(tag, lambda seen: len(seen) == 5, 10)
        # The harness, the environment, its guard (a group of its own) and the two sleeps.
        assert len(before) == 5, before
        groups = {pid: os.getpgid(pid) for pid in before}
        below = [
            pid for pid in before if (_stat(pid) or [b"", b"0"])[1] == str(environment).encode()
        ]
        assert len(below) == 3, before
        (guard,) = [
            pid for pid in below if groups[pid] == pid and not before[pid].startswith("sleep")
        ]
        if what == "frozen":
            # It stops itself just after its reply: on a busy machine, a moment later.
            stopping = time.monotonic() + GONE_WITHIN_S
            while (_stat(environment) or [b""])[0] != b"T" and time.monotonic() < stopping:
                time.sleep(0.02)
            assert (_stat(environment) or [b""])[0] == b"T", "the environment did not stop itself"
            assert (_stat(guard) or [b""])[0] != b"T", "the freeze stopped the guard"
        harness.kill()
        harness.wait()
        survivors = _wait_for(tag, lambda seen: not seen, GONE_WITHIN_S)
        deadline = time.monotonic() + GONE_WITHIN_S
        while folder.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        _end(harness, tag)
    assert not survivors, f"outlived the killed harness: {survivors}"
    assert not folder.exists(), "the run's folder outlived the killed harness"


def test_an_environment_that_ends_takes_its_guard_and_keeps_its_exit_code(tmp_path: Path) -> None:
    harness, _, folder, tag = _start(tmp_path, "exit")
    try:
        assert harness.stdout is not None
        assert harness.stdout.readline() == "7\n"  # waited for by its pid, as before
        left = _wait_for(tag, lambda seen: set(seen) == {harness.pid}, GONE_WITHIN_S)
    finally:
        _end(harness, tag)
    assert set(left) == {harness.pid}, f"outlived its environment: {left}"
    assert folder.exists(), "a guard removed the folder of a run still under way"

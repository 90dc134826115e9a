"""EmbeddedBackend starts a real child, and never leaves it running, whatever happens."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from loadtest.backend.embedded import EmbeddedBackend
from loadtest.backend.errors import BackendError
from tests.backend import aws_clients


def _running(pid: int) -> bool:
    """Alive and not a zombie."""
    stat = Path(f"/proc/{pid}/stat")
    if stat.parent.parent.exists():  # Linux: a reparented zombie still answers os.kill
        try:
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except FileNotFoundError:
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


class SpyPopen(subprocess.Popen[bytes]):
    """subprocess.Popen that remembers what it started."""

    started: ClassVar[list[SpyPopen]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        SpyPopen.started.append(self)


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[SpyPopen]:
    """The child processes EmbeddedBackend starts during the test."""
    SpyPopen.started = []
    monkeypatch.setattr(subprocess, "Popen", SpyPopen)
    return SpyPopen.started


def _fake_python(tmp_path: Path, script: str) -> str:
    """An executable that stands in for ``sys.executable`` in the child command."""
    path = tmp_path / "fake-python"
    path.write_text("#!/bin/sh\n" + textwrap.dedent(script))
    path.chmod(0o755)
    return str(path)


def test_starts_answers_and_stops_cleanly(spawned: list[SpyPopen]) -> None:
    with EmbeddedBackend() as backend:
        assert backend.endpoint_url.startswith("http://127.0.0.1:")
        assert aws_clients.sqs(backend.endpoint_url).list_queues().get("QueueUrls", []) == []
        assert aws_clients.dynamodb(backend.endpoint_url).list_tables()["TableNames"] == []
        (child,) = spawned
        assert backend.pid == child.pid and _running(child.pid)
    assert child.returncode == 0  # SIGTERM is a clean stop, and the child was reaped
    assert not _running(child.pid)
    assert backend.pid is None


@pytest.mark.parametrize("exception", [RuntimeError, KeyboardInterrupt])
def test_stops_the_child_when_the_body_raises(
    exception: type[BaseException], spawned: list[SpyPopen]
) -> None:
    with pytest.raises(exception), EmbeddedBackend():
        raise exception
    (child,) = spawned
    assert child.returncode is not None
    assert not _running(child.pid)


def test_child_dying_before_ready_is_a_backend_error_with_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawned: list[SpyPopen]
) -> None:
    monkeypatch.setattr(
        sys, "executable", _fake_python(tmp_path, "echo 'port in use' >&2\nexit 3\n")
    )
    with pytest.raises(BackendError, match=r"exited \(code 3\)(.|\n)*port in use"):
        EmbeddedBackend().__enter__()
    (child,) = spawned
    assert child.returncode == 3


def test_startup_timeout_kills_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spawned: list[SpyPopen]
) -> None:
    monkeypatch.setattr(sys, "executable", _fake_python(tmp_path, "exec sleep 60\n"))
    with pytest.raises(BackendError, match=r"did not report ready within 0\.5 s"):
        EmbeddedBackend(startup_timeout_s=0.5).__enter__()
    (child,) = spawned
    assert child.returncode == -signal.SIGTERM
    assert not _running(child.pid)


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL of the parent")
def test_child_stops_itself_when_its_parent_is_killed() -> None:
    parent_code = textwrap.dedent(
        """
        import sys, time
        from loadtest.backend.embedded import EmbeddedBackend
        with EmbeddedBackend() as backend:
            print(backend.pid, flush=True)
            time.sleep(120)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert parent.stdout is not None
        child_pid = int(parent.stdout.readline())
        assert _running(child_pid)
    finally:
        parent.kill()  # no __exit__, no cleanup: only the closed stdin pipe tells the child
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 30
    while _running(child_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _running(child_pid):  # don't leak it from the test run either
        os.kill(child_pid, signal.SIGKILL)
        pytest.fail("the embedded backend outlived its killed parent")

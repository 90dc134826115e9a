"""MiniStack, a local Lambda data plane, for the deploy and attach tests (moto's in-process
control plane, the ``aws`` fixture, is in tests/conftest.py: the observer's tests use it too)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def _ministack_binary() -> Path | None:
    """MiniStack in its own virtual environment (it pins its own botocore).

    ``LOADTEST_MINISTACK`` names the executable; ``nox -s tests`` installs one
    in ``.nox/ministack`` (with boto3, which the Lambda runtime provides).
    """
    named = os.environ.get("LOADTEST_MINISTACK")
    if named:
        return Path(named)
    local = Path(__file__).resolve().parents[2] / ".nox" / "ministack" / "bin" / "ministack"
    return local if local.exists() else None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def ministack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A MiniStack server on 127.0.0.1 (a real Lambda data plane: workers, layers, mappings),
    started for the session and stopped by its process id."""
    binary = _ministack_binary()
    if binary is None or not binary.exists():
        pytest.skip("MiniStack is not installed: `nox -s tests` sets it up in .nox/ministack")
    port = _free_port()
    log = tmp_path_factory.mktemp("ministack") / "ministack.log"
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHON", "VIRTUAL_ENV"))
    } | {"BIND_HOST": "127.0.0.1", "GATEWAY_PORT": str(port), "LOG_LEVEL": "WARNING"}
    with log.open("w") as sink:
        process = subprocess.Popen(
            [str(binary)], env=env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_ministack/health", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"MiniStack did not start: {log.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.3)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # its own session: the server and its workers
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

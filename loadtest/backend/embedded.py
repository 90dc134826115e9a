"""The embedded backend: moto's server, made atomic, run in a child process.

Owns ``EmbeddedBackend``,
which runs ``python -m loadtest.backend.embedded`` as a child for the length of a ``with``
block, and the child's entry point (``main``); the app is ``app``'s, serving it in the
foreground (``serve``, ``loadtest serve``) is ``server``'s, both re-exported here. Must not touch: boto3 clients, scenario settings, or any output but the child's
single ``READY <endpoint_url>`` line.

moto is imported only inside ``build_app``: a parent that merely starts the child does not
pay for importing it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

from loadtest.backend import versions
from loadtest.backend.errors import BackendError
from loadtest.backend.http.app import RequestCounter, SerialisedDynamoDB, build_app
from loadtest.backend.http.server import (
    READY_PREFIX,
    announce_ready,
    serve,
    stop_when_stdin_closes,
)

__all__ = [
    "READY_PREFIX",
    "EmbeddedBackend",
    "RequestCounter",
    "SerialisedDynamoDB",
    "build_app",
    "main",
    "serve",
]


_LOG_TAIL_BYTES = 4000


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m loadtest.backend.embedded``: serve and print ``READY <url>`` when ready."""
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.backend.embedded",
        description=(
            "Serve loadtest's embedded backend (moto, patched): SQS and DynamoDB, "
            "and SNS, EventBridge, S3 and Step Functions."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind")
    parser.add_argument("--port", type=int, default=5000, help="port to bind (0: pick a free one)")
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop when stdin is closed (how EmbeddedBackend avoids orphans)",
    )
    parser.add_argument(
        "--unpatched", action="store_true", help="serve moto as shipped (benchmarks only)"
    )
    parser.add_argument(
        "--close-connections",
        action="store_true",
        help="close every connection after its response, as werkzeug does (comparisons only)",
    )
    args = parser.parse_args(argv)

    def on_ready(endpoint_url: str) -> None:
        announce_ready(endpoint_url)
        if args.exit_with_parent:
            stop_when_stdin_closes()

    serve(
        args.host,
        args.port,
        on_ready=on_ready,
        patched=not args.unpatched,
        keep_alive=not args.close_connections,
    )
    return 0


class EmbeddedBackend:
    """The embedded backend in a child process, for the length of a ``with`` block.

    ``__enter__`` starts ``python -m loadtest.backend.embedded --port 0``; the child binds a
    free port itself and reports it (no port race), then one DynamoDB and one SQS request
    confirm it answers. ``__exit__`` stops it (SIGTERM, then SIGKILL after
    ``stop_timeout_s``) however the block ended, Ctrl-C included, and reaps it. The child
    runs in its own process group, so a Ctrl-C reaches only the parent, which stops it; it
    also stops itself if the parent dies (its stdin closes). Its stderr goes to a temporary
    file (unnamed on POSIX, so nothing is left behind) quoted in any ``BackendError``.
    """

    endpoint_url: str
    """``http://127.0.0.1:<port>``; empty until entered."""

    def __init__(
        self,
        *,
        patched: bool = True,
        keep_alive: bool = True,
        startup_timeout_s: float = 30.0,
        stop_timeout_s: float = 10.0,
    ) -> None:
        """``patched=False`` runs moto as shipped, ``keep_alive=False`` closes every
        connection after its response (both for benchmarks and comparisons only)."""
        self.patched = patched
        self.keep_alive = keep_alive
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.endpoint_url = ""
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None  # our own read handle on the child's stderr file
        self._log_path: Path | None = None  # set only while the file still has a name

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return None if self._process is None else self._process.pid

    def __enter__(self) -> Self:
        if self._process is not None:
            raise BackendError("this EmbeddedBackend is already running")
        try:
            self._start()
            self.endpoint_url = self._wait_until_ready()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop()

    def _start(self) -> None:
        if self.patched:
            # Refused here, in one line, rather than as the child's traceback.
            versions.check_versions()
        command = [
            sys.executable,
            "-m",
            "loadtest.backend.embedded",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--exit-with-parent",
        ]
        if not self.patched:
            command.append("--unpatched")
        if not self.keep_alive:
            command.append("--close-connections")
        fd, log_name = tempfile.mkstemp(prefix="loadtest-backend-", suffix=".log")
        self._log_path = Path(log_name)
        self._log = self._log_path.open("rb")  # own offset: reading never moves the child's
        with os.fdopen(fd, "wb") as log:  # the child keeps its own copy
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=_child_environment(),
                start_new_session=os.name == "posix",
                creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            )
        if os.name == "posix":
            # Nameless from now on: the file vanishes with the last open handle, even if
            # this process is killed before __exit__ could remove it.
            self._log_path.unlink()
            self._log_path = None

    def _wait_until_ready(self) -> str:
        process = self._process
        assert process is not None and process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout_s
        lines: queue.Queue[bytes] = queue.Queue()
        reader = threading.Thread(
            target=_read_until_ready, args=(process.stdout, lines), daemon=True
        )
        reader.start()
        while True:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise self._error(
                    f"did not report ready within {self.startup_timeout_s:g} s"
                ) from None
            if not line:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=1.0)  # for its exit code
                raise self._error(f"exited (code {process.returncode}) before it was ready")
            text = line.decode("utf-8", "replace").strip()
            if text.startswith(READY_PREFIX):
                break
        reader.join()
        process.stdout.close()
        endpoint_url = text.removeprefix(READY_PREFIX)
        try:
            _probe(endpoint_url, timeout_s=max(1.0, deadline - time.monotonic()))
        except (OSError, BackendError) as exc:
            raise self._error(f"does not answer at {endpoint_url}: {exc}") from exc
        return endpoint_url

    def _error(self, what: str) -> BackendError:
        return BackendError(f"embedded backend {what}; end of its log:\n{self._log_tail()}")

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        try:
            self._log.seek(max(0, self._log.seek(0, os.SEEK_END) - _LOG_TAIL_BYTES))
            return self._log.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _stop(self) -> None:
        process, self._process = self._process, None
        try:
            if process is not None:
                _terminate(process, self.stop_timeout_s)
        finally:
            if self._log is not None:
                self._log.close()
                self._log = None
            if self._log_path is not None:
                self._log_path.unlink(missing_ok=True)
                self._log_path = None


def _terminate(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM, wait, SIGKILL; always reap. A second Ctrl-C while waiting still kills it."""
    try:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    except BaseException:
        process.kill()
        process.wait()
        raise
    finally:
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


def _read_until_ready(stream: IO[bytes], lines: queue.Queue[bytes]) -> None:
    for line in iter(stream.readline, b""):
        lines.put(line)
        if line.startswith(READY_PREFIX.encode()):
            return
    lines.put(b"")  # EOF: the child is gone


def _child_environment() -> dict[str, str]:
    # The child must import this very package even when it is not installed.
    package_root = str(Path(__file__).resolve().parents[3])
    environment = dict(os.environ)
    paths = [package_root, *filter(None, environment.get("PYTHONPATH", "").split(os.pathsep))]
    environment["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return environment


def _probe(endpoint_url: str, *, timeout_s: float) -> None:
    """One DynamoDB and one SQS call (this also builds moto's per-service apps)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy
    for service, target in (
        ("dynamodb", "DynamoDB_20120810.ListTables"),
        ("sqs", "AmazonSQS.ListQueues"),
    ):
        request = urllib.request.Request(
            endpoint_url + "/",
            data=b"{}",
            method="POST",
            headers={
                "Content-Type": "application/x-amz-json-1.0",
                "X-Amz-Target": target,
                "Authorization": (
                    "AWS4-HMAC-SHA256 Credential=loadtest/20250101/us-east-1/"
                    f"{service}/aws4_request, SignedHeaders=host, Signature=0"
                ),
            },
        )
        try:
            with opener.open(request, timeout=timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise BackendError(f"{target} answered HTTP {exc.code}") from exc


if __name__ == "__main__":
    raise SystemExit(main())

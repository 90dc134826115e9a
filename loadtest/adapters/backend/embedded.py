"""The embedded backend: moto's server, made atomic, run in a child process.

Owns: the WSGI app loadtest serves (moto's ``DomainDispatcherApplication`` with the patches
of ``loadtest.adapters.backend.patches`` applied and DynamoDB serialised by ``SerialisedDynamoDB``),
``serve()`` which runs it in the foreground (``loadtest serve``), and ``EmbeddedBackend``,
which runs ``python -m loadtest.adapters.backend.embedded`` as a child for the length of a ``with``
block. Must not touch: boto3 clients, scenario settings, or any output but the child's
single ``READY <endpoint_url>`` line.

moto is imported only inside ``build_app``: a parent that merely starts the child does not
pay for importing it.
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import io
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, TYPE_CHECKING, Self

from loadtest.adapters.backend.errors import BackendError

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

__all__ = [
    "READY_PREFIX",
    "EmbeddedBackend",
    "RequestCounter",
    "SerialisedDynamoDB",
    "build_app",
    "main",
    "serve",
]

READY_PREFIX = "READY "
"""The child's one line on stdout, followed by its endpoint URL, once it accepts requests."""

_LOG_TAIL_BYTES = 4000


class SerialisedDynamoDB:
    """WSGI middleware: DynamoDB requests run one at a time; all others pass straight through.

    moto's DynamoDB is not atomic under a threaded server. A conditional write checks, then
    writes, in separate Python steps::

        PutItem A (attribute_not_exists(id))    PutItem B (same id, same condition)
        condition: no item -> passes
                                                condition: no item -> passes
        store A
                                                store B  -> two writers "won" the key

    A failing ``TransactWriteItems`` restores a copy of the tables taken before it ran::

        TransactWriteItems (will fail)          PutItem k9
        snapshot = deepcopy(tables)
                                                store k9
        a condition fails
        tables = snapshot                       -> k9 is silently gone

    and ``ReturnValues=ALL_OLD`` is read separately from the write it describes. One lock
    around every request whose ``X-Amz-Target`` starts with ``DynamoDB`` makes each call
    atomic, as DynamoDB is per item. SQS stays outside it: a 20 s long poll must not stall
    the table; its own races are fixed per queue in ``loadtest.adapters.backend.patches``. The request
    body is read and the response body built outside/inside the lock respectively, so a
    slow client never holds it while the socket is read or written.
    """

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if not str(environ.get("HTTP_X_AMZ_TARGET", "")).startswith("DynamoDB"):
            return self.app(environ, start_response)
        _buffer_request_body(environ)
        with self.lock:
            response = self.app(environ, start_response)
            try:
                body = b"".join(response)
            finally:
                close = getattr(response, "close", None)
                if close is not None:
                    close()
        return [body]


class RequestCounter:
    """WSGI middleware: counts requests served, by service; ``GET /_loadtest/stats`` reads them.

    The benchmark reports requests per second from these counts, measured where
    the requests are served rather than estimated by the clients.
    """

    STATS_PATH = "/_loadtest/stats"

    def __init__(self, app: WSGIApplication) -> None:
        self.app = app
        self.lock = threading.Lock()
        self.counts = {"requests": 0, "dynamodb": 0, "sqs": 0}

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") == self.STATS_PATH and environ.get("REQUEST_METHOD") == "GET":
            with self.lock:
                body = json.dumps(self.counts).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        target = str(environ.get("HTTP_X_AMZ_TARGET", ""))
        with self.lock:
            self.counts["requests"] += 1
            if target.startswith("DynamoDB"):
                self.counts["dynamodb"] += 1
            elif target.startswith("AmazonSQS") or "Action=" in str(
                environ.get("QUERY_STRING", "")
            ):
                self.counts["sqs"] += 1
        return self.app(environ, start_response)


def _buffer_request_body(environ: WSGIEnvironment) -> None:
    stream = environ["wsgi.input"]
    length = environ.get("CONTENT_LENGTH")
    if length:
        body = stream.read(int(length))
    elif environ.get("wsgi.input_terminated"):
        body = stream.read()
    else:
        return
    environ["wsgi.input"] = io.BytesIO(body)


def build_app(*, patched: bool = True) -> WSGIApplication:
    """moto's server app; with ``patched`` (the default) made safe for load tests.

    ``patched=False`` gives moto exactly as shipped, for benchmarks and comparisons only.
    Raises ``UnsupportedMotoVersion`` if the patches do not fit the installed moto.
    """
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    app = DomainDispatcherApplication(create_backend_app)
    if not patched:
        return app
    from loadtest.adapters.backend import patches
    from loadtest.adapters.backend.untracked import stop_tracking_instances

    patches.apply()
    stop_tracking_instances()
    return RequestCounter(SerialisedDynamoDB(app))


def _endpoint_url(host: str, port: int) -> str:
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def serve(
    host: str = "127.0.0.1",
    port: int = 5000,
    *,
    on_ready: Callable[[str], None] | None = None,
    patched: bool = True,
    keep_alive: bool = True,
) -> None:
    """Serve the backend in the foreground until Ctrl-C or SIGTERM, then return.

    ``port`` 0 picks a free port. ``on_ready`` is called with the endpoint URL (e.g.
    ``http://127.0.0.1:54321``) once the socket is listening. SIGTERM is handled like
    Ctrl-C when called from the main thread. ``patched=False`` serves moto as shipped
    (benchmarks only); ``keep_alive=False`` closes every connection after its response,
    as werkzeug does (for comparisons).
    """
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.serving import make_server

    class QuietRequestHandler(MotoRequestHandler):
        # One log line per request would cost a write per call and fill the log file;
        # errors are still logged.
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass

    class KeepAliveRequestHandler(QuietRequestHandler):
        """HTTP/1.1 keep-alive, which werkzeug's server turns off for every response.

        werkzeug sends ``Connection: close`` because ``http.server`` cannot skip a
        request body the application left unread, and after each response it reads
        whatever else the socket holds (which on a kept connection is the next request).
        Reading the body here, before the application runs, and showing werkzeug an
        empty stream until the response is sent leaves the connection at the next
        request line, so it can serve again: a connect per request (a thread and a
        socket on both sides) was a large share of the backend's CPU. A chunked body, an
        HTTP/1.0 client or a client's own ``Connection: close`` still close after the
        response.
        """

        # werkzeug writes the headers and the body separately; on a kept connection
        # Nagle's algorithm holds the body until the client's delayed ACK (~40 ms).
        disable_nagle_algorithm = True
        _drained = False

        def make_environ(self) -> WSGIEnvironment:
            environ = super().make_environ()
            self._drained = False
            length = environ.get("CONTENT_LENGTH")
            if environ.get("wsgi.input_terminated"):
                return environ  # chunked: werkzeug's own reader, then close
            body = self.rfile.read(int(length)) if length else b""
            environ["wsgi.input"] = io.BytesIO(body)
            self._connection_rfile = self.rfile
            self.rfile = io.BytesIO()
            self._drained = True
            return environ

        def run_wsgi(self) -> None:
            try:
                super().run_wsgi()
            finally:
                if self._drained:
                    self.rfile = self._connection_rfile

        def send_header(self, keyword: str, value: str) -> None:
            if (
                self._drained
                and not self.close_connection
                and keyword.lower() == "connection"
                and value.lower() == "close"
            ):
                return
            super().send_header(keyword, value)

    handler = KeepAliveRequestHandler if keep_alive else QuietRequestHandler
    server = make_server(
        host, port, build_app(patched=patched), threaded=True, request_handler=handler
    )
    restore_sigterm = _sigterm_raises_keyboard_interrupt()
    try:
        if on_ready is not None:
            on_ready(_endpoint_url(host, server.server_port))
        server.serve_forever()  # returns on KeyboardInterrupt (werkzeug catches it)
    except KeyboardInterrupt:
        pass  # arrived before serve_forever was entered
    finally:
        server.server_close()
        restore_sigterm()


def _sigterm_raises_keyboard_interrupt() -> Callable[[], None]:
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)

    def restore() -> None:
        signal.signal(signal.SIGTERM, previous)

    return restore


def _announce_ready(endpoint_url: str) -> None:
    sys.stdout.write(f"{READY_PREFIX}{endpoint_url}\n")
    sys.stdout.flush()
    # The parent stops reading stdout after this line; anything a library prints later
    # goes to stderr (the log file) so it can never fill the pipe and block the server.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())


def _stop_when_stdin_closes() -> None:
    """Stop serving once stdin reaches EOF: the parent closed it or died, even by SIGKILL."""
    stdin_fd = sys.stdin.fileno()

    def watch() -> None:
        # os.read, not sys.stdin: a daemon thread blocked inside the buffered reader holds
        # its lock, and the interpreter aborts (SIGABRT) when it finalises stdin at exit.
        while os.read(stdin_fd, 4096):
            pass
        _thread.interrupt_main(signal.SIGTERM)

    threading.Thread(target=watch, name="loadtest-parent-watch", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m loadtest.adapters.backend.embedded``: serve and print ``READY <url>`` when ready."""
    parser = argparse.ArgumentParser(
        prog="python -m loadtest.adapters.backend.embedded",
        description="Serve loadtest's embedded SQS + DynamoDB backend (moto, patched).",
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
        _announce_ready(endpoint_url)
        if args.exit_with_parent:
            _stop_when_stdin_closes()

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

    ``__enter__`` starts ``python -m loadtest.adapters.backend.embedded --port 0``; the child binds a
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
        command = [
            sys.executable,
            "-m",
            "loadtest.adapters.backend.embedded",
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

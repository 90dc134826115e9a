"""Serving the app in the foreground: werkzeug with HTTP/1.1 keep-alive, SIGTERM as
Ctrl-C, the ``READY <url>`` announcement and the stop-when-stdin-closes watch of the child.

Owns the serving loop and its process-level hooks; must not build the app's behaviour
(``app``) nor manage the child from the parent's side (``embedded``).
"""

from __future__ import annotations

import _thread
import email.utils
import io
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

from loadtest.adapters.backend.app import build_app

READY_PREFIX = "READY "
"""The child's one line on stdout, followed by its endpoint URL, once it accepts requests."""


_RESPONSE_BUFFER_BYTES = 64 * 1024
"""Response bytes gathered before a send; a larger response is sent as it is written."""

_last_http_date: tuple[int, str] = (-1, "")


def _http_date_now() -> str:
    """The current time as an HTTP Date header, formatted at most once per second."""
    global _last_http_date
    now_s = int(time.time())
    second, text = _last_http_date
    if second != now_s:
        text = email.utils.formatdate(now_s, usegmt=True)
        _last_http_date = (now_s, text)
    return text


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

        # Buffered: werkzeug writes the status line and headers, then the body, then
        # flushes; unbuffered, that was two sends (two packets) per response.
        wbufsize = _RESPONSE_BUFFER_BYTES

        def date_time_string(self, timestamp: float | None = None) -> str:
            # The Date header has a resolution of one second; formatting it per response
            # (email.utils.formatdate) was ~2% of the backend's CPU.
            if timestamp is not None:
                return super().date_time_string(timestamp)
            return _http_date_now()

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


def announce_ready(endpoint_url: str) -> None:
    sys.stdout.write(f"{READY_PREFIX}{endpoint_url}\n")
    sys.stdout.flush()
    # The parent stops reading stdout after this line; anything a library prints later
    # goes to stderr (the log file) so it can never fill the pipe and block the server.
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())


def stop_when_stdin_closes() -> None:
    """Stop serving once stdin reaches EOF: the parent closed it or died, even by SIGKILL."""
    stdin_fd = sys.stdin.fileno()

    def watch() -> None:
        # os.read, not sys.stdin: a daemon thread blocked inside the buffered reader holds
        # its lock, and the interpreter aborts (SIGABRT) when it finalises stdin at exit.
        while os.read(stdin_fd, 4096):
            pass
        _thread.interrupt_main(signal.SIGTERM)

    threading.Thread(target=watch, name="loadtest-parent-watch", daemon=True).start()

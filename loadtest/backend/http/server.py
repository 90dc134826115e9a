"""Serving the app in the foreground: werkzeug with HTTP/1.1 keep-alive, SIGTERM as
Ctrl-C, the ``READY <url>`` announcement and the stop-when-stdin-closes watch of the child.

Owns the serving loop and its process-level hooks; must not build the app's behaviour
(``app``) nor manage the child from the parent's side (``embedded``).
"""

from __future__ import annotations

import _thread
import contextlib
import email.utils
import io
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from http.client import HTTPMessage
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIApplication, WSGIEnvironment

from loadtest.backend.http.app import build_app
from loadtest.backend.http.request_head import PlainHead, read_plain_head
from loadtest.heap import frozen_heap

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


_ENVIRON_KEYS: dict[str, str] = {}
"""Header name -> its environ key, for the names seen (boto3 sends a dozen)."""

_ENVIRON_KEYS_KEPT = 256
"""Header names remembered; when full the memory starts over."""


def _environ_key(name: str) -> str:
    """The environ key werkzeug files header ``name`` under, remembered."""
    key = name.upper().replace("-", "_")
    if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
        key = f"HTTP_{key}"
    if len(_ENVIRON_KEYS) >= _ENVIRON_KEYS_KEPT:
        _ENVIRON_KEYS.clear()
    _ENVIRON_KEYS[name] = key
    return key


def _endpoint_url(host: str, port: int) -> str:
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (OSError when the address is taken or absent)."""
    from werkzeug.serving import select_address_family

    # The family werkzeug gives the descriptor it is handed (``make_server(fd=...)``).
    sock = socket.socket(select_address_family(host, port), socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


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
    from moto.core.request import PRESERVED_HEADER_NAMES_ENVIRON_KEY
    from moto.moto_server.werkzeug_app import MotoRequestHandler
    from werkzeug.exceptions import InternalServerError
    from werkzeug.http import parse_set_header
    from werkzeug.serving import connection_dropped_errors, make_server

    class QuietRequestHandler(MotoRequestHandler):
        # One log line per request would cost a write per call and fill the log file;
        # errors are still logged.
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass

        # Buffered: werkzeug writes the status line and headers, then the body, then
        # flushes; unbuffered, that was two sends (two packets) per response.
        wbufsize = _RESPONSE_BUFFER_BYTES

        def handle_expect_100(self) -> bool:
            # Sent now, not with the response: the client (aiohttp) holds the body until
            # it has read this, and the buffered ``wfile`` would keep it until then.
            answered = super().handle_expect_100()
            self.wfile.flush()
            return answered

        def date_time_string(self, timestamp: float | None = None) -> str:
            # The Date header has a resolution of one second; formatting it per response
            # (email.utils.formatdate) was ~2% of the backend's CPU.
            if timestamp is not None:
                return super().date_time_string(timestamp)
            return _http_date_now()

    class KeepAliveRequestHandler(QuietRequestHandler):
        """HTTP/1.1 keep-alive, which werkzeug's server turns off for every response.

        werkzeug sends ``Connection: close`` because ``http.server`` cannot skip a
        request body the application left unread, and after each response it drains
        whatever else the socket holds (which on a kept connection is the next request).
        Here the body is read before the application runs and the response is written by
        werkzeug's own steps (``send_response``, the headers, chunking, flushing, the
        same 500 on an error) without that drain, which leaves the connection at the next
        request line, so it can serve again: a connect per request (a thread and a socket
        on both sides) was a large share of the backend's CPU, and the drain's epoll
        selector (created, registered, polled, closed) another ~10% per request. A
        chunked body still takes werkzeug's own path and closes after the response, as
        do an HTTP/1.0 client and a client's own ``Connection: close``. A plain request
        head is read by ``http_head`` instead of ``email.parser``.
        """

        # werkzeug writes the headers and the body separately; on a kept connection
        # Nagle's algorithm holds the body until the client's delayed ACK (~40 ms).
        disable_nagle_algorithm = True
        _kept = False
        _status_sent = False
        _plain_fields: tuple[tuple[str, str], ...] | None = None
        _plain_head: PlainHead | None = None
        _standard_headers: HTTPMessage
        _environ_base: WSGIEnvironment | None = None

        @property  # type: ignore[override]
        def headers(self) -> HTTPMessage:
            """The request's header fields; a plain head's are made into an
            ``HTTPMessage`` only if something asks for them (werkzeug's own paths)."""
            head = self._plain_head
            return self._standard_headers if head is None else head.headers

        @headers.setter
        def headers(self, value: HTTPMessage) -> None:
            self._plain_head = None
            self._standard_headers = value

        def _header(self, name: str) -> str | None:
            """``self.headers.get(name)``, read from a plain head's fields directly."""
            head = self._plain_head
            return self.headers.get(name) if head is None else head.get(name)

        def parse_request(self) -> bool:
            """The standard ``parse_request``, read by ``http_head`` when the head is
            plain (with the same outcome), by the standard parser otherwise."""
            self._plain_fields = None
            self._plain_head = None
            peek = getattr(self.rfile, "peek", None)
            head = None if peek is None else read_plain_head(self.raw_requestline, peek())
            if head is None or self.protocol_version < "HTTP/1.1":
                return super().parse_request()
            self.rfile.read(head.length)
            self._plain_fields = head.fields
            self.requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
            self.command, self.path, self._plain_head = head.command, head.path, head
            self.request_version = "HTTP/1.1"
            self.close_connection = (head.get("Connection") or "").lower() == "close"
            if (head.get("Expect") or "").lower() == "100-continue":
                return self.handle_expect_100()
            return True

        def run_wsgi(self) -> None:
            # Most requests carry no Transfer-Encoding: parsing its absence was ~2% of a
            # conditional PutItem's CPU.
            transfer_encoding = self._header("Transfer-Encoding")
            if transfer_encoding is not None and "chunked" in parse_set_header(transfer_encoding):
                super().run_wsgi()  # werkzeug's reader for the body, then close
                return
            if (self._header("Expect") or "").lower().strip(" \t") == "100-continue":
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                self.wfile.flush()
            environ = self._plain_environ()
            self.environ = environ = self.make_environ() if environ is None else environ
            length = environ.get("CONTENT_LENGTH")
            environ["wsgi.input"] = io.BytesIO(self.rfile.read(int(length)) if length else b"")
            self._kept = True
            self._status_sent = False
            try:
                self._execute(self.server.app, environ)
            except connection_dropped_errors as exc:
                self.connection_dropped(exc, environ)
            except Exception as exc:
                if self.server.passthrough_errors:
                    raise
                if self._status_sent:
                    # Cut short after its head: what follows on this connection is unknown.
                    self.close_connection = True
                else:
                    with contextlib.suppress(Exception):
                        self._execute(InternalServerError(), environ)
                from werkzeug.debug.tbtools import DebugTraceback

                text = DebugTraceback(exc).render_traceback_text()
                self.server.log("error", f"Error on request:\n{text}")
            finally:
                self._kept = False

        def _plain_environ(self) -> WSGIEnvironment | None:
            """What ``make_environ`` (werkzeug's, then moto's) makes of a plain request
            to ``/`` over plain TCP, built from the fields ``read_plain_head`` read, in the same
            order; None for any other request (``make_environ`` builds it).

            werkzeug splits and unquotes the path, and moto walks the headers twice more to
            keep the spelling of underscored S3 metadata names: ~8% of the backend's CPU
            for a request to ``/`` whose header names hold no underscore, where all of it
            comes to the constants below and an empty ``moto.preserved_header_names``.
            """
            fields = self._plain_fields
            server = self.server
            if (
                fields is None
                or self.path != "/"
                or server.ssl_context is not None
                or any("_" in name for name, _ in fields)
            ):
                return None
            base = self._environ_base
            if base is None:
                base = self._environ_base = self._plain_environ_base()
            environ: WSGIEnvironment = base.copy()
            environ["REQUEST_METHOD"] = self.command
            for name, value in fields:
                try:
                    key = _ENVIRON_KEYS[name]
                except KeyError:
                    key = _environ_key(name)
                if key in environ and key.startswith("HTTP_"):
                    value = f"{environ[key]},{value}"
                environ[key] = value
            environ[PRESERVED_HEADER_NAMES_ENVIRON_KEY] = {}
            return environ

        def _plain_environ_base(self) -> WSGIEnvironment:
            """The part of a plain request's environ that is the same for every request
            on this connection, in ``make_environ``'s order (copied per request: building
            it afresh was ~2% of a conditional ``PutItem``'s CPU)."""
            server = self.server
            return {
                "wsgi.version": (1, 0),
                "wsgi.url_scheme": "http",
                "wsgi.input": self.rfile,
                "wsgi.errors": sys.stderr,
                "wsgi.multithread": server.multithread,
                "wsgi.multiprocess": server.multiprocess,
                "wsgi.run_once": False,
                "werkzeug.socket": self.connection,
                "SERVER_SOFTWARE": self.server_version,
                "REQUEST_METHOD": self.command,
                "SCRIPT_NAME": "",
                "PATH_INFO": "/",
                "QUERY_STRING": "",
                "REQUEST_URI": "/",
                "RAW_URI": "/",
                "REMOTE_ADDR": self.address_string(),
                "REMOTE_PORT": self.port_integer(),
                "SERVER_NAME": server.server_address[0],
                "SERVER_PORT": str(server.server_address[1]),
                "SERVER_PROTOCOL": "HTTP/1.1",
            }

        def _execute(self, app: WSGIApplication, environ: WSGIEnvironment) -> None:
            """werkzeug's ``run_wsgi`` ``execute``, without the drain after the response."""
            status_set: str | None = None
            headers_set: list[tuple[str, str]] | None = None
            chunked = False

            def write(data: bytes) -> None:
                nonlocal chunked
                assert status_set is not None, "write() before start_response"
                assert headers_set is not None, "write() before start_response"
                if not self._status_sent:
                    self._status_sent = True
                    chunked = self._send_head(status_set, headers_set, environ)
                assert isinstance(data, bytes), "applications must write bytes"
                if data:
                    if chunked:
                        self.wfile.write(hex(len(data))[2:].encode())
                        self.wfile.write(b"\r\n")
                    self.wfile.write(data)
                    if chunked:
                        self.wfile.write(b"\r\n")
                self.wfile.flush()

            def start_response(
                status: str, headers: list[tuple[str, str]], exc_info: Any = None
            ) -> Callable[[bytes], None]:
                nonlocal status_set, headers_set
                if exc_info:
                    try:
                        if self._status_sent:
                            raise exc_info[1].with_traceback(exc_info[2])
                    finally:
                        exc_info = None
                elif headers_set:
                    raise AssertionError("Headers already set")
                status_set = status
                headers_set = headers
                return write

            response = app(environ, start_response)
            try:
                for data in response:
                    write(data)
                if not self._status_sent:
                    write(b"")
                if chunked:
                    self.wfile.write(b"0\r\n\r\n")
            finally:
                close = getattr(response, "close", None)
                if close is not None:
                    close()

        def _send_head(
            self, status: str, headers: list[tuple[str, str]], environ: WSGIEnvironment
        ) -> bool:
            """The status line and headers, as werkzeug writes them; True if the body
            is to be chunked."""
            try:
                code_text, message = status.split(None, 1)
            except ValueError:
                code_text, message = status, ""
            code = int(code_text)
            header_keys = {key.lower() for key, _ in headers}
            if "connection" in header_keys or self.request_version == "HTTP/0.9":
                self.send_response(code, message)
                for key, value in headers:
                    self.send_header(key, value)
            else:
                # What ``send_response`` and ``send_header`` add to the head buffer,
                # formatted in one go (a call per header was ~3% of the backend's CPU):
                # no header here can change ``close_connection``.
                self._headers_buffer = [
                    *getattr(self, "_headers_buffer", ()),
                    (
                        "%s %d %s\r\n%s"  # noqa: UP031 - the format http.server writes
                        % (
                            self.protocol_version,
                            code,
                            message,
                            "".join(
                                "%s: %s\r\n" % pair  # noqa: UP031
                                for pair in (
                                    ("Server", self.version_string()),
                                    ("Date", self.date_time_string()),
                                    *headers,
                                )
                            ),
                        )
                    ).encode("latin-1", "strict"),
                ]
            chunked = (
                not (
                    "content-length" in header_keys
                    or environ["REQUEST_METHOD"] == "HEAD"
                    or (100 <= code < 200)
                    or code in {204, 304}
                )
                and self.protocol_version >= "HTTP/1.1"
            )
            if chunked:
                self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")  # dropped below unless the client asked
            self.end_headers()
            return chunked

        def send_header(self, keyword: str, value: str) -> None:
            if (
                self._kept
                and not self.close_connection
                and keyword.lower() == "connection"
                and value.lower() == "close"
            ):
                return
            super().send_header(keyword, value)

    handler = KeepAliveRequestHandler if keep_alive else QuietRequestHandler
    # The socket is bound here, not by werkzeug, which prints its own advice and exits the
    # process when the address is taken: here that is an OSError the caller words.
    listening = _listen(host, port)
    try:
        server = make_server(
            host,
            port,
            build_app(patched=patched),
            threaded=True,
            request_handler=handler,
            fd=listening.fileno(),
        )
    finally:
        listening.close()  # make_server holds its own duplicate of the descriptor
    restore_sigterm = _sigterm_raises_keyboard_interrupt()
    try:
        if on_ready is not None:
            on_ready(_endpoint_url(host, server.socket.getsockname()[1]))
        # moto and the app live as long as the server: its full collections walk only
        # what the requests made (the stored items and messages among them).
        with frozen_heap():
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

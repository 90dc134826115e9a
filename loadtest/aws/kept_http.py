"""One kept-alive HTTP/1.1 connection to loadtest's own backend, spoken by hand.

Owns ``KeptConnection``: a plain TCP socket (no TLS), each request written whole (its head
and body in one send), each answer read by its status line, its header lines and a
``Content-Length`` or chunked body, an interim ``100 Continue`` skipped. The same bytes
travel as with ``http.client`` or urllib3; what is saved is the client's own work (the
``email.parser`` read of every answer's head, urllib3's pool and response objects, a
request head and body sent apart): about 40% of a boto3 call's CPU on the embedded backend.

Used only where loadtest talks to its own backend and the client's CPU is never what is
measured: ``explore``'s reads of each schedule's items (``loadtest.aws.item_reads``) and,
in ``explore``, whose time is virtual, the handler's requests
(``loadtest.emulation.explore.wire``). A load run's handler keeps botocore's own HTTP
client, exactly as on Lambda. Raises ``OSError`` (a ``ConnectionError`` when the connection
broke, ``ConnectFailed`` when none could be made, ``TimeoutError`` when the answer took
longer than the timeout); mapping those to a caller's errors is the caller's.
"""

from __future__ import annotations

import select
import socket
from dataclasses import dataclass

_NO_BODY_STATUSES = frozenset({204, 304})
_HEAD_LINE_MAX = 65536


class ConnectionBroken(ConnectionError):
    """The connection ended, or carried something other than an HTTP/1.1 answer, mid-exchange."""


class ConnectFailed(ConnectionError):
    """No connection could be made (its cause: refused, unresolved, timed out)."""


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: its status, its headers (in the order sent; a repeated name's values
    joined by ", ", as urllib3 does) and its whole body."""

    status: int
    headers: dict[str, str]
    body: bytes


class KeptConnection:
    """A kept-alive connection to ``host:port``, opened on first use and after the server
    closed it; one exchange at a time (its caller holds it meanwhile)."""

    def __init__(
        self, host: str, port: int, *, connect_timeout_s: float | None, read_timeout_s: float | None
    ) -> None:
        self.host = host
        self.port = port
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self._sock: socket.socket | None = None
        self._buffer = b""
        """Bytes read past the last answer's end (none, between exchanges)."""

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None
        self._buffer = b""

    def _open(self) -> socket.socket:
        """The socket, anew when there is none or the server has closed the kept one (it
        reads as ready with nothing pending: urllib3's check before it reuses a connection)."""
        sock = self._sock
        if sock is not None and (self._buffer or select.select([sock], [], [], 0)[0]):
            self.close()
            sock = None
        if sock is None:
            try:
                sock = socket.create_connection(
                    (self.host, self.port), timeout=self.connect_timeout_s
                )
            except OSError as exc:
                raise ConnectFailed(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sock = sock
            self._buffer = b""
        sock.settimeout(self.read_timeout_s)
        return sock

    def exchange(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> Answer:
        """Send one request (``headers`` as given, plus ``Host`` and ``Content-Length`` when
        absent) and read its answer. On any error the connection is closed first."""
        sock = self._open()
        names = {name.lower() for name, _ in headers}
        lines = [f"{method} {target} HTTP/1.1\r\n"]
        if "host" not in names:
            port = "" if self.port == 80 else f":{self.port}"
            lines.append(f"Host: {self.host}{port}\r\n")
        lines.extend(f"{name}: {value}\r\n" for name, value in headers)
        if "content-length" not in names and (body or method not in ("GET", "HEAD")):
            lines.append(f"Content-Length: {len(body)}\r\n")
        lines.append("\r\n")
        try:
            sock.sendall("".join(lines).encode("latin-1") + body)
            answer, keep = self._answer(method)
        except BaseException:
            self.close()
            raise
        if not keep:
            self.close()
        return answer

    # --- reading -----------------------------------------------------------------------

    def _fill(self) -> None:
        assert self._sock is not None
        data = self._sock.recv(65536)
        if not data:
            raise ConnectionBroken("the server closed the connection before its answer ended")
        self._buffer += data

    def _line(self) -> bytes:
        while True:
            end = self._buffer.find(b"\r\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
                return line
            if len(self._buffer) > _HEAD_LINE_MAX:
                raise ConnectionBroken("an answer's head line is longer than 64 KiB")
            self._fill()

    def _take(self, count: int) -> bytes:
        while len(self._buffer) < count:
            self._fill()
        data, self._buffer = self._buffer[:count], self._buffer[count:]
        return data

    def _head(self) -> tuple[int, str, dict[str, str]]:
        status_line = self._line()
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise ConnectionBroken(f"not an HTTP answer: {status_line[:80]!r}")
        headers: dict[str, str] = {}
        while line := self._line():
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip(), value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        return int(parts[1]), parts[0].decode("ascii"), headers

    def _answer(self, method: str) -> tuple[Answer, bool]:
        status, version, headers = self._head()
        while status == 100:  # an interim answer to "Expect: 100-continue"
            status, version, headers = self._head()
        lower = {name.lower(): value for name, value in headers.items()}
        connection = lower.get("connection", "").lower()
        keep = version == "HTTP/1.1" and connection != "close"
        if method == "HEAD" or status in _NO_BODY_STATUSES or 100 <= status < 200:
            return Answer(status, headers, b""), keep
        if "chunked" in lower.get("transfer-encoding", "").lower():
            return Answer(status, headers, self._chunked()), keep
        length = lower.get("content-length")
        if length is not None and length.strip().isdigit():
            return Answer(status, headers, self._take(int(length))), keep
        # No length: the body runs to the end of the connection.
        chunks = [self._buffer]
        self._buffer = b""
        assert self._sock is not None
        while data := self._sock.recv(65536):
            chunks.append(data)
        return Answer(status, headers, b"".join(chunks)), False

    def _chunked(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            size_text = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise ConnectionBroken(f"a bad chunk size: {size_text[:20]!r}") from None
            if size == 0:
                while self._line():  # trailers, up to the blank line
                    pass
                return b"".join(chunks)
            chunks.append(self._take(size))
            self._take(2)

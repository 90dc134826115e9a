"""Kept-alive HTTP/1.1 connections to loadtest's own backend, spoken by hand.

Owns the framing (``request_bytes``: a request written whole, its head and body in one
send; ``AnswerReader``: an answer read by its status line, its header lines and a
``Content-Length`` or chunked body, an interim ``100 Continue`` skipped) and the two
connections built on it: ``KeptConnection`` (a blocking socket) and
``AsyncKeptConnection`` (an anyio stream). Plain TCP, no TLS. The same bytes travel as
with ``http.client``, urllib3 or aiohttp; what is saved is the client's own work (the
``email.parser`` read of every answer's head, the pool and response objects, a request
head and body sent apart): about 40% of a boto3 call's CPU on the embedded backend.

Used only where loadtest talks to its own backend: its reads of explored items
(``loadtest.aws.item_reads``), its own SQS calls (``loadtest.aws.hand_sqs``) and, in
``explore``, whose time is virtual, the handler's requests
(``loadtest.emulation.explore.wire``). A load run's handler keeps botocore's own HTTP
client, exactly as on Lambda. Raises ``OSError``: ``ConnectionBroken`` when the connection
ended or carried no HTTP answer mid-exchange, ``ConnectFailed`` when none could be made,
``TimeoutError`` when the answer took longer than the read timeout; mapping those to a
caller's errors is the caller's.
"""

from __future__ import annotations

import select
import socket
from dataclasses import dataclass

import anyio
import anyio.abc

_NO_BODY_STATUSES = frozenset({204, 304})
_HEAD_MAX_BYTES = 65536
_READ_BYTES = 65536


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


def request_bytes(
    method: str, target: str, host: str, headers: list[tuple[str, str]], body: bytes
) -> bytes:
    """A request as it goes on the wire: ``headers`` as given, plus ``Host`` and
    ``Content-Length`` when they are absent."""
    names = {name.lower() for name, _ in headers}
    lines = [f"{method} {target} HTTP/1.1\r\n"]
    if "host" not in names:
        lines.append(f"Host: {host}\r\n")
    lines.extend(f"{name}: {value}\r\n" for name, value in headers)
    if "content-length" not in names and (body or method not in ("GET", "HEAD")):
        lines.append(f"Content-Length: {len(body)}\r\n")
    lines.append("\r\n")
    return "".join(lines).encode("latin-1") + body


class AnswerReader:
    """One answer, read from the bytes fed to it as they arrive (no I/O of its own).

    ``feed`` the bytes received until ``answer`` is set; ``ended`` when the connection ends
    first (only an answer without a length may end that way). ``keep`` says whether the
    connection may carry another exchange; ``rest`` holds bytes past the answer's end.
    """

    def __init__(self, method: str) -> None:
        self._method = method
        self._buffer = b""
        self._status = 0
        self._version = ""
        self._headers: dict[str, str] = {}
        self._length: int | None = None
        """The body's length: known from the head, or None (chunked, or to the end)."""
        self._chunked = False
        self._chunks: list[bytes] = []
        self.answer: Answer | None = None
        self.keep = False
        self.rest = b""

    def feed(self, data: bytes) -> None:
        self._buffer += data
        while self.answer is None and self._step():
            pass

    def ended(self) -> None:
        """The connection ended: the answer runs to here if it has no length, else it was cut."""
        if self.answer is None and self._status and not self._chunked and self._length is None:
            self._done(self._buffer, keep=False)
            return
        if self.answer is None:
            raise ConnectionBroken("the server closed the connection before its answer ended")

    def _step(self) -> bool:
        """Take what the buffer holds as far as it goes; whether to try again."""
        if not self._status:
            return self._head()
        if self._chunked:
            return self._chunk()
        if self._length is not None and len(self._buffer) >= self._length:
            body, self.rest = self._buffer[: self._length], self._buffer[self._length :]
            self._done(body, keep=self.keep)
        return False

    def _head(self) -> bool:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > _HEAD_MAX_BYTES:
                raise ConnectionBroken("an answer's head is longer than 64 KiB")
            return False
        head, self._buffer = self._buffer[:end], self._buffer[end + 4 :]
        status_line, *lines = head.split(b"\r\n")
        parts = status_line.split(None, 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
            raise ConnectionBroken(f"not an HTTP answer: {status_line[:80]!r}")
        status = int(parts[1])
        if status == 100:  # an interim answer to "Expect: 100-continue"
            return True
        headers: dict[str, str] = {}
        lower: dict[str, str] = {}
        for line in lines:
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip(), value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
            lower[name.lower()] = headers[name]
        self._status, self._version, self._headers = status, parts[0].decode("ascii"), headers
        self.keep = self._version == "HTTP/1.1" and lower.get("connection", "").lower() != "close"
        if self._method == "HEAD" or status in _NO_BODY_STATUSES or 100 <= status < 200:
            self._length = 0
        elif "chunked" in lower.get("transfer-encoding", "").lower():
            self._chunked = True
        elif lower.get("content-length", "").strip().isdigit():
            self._length = int(lower["content-length"])
        else:
            self.keep = False  # the body runs to the end of the connection
        return True

    def _chunk(self) -> bool:
        end = self._buffer.find(b"\r\n")
        if end < 0:
            return False
        size_text = self._buffer[:end].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ConnectionBroken(f"a bad chunk size: {size_text[:20]!r}") from None
        if size == 0:
            trailers_end = self._buffer.find(b"\r\n\r\n", end)  # after trailers, if any
            if trailers_end < 0:
                return False
            self.rest = self._buffer[trailers_end + 4 :]
            self._done(b"".join(self._chunks), keep=self.keep)
            return False
        start = end + 2
        if len(self._buffer) < start + size + 2:
            return False
        self._chunks.append(self._buffer[start : start + size])
        self._buffer = self._buffer[start + size + 2 :]
        return True

    def _done(self, body: bytes, *, keep: bool) -> None:
        self.keep = keep
        self.answer = Answer(self._status, self._headers, body)


class KeptConnection:
    """A kept-alive connection to ``host:port`` on a blocking socket, opened on first use and
    after the server closed it; one exchange at a time (its caller holds it meanwhile)."""

    def __init__(
        self, host: str, port: int, *, connect_timeout_s: float | None, read_timeout_s: float | None
    ) -> None:
        self.host = host
        self.port = port
        self.connect_timeout_s = connect_timeout_s
        self.read_timeout_s = read_timeout_s
        self._sock: socket.socket | None = None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
        self._sock = None

    def _open(self) -> socket.socket:
        """The socket, anew when there is none or the server has closed the kept one."""
        sock = self._sock
        if sock is not None and _readable(sock):
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
        sock.settimeout(self.read_timeout_s)
        return sock

    def exchange(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> Answer:
        """Send one request and read its answer. On any error the connection is closed."""
        sock = self._open()
        reader = AnswerReader(method)
        try:
            sock.sendall(
                request_bytes(method, target, host_header(self.host, self.port), headers, body)
            )
            while reader.answer is None:
                data = sock.recv(_READ_BYTES)
                if not data:
                    reader.ended()
                    break
                reader.feed(data)
        except BaseException:
            self.close()
            raise
        if not reader.keep or reader.rest:
            self.close()
        assert reader.answer is not None
        return reader.answer


class AsyncKeptConnection:
    """A kept-alive connection to ``host:port`` on an anyio stream; one exchange at a time.
    Cancelled mid-exchange, it closes (what the connection carries next is unknown)."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self._stream: anyio.abc.SocketStream | None = None
        self._socket: socket.socket | None = None
        """The stream's socket, looked up once per connection: ``stream.extra`` builds
        every attribute of the stream (its peer's address asked of the kernel) per call."""

    async def aclose(self) -> None:
        stream, self._stream, self._socket = self._stream, None, None
        if stream is not None:
            with anyio.CancelScope(shield=True):
                await stream.aclose()

    async def exchange(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes
    ) -> Answer:
        """Send one request and read its answer. On any error, cancellation included, the
        connection is closed."""
        stream = self._stream
        if stream is not None and self._socket is not None and _readable(self._socket):
            await self.aclose()  # the server closed the kept connection meanwhile
            stream = None
        if stream is None:
            try:
                stream = await anyio.connect_tcp(self.host, self.port)
            except OSError as exc:
                raise ConnectFailed(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
            self._stream = stream
            self._socket = stream.extra(anyio.abc.SocketAttribute.raw_socket)
        reader = AnswerReader(method)
        try:
            await stream.send(
                request_bytes(method, target, host_header(self.host, self.port), headers, body)
            )
            while reader.answer is None:
                try:
                    data = await stream.receive(_READ_BYTES)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    reader.ended()
                    break
                reader.feed(data)
        except BaseException:
            await self.aclose()
            raise
        if not reader.keep or reader.rest:
            await self.aclose()
        assert reader.answer is not None
        return reader.answer


def _readable(sock: socket.socket) -> bool:
    """Whether a kept connection has something to read while nothing was asked: the
    server closed it (urllib3's check before it reuses a connection)."""
    return bool(select.select([sock], [], [], 0)[0])


def host_header(host: str, port: int) -> str:
    """The ``Host`` header of ``host:port`` (an IPv6 address in brackets)."""
    named = f"[{host}]" if ":" in host else host
    return named if port == 80 else f"{named}:{port}"

"""A kept-alive HTTP/1.1 connection spoken by hand: every answer's framing, and a closed one."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import anyio
import pytest

from loadtest.aws.kept_http import (
    Answer,
    AnswerReader,
    AsyncKeptConnection,
    ConnectFailed,
    ConnectionBroken,
    KeptConnection,
    host_header,
    request_bytes,
)

Script = Callable[[socket.socket, int], bool]
"""What the server does with its ``n``th request on a connection (the request head has
been read); returns whether to keep the connection open."""


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        rest += conn.recv(65536)
    return head + b"\r\n\r\n" + rest


@pytest.fixture
def scripted() -> Iterator[Callable[[Script], tuple[int, list[bytes], list[int]]]]:
    """Starts one-thread servers, each answering each request by a script; gives the
    server's port, the requests it read and how many connections it accepted (one number
    per connection)."""
    listeners: list[socket.socket] = []

    def start(script: Script) -> tuple[int, list[bytes], list[int]]:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listeners.append(listener)
        requests: list[bytes] = []
        connections: list[int] = []

        def serve() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                connections.append(len(connections) + 1)
                with conn:
                    n = 0
                    while request := _read_request(conn):
                        requests.append(request)
                        n += 1
                        if not script(conn, n):
                            break

        threading.Thread(target=serve, daemon=True).start()
        return listener.getsockname()[1], requests, connections

    yield start
    for listener in listeners:
        listener.close()


def _connection(port: int) -> KeptConnection:
    return KeptConnection("127.0.0.1", port, connect_timeout_s=5, read_timeout_s=5)


def test_a_content_length_answer_and_the_connection_kept_for_the_next(
    scripted: Callable[[Script], tuple[int, list[bytes], list[int]]],
) -> None:
    def script(conn: socket.socket, n: int) -> bool:
        body = f"answer {n}".encode()
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nX-Amz-Crc32: 1\r\nx-multi: a\r\nx-multi: b\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        return True

    port, requests, connections = scripted(script)
    connection = _connection(port)
    first = connection.exchange("POST", "/", [("X-Amz-Target", "T.Op")], b'{"a":1}')
    second = connection.exchange("POST", "/path?q=1", [], b"")
    connection.close()
    assert (first.status, first.body, second.body) == (200, b"answer 1", b"answer 2")
    assert first.headers["X-Amz-Crc32"] == "1"
    assert first.headers["x-multi"] == "a, b"
    assert connections == [1]
    assert requests[0] == (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Amz-Target: T.Op\r\n"
        b'Content-Length: 7\r\n\r\n{"a":1}' % port
    )
    assert requests[1].startswith(b"POST /path?q=1 HTTP/1.1\r\n")
    assert b"Content-Length: 0\r\n" in requests[1]


def test_chunked_interim_and_bodiless_answers(
    scripted: Callable[[Script], tuple[int, list[bytes], list[int]]],
) -> None:
    def script(conn: socket.socket, n: int) -> bool:
        if n == 1:
            conn.sendall(
                b"HTTP/1.1 100 Continue\r\n\r\n"
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n"
            )
        elif n == 2:
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n")  # HEAD: no body
        else:
            conn.sendall(b"HTTP/1.1 204 No Content\r\n\r\n")
        return True

    port, _, connections = scripted(script)
    connection = _connection(port)
    assert connection.exchange("PUT", "/b/k", [("Expect", "100-continue")], b"x").body == (
        b"hello world"
    )
    head = connection.exchange("HEAD", "/b/k", [], b"")
    assert (head.status, head.headers["Content-Length"], head.body) == (200, "11", b"")
    assert connection.exchange("DELETE", "/b/k", [], b"").status == 204
    connection.close()
    assert connections == [1]


def test_a_connection_the_server_closed_is_opened_anew(
    scripted: Callable[[Script], tuple[int, list[bytes], list[int]]],
) -> None:
    def script(conn: socket.socket, n: int) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        return False

    port, _, connections = scripted(script)
    connection = _connection(port)
    for _ in range(3):
        assert connection.exchange("GET", "/", [], b"").body == b"ok"
    assert connections == [1, 2, 3]

    def keeps_then_closes(conn: socket.socket, n: int) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        return False  # closes after answering, without saying so

    port, _, connections = scripted(keeps_then_closes)
    connection = _connection(port)
    assert connection.exchange("GET", "/", [], b"").body == b"ok"
    threading.Event().wait(0.2)  # the server's close has arrived
    assert connection.exchange("GET", "/", [], b"").body == b"ok"
    connection.close()
    assert connections == [1, 2]


def test_an_answer_cut_short_or_no_server_is_an_error_and_never_a_short_body(
    scripted: Callable[[Script], tuple[int, list[bytes], list[int]]],
) -> None:
    def script(conn: socket.socket, n: int) -> bool:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort")
        return False

    port, _, _ = scripted(script)
    with pytest.raises(ConnectionBroken, match="closed the connection"):
        _connection(port).exchange("GET", "/", [], b"")

    def garbage(conn: socket.socket, n: int) -> bool:
        conn.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
        return False

    port, _, _ = scripted(garbage)
    with pytest.raises(ConnectionBroken, match="not an HTTP answer"):
        _connection(port).exchange("GET", "/", [], b"")

    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    closed_port = free.getsockname()[1]
    free.close()
    with pytest.raises(ConnectFailed, match=f"127.0.0.1:{closed_port}"):
        _connection(closed_port).exchange("GET", "/", [], b"")


def test_no_answer_within_the_read_timeout_is_a_timeout(
    scripted: Callable[[Script], tuple[int, list[bytes], list[int]]],
) -> None:
    answered = threading.Event()

    def silent(conn: socket.socket, n: int) -> bool:
        answered.wait(5)
        return False

    port, _, _ = scripted(silent)
    connection = KeptConnection("127.0.0.1", port, connect_timeout_s=5, read_timeout_s=0.2)
    try:
        with pytest.raises(TimeoutError):
            connection.exchange("GET", "/", [], b"")
    finally:
        answered.set()


ANSWERS = (
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\nT: 1\r\n\r\n",
    b"HTTP/1.1 204 No Content\r\n\r\n",
)


@pytest.mark.parametrize("wire", ANSWERS)
def test_an_answer_read_a_byte_at_a_time_is_the_answer_read_whole(wire: bytes) -> None:
    whole = AnswerReader("GET")
    whole.feed(wire + b"NEXT")
    pieces = AnswerReader("GET")
    unanswered = []
    for i in range(len(wire)):
        unanswered.append(pieces.answer is None)
        pieces.feed(wire[i : i + 1])
    assert all(unanswered)  # no answer before its last byte
    assert pieces.answer == whole.answer is not None
    assert (pieces.keep, whole.keep, whole.rest) == (True, True, b"NEXT")


def test_an_answer_without_a_length_runs_to_the_end_and_is_not_kept() -> None:
    reader = AnswerReader("GET")
    reader.feed(b"HTTP/1.0 200 OK\r\n\r\nall of ")
    reader.feed(b"it")
    before_the_end = reader.answer
    reader.ended()
    assert before_the_end is None
    assert reader.answer == Answer(200, {}, b"all of it")
    assert not reader.keep


def test_the_async_connection_keeps_reopens_and_closes_when_cancelled(
    scripted: Callable[[Script], tuple[int, list[bytes], list[int]]],
) -> None:
    given_up = threading.Event()

    def script(conn: socket.socket, n: int) -> bool:
        if n == 3:
            given_up.wait(5)  # no answer: the client gives up (cancelled) before one comes
            return False
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n" + str(n).encode())
        return True

    port, requests, connections = scripted(script)

    async def main() -> list[bytes]:
        connection = AsyncKeptConnection("127.0.0.1", port)
        bodies = [(await connection.exchange("GET", "/", [], b"")).body for _ in range(2)]
        with anyio.move_on_after(0.2):
            await connection.exchange("GET", "/", [], b"")
        given_up.set()
        bodies.append((await connection.exchange("GET", "/", [], b"")).body)
        await connection.aclose()
        return bodies

    assert anyio.run(main, backend="asyncio") == [b"1", b"2", b"1"]
    assert connections == [1, 2]
    assert len(requests) == 4


def test_the_host_header_names_an_ipv6_address_in_brackets() -> None:
    assert request_bytes("GET", "/", host_header("::1", 5000), [], b"").startswith(
        b"GET / HTTP/1.1\r\nHost: [::1]:5000\r\n"
    )
    assert b"Host: 127.0.0.1\r\n" in request_bytes(
        "GET", "/", host_header("127.0.0.1", 80), [], b""
    )

"""On the wire, a kept connection answers as werkzeug's own server does, request after
request: the same status line, headers (bar ``Connection: close``) and body; and the
unusual requests (100-continue, a chunked body, a client's ``Connection: close``,
HTTP/1.0, a malformed request line) are answered as werkzeug answers them."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from loadtest.backend.embedded import EmbeddedBackend

_AUTH = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/dynamodb/aws4_request, "
    "SignedHeaders=host, Signature=x"
)
_BODY = b'{"Limit": 5}'


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, str]]:
    """(kept-connection server, werkzeug's close-every-connection server)."""
    with EmbeddedBackend() as kept, EmbeddedBackend(keep_alive=False) as closing:
        yield kept.endpoint_url, closing.endpoint_url


def _request(
    *, body: bytes = _BODY, version: str = "HTTP/1.1", extra: str = "", chunked: bool = False
) -> bytes:
    head = (
        f"POST / {version}\r\nHost: localhost\r\nX-Amz-Target: DynamoDB_20120810.ListTables\r\n"
        f"Content-Type: application/x-amz-json-1.0\r\nAuthorization: {_AUTH}\r\n{extra}"
    )
    if chunked:
        framed = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:4], body[4:]))
        chunked_head = head + "Transfer-Encoding: chunked\r\n\r\n"
        return chunked_head.encode("latin-1") + framed + b"0\r\n\r\n"
    return (head + f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1") + body


def _read_response(sock: socket.socket) -> bytes:
    """One response off ``sock``, interim ``100 Continue`` heads included: the heads,
    then a Content-Length body (what there is, at EOF)."""
    data = b""
    while not data.endswith(b"\r\n\r\n") or data.rsplit(b"\r\n\r\n", 2)[-2].startswith(
        b"HTTP/1.1 100 "
    ):
        chunk = sock.recv(1)
        if not chunk:
            return data
        data += chunk
    match = re.search(rb"\r\nContent-Length: (\d+)\r\n", data, re.IGNORECASE)
    length = int(match.group(1)) if match else 0
    body_at = len(data)
    while len(data) - body_at < length:
        data += sock.recv(length)
    return data


def _exchange(url: str, requests: list[bytes]) -> tuple[list[bytes], bool]:
    """Send each request on one connection, reading its answer first; the answers and
    whether the server closed the connection after the last."""
    host, port = urlsplit(url).hostname, urlsplit(url).port
    with socket.create_connection((host, port), timeout=10) as sock:
        answers = []
        for request in requests:
            sock.sendall(request)
            answers.append(_read_response(sock))
        sock.settimeout(0.5)
        try:
            closed = sock.recv(1) == b""
        except TimeoutError:
            closed = False
    return answers, closed


def _masked(answer: bytes) -> bytes:
    answer = re.sub(rb"\r\nDate: [^\r]*", b"\r\nDate: -", answer)
    return re.sub(rb"\r\nx-amzn-requestid: [^\r]*", b"\r\nx-amzn-requestid: -", answer, flags=re.I)


def test_many_requests_on_one_connection_answer_as_werkzeug(servers: tuple[str, str]) -> None:
    kept, closing = servers
    answers, closed = _exchange(kept, [_request()] * 50)
    [expected], _ = _exchange(closing, [_request()])
    assert not closed
    assert expected.count(b"\r\nConnection: close\r\n") == 1
    for answer in answers:
        assert _masked(answer) == _masked(expected).replace(b"\r\nConnection: close", b"")


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param("X-Odd: a\r\n folded\r\n", id="obs-fold"),
        pytest.param("X-Dup: 1\r\nX-Dup: 2\r\n", id="repeated"),
        pytest.param("X-Odd: caf\xe9\r\n", id="non-ascii"),
        pytest.param("Connection: keep-alive\r\n", id="keep-alive"),
    ],
)
def test_odd_headers_answer_as_werkzeug_and_keep_the_connection(
    servers: tuple[str, str], extra: str
) -> None:
    kept, closing = servers
    odd = _request(extra=extra)
    answers, closed = _exchange(kept, [odd, odd])
    [expected], _ = _exchange(closing, [odd])
    assert not closed
    for answer in answers:
        assert _masked(answer) == _masked(expected).replace(b"\r\nConnection: close", b"")


@pytest.mark.parametrize(
    "request_bytes",
    [
        pytest.param(_request(extra="Connection: close\r\n"), id="client-closes"),
        pytest.param(_request(version="HTTP/1.0"), id="http-1.0"),
        pytest.param(_request(chunked=True), id="chunked-body"),
        pytest.param(b"POST /\x00 HTTP/1.1 extra\r\n\r\n", id="malformed-request-line"),
    ],
)
def test_unusual_requests_answer_and_close_as_werkzeug(
    servers: tuple[str, str], request_bytes: bytes
) -> None:
    kept, closing = servers
    [answer], closed = _exchange(kept, [request_bytes])
    [expected], _ = _exchange(closing, [request_bytes])
    assert closed
    assert _masked(answer) == _masked(expected)


def test_expect_100_continue_is_answered_then_the_connection_kept(
    servers: tuple[str, str],
) -> None:
    kept, closing = servers
    expecting = _request(extra="Expect: 100-continue\r\n")
    answers, closed = _exchange(kept, [expecting, _request()])
    [expected], _ = _exchange(closing, [expecting])
    assert not closed
    assert expected.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
    assert _masked(answers[0]) == _masked(expected).replace(b"\r\nConnection: close", b"")
    assert answers[1].startswith(b"HTTP/1.1 200 OK\r\n")


def test_expect_100_continue_is_sent_before_the_body_arrives(servers: tuple[str, str]) -> None:
    # A client that waits for it before sending the body (aiohttp: aioboto3's S3 puts)
    # must get it while the server still waits for that body.
    kept, _ = servers
    request = _request(extra="Expect: 100-continue\r\n")
    head, body = request.split(b"\r\n\r\n", 1)
    host, port = urlsplit(kept).hostname, urlsplit(kept).port
    with socket.create_connection((host, port), timeout=5) as sock:
        sock.sendall(head + b"\r\n\r\n")
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):
            interim += sock.recv(1)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body)
        assert b"HTTP/1.1 200 OK\r\n" in _read_response(sock)

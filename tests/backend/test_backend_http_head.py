"""The plain-head reader reads what the standard parser reads, or leaves the head alone."""

from __future__ import annotations

import http.client
import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadtest.backend.http.request_head import MAX_PLAIN_HEADERS, read_plain_head

_REQUEST_LINE = b"POST / HTTP/1.1\r\n"
_BOTO_HEAD = (
    b"Host: 127.0.0.1:5000\r\nAccept-Encoding: identity\r\n"
    b"X-Amz-Target: DynamoDB_20120810.PutItem\r\nContent-Type: application/x-amz-json-1.0\r\n"
    b"User-Agent: Boto3/1.40.61 md/Botocore#1.40.61 ua/2.1 os/linux#6.8.0\r\n"
    b"X-Amz-Date: 20250101T000000Z\r\nAuthorization: AWS4-HMAC-SHA256 Credential=a/b, "
    b"SignedHeaders=host, Signature=0\r\namz-sdk-invocation-id: 1\r\namz-sdk-request: attempt=1\r\n"
    b"Content-Length: 2\r\n\r\n{}"
)

_lines = st.one_of(
    st.tuples(
        st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=8),
        st.text(st.characters(min_codepoint=9, max_codepoint=127), max_size=12),
    ).map(lambda nv: f"{nv[0]}:{nv[1]}\r\n".encode("latin-1")),
    st.sampled_from([b" folded\r\n", b"\tfolded\r\n", b"Bare: lf\n", b"Cr: in\rside\r\n"]),
    st.binary(max_size=12).map(lambda b: b + b"\r\n"),
)


def _standard(block: bytes) -> tuple[http.client.HTTPMessage, int]:
    stream = io.BytesIO(block)
    return http.client.parse_headers(stream), stream.tell()


@given(st.lists(_lines, max_size=8), st.binary(max_size=8))
def test_a_head_read_here_is_the_standard_parser_s(lines: list[bytes], body: bytes) -> None:
    block = b"".join(lines) + b"\r\n" + body
    head = read_plain_head(_REQUEST_LINE, block)
    if head is None:
        return
    headers, length = _standard(block)
    assert vars(head.headers) == vars(headers)
    assert head.length == length
    assert (head.command, head.path) == ("POST", "/")


def test_boto3_s_head_is_plain() -> None:
    head = read_plain_head(_REQUEST_LINE, _BOTO_HEAD)
    assert head is not None
    headers, length = _standard(_BOTO_HEAD)
    assert vars(head.headers) == vars(headers)
    assert head.length == length
    assert _BOTO_HEAD[head.length :] == b"{}"


@pytest.mark.parametrize(
    ("request_line", "block"),
    [
        (b"POST //x HTTP/1.1\r\n", b"\r\n"),  # the standard parser rewrites the path
        (b"POST / HTTP/1.0\r\n", b"\r\n"),
        (b"post / HTTP/1.1\r\n", b"\r\n"),
        (b"POST / HTTP/1.1\n", b"\r\n"),
        (b"POST /\xe9 HTTP/1.1\r\n", b"\r\n"),
        (b"POST / HTTP/1.1 x\r\n", b"\r\n"),
        (_REQUEST_LINE, b"A: b\r\n folded\r\n\r\n"),
        (_REQUEST_LINE, b"A: b\n\r\n"),
        (_REQUEST_LINE, b"A: \xe9\r\n\r\n"),
        (_REQUEST_LINE, b"A: b\x00\r\n\r\n"),
        (_REQUEST_LINE, b"No colon\r\n\r\n"),
        (_REQUEST_LINE, b"A: b\r\n"),  # the head goes on past the buffer
        (_REQUEST_LINE, b"A: b\r\n" * (MAX_PLAIN_HEADERS + 1) + b"\r\n"),
    ],
)
def test_anything_unusual_is_left_to_the_standard_parser(request_line: bytes, block: bytes) -> None:
    assert read_plain_head(request_line, block) is None

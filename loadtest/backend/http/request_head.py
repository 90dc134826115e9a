"""A strict, fast reader for plain HTTP/1.1 request heads, for the backend's handler.

Owns ``read_plain_head``: the request line and header block of a request whose head is
already in the connection's read buffer and contains nothing unusual, read into what
``http.server.BaseHTTPRequestHandler.parse_request`` would have made of it (command,
path, an ``http.client.HTTPMessage`` of the headers). Must not decide anything for any
other request: it answers None, consumes nothing, and the standard parser takes over.

Why: the standard parser hands the header lines to ``email.parser`` (a feed parser built
per request, line splitting, a policy object per header), ~5% of the backend's CPU per
request for the eight or so ASCII headers boto3 sends.

Plain means: ``METHOD /path HTTP/1.1`` (method in capitals, path of visible ASCII, not
starting ``//``), then at most ``MAX_PLAIN_HEADERS`` lines ``Name: value`` (name of
visible ASCII but ``:``, value of visible ASCII, spaces and tabs), each ending CRLF, then
an empty line, all within the buffered bytes. Anything else - a continuation line
(obs-fold), a bare LF or CR, a non-ASCII byte, a control character, another version,
a head longer than the buffer - takes the standard path, with its errors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from http.client import HTTPMessage

MAX_PLAIN_HEADERS = 64
"""Header lines read here at most (the standard parser refuses more than 100)."""

_REQUEST_LINE = re.compile(rb"([A-Z]+) (/(?!/)[!-~]*) HTTP/1\.1\r\n")
_HEAD = re.compile(rb"((?:[!-9;-~]+:[\t -~]*\r\n){0,%d})\r\n" % MAX_PLAIN_HEADERS)
_HEADER = re.compile(rb"([!-9;-~]+):[ \t]*([\t -~]*)\r\n")


@dataclass(frozen=True)
class PlainHead:
    """A plain request head, as the standard parser would have read it."""

    command: str
    """The method (``POST``)."""
    path: str
    """The request target as sent (``/``)."""
    fields: tuple[tuple[str, str], ...]
    """The header fields as (name, value) pairs, in order, duplicates kept, as
    ``headers.items()`` gives them."""
    length: int
    """Bytes of the header block after the request line, the empty line included."""

    @cached_property
    def headers(self) -> HTTPMessage:
        """The fields as the standard parser's ``HTTPMessage``, made when first asked for
        (a request served by the plain path never asks: ~2% of its CPU)."""
        headers = HTTPMessage()
        for name, value in self.fields:
            headers[name] = value
        headers.set_payload("")  # what the feed parser leaves after the empty line
        return headers

    def get(self, name: str, default: str | None = None) -> str | None:
        """The first field named ``name`` (any case), as ``headers.get`` answers it."""
        name = name.lower()
        for field, value in self.fields:
            if field.lower() == name:
                return value
        return default


def read_plain_head(request_line: bytes, buffered: bytes) -> PlainHead | None:
    """``request_line`` (with its CRLF) and the header bytes that follow it in the read
    buffer, if both are plain; else None."""
    line = _REQUEST_LINE.fullmatch(request_line)
    if line is None:
        return None
    block = _HEAD.match(buffered)
    if block is None:
        return None
    fields = tuple(
        (name.decode("ascii"), value.decode("ascii"))
        for name, value in _HEADER.findall(block.group(1))
    )
    return PlainHead(
        command=line.group(1).decode("ascii"),
        path=line.group(2).decode("ascii"),
        fields=fields,
        length=block.end(),
    )

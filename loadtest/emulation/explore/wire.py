"""The handler's HTTP in ``explore``: botocore's requests to loadtest's own backend, on kept
connections spoken by hand.

While installed for an endpoint (``installed``), a synchronous botocore client's request
to that endpoint goes out on a ``loadtest.aws.kept_http.KeptConnection`` instead of through
urllib3: the same request (method, path, botocore's headers and body) to the same server,
and the same answer handed back to botocore (status, headers, body), which parses it as it
parses urllib3's. Time is virtual in ``explore`` and a call's CPU is never measured, so
only the rate at which schedules run changes: a call costs the handler's thread about 40%
less CPU, and the backend a little less (a request arrives in one segment).

Left to their own HTTP client: requests to any other endpoint, a body botocore streams
(``Transfer-Encoding: chunked``, a file object of no stated length), and aiobotocore's
clients. A load run
never installs this: its handler's calls are as costly as on Lambda.

Errors are botocore's, as urllib3's would be: no connection ``EndpointConnectionError`` (or
``ConnectTimeoutError``), an answer cut short ``ConnectionClosedError``, no answer within
the client's read timeout ``ReadTimeoutError``.

Owns the patch of ``URLLib3Session.send`` and the idle connections (dropped in a forked
child: they are the parent's sockets).
"""

from __future__ import annotations

import io
import os
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import (
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from botocore.httpsession import URLLib3Session

from loadtest.aws.kept_http import ConnectFailed, KeptConnection

_original_send = URLLib3Session.send
_lock = threading.Lock()
_endpoints: dict[tuple[str, int], int] = {}
"""The endpoints installed (host, port), each with how many installations hold it."""
_idle: dict[tuple[str, int, float | None, float | None], list[KeptConnection]] = {}
"""Idle connections by endpoint and timeouts."""


class _Body(io.BytesIO):
    """An answer's body as botocore reads urllib3's: whole (``read``), in chunks
    (``stream``), or wrapped in a ``StreamingBody``."""

    def stream(self, amt: int = 2**16, decode_content: bool | None = None) -> Iterator[bytes]:
        while chunk := self.read(amt):
            yield chunk


def _timeouts(session: Any) -> tuple[float | None, float | None]:
    timeout = getattr(session, "_timeout", None)
    if isinstance(timeout, tuple) and len(timeout) == 2:
        return timeout[0], timeout[1]
    if isinstance(timeout, int | float):
        return float(timeout), float(timeout)
    return None, None


def _plain_body(request: Any) -> bytes | None:
    """The request's body as bytes, or None when botocore streams it (chunked). A file
    object of a stated length (S3's bodies) is read whole, as urllib3 reads it."""
    if request.headers.get("Transfer-Encoding"):
        return None
    body = request.body
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, bytes | bytearray):
        return bytes(body)
    if hasattr(body, "read") and request.headers.get("Content-Length") is not None:
        data = body.read()
        return data.encode("utf-8") if isinstance(data, str) else bytes(data)
    return None


def _send(session: URLLib3Session, request: Any) -> AWSResponse:
    url = urllib.parse.urlsplit(request.url)
    endpoint = (url.hostname or "", url.port or 80)
    body = _plain_body(request) if url.scheme == "http" and endpoint in _endpoints else None
    if body is None:
        return _original_send(session, request)
    connect_s, read_s = _timeouts(session)
    key = (*endpoint, connect_s, read_s)
    with _lock:
        pool = _idle.get(key)
        connection = pool.pop() if pool else None
    if connection is None:
        connection = KeptConnection(*endpoint, connect_timeout_s=connect_s, read_timeout_s=read_s)
    headers = [
        (str(name), value.decode("latin-1") if isinstance(value, bytes) else str(value))
        for name, value in request.headers.items()
    ]
    target = url.path or "/"
    if url.query:
        target += "?" + url.query
    try:
        answer = connection.exchange(request.method, target, headers, body)
    except ConnectFailed as exc:
        if isinstance(exc.__cause__, TimeoutError):
            raise ConnectTimeoutError(endpoint_url=request.url, error=exc) from exc
        raise EndpointConnectionError(endpoint_url=request.url, error=exc) from exc
    except TimeoutError as exc:
        raise ReadTimeoutError(endpoint_url=request.url, error=exc) from exc
    except OSError as exc:
        raise ConnectionClosedError(error=exc, request=request, endpoint_url=request.url) from exc
    with _lock:
        _idle.setdefault(key, []).append(connection)
    # AWSResponse takes any mapping of headers (it keeps them in a case-blind dict).
    answered: Any = answer.headers
    return AWSResponse(request.url, answer.status, answered, _Body(answer.body))


def _forget_idle() -> None:
    """In a forked child: the idle connections are the parent's sockets, not to be shared."""
    _idle.clear()


os.register_at_fork(after_in_child=_forget_idle)


@contextmanager
def installed(endpoint_url: str) -> Iterator[None]:
    """Send botocore's requests to ``endpoint_url`` (loadtest's own backend, plain HTTP) on
    kept connections for the block."""
    url = urllib.parse.urlsplit(endpoint_url)
    endpoint = (url.hostname or "", url.port or 80)
    with _lock:
        _endpoints[endpoint] = _endpoints.get(endpoint, 0) + 1
        setattr(URLLib3Session, "send", _send)  # noqa: B010 (a method, replaced)
    try:
        yield
    finally:
        with _lock:
            _endpoints[endpoint] -= 1
            if not _endpoints[endpoint]:
                del _endpoints[endpoint]
                for key in [k for k in _idle if k[:2] == endpoint]:
                    for connection in _idle.pop(key):
                        connection.close()
            if not _endpoints:
                setattr(URLLib3Session, "send", _original_send)  # noqa: B010

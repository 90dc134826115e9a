"""The WSGI app the embedded backend serves: moto's ``DomainDispatcherApplication`` with
the patches of ``loadtest.backend.patches`` applied, moto's instance tracking
off (``untracked``), JSON-protocol DynamoDB and SQS requests taken the short way to moto's
response classes (``fastpath``), DynamoDB serialised by ``SerialisedDynamoDB``, items read
back in one request under the same lock (``loadtest.backend.dynamodb.item_reads``,
``/_loadtest/items``) and every request counted by ``RequestCounter`` (``/_loadtest/stats``). Every other service moto ships (SNS,
EventBridge, S3, Step Functions among them) takes moto's full path, its app built by the
dispatcher on the service's first request; SNS's FIFO deduplication and signing
(``loadtest.backend.sns.fifo``, ``.signing``) are installed just before SNS's app is built,
Lambda without
Docker (``loadtest.backend.awslambda.capture``) just before Lambda's.

Owns the app and its two wrappers; must not bind sockets or start processes (``server``
and ``embedded`` do). moto is imported only inside ``build_app``.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment


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
    the table; its own races are fixed per queue in ``loadtest.backend.patches``. The request
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


def _with_service_patches(create: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """moto's ``create_backend_app``, installing a service's patches just before its app is
    built (SNS: ``loadtest.backend.sns.fifo`` and ``.signing``, Lambda:
    ``loadtest.backend.awslambda.capture``):
    a service never requested is never imported."""

    def create_backend_app(service: Any) -> Any:
        if service == "sns":
            from loadtest.backend.sns import fifo, signing

            fifo.install()
            signing.install()
        elif service == "awslambda":
            from loadtest.backend.awslambda import capture

            capture.install()
        return create(service)

    return create_backend_app


def build_app(*, patched: bool = True) -> WSGIApplication:
    """moto's server app; with ``patched`` (the default) made safe for load tests.

    ``patched=False`` gives moto exactly as shipped, for benchmarks and comparisons only.
    Raises ``UnsupportedVersion`` (``UnsupportedMotoVersion`` for moto) if a patched
    library is not at a version the patches were written for, before importing them.
    """
    if patched:
        from loadtest.backend.versions import check_versions

        check_versions()
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    if not patched:
        return DomainDispatcherApplication(create_backend_app)
    app = DomainDispatcherApplication(_with_service_patches(create_backend_app))
    from loadtest.backend import patches
    from loadtest.backend.core.untracked import stop_tracking_instances
    from loadtest.backend.dynamodb.item_reads import ItemReads
    from loadtest.backend.http.fastpath import JsonProtocolFastPath

    patches.apply()
    stop_tracking_instances()
    serialised = SerialisedDynamoDB(JsonProtocolFastPath(app))
    return RequestCounter(ItemReads(serialised, serialised.lock))

"""The short way through moto's server for the calls a consumer makes per message.

Owns ``JsonProtocolFastPath``, the WSGI middleware in front of moto's
``DomainDispatcherApplication``. Must not touch what any request answers (status,
headers, body) nor what moto does with it: it only skips the layers between the socket
and moto's response class that cost CPU without deciding anything for these requests.

Why: a conditional ``PutItem`` served by moto's app passed, before moto's own
``BaseResponse.dispatch``, through the dispatcher (service lookup under its global lock),
a Flask request context, Flask's URL routing, CORS and Flask's response finalisation:
about a fifth of the backend's CPU per request, the same for every DynamoDB and SQS call,
and most of what an SNS ``Publish`` costs the backend.

What it does: a signed ``POST /`` without an ``Origin`` header that is either JSON
(``application/x-amz-json-1.0``/``1.1``) with an ``X-Amz-Target`` of DynamoDB, SQS,
EventBridge or Step Functions (``TARGET_PREFIXES``), signed for that service, or a
query-protocol form (``application/x-www-form-urlencoded``) signed for SNS
(``QUERY_SERVICES``), is handed to the view moto's own routing chose for the same
service, region and path (looked up once through the dispatcher and the Flask app, then
kept), exactly as moto's ``convert_to_flask_response`` calls it: the same normalised
request, the recorder, the same ``(request, raw_url, headers)`` arguments, the
status, headers and body a Flask ``Response`` built from the result sends
(``plain_answer`` writes them for a plain answer, Flask builds any other), and the ``Access-Control-Allow-Origin: *`` that
flask-cors adds to a response to a request without ``Origin`` (unless moto's global CORS is
off). A werkzeug ``HTTPException`` becomes its own response, as Flask makes it; anything
else propagates to the server as it does through Flask (moto's app runs in debug mode).
Everything else - query-protocol SQS, S3's REST calls, unsigned requests, other services,
other paths, browser requests, ``/moto-api`` and the backend's own endpoints - takes the
full path.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError
from flask import Flask
from flask import Response as FlaskResponse
from moto import settings
from moto.core.request import PRESERVED_HEADER_NAMES_ENVIRON_KEY, EnvironHeaders, Request
from moto.core.utils import convert_to_flask_response
from moto.moto_api import recorder
from moto.moto_server.werkzeug_app import DomainDispatcherApplication
from werkzeug.datastructures.headers import _str_header_value
from werkzeug.exceptions import BadRequestKeyError, HTTPException
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.utils import get_content_type

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

TARGET_PREFIXES = {
    "DynamoDB_20120810.": "dynamodb",
    "AmazonSQS.": "sqs",
    "AWSEvents.": "events",
    "AWSStepFunctions.": "states",
}
"""``X-Amz-Target`` prefixes served by the fast path -> the signing service they need."""

JSON_CONTENT_TYPES = frozenset({"application/x-amz-json-1.0", "application/x-amz-json-1.1"})
"""Request content types of the JSON protocol (boto3's DynamoDB, SQS, EventBridge and Step
Functions clients)."""

QUERY_CONTENT_TYPE = "application/x-www-form-urlencoded"
"""The query protocol's content type (botocore adds ``; charset=utf-8``)."""

QUERY_SERVICES = frozenset({"sns"})
"""Signing services whose query-protocol requests take the fast path (boto3's SNS client)."""

_ALLOW_ORIGIN = "Access-Control-Allow-Origin"
_DEFAULT_CONTENT_TYPE = get_content_type(FlaskResponse.default_mimetype or "", "utf-8")

RAW_URL_ENVIRON_KEYS = (
    "wsgi.url_scheme",
    "HTTP_HOST",
    "SERVER_NAME",
    "SERVER_PORT",
    "SCRIPT_NAME",
    "RAW_URI",
    "PATH_INFO",
    "QUERY_STRING",
)
"""Everything moto's ``Request.raw_url`` reads from the environ (scheme, host, root path,
path, query): the same values give the same URL."""

RAW_URLS_KEPT = 256
"""Distinct request URLs remembered; when full the memory starts over (a run uses one)."""

_View = Callable[[Request, str, dict[str, str]], Any]


HEADER_KEYS_KEPT = 256
"""Distinct header names whose environ key is remembered; when full the memory starts over."""

_environ_keys: dict[str, str] = {}
"""Header name as moto asks for it -> the environ key werkzeug reads it from."""


class KeptKeyHeaders(EnvironHeaders):
    """moto's ``EnvironHeaders``, each name's environ key remembered.

    moto asks a DynamoDB or SQS call's headers for about seventeen names (``Host``,
    ``Authorization``, ``X-Amz-Target``, ``Content-Encoding``, ...); werkzeug upper-cases
    and rewrites each name into its environ key at every lookup. The key is the same
    string, worked out once.
    """

    def _get_key(self, key: str) -> str:
        try:
            name = _environ_keys[key]
        except (KeyError, TypeError):
            if not isinstance(key, str):
                raise BadRequestKeyError(key) from None
            upper = key.upper().replace("-", "_")
            name = upper if upper in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{upper}"
            if len(_environ_keys) >= HEADER_KEYS_KEPT:
                _environ_keys.clear()
            _environ_keys[key] = name
        return self.environ[name]  # type: ignore[no-any-return]


class ServerRequest(Request):
    """moto's request as its server hands it over (what ``BackendRequest`` is without Flask)."""

    from_wsgi_server = True

    def __init__(self, environ: WSGIEnvironment, *args: Any, **kwargs: Any) -> None:
        super().__init__(environ, *args, **kwargs)
        self.headers = KeptKeyHeaders(self.environ)


class JsonProtocolFastPath:
    """WSGI middleware: a consumer's per-message requests go straight to moto's view."""

    def __init__(self, app: DomainDispatcherApplication) -> None:
        self.app = app
        self._views: dict[tuple[str, str, str], _View | None] = {}
        self._raw_urls: dict[tuple[object, ...], str] = {}
        self._lock = threading.Lock()

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        view = self._view_for(environ)
        if view is None:
            return self.app(environ, start_response)  # type: ignore[no-any-return]
        return _serve(view, environ, start_response, self._raw_urls)

    def _view_for(self, environ: WSGIEnvironment) -> _View | None:
        """moto's view for this request, or None if it must take the full path."""
        if (
            environ.get("REQUEST_METHOD") != "POST"
            or environ.get("PATH_INFO") != "/"
            or environ.get("QUERY_STRING")
            or "HTTP_ORIGIN" in environ
        ):
            return None
        scope = _credential_scope(environ.get("HTTP_AUTHORIZATION"))
        if scope is None:
            return None
        content_type = environ.get("CONTENT_TYPE") or ""
        target = environ.get("HTTP_X_AMZ_TARGET")
        if target:
            prefix = target[: target.find(".") + 1]
            if content_type not in JSON_CONTENT_TYPES or TARGET_PREFIXES.get(prefix) != scope[1]:
                return None
        elif scope[1] in QUERY_SERVICES and content_type.partition(";")[0] == QUERY_CONTENT_TYPE:
            prefix = QUERY_CONTENT_TYPE  # the view depends on the protocol, region and service
        else:
            return None
        key = (prefix, *scope)
        try:
            return self._views[key]
        except KeyError:
            pass
        with self._lock:
            view = self._views[key] = self._resolve(environ)
        return view

    def _resolve(self, environ: WSGIEnvironment) -> _View | None:
        """The view moto's dispatcher and Flask routing pick for this request, if it is
        the plain ``convert_to_flask_response`` wrapper of a response class's dispatch."""
        flask_app: Flask = self.app.get_application(dict(environ))
        adapter = flask_app.url_map.bind_to_environ(dict(environ))
        try:
            endpoint, arguments = adapter.match(method="POST")
        except HTTPException:
            return None
        wrapper = flask_app.view_functions.get(str(endpoint))
        if arguments or not isinstance(wrapper, convert_to_flask_response):
            return None
        view: _View = wrapper.callback
        return view


def _credential_scope(authorization: str | None) -> tuple[str, str] | None:
    """(region, service) of a SigV4 ``Authorization`` header, read as moto's dispatcher
    reads it; None if it is absent or does not parse."""
    if not authorization:
        return None
    try:
        credential_scope = authorization.split(",")[0].split()[1]
        _, _, region, service, _ = credential_scope.split("/")
    except (IndexError, ValueError):
        return None
    return region, service.lower()


_CONTENT_KEYS = ("CONTENT_TYPE", "CONTENT_LENGTH")
_header_keys: dict[str, tuple[str, str] | None] = {}
"""Environ key -> (the header name ``EnvironHeaders`` reports for it, the environ key its
lookup by that name reads), or None for a key that is no header."""


def _header_key(key: str) -> tuple[str, str] | None:
    """werkzeug's ``EnvironHeaders.__iter__`` naming of ``key`` and ``_get_key``'s way back."""
    if key.startswith("HTTP_") and key not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
        name = key[5:].replace("_", "-").title()
    elif key in _CONTENT_KEYS:
        name = key.replace("_", "-").title()
    else:
        return None
    upper = name.upper().replace("-", "_")
    return name, upper if upper in _CONTENT_KEYS else f"HTTP_{upper}"


def headers_dict(environ: WSGIEnvironment) -> dict[str, str]:
    """``dict(Request(environ).headers)`` of moto's request, worked out the same way.

    ``dict()`` of moto's ``EnvironHeaders`` walks the environ once for the names (title-
    casing each) and then looks each name up again (upper-casing it back): ~5% of the
    backend's CPU per request. Here each environ key's name and way back are kept; an
    environ with preserved header names (underscored S3 metadata) takes moto's own.
    """
    if environ.get(PRESERVED_HEADER_NAMES_ENVIRON_KEY):
        return dict(EnvironHeaders(environ))
    headers: dict[str, str] = {}
    for key, value in environ.items():
        try:
            entry = _header_keys[key]
        except KeyError:
            entry = _header_key(key)
            if len(_header_keys) >= RAW_URLS_KEPT:
                _header_keys.clear()
            _header_keys[key] = entry
        if entry is None or (not value and key in _CONTENT_KEYS):
            continue
        name, lookup = entry
        headers[name] = environ[lookup]
    return headers


_PLAIN_STATUSES = {
    code: f"{code} {reason.upper()}"
    for code, reason in HTTP_STATUS_CODES.items()
    if 200 <= code < 600 and code not in (204, 304)
}
"""Status codes whose response werkzeug sends as given, by the status line it writes."""

_FLASK_SETS = frozenset({"location", "content-location", "content-length", _ALLOW_ORIGIN.lower()})
"""Header names whose presence makes Flask's response change or move a header."""


def plain_answer(
    status: object, headers: object, content: object
) -> tuple[str, list[tuple[str, str]], bytes] | None:
    """The status line, headers and body a Flask ``Response(content, status, headers)``
    gives the server once the fast path's CORS header is set, for the answers moto's
    views give (a known status with a body, a dict of single-valued headers, a str or
    bytes body); None for any other (Flask's own response is built).

    What Flask adds, in its order: a default ``Content-Type`` unless one is given, the
    ``Content-Length`` of the body, then ``Access-Control-Allow-Origin: *``. Building the
    response and its WSGI headers was ~5% of the backend's CPU per request.
    """
    if type(status) is not int or type(headers) is not dict:
        return None
    status_line = _PLAIN_STATUSES.get(status)
    if status_line is None:
        return None
    if isinstance(content, str):
        body = content.encode()
    elif type(content) is bytes:
        body = content
    else:
        return None
    answer: list[tuple[str, str]] = []
    content_type = False
    for key, value in headers.items():
        if type(key) is not str or not isinstance(value, str | int) or isinstance(value, bool):
            return None
        lower = key.lower()
        if lower in _FLASK_SETS:
            return None
        content_type = content_type or lower == "content-type"
        answer.append((key, _str_header_value(value)))
    if not content_type:
        answer.append(("Content-Type", _DEFAULT_CONTENT_TYPE))
    answer.append(("Content-Length", str(len(body))))
    if not settings.DISABLE_GLOBAL_CORS:
        answer.append((_ALLOW_ORIGIN, "*"))
    return status_line, answer, body


def _no_form(request: Request) -> None:
    """What werkzeug's form loading leaves on a request whose body is not a form (a JSON
    call's): its stream as it is, no form fields, no files. ``setup_class`` reads the body
    through ``request.data``, which loads the form first: for a JSON body that was making a
    form parser and parsing the content type only to be told there is no form (~4% of a
    conditional ``PutItem``'s CPU)."""
    fields = request.parameter_storage_class
    found = request.__dict__
    found["stream"], found["form"], found["files"] = request.stream, fields(), fields()


def _serve(
    view: _View,
    environ: WSGIEnvironment,
    start_response: StartResponse,
    raw_urls: dict[tuple[object, ...], str],
) -> Iterable[bytes]:
    """What ``convert_to_flask_response`` and Flask do around the view, without Flask.

    ``raw_urls`` remembers ``request.raw_url`` by the environ values it is made of: werkzeug
    works the host and root URL out afresh for every request (~5% of the backend's CPU).
    """
    request = ServerRequest(environ)
    if environ.get("CONTENT_TYPE") in JSON_CONTENT_TYPES:
        _no_form(request)
    url_key = tuple(environ.get(key) for key in RAW_URL_ENVIRON_KEYS)
    raw_url = raw_urls.get(url_key)
    if raw_url is None:
        raw_url = request.raw_url
        if len(raw_urls) >= RAW_URLS_KEPT:
            raw_urls.clear()
        raw_urls[url_key] = raw_url
    try:
        recorder._record_request(request)
        result = view(request, raw_url, headers_dict(environ))
    except HTTPException as exc:
        response = FlaskResponse.force_type(exc, environ)  # type: ignore[arg-type]
    except ClientError as exc:
        response = FlaskResponse(response=exc.response["Error"]["Message"], status=400)
    else:
        if len(result) == 3:
            status, headers, content = result
        else:
            status, headers, content = 200, {}, result
        answer = plain_answer(status, headers, content)
        if answer is not None:
            start_response(answer[0], answer[1])
            return [answer[2]]
        response = FlaskResponse(response=content, status=status, headers=headers)
    if not settings.DISABLE_GLOBAL_CORS and not response.headers.get(_ALLOW_ORIGIN):
        response.headers[_ALLOW_ORIGIN] = "*"
    return response(environ, start_response)

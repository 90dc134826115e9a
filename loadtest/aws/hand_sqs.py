"""loadtest's own SQS calls to its own backend, written by hand on kept connections.

Owns ``HandSQS`` (the harness's client: the pollers' ``ReceiveMessage``, the
acknowledgements' ``DeleteMessageBatch``, the producer's ``SendMessageBatch``) and
``HandSQSSync`` (reading a sink's queue from a worker thread: ``ReceiveMessage`` and
``DeleteMessageBatch``), each a drop-in for the botocore client it wraps, which serves
every other method. A call is the request botocore writes for SQS's JSON protocol (the
same target, query-mode header and body, a binary value as base64 text) with a
well-formed ``Authorization`` that names the region (loadtest's backend checks no
signature), on a ``loadtest.aws.kept_http`` connection; its answer is read as botocore's
own parser for the operation reads it (``_reader``: the same members in the shape's order,
each value through the parser's own handler for its type, the same ``ResponseMetadata``),
so what the caller gets is exactly what the client would have returned. An answer that is not a success (an error, no connection, a cut answer)
hands the call to the client, which makes it again under its own retry settings and
raises its own exception: a refused call changed nothing, and a retry is what botocore
itself would make of a failure to answer.

What is saved is botocore's request building, signing and hooks and the HTTP library
(about 90% of one of loadtest's SQS calls' CPU); the backend serves the same request.
Only for loadtest's own backend (``loadtest.aws.clients`` decides): any other endpoint,
and AWS, get the client itself. Never used for the consumer's calls.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

import anyio
from botocore.awsrequest import HeadersDict
from botocore.parsers import ResponseParser, create_parser

from loadtest.aws.kept_http import Answer, AsyncKeptConnection, KeptConnection

HAND_WRITTEN = ("ReceiveMessage", "DeleteMessageBatch", "SendMessageBatch")
"""The SQS operations written by hand: the ones a run makes per message."""
_TIMEOUT_S = 30.0
_CREDENTIAL_DATE = "20260101"


def _blob(value: object) -> str:
    """A binary value as the JSON protocol carries it (the only non-JSON values of
    SQS's requests are its blobs)."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


Reader = Callable[[Any], Any]
"""Turns a value of an answer's decoded JSON into what botocore's parser makes of it."""


class _Unread(Exception):
    """A shape ``_reader`` leaves to botocore's parser (a document, a tagged union)."""


def _reader(shape: Any, parser: ResponseParser) -> Reader | None:
    """What botocore's JSON parser does with a value of ``shape``, walked once when the client
    is made instead of for every value of every answer (``BaseJSONParser._parse_shape``);
    None where it returns the value as it is. ``shape`` is a botocore ``Shape`` (a
    ``StructureShape``, ``ListShape``, ``MapShape`` or a plain one)."""
    kind = shape.type_name
    if kind == "structure":
        if shape.is_document_type or shape.is_tagged_union:
            raise _Unread(shape.name)
        members = [
            (name, member.serialization.get("name", name), _reader(member, parser))
            for name, member in shape.members.items()
        ]

        def structure(value: Any) -> Any:
            if value is None:
                return None
            parsed = {}
            for name, json_name, read in members:
                raw = value.get(json_name)
                if raw is not None:
                    parsed[name] = raw if read is None else read(raw)
            return parsed

        return structure
    if kind == "list":
        read_item = _reader(shape.member, parser)
        if read_item is None:
            return list
        return lambda value: [read_item(item) for item in value]
    if kind == "map":
        read_key = _reader(shape.key, parser)
        read_value = _reader(shape.value, parser)
        if read_key is None and read_value is None:
            return dict
        key = read_key or (lambda k: k)
        item = read_value or (lambda v: v)
        return lambda value: {key(k): item(v) for k, v in value.items()}
    handler = getattr(parser, f"_handle_{kind}", None)
    if handler is None:
        return None
    return lambda value: handler(shape, value)


class _Calls:
    """What both clients share: the request written, the answer parsed."""

    def __init__(self, client: Any, endpoint_url: str, access_key: str) -> None:
        self._client = client
        url = urllib.parse.urlsplit(endpoint_url)
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port or 80
        model = client.meta.service_model
        self._models = {name: model.operation_model(name) for name in HAND_WRITTEN}
        self._parser = create_parser(model.resolved_protocol)
        self._readers: dict[str, Reader | None] = {}
        for name, operation in self._models.items():
            try:
                read = None
                if model.resolved_protocol == "json" and operation.output_shape is not None:
                    read = _reader(operation.output_shape, self._parser)
            except _Unread:
                read = None
            self._readers[name] = read
        self._headers = [
            ("Content-Type", "application/x-amz-json-1.0"),
            ("x-amzn-query-mode", "true"),
            (
                "Authorization",
                f"AWS4-HMAC-SHA256 Credential={access_key}/{_CREDENTIAL_DATE}/"
                f"{client.meta.region_name}/sqs/aws4_request, SignedHeaders=host;x-amz-target, "
                "Signature=0",
            ),
        ]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _request(
        self, operation: str, params: dict[str, Any]
    ) -> tuple[list[tuple[str, str]], bytes]:
        headers = [*self._headers, ("X-Amz-Target", f"AmazonSQS.{operation}")]
        return headers, json.dumps(params, default=_blob).encode()

    def _parsed(self, operation: str, answer: Answer) -> dict[str, Any] | None:
        """botocore's parse of a successful answer; None for any other."""
        if not 200 <= answer.status < 300:
            return None
        read = self._readers[operation]
        if read is not None:
            read_by_hand = self._read(read, answer)
            if read_by_hand is not None:
                return read_by_hand
        response = {
            "status_code": answer.status,
            "headers": HeadersDict(answer.headers),
            "body": answer.body,
            "context": {"operation_name": operation},
        }
        parsed: dict[str, Any] = self._parser.parse(response, self._models[operation].output_shape)
        parsed.setdefault("ResponseMetadata", {})["RetryAttempts"] = 0
        return parsed

    @staticmethod
    def _read(read: Reader, answer: Answer) -> dict[str, Any] | None:
        """What ``JSONParser.parse`` makes of a successful answer, by ``read``; None for an
        answer it would read otherwise (not a JSON object), left to the parser itself."""
        try:
            body = json.loads(answer.body.decode("utf-8")) if answer.body else {}
            if not isinstance(body, dict):
                return None
            parsed: dict[str, Any] = read(body)
        except (ValueError, TypeError, AttributeError):
            return None
        # lowercase_dict(HeadersDict(headers)), without the case-insensitive dict between:
        # each name lowered where it first came, with its last value.
        headers = {name.lower(): value for name, value in answer.headers.items()}
        if "x-amzn-requestid" in headers:
            parsed.setdefault("ResponseMetadata", {})["RequestId"] = headers["x-amzn-requestid"]
        metadata = parsed.get("ResponseMetadata", {})
        metadata["HTTPStatusCode"] = answer.status
        metadata["HTTPHeaders"] = headers
        parsed["ResponseMetadata"] = metadata
        metadata["RetryAttempts"] = 0
        return parsed


class HandSQS(_Calls):
    """The harness's SQS client on loadtest's own backend: an aiobotocore client whose
    per-message calls are written by hand (``HAND_WRITTEN``)."""

    def __init__(self, client: Any, endpoint_url: str, access_key: str) -> None:
        super().__init__(client, endpoint_url, access_key)
        self._idle: list[AsyncKeptConnection] = []

    async def _call(
        self, operation: str, fallback: Callable[..., Any], params: dict[str, Any]
    ) -> dict[str, Any]:
        headers, body = self._request(operation, params)
        connection = self._idle.pop() if self._idle else AsyncKeptConnection(self.host, self.port)
        answer = None
        # A long poll waits up to 20 s; the client's own read timeout is 30 s.
        with anyio.move_on_after(_TIMEOUT_S):
            try:
                answer = await connection.exchange("POST", "/", headers, body)
            except OSError:
                pass
            else:
                self._idle.append(connection)
        parsed = None if answer is None else self._parsed(operation, answer)
        if parsed is None:
            result: dict[str, Any] = await fallback(**params)
            return result
        return parsed

    async def receive_message(self, **params: Any) -> dict[str, Any]:
        return await self._call("ReceiveMessage", self._client.receive_message, params)

    async def delete_message_batch(self, **params: Any) -> dict[str, Any]:
        return await self._call("DeleteMessageBatch", self._client.delete_message_batch, params)

    async def send_message_batch(self, **params: Any) -> dict[str, Any]:
        return await self._call("SendMessageBatch", self._client.send_message_batch, params)

    async def aclose(self) -> None:
        """Close the kept connections (the client is its owner's to close)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()


class HandSQSSync(_Calls):
    """A boto3 SQS client on loadtest's own backend whose receive and delete are written by
    hand (reading a sink's queue); safe to share between threads."""

    def __init__(self, client: Any, endpoint_url: str, access_key: str) -> None:
        super().__init__(client, endpoint_url, access_key)
        self._idle: list[KeptConnection] = []
        self._lock = threading.Lock()

    def _call(
        self, operation: str, fallback: Callable[..., Any], params: dict[str, Any]
    ) -> dict[str, Any]:
        headers, body = self._request(operation, params)
        with self._lock:
            connection = self._idle.pop() if self._idle else None
        if connection is None:
            connection = KeptConnection(
                self.host, self.port, connect_timeout_s=_TIMEOUT_S, read_timeout_s=_TIMEOUT_S
            )
        try:
            answer = connection.exchange("POST", "/", headers, body)
        except OSError:
            answer = None
        else:
            with self._lock:
                self._idle.append(connection)
        parsed = None if answer is None else self._parsed(operation, answer)
        if parsed is None:
            result: dict[str, Any] = fallback(**params)
            return result
        return parsed

    def receive_message(self, **params: Any) -> dict[str, Any]:
        return self._call("ReceiveMessage", self._client.receive_message, params)

    def delete_message_batch(self, **params: Any) -> dict[str, Any]:
        return self._call("DeleteMessageBatch", self._client.delete_message_batch, params)

    def close(self) -> None:
        """Close the kept connections and the client."""
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
        self._client.close()

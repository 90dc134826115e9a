"""Reading items back by key, consistently, as cheaply as the backend allows.

Owns ``ItemReader``, which ``explore`` reads each schedule's items with. On loadtest's own
backend (the embedded one, or ``loadtest serve`` behind ``--endpoint-url``: it answers
``/_loadtest/stats``), each read is the same DynamoDB ``GetItem`` request (JSON protocol,
``ConsistentRead``) written by hand on one kept-alive connection: the backend serves it as
it serves boto3's, and only the client's work (botocore's request building, signing,
hooks and parsing, about as much CPU as the backend's own) is saved. The backend does
not check signatures, so the request carries a well-formed one that names the region.
A schedule's items are read together (``get_items``): on loadtest's backend, in one
request to ``/_loadtest/items``, which answers what ``GetItem`` would for each key without
moto's dispatch (``loadtest.backend.dynamodb.item_reads``), or says which keys to read
with ``GetItem`` after all. Every other endpoint, and real AWS, is read through the boto3
client passed in.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from loadtest.aws.kept_http import KeptConnection
from loadtest.aws.target import STATS_PATH, BackendKind, Target

_TIMEOUT_S = 30.0
_GET_ITEM = "DynamoDB_20120810.GetItem"

ITEMS_PATH = "/_loadtest/items"
"""Where loadtest's backend reads several items in one request (``loadtest.backend.dynamodb.item_reads``)."""
ITEMS_UNKNOWN = "unknown"
"""Its answer for a key to read with ``GetItem`` instead."""


class ItemReadError(Exception):
    """The backend refused a read (its error code and message)."""


def _blobs_decoded(value: Any) -> Any:
    """An attribute value as botocore parses it: binary values as bytes, not base64."""
    if not isinstance(value, dict) or len(value) != 1:
        return value
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(v) for v in inner]}
    if kind == "M":
        return {"M": {k: _blobs_decoded(v) for k, v in inner.items()}}
    if kind == "L":
        return {"L": [_blobs_decoded(v) for v in inner]}
    return value


def _blobs_encoded(value: Any) -> Any:
    """A key's attribute value as the wire carries it: bytes as base64 text."""
    if isinstance(value, dict) and len(value) == 1:
        ((kind, inner),) = value.items()
        if kind == "B" and isinstance(inner, bytes | bytearray):
            return {"B": base64.b64encode(inner).decode()}
    return value


class ItemReader:
    """Reads items of a table by key: by hand on loadtest's backend, else through ``client``."""

    def __init__(self, target: Target, client: Any) -> None:
        self.client = client
        self.region = target.region
        self.access_key = dict(target.credentials_env).get("AWS_ACCESS_KEY_ID", "testing")
        self._connection: KeptConnection | None = None
        self._host = ""
        self._items_path = True
        """The backend answers ``ITEMS_PATH`` (until it shows it does not)."""
        url = urllib.parse.urlsplit(target.endpoint_url or "")
        if target.kind is not BackendKind.AWS and url.scheme == "http" and url.hostname:
            self._host = url.netloc
            self._connection = KeptConnection(
                url.hostname,
                url.port or 80,
                connect_timeout_s=_TIMEOUT_S,
                read_timeout_s=_TIMEOUT_S,
            )
            if not self._answers_stats():
                self.close()

    @property
    def by_hand(self) -> bool:
        """Whether reads go by hand to loadtest's backend (False: through the client)."""
        return self._connection is not None

    def _answers_stats(self) -> bool:
        try:
            status, body = self._request("GET", STATS_PATH, b"", {})
            stats = json.loads(body) if status == 200 else None
            # loadtest's backend counts the DynamoDB requests it served.
            return isinstance(stats, dict) and isinstance(stats.get("dynamodb"), int)
        except (OSError, ValueError):
            return False

    def _request(
        self, method: str, path: str, body: bytes, headers: Mapping[str, str]
    ) -> tuple[int, bytes]:
        assert self._connection is not None
        for attempt in (1, 2):
            try:
                answer = self._connection.exchange(method, path, list(headers.items()), body)
                return answer.status, answer.body
            except ConnectionError:
                # A kept-alive connection the server closed meanwhile: once more, anew (a
                # read changes nothing, so sending it twice is harmless).
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def get_item(self, table: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The item at ``key`` (a consistent read), or None when there is none."""
        if self._connection is None:
            found: dict[str, Any] | None = self.client.get_item(
                TableName=table, Key=dict(key), ConsistentRead=True
            ).get("Item")
            return found
        body = json.dumps(
            {
                "TableName": table,
                "Key": {name: _blobs_encoded(v) for name, v in key.items()},
                "ConsistentRead": True,
            }
        ).encode()
        headers = {
            "Host": self._host,
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": _GET_ITEM,
            "Authorization": (
                f"AWS4-HMAC-SHA256 Credential={self.access_key}/20260101/{self.region}/"
                "dynamodb/aws4_request, SignedHeaders=host;x-amz-target, Signature=0"
            ),
        }
        status, answer = self._request("POST", "/", body, headers)
        parsed = json.loads(answer) if answer else {}
        if status != 200:
            code = str(parsed.get("__type", "error")).rpartition("#")[2]
            raise ItemReadError(f"{code}: {parsed.get('message') or parsed.get('Message')}")
        item = parsed.get("Item")
        if item is None:
            return None
        return {name: _blobs_decoded(v) for name, v in item.items()}

    def get_items(
        self, table: str, keys: Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any] | None]:
        """The item at each of ``keys`` (consistent reads), None where there is none, as
        ``get_item`` reads them: on loadtest's backend in one request
        (``loadtest.backend.dynamodb.item_reads``), each key it cannot vouch for, and every
        key on a backend without it, read with ``get_item``."""
        answers: list[Any] = [ITEMS_UNKNOWN] * len(keys)
        if self._connection is not None and self._items_path and keys:
            body = json.dumps(
                {
                    "region": self.region,
                    "table": table,
                    "keys": [{n: _blobs_encoded(v) for n, v in key.items()} for key in keys],
                }
            ).encode()
            status, answer = self._request(
                "POST", ITEMS_PATH, body, {"Host": self._host, "Content-Type": "application/json"}
            )
            read = json.loads(answer).get("items") if status == 200 and answer else None
            if isinstance(read, list) and len(read) == len(keys):
                answers = read
            else:  # a backend that does not answer it (another version of loadtest's)
                self._items_path = False
        return [
            self.get_item(table, key)
            if found == ITEMS_UNKNOWN
            else None
            if found is None
            else {name: _blobs_decoded(v) for name, v in found.items()}
            for key, found in zip(keys, answers, strict=True)
        ]

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

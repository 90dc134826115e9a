"""Reading items back by key in one request, as ``GetItem`` answers each: the backend's own.

Owns ``ItemReads``, the WSGI middleware that answers ``POST /_loadtest/items`` (``PATH``),
which ``explore`` reads each schedule's end state with (``loadtest.aws.item_reads``).
Must not change what any other request answers, nor anything the read does not need.

Why: a schedule's items were read back with one ``GetItem`` each, and moto's dispatch
(parsing the request against the service model, the handler, serialising the answer
through the model again) cost the backend about as much as a write the handler made.
Here the same lookup (``DynamoDBBackend.get_item``, with the key-type check loadtest
patches into it) is made under the same lock DynamoDB's requests are served under
(``SerialisedDynamoDB``), and the item is answered in the form ``GetItem`` gives it.

What it answers: ``{"items": [ITEM | null | "unknown", ...]}``, one per key asked, in
order. An item holds what ``GetItem`` would give for it (its typed attributes in their
order); ``null``: none is stored. ``"unknown"`` where this read would not give exactly what
``GetItem`` gives: a key not exactly the table's key attributes with non-empty values of
the table's types, a table it cannot find, an item holding binary values (``GetItem``'s
serialiser encodes them), and every key while moto's IAM is loaded or its access control
counts requests (``GetItem`` would mark the key's use, or be counted). The caller reads
those with ``GetItem``.

Request body: ``{"region": str, "table": str, "keys": [KEY, ...]}``, a key in DynamoDB's
typed JSON form.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

PATH = "/_loadtest/items"

UNKNOWN = "unknown"
"""An answer the caller reads again with ``GetItem``."""

_PLAIN = frozenset({"S", "N", "BOOL", "NULL", "SS", "NS"})
"""Attribute types ``GetItem`` answers as they are stored."""


class ItemReads:
    """WSGI middleware: ``POST /_loadtest/items`` reads items; every other request passes."""

    def __init__(self, app: WSGIApplication, lock: threading.Lock) -> None:
        self.app = app
        self.lock = lock
        """The lock DynamoDB's requests are served under."""

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != PATH or environ.get("REQUEST_METHOD") != "POST":
            return self.app(environ, start_response)
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            asked = json.loads(environ["wsgi.input"].read(length))
            region, table, keys = str(asked["region"]), str(asked["table"]), list(asked["keys"])
        except (ValueError, KeyError, TypeError):
            start_response("400 Bad Request", [("Content-Type", "application/json")])
            return [b'{"message": "expected {region, table, keys}"}']
        body = json.dumps({"items": self._read(region, table, keys)}).encode()
        start_response(
            "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]

    def _read(self, region: str, table_name: str, keys: list[Any]) -> list[Any]:
        if not _account_is_plain():
            return [UNKNOWN] * len(keys)
        from moto.core.models import DEFAULT_ACCOUNT_ID
        from moto.dynamodb.models import dynamodb_backends

        account = os.environ.get("MOTO_ACCOUNT_ID", DEFAULT_ACCOUNT_ID)
        with self.lock:
            try:
                backend = dynamodb_backends[account][region]
                table = backend.get_table(table_name)
            except Exception:  # not found, or anything GetItem would answer with an error
                return [UNKNOWN] * len(keys)
            return [self._one(backend, table, table_name, key) for key in keys]

    @staticmethod
    def _one(backend: Any, table: Any, table_name: str, key: Any) -> Any:
        if not _is_key_of(table, key):
            return UNKNOWN
        try:
            item = backend.get_item(table_name, key, None)
        except Exception:  # GetItem answers it with an error: let it say which
            return UNKNOWN
        if not item:
            return None
        from moto.dynamodb.models.utilities import dynamo_to_dict

        # As ``GetItem``'s answer is made from the item, before its serialiser writes it.
        attributes = dynamo_to_dict(dict(item.attrs))
        return attributes if all(_plain(v) for v in attributes.values()) else UNKNOWN


def _account_is_plain() -> bool:
    """Whether a ``GetItem`` would be answered for moto's default (or set) account without
    its key's use being noted or the request counted for access control."""
    from moto import settings

    if "moto.iam.models" in sys.modules:
        return False
    return math.isinf(settings.INITIAL_NO_AUTH_ACTION_COUNT)


def _is_key_of(table: Any, key: Any) -> bool:
    """Whether ``key`` is exactly the table's key attributes, each one typed value of the
    table's type, not empty."""
    expected = {table.hash_key_attr: table.hash_key_type}
    if table.range_key_attr:
        expected[table.range_key_attr] = table.range_key_type
    if not isinstance(key, dict) or set(key) != set(expected):
        return False
    for name, value in key.items():
        if not isinstance(value, dict) or len(value) != 1:
            return False
        ((kind, inner),) = value.items()
        if kind != expected[name] or kind not in ("S", "N") or not isinstance(inner, str):
            return False
        if not inner:
            return False
    return True


def _plain(value: Any) -> bool:
    if not isinstance(value, dict) or len(value) != 1:
        return False
    ((kind, inner),) = value.items()
    if kind in _PLAIN:
        return True
    if kind == "M":
        return isinstance(inner, dict) and all(_plain(v) for v in inner.values())
    if kind == "L":
        return isinstance(inner, list) and all(_plain(v) for v in inner)
    return False

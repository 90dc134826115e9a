"""Reading items back by key: by hand on loadtest's backend, the same as boto3 reads them."""

from __future__ import annotations

import http.server
import json
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from loadtest.aws import clients as aws
from loadtest.aws.item_reads import ItemReader, ItemReadError
from tests.backend import aws_clients

ITEM: dict[str, Any] = {
    "id": {"S": "order-1"},
    "quantity": {"N": "4"},
    "blob": {"B": b"\x00\xffbytes"},
    "blobs": {"BS": [b"a", b"\x01"]},
    "nested": {"M": {"inner": {"B": b"\x02"}, "list": {"L": [{"B": b"\x03"}, {"S": "s"}]}}},
    "flag": {"BOOL": True},
    "nothing": {"NULL": True},
    "tags": {"SS": ["a", "b"]},
}


def test_reads_by_hand_on_loadtest_s_backend_what_boto3_reads(backend_url: str) -> None:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    client = aws_clients.dynamodb(backend_url)
    with aws_clients.table(backend_url) as table:
        client.put_item(TableName=table, Item=ITEM)
        reader = ItemReader(target, client)
        try:
            assert reader.by_hand
            found = reader.get_item(table, {"id": {"S": "order-1"}})
            expected = client.get_item(
                TableName=table, Key={"id": {"S": "order-1"}}, ConsistentRead=True
            )["Item"]
            assert found == expected == ITEM
            assert reader.get_item(table, {"id": {"S": "order-2"}}) is None
            with pytest.raises(ItemReadError, match="ResourceNotFoundException"):
                reader.get_item(f"{table}-missing", {"id": {"S": "order-1"}})
        finally:
            reader.close()


class _NotLoadtest(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def other_endpoint() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotLoadtest)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Client:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def get_item(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {"Item": {"id": {"S": "k"}}}


def test_other_endpoints_and_aws_are_read_through_the_client(other_endpoint: str) -> None:
    for target in (
        aws.Target.resolve(aws.BackendKind.ENDPOINT, other_endpoint),
        aws.Target(aws.BackendKind.AWS, None, "us-east-1"),
    ):
        client = _Client()
        reader = ItemReader(target, client)
        assert not reader.by_hand
        assert reader.get_item("t", {"id": {"S": "k"}}) == {"id": {"S": "k"}}
        assert client.calls == [
            {"TableName": "t", "Key": {"id": {"S": "k"}}, "ConsistentRead": True}
        ]


def test_loadtest_s_backend_is_told_from_another_endpoint(
    backend_url: str, other_endpoint: str
) -> None:
    # Its sinks' deliveries come within the call there (the last receive need not wait).
    assert aws.is_loadtest_backend(backend_url) is True
    assert aws.is_loadtest_backend(other_endpoint) is False
    assert aws.is_loadtest_backend("http://127.0.0.1:9") is False  # nothing listens


PLAIN: dict[str, Any] = {
    "id": {"S": "order-3"},
    "quantity": {"N": "12345678901234567890.000001"},
    "nested": {"M": {"list": {"L": [{"S": "s"}, {"NS": ["1", "2.5"]}]}, "empty": {"M": {}}}},
    "flag": {"BOOL": False},
    "nothing": {"NULL": True},
    "tags": {"SS": ["a", "b"]},
}


def test_items_read_in_one_request_are_what_get_item_reads(backend_url: str) -> None:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    client = aws_clients.dynamodb(backend_url)
    with aws_clients.table(backend_url) as table:
        client.put_item(TableName=table, Item=ITEM)  # binary: read with GetItem after all
        client.put_item(TableName=table, Item=PLAIN)
        reader = ItemReader(target, client)
        try:
            keys = [{"id": {"S": k}} for k in ("order-1", "order-3", "order-9")]
            read = reader.get_items(table, keys)
            assert read == [reader.get_item(table, key) for key in keys] == [ITEM, PLAIN, None]
            assert list(read[1] or {}) == list(PLAIN)  # the attributes in GetItem's order
            assert reader.get_items(table, []) == []
            # A key GetItem refuses is refused as GetItem refuses it.
            for bad in ({"id": {"N": "1"}}, {"id": {"S": "order-3"}, "other": {"S": "x"}}):
                with pytest.raises(ItemReadError, match="ValidationException"):
                    reader.get_items(table, [bad])
            with pytest.raises(ItemReadError, match="ResourceNotFoundException"):
                reader.get_items(f"{table}-missing", keys)
        finally:
            reader.close()


def test_the_backend_answers_unknown_where_get_item_must_say(backend_url: str) -> None:
    client = aws_clients.dynamodb(backend_url)
    with aws_clients.table(backend_url) as table:
        client.put_item(TableName=table, Item=ITEM)
        client.put_item(TableName=table, Item=PLAIN)
        keys = [
            {"id": {"S": "order-1"}},  # holds binary values
            {"id": {"S": "order-3"}},
            {"id": {"S": ""}},  # empty
            {"id": {"N": "3"}},  # not the table's type
            {"id": {"S": "order-3"}, "x": {"S": "y"}},  # not the table's key
            {"id": {"S": "nope"}},
        ]
        request = urllib.request.Request(
            backend_url + "/_loadtest/items",
            data=json.dumps({"region": "us-east-1", "table": table, "keys": keys}).encode(),
            method="POST",
        )
        with urllib.request.urlopen(request) as answer:
            items = json.loads(answer.read())["items"]
        # The plain item and the absent one are answered, unless the backend's IAM is loaded
        # (another test made a role, say): then GetItem reads every key.
        assert items in (
            ["unknown", PLAIN, "unknown", "unknown", "unknown", None],
            ["unknown"] * len(keys),
        )

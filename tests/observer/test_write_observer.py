"""The write observer in-process against the real embedded backend.

Two promises: it records every write API in DynamoDB's typed form, through the
client and the resource layer; and it never changes what the consumer sees
(each call gives the same answer with and without it).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import boto3
import pytest
from boto3.dynamodb.conditions import Attr, Key
from botocore.config import Config
from botocore.exceptions import ClientError

from loadtest.model.dynamodb.attribute_values import same_item
from loadtest.model.history.log import (
    ObserverFault,
    ReadRecord,
    UnobservedCall,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.history.observation import Observation, collect, decode
from loadtest.observer.write_observer import WriteObserver
from tests.integration.helpers import client

Calls = Callable[[str], Any]


@pytest.fixture()
def table(backend_url: str) -> Iterator[str]:
    name = f"observer-{uuid.uuid4().hex[:8]}"
    dynamodb = client("dynamodb", backend_url)
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    yield name
    dynamodb.delete_table(TableName=name)


class Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def observations(self) -> list[Observation]:
        return [decode(line) for line in self.lines]

    def writes(self) -> list[WriteRecord]:
        return collect(self.observations(), ended_ns=0).writes


def _resource_table(url: str, name: str) -> Any:
    creds = client("dynamodb", url)._request_signer._credentials
    return boto3.resource(
        "dynamodb",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=creds.access_key,
        aws_secret_access_key=creds.secret_key,
    ).Table(name)


def _answers(run: Callable[[], Any]) -> Any:
    """What the consumer sees: the response (metadata aside) or the error's response."""
    try:
        response = run()
    except ClientError as error:
        raw = dict(error.response)
        raw.pop("ResponseMetadata", None)
        return ("error", raw)
    if isinstance(response, dict):
        response = {k: v for k, v in response.items() if k != "ResponseMetadata"}
    return ("ok", response)


def _scenario(url: str, name: str) -> list[Callable[[], Any]]:
    """One consumer's calls: every write API, conditions as objects and strings."""
    ddb = client("dynamodb", url)
    table = _resource_table(url, name)
    item = {"id": {"S": "a"}, "quantity": {"N": "4"}}
    return [
        lambda: table.put_item(
            Item={"id": "r", "quantity": Decimal(4), "tags": {"x", "y"}, "blob": b"\x00\x01"},
            ConditionExpression=Attr("id").not_exists(),
        ),
        lambda: table.put_item(
            Item={"id": "r", "quantity": Decimal(5)},
            ConditionExpression=Attr("id").not_exists(),
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        lambda: ddb.put_item(
            TableName=name, Item=item, ConditionExpression="attribute_not_exists(id)"
        ),
        lambda: ddb.put_item(
            TableName=name, Item=item, ConditionExpression="attribute_not_exists(id)"
        ),
        lambda: ddb.update_item(
            TableName=name,
            Key={"id": {"S": "a"}},
            UpdateExpression="SET quantity = if_not_exists(quantity, :q), total_cents = :t",
            ExpressionAttributeValues={":q": {"N": "9"}, ":t": {"N": "1100"}},
        ),
        lambda: ddb.update_item(
            TableName=name,
            Key={"id": {"S": "a"}},
            UpdateExpression="ADD total_cents :t",
            ExpressionAttributeValues={":t": {"N": "1"}},
            ReturnValues="UPDATED_NEW",
        ),
        lambda: table.update_item(
            Key={"id": "n"},
            UpdateExpression="SET #q = :q",
            ExpressionAttributeNames={"#q": "quantity"},
            ExpressionAttributeValues={":q": 3},
            ReturnValues="ALL_NEW",
        ),
        lambda: ddb.batch_write_item(
            RequestItems={
                name: [
                    {"PutRequest": {"Item": {"id": {"S": "b1"}, "quantity": {"N": "1"}}}},
                    {"DeleteRequest": {"Key": {"id": {"S": "n"}}}},
                ]
            }
        ),
        lambda: ddb.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": name,
                        "Item": {"id": {"S": "t"}, "quantity": {"N": "2"}},
                        "ConditionExpression": "attribute_not_exists(id)",
                    }
                },
                {
                    "Put": {
                        "TableName": name,
                        "Item": {"id": {"S": "outbox#t"}},
                        "ConditionExpression": "attribute_not_exists(id)",
                    }
                },
            ]
        ),
        lambda: ddb.transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": name,
                        "Item": {"id": {"S": "t"}, "quantity": {"N": "2"}},
                        "ConditionExpression": "attribute_not_exists(id)",
                    }
                }
            ]
        ),
        lambda: ddb.execute_statement(
            Statement=f"INSERT INTO \"{name}\" VALUE {{'id': ?, 'quantity': ?}}",
            Parameters=[{"S": "p"}, {"N": "7"}],
        ),
        lambda: ddb.execute_statement(
            Statement=f"INSERT INTO \"{name}\" VALUE {{'id': ?, 'quantity': ?}}",
            Parameters=[{"S": "p"}, {"N": "8"}],
        ),
        lambda: ddb.execute_statement(
            Statement=f'UPDATE "{name}" SET quantity = quantity + ? WHERE id = ?',
            Parameters=[{"N": "1"}, {"S": "p"}],
        ),
        lambda: ddb.execute_statement(
            Statement=f'SELECT * FROM "{name}" WHERE id = ?', Parameters=[{"S": "p"}]
        ),
        lambda: table.delete_item(Key={"id": "b1"}),
        lambda: ddb.get_item(TableName=name, Key={"id": {"S": "a"}}),
    ]


def _run_all(url: str, name: str) -> list[Any]:
    return [_answers(call) for call in _scenario(url, name)]


def test_the_consumer_sees_the_same_answers_with_and_without_the_observer(
    backend_url: str, table: str
) -> None:
    other = f"{table}-plain"
    ddb = client("dynamodb", backend_url)
    ddb.create_table(
        TableName=other,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        plain = _run_all(backend_url, other)
        recorder = Recorder()
        observer = WriteObserver(table, sink=recorder)
        observer.install()
        try:
            observed = _run_all(backend_url, table)
        finally:
            observer.uninstall()
    finally:
        ddb.delete_table(TableName=other)

    def same_shape(answer: Any) -> Any:
        # Table names differ between the two runs; everything else must be equal.
        return repr(answer).replace(other, "T").replace(table, "T")

    assert [same_shape(a) for a in observed] == [same_shape(a) for a in plain]
    assert not [o for o in recorder.observations() if isinstance(o, ObserverFault | UnobservedCall)]


def test_every_write_api_is_recorded_with_its_images(backend_url: str, table: str) -> None:
    recorder = Recorder()
    observer = WriteObserver(table, sink=recorder)
    observer.install()
    try:
        _run_all(backend_url, table)
    finally:
        observer.uninstall()
    writes = recorder.writes()
    summary = [(w.operation, w.outcome.value, w.key) for w in writes]
    assert summary == [
        ("PutItem", "accepted", {"id": {"S": "r"}}),
        ("PutItem", "rejected", {"id": {"S": "r"}}),
        ("PutItem", "accepted", {"id": {"S": "a"}}),
        ("PutItem", "rejected", {"id": {"S": "a"}}),
        ("UpdateItem", "accepted", {"id": {"S": "a"}}),
        ("UpdateItem", "accepted", {"id": {"S": "a"}}),
        ("UpdateItem", "accepted", {"id": {"S": "n"}}),
        ("BatchWriteItem.Put", "accepted", {"id": {"S": "b1"}}),
        ("BatchWriteItem.Delete", "accepted", {"id": {"S": "n"}}),
        ("TransactWriteItems.Put", "accepted", {"id": {"S": "t"}}),
        ("TransactWriteItems.Put", "accepted", {"id": {"S": "outbox#t"}}),
        ("TransactWriteItems.Put", "rejected", {"id": {"S": "t"}}),
        ("ExecuteStatement.INSERT", "accepted", {"id": {"S": "p"}}),
        ("ExecuteStatement.INSERT", "rejected", {"id": {"S": "p"}}),
        ("ExecuteStatement.UPDATE", "accepted", {"id": {"S": "p"}}),
        ("DeleteItem", "accepted", {"id": {"S": "b1"}}),
    ]
    by_index = dict(enumerate(writes))
    # Resource-layer values arrive typed (a set, bytes as base64 from the wire form).
    assert by_index[0].item_after is not None
    # A Python set serialises in hash order, which changes per process.
    assert sorted(by_index[0].item_after["tags"]["SS"]) == ["x", "y"]
    assert by_index[0].item_before is None and by_index[0].before_known
    # The rejection keeps both the item that stopped it and what was asked.
    assert by_index[1].item_before == by_index[1].item_after
    assert by_index[1].requested == {"id": {"S": "r"}, "quantity": {"N": "5"}}
    # An update's after is computed from its old image: if_not_exists kept quantity.
    update = by_index[4]
    assert update.item_before == {"id": {"S": "a"}, "quantity": {"N": "4"}}
    assert update.item_after == {
        "id": {"S": "a"},
        "quantity": {"N": "4"},
        "total_cents": {"N": "1100"},
    }
    assert not update.noop_when_present
    # The consumer asked for UPDATED_NEW: the observer leaves its request alone, so
    # the old image and the whole item after are not known (and say so).
    assert not by_index[5].before_known and not by_index[5].after_known
    # The consumer asked for ALL_NEW: no old image, the after is the answer's.
    assert not by_index[6].before_known and by_index[6].item_after == {
        "id": {"S": "n"},
        "quantity": {"N": "3"},
    }
    # PartiQL: the INSERT's duplicate is a rejection; the UPDATE has both images.
    assert by_index[13].error_code == "DuplicateItemException"
    assert by_index[14].item_before == {"id": {"S": "p"}, "quantity": {"N": "7"}}
    assert by_index[14].item_after == {"id": {"S": "p"}, "quantity": {"N": "8"}}
    # Transaction parts share their call.
    assert by_index[9].call_id == by_index[10].call_id != by_index[11].call_id
    # A put replaces what the item held; if_not_exists, an increment or a delete do not
    # store the request's values alone.
    assert [by_index[i].replaces for i in (0, 2, 7, 9)] == [True] * 4
    assert [by_index[i].replaces for i in (4, 8, 14, 15)] == [False] * 4
    reads = [o for o in recorder.observations() if isinstance(o, ReadRecord)]
    assert [r.key for r in reads] == [{"id": {"S": "p"}}, {"id": {"S": "a"}}]
    assert all(w.outcome is not WriteOutcome.INDETERMINATE for w in writes)


def test_an_observer_failure_is_its_own_and_the_call_goes_ahead(
    backend_url: str, table: str
) -> None:
    def broken(line: str) -> None:
        raise OSError("observation file is gone")

    observer = WriteObserver(table, sink=broken)
    observer.install()
    try:
        response = client("dynamodb", backend_url).put_item(
            TableName=table, Item={"id": {"S": "x"}}, ReturnValues="NONE"
        )
    finally:
        observer.uninstall()
    assert "Attributes" not in response
    stored = client("dynamodb", backend_url).get_item(TableName=table, Key={"id": {"S": "x"}})
    assert stored["Item"] == {"id": {"S": "x"}}


def test_a_call_it_cannot_interpret_is_named_not_ignored(backend_url: str, table: str) -> None:
    recorder = Recorder()
    observer = WriteObserver(table, sink=recorder)
    observer.install()
    # One attempt: the observer names the call once, whatever the backend answers.
    once = Config(retries={"total_max_attempts": 1})
    try:
        client("dynamodb", backend_url, once).update_item(
            TableName=table,
            Key={"id": {"S": "legacy"}},
            AttributeUpdates={"quantity": {"Value": {"N": "4"}, "Action": "REPLACE"}},
        )
    except ClientError:
        pass  # DynamoDB refuses the action; the observer named the call before it was sent
    finally:
        observer.uninstall()
    unobserved = [o for o in recorder.observations() if isinstance(o, UnobservedCall)]
    assert [(u.operation, u.reason) for u in unobserved] == [
        (
            "UpdateItem",
            "legacy parameter AttributeUpdates: REPLACE action on 'quantity' not understood",
        )
    ]


def test_a_legacy_update_is_recorded_with_the_item_it_stored(backend_url: str, table: str) -> None:
    # AttributeUpdates is an update expression written another way: PUT sets, ADD adds
    # (and appends a list), DELETE removes an attribute or a set's elements.
    recorder = Recorder()
    observer = WriteObserver(table, sink=recorder)
    observer.install()
    dynamodb = client("dynamodb", backend_url)
    key = {"id": {"S": "legacy"}}
    try:
        dynamodb.update_item(
            TableName=table,
            Key=key,
            AttributeUpdates={
                "quantity": {"Value": {"N": "4"}, "Action": "PUT"},
                "seen": {"Value": {"SS": ["m-1", "m-2"]}, "Action": "ADD"},
                "log": {"Value": {"L": [{"S": "placed"}]}, "Action": "ADD"},
                "note": {"Value": {"S": "x"}},
            },
            Expected={"id": {"Exists": False}},
        )
        dynamodb.update_item(
            TableName=table,
            Key=key,
            AttributeUpdates={
                "quantity": {"Value": {"N": "3"}, "Action": "ADD"},
                "seen": {"Value": {"SS": ["m-1"]}, "Action": "DELETE"},
                "log": {"Value": {"L": [{"S": "paid"}]}, "Action": "ADD"},
                "note": {"Action": "DELETE"},
            },
        )
        with pytest.raises(ClientError) as refused:
            dynamodb.put_item(TableName=table, Item=key, Expected={"id": {"Exists": False}})
    finally:
        observer.uninstall()
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert not [o for o in recorder.observations() if isinstance(o, UnobservedCall)]
    first, second, put = recorder.writes()
    stored = dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]
    assert first.outcome is WriteOutcome.ACCEPTED and first.after_known
    assert first.item_before is None
    assert first.item_after == {
        **key,
        "quantity": {"N": "4"},
        "seen": {"SS": ["m-1", "m-2"]},
        "log": {"L": [{"S": "placed"}]},
        "note": {"S": "x"},
    }
    assert same_item(second.item_before, first.item_after)
    assert second.after_known and second.item_after is not None
    assert set(second.item_after) == set(stored) == {"id", "quantity", "seen", "log"}
    assert second.item_after["quantity"] == stored["quantity"] == {"N": "7"}
    assert second.item_after["seen"] == stored["seen"] == {"SS": ["m-2"]}  # one element: ordered
    assert second.item_after["log"] == stored["log"] == {"L": [{"S": "placed"}, {"S": "paid"}]}
    assert put.outcome is WriteOutcome.REJECTED
    assert put.condition == 'Expected {"id": {"Exists": false}}'


_AIO_CONSUMER = """
import asyncio, json, sys
from loadtest.observer.write_observer import WriteObserver

lines = []
observer = WriteObserver(sys.argv[2], sink=lines.append)
observer.install()
assert "aiobotocore.client" not in sys.modules  # wrapped when the consumer imports it

import aioboto3  # the consumer's cold start

async def main():
    session = aioboto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    async with session.client("dynamodb", endpoint_url=sys.argv[1]) as ddb:
        answers = []
        for _ in range(2):
            try:
                answers.append(await ddb.put_item(
                    TableName=sys.argv[2],
                    Item={"id": {"S": "aio"}},
                    ConditionExpression="attribute_not_exists(id)",
                ))
            except ddb.exceptions.ConditionalCheckFailedException as error:
                answers.append(error.response)
        return answers

first, second = asyncio.run(main())
print(json.dumps({
    "lines": lines,
    "first_keys": sorted(first),
    "second_has_item": "Item" in second,
}))
"""


def test_aiobotocore_clients_are_observed_and_see_their_own_answers(
    backend_url: str, table: str
) -> None:
    # aioboto3's clients override both botocore methods the observer wraps with
    # coroutines that never call them; a fresh interpreter, as in an environment.
    done = subprocess.run(
        [sys.executable, "-c", _AIO_CONSUMER, backend_url, table],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    recorder = Recorder()
    for line in result["lines"]:
        recorder(line)
    assert [(w.operation, w.outcome.value, w.item_before) for w in recorder.writes()] == [
        ("PutItem", "accepted", None),
        ("PutItem", "rejected", {"id": {"S": "aio"}}),
    ]
    # What the observer asked for is not handed to the consumer.
    assert result["first_keys"] == ["ResponseMetadata"]
    assert result["second_has_item"] is False


def test_the_race_window_follows_every_read_of_the_table(backend_url: str, table: str) -> None:
    # A check by Query, Scan, BatchGetItem, TransactGetItems or an unkeyed SELECT races
    # like a GetItem:
    # the labelled pause must follow it too. Only key lookups are read records.
    ddb = client("dynamodb", backend_url)
    resource = _resource_table(backend_url, table)
    reads: list[Callable[[], Any]] = [
        lambda: ddb.get_item(TableName=table, Key={"id": {"S": "q"}}),
        lambda: resource.query(KeyConditionExpression=Key("id").eq("q")),
        lambda: ddb.scan(TableName=table),
        lambda: ddb.batch_get_item(RequestItems={table: {"Keys": [{"id": {"S": "q"}}]}}),
        lambda: ddb.execute_statement(Statement=f'SELECT * FROM "{table}"'),
        lambda: ddb.transact_get_items(
            TransactItems=[{"Get": {"TableName": table, "Key": {"id": {"S": "q"}}}}]
        ),
    ]
    for read in reads:
        read()  # a first call is slow on its own (TransactGetItems by ~0.2 s)
    recorder = Recorder()
    observer = WriteObserver(table, sink=recorder, race_window_s=0.2)
    observer.install()
    try:
        paused = []
        for read in reads:
            started = time.monotonic()
            read()
            paused.append(time.monotonic() - started >= 0.2)
        started = time.monotonic()
        ddb.list_tables()
        other = time.monotonic() - started
    finally:
        observer.uninstall()
    assert paused == [True] * len(reads)
    assert other < 0.2
    observed = recorder.observations()
    assert [o.key for o in observed if isinstance(o, ReadRecord)] == [{"id": {"S": "q"}}]
    assert not [o for o in observed if isinstance(o, ObserverFault | UnobservedCall)]


def test_a_table_named_by_its_arn_is_the_watched_table(backend_url: str, table: str) -> None:
    ddb = client("dynamodb", backend_url)
    arn = ddb.describe_table(TableName=table)["Table"]["TableArn"]
    recorder = Recorder()
    observer = WriteObserver(table, sink=recorder)
    observer.install()
    try:
        put = ddb.put_item(TableName=arn, Item={"id": {"S": "a"}})
        ddb.get_item(TableName=arn, Key={"id": {"S": "a"}})
        ddb.batch_write_item(RequestItems={arn: [{"PutRequest": {"Item": {"id": {"S": "b"}}}}]})
        ddb.transact_write_items(
            TransactItems=[{"Delete": {"TableName": arn, "Key": {"id": {"S": "b"}}}}]
        )
    finally:
        observer.uninstall()
    assert "Attributes" not in put
    assert [(w.operation, w.outcome.value, w.key) for w in recorder.writes()] == [
        ("PutItem", "accepted", {"id": {"S": "a"}}),
        ("BatchWriteItem.Put", "accepted", {"id": {"S": "b"}}),
        ("TransactWriteItems.Delete", "accepted", {"id": {"S": "b"}}),
    ]
    reads = [o for o in recorder.observations() if isinstance(o, ReadRecord)]
    assert [r.key for r in reads] == [{"id": {"S": "a"}}]


def _extra_table(dynamodb: Any, prefix: str, key: str) -> str:
    """A fresh table keyed by the string ``key``, as a run makes an extra table."""
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    dynamodb.create_table(
        TableName=name,
        AttributeDefinitions=[{"AttributeName": key, "AttributeType": "S"}],
        KeySchema=[{"AttributeName": key, "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return name


def test_writes_to_extra_tables_are_counted_as_side_writes_and_refused_calls_noted(
    backend_url: str, table: str
) -> None:
    dynamodb = client("dynamodb", backend_url)
    extra = _extra_table(dynamodb, "extra", "id")
    recorder = Recorder()
    observer = WriteObserver(table, sink=recorder, side_tables=((extra, ("id",)),))
    observer.install()
    try:
        observer.request_id = "r1"
        dynamodb.put_item(TableName=extra, Item={"id": {"S": "a"}})
        dynamodb.batch_write_item(
            RequestItems={
                extra: [{"PutRequest": {"Item": {"id": {"S": f"b{i}"}}}} for i in range(3)],
                table: [{"PutRequest": {"Item": {"id": {"S": "outcome"}}}}],
            }
        )
        dynamodb.transact_write_items(
            TransactItems=[
                {"Put": {"TableName": extra, "Item": {"id": {"S": "c"}}}},
                {"Put": {"TableName": table, "Item": {"id": {"S": "outcome-2"}}}},
            ]
        )
        dynamodb.execute_statement(Statement=f"INSERT INTO \"{extra}\" VALUE {{'id': 'd'}}")
        with pytest.raises(ClientError):  # refused: not accepted, not counted
            dynamodb.put_item(
                TableName=extra,
                Item={"id": {"S": "a"}},
                ConditionExpression="attribute_not_exists(id)",
            )
        with pytest.raises(ClientError):
            dynamodb.put_item(TableName="never-made", Item={"id": {"S": "x"}})
    finally:
        observer.uninstall()
        dynamodb.delete_table(TableName=extra)
    observed = collect(recorder.observations(), ended_ns=0)
    assert [(s.operation, s.table, s.items, s.request_id) for s in observed.side] == [
        ("PutItem", extra, 1, "r1"),
        ("BatchWriteItem", extra, 3, "r1"),
        ("TransactWriteItems", extra, 1, "r1"),
        ("ExecuteStatement", extra, 1, "r1"),
    ]
    # The watched table's writes are recorded as ever, the extra table's never as writes.
    assert sorted(w.key["id"]["S"] for w in observed.writes) == ["outcome", "outcome-2"]
    assert observer.take_missing() == [
        "loadtest: the handler's PutItem call on 'never-made' failed with ResourceNotFoundException"
    ]
    assert observer.take_missing() == []


def test_a_write_of_one_item_to_an_extra_table_says_whether_it_changed_the_item(
    backend_url: str, table: str
) -> None:
    dynamodb = client("dynamodb", backend_url)
    extra = _extra_table(dynamodb, "stock", "sku")
    recorder = Recorder()
    observer = WriteObserver(table, sink=recorder, side_tables=((extra, ("sku",)),))
    observer.install()
    key = {"sku": {"S": "widget"}}
    try:
        observer.request_id = "r1"
        answers = [
            dynamodb.update_item(
                TableName=extra,
                Key=key,
                UpdateExpression="ADD reserved :q",
                ExpressionAttributeValues={":q": {"N": "2"}},
            ),
            dynamodb.update_item(
                TableName=extra,
                Key=key,
                UpdateExpression="ADD reserved :q",
                ExpressionAttributeValues={":q": {"N": "2"}},
                ReturnValues="UPDATED_NEW",
            ),
            dynamodb.put_item(TableName=extra, Item={**key, "reserved": {"N": "4.0"}}),
            dynamodb.put_item(TableName=extra, Item={**key, "reserved": {"N": "1"}}),
            dynamodb.delete_item(TableName=extra, Key=key),
        ]
        with pytest.raises(ClientError) as refused:
            dynamodb.put_item(
                TableName=extra,
                Item={**key, "reserved": {"N": "1"}},
                ConditionExpression="attribute_exists(sku)",
            )
    finally:
        observer.uninstall()
        dynamodb.delete_table(TableName=extra)
    # The consumer sees the answers it asked for: no old image it did not ask for.
    assert ["Attributes" in a for a in answers] == [False, True, False, False, False]
    assert answers[1]["Attributes"] == {"reserved": {"N": "4"}}
    assert "Item" not in refused.value.response
    side = collect(recorder.observations(), ended_ns=0).side
    assert [(s.operation, s.key, s.changed) for s in side] == [
        ("UpdateItem", key, True),
        ("UpdateItem", key, True),  # no old image asked for by the observer: ADD changes it
        ("PutItem", key, False),  # 4.0 is the 4 it held
        ("PutItem", key, True),
        ("DeleteItem", key, True),
    ]
    assert side[0].before == "-" and side[0].after != "" and side[1].before == ""
    assert side[2].before == side[2].after != "" and side[4].after == "-"
    # What each did to the item's numbers, where both images are known: the first made the
    # number (no amount), the put of 1 took 3 from the 4 it read back, as an
    # ``ADD reserved :q`` of -3 would.
    assert [s.moves for s in side] == [{"reserved": "new"}, None, None, {"reserved": "-3"}, None]


def test_a_key_the_table_does_not_have_is_noted_as_the_runs_gap(
    backend_url: str, table: str
) -> None:
    observer = WriteObserver(table, sink=Recorder())
    observer.install()
    try:
        with pytest.raises(ClientError):
            client("dynamodb", backend_url).update_item(
                TableName=table,
                Key={"sku": {"S": "widget"}},
                UpdateExpression="ADD units :q",
                ExpressionAttributeValues={":q": {"N": "1"}},
            )
    finally:
        observer.uninstall()
    assert observer.take_missing() == [
        f"loadtest: the handler's UpdateItem call on {table!r} failed with ValidationException"
    ]


def test_a_refused_call_to_another_service_names_its_service(backend_url: str, table: str) -> None:
    observer = WriteObserver(table, sink=Recorder())
    observer.install()
    try:
        with pytest.raises(ClientError):
            client("kinesis", backend_url).put_record(
                StreamName="never-made", Data=b"{}", PartitionKey="o-1"
            )
    finally:
        observer.uninstall()
    assert observer.take_missing() == [
        "loadtest: the handler's PutRecord call on 'never-made' failed with "
        "ResourceNotFoundException in kinesis"
    ]

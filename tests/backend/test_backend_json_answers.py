"""A JSON-protocol answer written by its planned serialization is moto's, byte for byte."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable, Iterator
from enum import Enum
from typing import Any

import pytest
from moto.core.responses import ActionContext, ActionResult, BaseResponse
from moto.core.serialize import JSONSerializer
from moto.core.utils import get_service_model
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.sqs.exceptions import QueueDoesNotExist
from werkzeug.test import Client

from loadtest.backend import patches
from loadtest.backend.core import json_answers
from loadtest.backend.http.fastpath import JsonProtocolFastPath

patches.apply()

_AUTH = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/{}/aws4_request, "
    "SignedHeaders=host, Signature=x"
)
_PREFIXES = {"dynamodb": "DynamoDB_20120810", "sqs": "AmazonSQS"}
_QUEUE = "http://localhost/123456789012/answers"
_FIFO = "http://localhost/123456789012/answers.fifo"

_TEXTS = ["", "plain", 'quo"te\\back', "ünï\u00e7ødé ☃ \U0001f600", "tab\tnew\nline\r", "<x>&amp;"]


def _text(rng: random.Random) -> str:
    return rng.choice(_TEXTS) + "".join(
        rng.choice("abcXYZ019 -_\"'\\/é☃") for _ in range(rng.randrange(12))
    )


def _message_attributes(rng: random.Random) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for i in range(rng.randrange(4)):
        kind = rng.choice(["String", "Number", "Binary", "String.custom", "Binary.jpg"])
        if kind.startswith("Binary"):
            value = {"BinaryValue": base64.b64encode(_text(rng).encode() + b"\x00\xff").decode()}
        elif kind == "Number":
            value = {"StringValue": str(rng.randrange(-5, 10**6))}
        else:
            value = {"StringValue": _text(rng) or "x"}
        attributes[f"attr{i}_{kind.replace('.', '_')}"] = {"DataType": kind, **value}
    return attributes


_VALUE: dict[str, Any] = {
    "S": "x",
    "N": "1.50",
    "B": base64.b64encode(b"\x00\x01\xff").decode(),
    "SS": ["a", "ü"],
    "NS": ["1", "-2.5"],
    "BS": [base64.b64encode(b"z").decode()],
    "M": {"a": {"L": [{"N": "2"}, {"M": {"q": {"BOOL": True}}}, {"NULL": True}]}, "": {"S": ""}},
    "L": [],
}
"""A DynamoDB value holding every kind, maps and lists of itself included."""


def _item(rng: random.Random, key: str) -> dict[str, Any]:
    item: dict[str, Any] = {"id": {"S": key}}
    for name, kind in rng.sample(sorted(_VALUE.items()), rng.randrange(1, len(_VALUE))):
        item[f"a_{name}"] = {name: kind}
    item["text"] = {"S": _text(rng) or "x"}
    return item


def _sqs_calls(rng: random.Random) -> list[tuple[str, str, dict[str, Any]]]:
    calls: list[tuple[str, str, dict[str, Any]]] = [
        ("sqs", "CreateQueue", {"QueueName": "answers"}),
        (
            "sqs",
            "CreateQueue",
            {"QueueName": "answers.fifo", "Attributes": {"FifoQueue": "true"}},
        ),
        ("sqs", "GetQueueUrl", {"QueueName": "answers"}),
        ("sqs", "ListQueues", {}),
        ("sqs", "GetQueueAttributes", {"QueueUrl": _QUEUE, "AttributeNames": ["All"]}),
        ("sqs", "ReceiveMessage", {"QueueUrl": _QUEUE}),  # nothing yet: {}
    ]
    for round_ in range(6):
        entries = []
        for i in range(10):
            entry: dict[str, Any] = {"Id": f"e{i}", "MessageBody": _text(rng) or "b"}
            if rng.random() < 0.6:
                entry["MessageAttributes"] = _message_attributes(rng)
            if rng.random() < 0.3:
                entry["MessageSystemAttributes"] = {
                    "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-abc"}
                }
            entries.append(entry)
        calls.append(("sqs", "SendMessageBatch", {"QueueUrl": _QUEUE, "Entries": entries}))
        calls.append(
            (
                "sqs",
                "SendMessage",
                {
                    "QueueUrl": _QUEUE,
                    "MessageBody": _text(rng) or "b",
                    "MessageAttributes": _message_attributes(rng),
                },
            )
        )
        calls.append(
            (
                "sqs",
                "SendMessageBatch",
                {
                    "QueueUrl": _FIFO,
                    "Entries": [
                        {
                            "Id": f"f{i}",
                            "MessageBody": f"fifo {round_} {i}",
                            "MessageGroupId": f"g{i % 3}",
                            "MessageDeduplicationId": f"d{round_}-{i}",
                        }
                        for i in range(4)
                    ],
                },
            )
        )
        names = rng.choice(
            [["All"], [], ["SentTimestamp", "ApproximateReceiveCount"], ["SenderId"]]
        )
        calls.append(
            (
                "sqs",
                "ReceiveMessage",
                {
                    "QueueUrl": rng.choice([_QUEUE, _QUEUE, _FIFO]) if round_ else _QUEUE,
                    "MaxNumberOfMessages": 10,
                    "VisibilityTimeout": 0 if round_ % 2 else 60,
                    "MessageSystemAttributeNames": names,
                    "MessageAttributeNames": rng.choice([["All"], [], ["attr0_String"]])
                    if round_
                    else ["All"],
                },
            )
        )
        calls.append(
            (
                "sqs",
                "DeleteMessageBatch",
                {
                    "QueueUrl": _QUEUE,
                    "Entries": [{"Id": "x", "ReceiptHandle": "unknown"}],  # Failed, not Successful
                },
            )
        )
    calls.append(("sqs", "ReceiveMessage", {"QueueUrl": _QUEUE, "AttributeNames": ["All"]}))
    calls.append(("sqs", "ListQueueTags", {"QueueUrl": _QUEUE}))
    calls.append(("sqs", "ReceiveMessage", {"QueueUrl": _QUEUE, "MaxNumberOfMessages": 99}))
    return calls


def _dynamodb_calls(rng: random.Random) -> list[tuple[str, str, dict[str, Any]]]:
    table = "answers"
    calls: list[tuple[str, str, dict[str, Any]]] = [
        (
            "dynamodb",
            "CreateTable",
            {
                "TableName": table,
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
            },
        ),
        ("dynamodb", "DescribeTable", {"TableName": table}),
        ("dynamodb", "ListTables", {}),
    ]
    for i in range(8):
        key = f"k{i}"
        put = {
            "TableName": table,
            "Item": _item(rng, key),
            "ConditionExpression": "attribute_not_exists(id)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            "ReturnConsumedCapacity": rng.choice(["TOTAL", "NONE", "INDEXES"]),
        }
        calls += [
            ("dynamodb", "PutItem", put),
            ("dynamodb", "PutItem", put),  # refused: an error, with the item
            (
                "dynamodb",
                "PutItem",
                {"TableName": table, "Item": _item(rng, key), "ReturnValues": "ALL_OLD"},
            ),
            (
                "dynamodb",
                "GetItem",
                {"TableName": table, "Key": {"id": {"S": key}}, "ConsistentRead": True},
            ),
            (
                "dynamodb",
                "UpdateItem",
                {
                    "TableName": table,
                    "Key": {"id": {"S": key}},
                    "UpdateExpression": "SET #t = :t",
                    "ExpressionAttributeNames": {"#t": "text"},
                    "ExpressionAttributeValues": {":t": {"S": _text(rng) or "y"}},
                    "ReturnValues": rng.choice(["ALL_NEW", "UPDATED_OLD", "NONE"]),
                },
            ),
        ]
    calls += [
        ("dynamodb", "Scan", {"TableName": table}),
        (
            "dynamodb",
            "Query",
            {
                "TableName": table,
                "KeyConditionExpression": "id = :k",
                "ExpressionAttributeValues": {":k": {"S": "k1"}},
            },
        ),
        (
            "dynamodb",
            "BatchGetItem",
            {"RequestItems": {table: {"Keys": [{"id": {"S": "k2"}}, {"id": {"S": "k3"}}]}}},
        ),
        (
            "dynamodb",
            "BatchWriteItem",
            {"RequestItems": {table: [{"PutRequest": {"Item": _item(rng, "b1")}}]}},
        ),
        (
            "dynamodb",
            "TransactWriteItems",
            {"TransactItems": [{"Put": {"TableName": table, "Item": _item(rng, "t1")}}]},
        ),
        (
            "dynamodb",
            "DeleteItem",
            {"TableName": table, "Key": {"id": {"S": "k4"}}, "ReturnValues": "ALL_OLD"},
        ),
        ("dynamodb", "DeleteItem", {"TableName": table, "Key": {"id": {"S": "k5"}}}),
        ("dynamodb", "GetItem", {"TableName": "no-such-table", "Key": {"id": {"S": "k"}}}),
    ]
    return calls


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, bool, Any, Any]]]:
    """Each answer as installed and as moto's serializer writes it, and whether planned."""
    installed = ActionResult.execute_result
    moto_s = installed.__wrapped__  # type: ignore[attr-defined]
    answers: list[tuple[str, bool, Any, Any]] = []

    def checking(self: ActionResult, context: Any) -> Any:
        got = installed(self, context)
        expected = moto_s(self, context)
        # moto adds its own headers to the answer's afterwards: compare them as written
        snapshot = (got[0], dict(got[1]), got[2])
        plan = json_answers._plan_for(context.operation_model)
        planned = context.serializer_class is JSONSerializer and plan is not None
        if planned:
            try:
                assert plan is not None
                plan.answer(self.result)
            except Exception:  # it answered through moto's, as it may
                planned = False
        answers.append((context.operation_model.name, planned, snapshot, expected))
        return got

    monkeypatch.setattr(ActionResult, "execute_result", checking)
    yield answers


def _post(client: Client, service: str, action: str, body: dict[str, Any]) -> None:
    client.post(
        "/",
        data=json.dumps(body),
        headers={
            "X-Amz-Target": f"{_PREFIXES[service]}.{action}",
            "Content-Type": "application/x-amz-json-1.0",
            "Authorization": _AUTH.format(service),
        },
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_answer_is_moto_s_byte_for_byte(
    compared: list[tuple[str, bool, Any, Any]], seed: int
) -> None:
    rng = random.Random(seed)
    client = Client(JsonProtocolFastPath(DomainDispatcherApplication(create_backend_app)))
    for service, action, body in _sqs_calls(rng) + _dynamodb_calls(rng):
        _post(client, service, action, body)
    assert [(op, got, expected) for op, _, got, expected in compared if got != expected] == []
    planned = {op for op, was_planned, _, _ in compared if was_planned}
    for operation in (
        "ReceiveMessage",
        "SendMessageBatch",
        "DeleteMessageBatch",
        "SendMessage",
        "PutItem",
        "GetItem",
        "UpdateItem",
        "Query",
        "DescribeTable",
    ):
        assert operation in planned
    messages = [
        m
        for op, _, got, _ in compared
        if op == "ReceiveMessage"
        for m in json.loads(got[2]).get("Messages", [])
    ]
    assert any("MessageAttributes" in m for m in messages)
    assert any(
        "BinaryValue" in a for m in messages for a in m.get("MessageAttributes", {}).values()
    )


class _Colour(Enum):
    RED = "red"


class _Model:
    """Not plain data: moto reads it through its attribute picker."""

    message_id = "from-an-object"


_ODD_RESULTS: list[Callable[[], Any]] = [
    lambda: None,
    lambda: {},
    lambda: {"Messages": []},
    lambda: {"Messages": [{"MessageId": _Colour.RED, "Body": 7, "Attributes": {"SenderId": None}}]},
    lambda: {"Messages": [{"MessageId": "m", "MessageAttributes": {"a": {"BinaryValue": "t"}}}]},
    lambda: {"Messages": [{"message_id": "snake", "Body": {}, "MD5OfBody": []}]},
    lambda: {"Messages": [None, {"MessageId": "m"}]},
    lambda: {"Messages": [_Model()]},
    lambda: {"Messages": ({"MessageId": str(i)} for i in range(2))},
    lambda: {"Messages": [{"MessageAttributes": {"": {"StringValue": "empty key"}}}]},
    lambda: {"Messages": [{"MessageAttributes": {"a": {"StringListValues": ["x", 1]}}}]},
    lambda: {"Messages": [{"MessageAttributes": {"a": {"BinaryValue": 3}}}]},  # moto raises
    QueueDoesNotExist,
]
"""Results no SQS call returns: each is written as moto writes it, planned or not."""


@pytest.mark.parametrize("make_result", _ODD_RESULTS)
def test_odd_values_are_written_as_moto_writes_them(make_result: Callable[[], Any]) -> None:
    operation_model = get_service_model("sqs").operation_model("ReceiveMessage")
    context = ActionContext(
        operation_model.service_model, operation_model, JSONSerializer, BaseResponse("sqs")
    )
    moto_s = ActionResult.execute_result.__wrapped__  # type: ignore[attr-defined]
    assert _outcome(ActionResult.execute_result, make_result, context) == _outcome(
        moto_s, make_result, context
    )


def _outcome(execute_result: Any, make_result: Callable[[], Any], context: Any) -> Any:
    try:
        return execute_result(ActionResult(make_result()), context)
    except Exception as exc:  # the same failure is the same answer: a server error
        return type(exc), str(exc)


def test_a_shape_the_plans_do_not_cover_keeps_moto_s_serializer() -> None:
    plan = json_answers._plan_for(get_service_model("sqs").operation_model("ReceiveMessage"))
    assert plan is not None
    with pytest.raises(json_answers._Unplanned):
        plan.answer({"Messages": [_Model()]})


def test_the_mirrored_moto_source_is_the_installed_one() -> None:
    # A moto release that changes the serializer turns the plans off (moto's own writes
    # every answer); this test says so, so the copy can be brought up to date.
    assert json_answers.mirrors_installed_moto()
    assert ActionResult.execute_result.__wrapped__ is not None  # type: ignore[attr-defined]


def test_a_moto_source_other_than_the_mirrored_one_keeps_moto_s_serializer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(json_answers.MIRRORED_SOURCES, "AttributePicker.__call__", "0" * 64)
    assert not json_answers.mirrors_installed_moto()

"""The memoised moto functions answer as moto's own do."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import pytest
from moto.core.responses import ActionResult
from moto.core.serialize import XFormedAttributePicker
from moto.core.utils import camelcase_to_underscores, method_names_from_class
from moto.dynamodb.comparisons import create_condition_expression_parser, get_filter_expression
from moto.dynamodb.models.dynamo_type import DynamoType, Item
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.test import Client

from loadtest.backend import patches
from loadtest.backend.core import memo
from loadtest.backend.http.fastpath import JsonProtocolFastPath


def test_a_condition_is_parsed_once_per_expression_names_and_values() -> None:
    parse = memo.memo_filter_expression(get_filter_expression)
    values = {":v": {"S": "a"}}
    first = parse("#k = :v", {"#k": "id"}, values)
    assert parse("#k = :v", {"#k": "id"}, {":v": {"S": "a"}}) is first
    values[":v"]["S"] = "b"  # the caller's dict changes: the cached tree does not
    item = Item(DynamoType({"S": "a"}), None, {"id": {"S": "a"}})
    assert first.expr(item)
    assert parse("#k = :v", {"#k": "id"}, values) is not first
    assert not parse("#k = :v", {"#k": "id"}, values).expr(item)


def test_a_condition_that_fails_to_parse_fails_every_time() -> None:
    parse = memo.memo_filter_expression(get_filter_expression)
    for _ in range(2):
        with pytest.raises(Exception) as caught:
            parse("#k = :missing", {"#k": "id"}, {})
        with pytest.raises(type(caught.value)):
            get_filter_expression("#k = :missing", {"#k": "id"}, {})


@pytest.mark.parametrize(
    ("expr", "names", "values"),
    [
        ("attribute_not_exists(id)", {}, {}),
        ("#k = :v AND attribute_exists(#n)", {"#k": "id", "#n": "n"}, {":v": {"S": "a"}}),
        (None, {}, {}),
    ],
)
def test_a_response_handler_s_parser_finds_what_moto_s_finds(
    expr: str | None, names: dict[str, str], values: dict[str, dict[str, str]]
) -> None:
    create = memo.memo_condition_parser(create_condition_expression_parser)
    expected = create_condition_expression_parser(expr, names, values)
    expected.parse()
    for _ in range(2):
        parser = create(expr, dict(names), dict(values))
        assert parser.expr_attr_names_found == []  # filled by parse(), as moto's
        parser.parse()
        assert parser.expr_attr_names_found == expected.expr_attr_names_found
        assert parser.expr_attr_values_found == expected.expr_attr_values_found
        parser.expr_attr_names_found += ["#projection"]  # moto's handlers extend it


def test_a_response_handler_s_parser_fails_in_parse_every_time() -> None:
    create = memo.memo_condition_parser(create_condition_expression_parser)
    for _ in range(2):
        parser = create("#k = :missing", {"#k": "id"}, {})  # the handler's try starts later
        with pytest.raises(Exception) as caught:
            parser.parse()
        with pytest.raises(type(caught.value), match=re.escape(str(caught.value))):
            create_condition_expression_parser("#k = :missing", {"#k": "id"}, {}).parse()


def test_method_names_and_action_names_are_moto_s() -> None:
    names = memo.memo_method_names(method_names_from_class)
    assert names(Item) == method_names_from_class(Item)
    assert names(Item) is not names(Item)
    convert = memo.memo_camelcase(camelcase_to_underscores)
    assert convert("DeleteMessageBatch") == "delete_message_batch" == convert("DeleteMessageBatch")


_AUTH = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/{}/aws4_request, "
    "SignedHeaders=host, Signature=x"
)


def _per_message_requests() -> list[tuple[str, str, dict[str, Any]]]:
    """A run's per-message calls, each answered through moto's serializer or not."""
    queue = "http://localhost/123456789012/memo-keys"
    key = {"id": {"S": "a"}}
    put = {
        "TableName": "memo-keys",
        "Item": {"id": {"S": "a"}, "status": {"S": "pending"}, "n": {"N": "1"}},
        "ConditionExpression": "attribute_not_exists(id)",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
    }
    return [
        (
            "dynamodb",
            "CreateTable",
            {
                "TableName": "memo-keys",
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
            },
        ),
        ("dynamodb", "PutItem", put),
        ("dynamodb", "PutItem", put),  # ConditionalCheckFailedException, with the item
        ("dynamodb", "GetItem", {"TableName": "memo-keys", "Key": key, "ConsistentRead": True}),
        (
            "dynamodb",
            "UpdateItem",
            {
                "TableName": "memo-keys",
                "Key": key,
                "UpdateExpression": "SET #s = :sent",
                "ConditionExpression": "#s = :pending",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": {":sent": {"S": "sent"}, ":pending": {"S": "pending"}},
                "ReturnValues": "ALL_NEW",
            },
        ),
        ("dynamodb", "DeleteItem", {"TableName": "memo-keys", "Key": key}),
        ("sqs", "CreateQueue", {"QueueName": "memo-keys"}),
        (
            "sqs",
            "SendMessageBatch",
            {
                "QueueUrl": queue,
                "Entries": [
                    {
                        "Id": str(i),
                        "MessageBody": f"m{i}",
                        "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}},
                    }
                    for i in range(3)
                ],
            },
        ),
        (
            "sqs",
            "ReceiveMessage",
            {
                "QueueUrl": queue,
                "MaxNumberOfMessages": 10,
                "MessageSystemAttributeNames": ["All"],
                "MessageAttributeNames": ["All"],
            },
        ),
        (
            "sqs",
            "DeleteMessageBatch",
            {"QueueUrl": queue, "Entries": [{"Id": "x", "ReceiptHandle": "unknown"}]},
        ),
    ]


def test_a_member_s_possible_keys_are_moto_s(monkeypatch: pytest.MonkeyPatch) -> None:
    patches.apply()
    installed = XFormedAttributePicker.get_possible_keys
    moto_s = installed.__wrapped__  # type: ignore[attr-defined]
    compared: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = []

    def checking(picker: XFormedAttributePicker, context: Any) -> Iterable[str]:
        got = tuple(installed(picker, context))
        compared.append((context.key, got, tuple(moto_s(picker, context))))
        return got

    monkeypatch.setattr(XFormedAttributePicker, "get_possible_keys", checking)
    # moto's own serializer, which asks the picker per member (the planned one asks it
    # once per shape, and for any answer it does not plan)
    monkeypatch.setattr(
        ActionResult,
        "execute_result",
        ActionResult.execute_result.__wrapped__,  # type: ignore[attr-defined]
    )
    client = Client(JsonProtocolFastPath(DomainDispatcherApplication(create_backend_app)))
    prefixes = {"dynamodb": "DynamoDB_20120810", "sqs": "AmazonSQS"}
    for _ in range(2):  # the second time from the cache
        for service, action, body in _per_message_requests():
            client.post(
                "/",
                data=json.dumps(body),
                headers={
                    "X-Amz-Target": f"{prefixes[service]}.{action}",
                    "Content-Type": "application/x-amz-json-1.0",
                    "Authorization": _AUTH.format(service),
                },
            )
    assert len(compared) > 50
    assert [c for c in compared if c[1] != c[2]] == []

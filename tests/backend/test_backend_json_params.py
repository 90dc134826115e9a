"""A JSON-protocol body walked by its planned parse gives moto's parameters, exactly."""

from __future__ import annotations

import datetime
import json
from typing import Any

import botocore.session
import pytest
from botocore.serialize import create_serializer
from moto.core.responses import BaseResponse

from loadtest.backend import patches
from loadtest.backend.core import json_params

patches.apply()

_VALUE: dict[str, Any] = {
    "S": "x",
    "N": "1",
    "B": b"\x00\x01",
    "SS": ["a"],
    "NS": ["1"],
    "BS": [b"z"],
    "M": {"a": {"L": [{"N": "2"}, {"M": {"q": {"BOOL": True}}}, {"NULL": True}]}},
    "L": [],
}
"""A DynamoDB value holding every kind, maps and lists of itself included."""

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "dynamodb",
        "PutItem",
        {
            "TableName": "t",
            "Item": {"id": {"S": "a"}, "n": {"N": "4"}, "deep": {"M": {"x": _VALUE}}},
            "ConditionExpression": "attribute_not_exists(id)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        },
    ),
    ("dynamodb", "GetItem", {"TableName": "t", "Key": {"id": {"S": "a"}}, "ConsistentRead": True}),
    (
        "dynamodb",
        "Query",
        {
            "TableName": "t",
            "Limit": 5,
            "KeyConditionExpression": "a = :a",
            "ExpressionAttributeValues": {":a": _VALUE},
        },
    ),
    (
        "dynamodb",
        "BatchWriteItem",
        {"RequestItems": {"t": [{"PutRequest": {"Item": {"v": _VALUE}}}]}},
    ),
    ("dynamodb", "ListTables", {}),
    (
        "sqs",
        "ReceiveMessage",
        {
            "QueueUrl": "http://localhost/123456789012/q",
            "MaxNumberOfMessages": 10,
            "VisibilityTimeout": 60,
            "MessageSystemAttributeNames": ["All"],
            "MessageAttributeNames": ["All"],
        },
    ),
    (
        "sqs",
        "SendMessageBatch",
        {
            "QueueUrl": "http://localhost/123456789012/q",
            "Entries": [
                {
                    "Id": "1",
                    "MessageBody": "b",
                    "DelaySeconds": 2,
                    "MessageAttributes": {"a": {"DataType": "Binary", "BinaryValue": b"\x01"}},
                }
            ],
        },
    ),
    (
        "sqs",
        "DeleteMessageBatch",
        {"QueueUrl": "u", "Entries": [{"Id": "1", "ReceiptHandle": "r"}]},
    ),
    (
        "events",
        "PutEvents",
        {
            "Entries": [
                {
                    "Source": "s",
                    "DetailType": "d",
                    "Detail": "{}",
                    "Time": datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC),
                }
            ]
        },
    ),
    ("stepfunctions", "StartExecution", {"stateMachineArn": "a", "input": "{}"}),
]
"""Calls whose bodies botocore writes as a client sends them, one per shape kind."""

ODD_BODIES = [
    b"",
    b"{}",
    b"null",
    b"not json",
    b'{"TableName": 3, "Item": null}',
    b'{"Item": []}',
    b'{"Entries": {"a": 1}}',
    b'{"MaxNumberOfMessages": "x"}',
    b'{"Item": {"id": {"M": {"a": {"L": 7}}}}}',
]
"""Bodies the shapes do not fit: moto's parse answers or raises, and so must the plan."""


class _Request:
    method = "POST"
    path = "/"

    def __init__(self, data: bytes) -> None:
        self.values: dict[str, Any] = {}
        self.headers: dict[str, Any] = {}
        self.data = data
        self.content_type = "application/x-amz-json-1.0"


def _body(service: str, operation: str, params: dict[str, Any]) -> bytes:
    model = botocore.session.get_session().get_service_model(service)
    serializer = create_serializer(model.metadata["protocol"])
    body = serializer.serialize_to_request(params, model.operation_model(operation))["body"]
    return body if isinstance(body, bytes) else body.encode()


def _parsed(parse: Any, service: str, operation: str, data: bytes) -> tuple[str, str]:
    """What ``parse`` leaves in ``params`` (every value's type and the key order kept), or
    the exception it raises."""
    response = BaseResponse(service_name=service)
    response._get_action = lambda: operation  # type: ignore[method-assign]
    response.uri_match = {}
    try:
        parse(response, _Request(data))
    except Exception as exc:  # the same exception is what is compared
        return "raised", f"{type(exc).__name__}: {exc}"
    return "parsed", json.dumps(response.params, default=lambda v: f"{type(v).__name__}:{v!r}")


def test_the_mirrored_moto_source_is_the_installed_one() -> None:
    # A moto release that changes the parser turns the plan off (moto's own parse runs);
    # this test says so, so the copy can be brought up to date.
    assert json_params.mirrors_installed_moto()
    assert BaseResponse.parse_parameters.__wrapped__ is not None  # type: ignore[attr-defined]


@pytest.mark.parametrize(("service", "operation", "params"), CALLS, ids=lambda v: str(v)[:20])
def test_a_planned_parse_is_moto_s(service: str, operation: str, params: dict[str, Any]) -> None:
    moto_parse = BaseResponse.parse_parameters.__wrapped__  # type: ignore[attr-defined]
    for data in [_body(service, operation, params), *ODD_BODIES]:
        ours = _parsed(BaseResponse.parse_parameters, service, operation, data)
        assert ours == _parsed(moto_parse, service, operation, data), data
        # and again, from the plan made by the first
        assert _parsed(BaseResponse.parse_parameters, service, operation, data) == ours


def test_another_protocol_is_parsed_by_moto() -> None:
    class FormRequest(_Request):
        def __init__(self, data: bytes) -> None:
            super().__init__(data)
            self.content_type = "application/x-www-form-urlencoded"
            self.values = {"Action": "ListTopics"}

    calls: list[object] = []

    def moto_parse(response: Any, request: Any) -> None:
        calls.append(request)

    planned = json_params.planned_parse_parameters(moto_parse)
    response = BaseResponse(service_name="sns")
    response._get_action = lambda: "ListTopics"  # type: ignore[method-assign]
    request = FormRequest(b"Action=ListTopics")
    planned(response, request)
    assert calls == [request]

"""The fast path answers exactly as moto's full path (Flask) does."""

from __future__ import annotations

import io
import json
import re
import urllib.parse
import zlib
from collections.abc import Iterator
from typing import Any

import flask
import pytest
from moto.core.request import EnvironHeaders
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.test import Client

from loadtest.backend import patches
from loadtest.backend.http.fastpath import (
    JsonProtocolFastPath,
    KeptKeyHeaders,
    ServerRequest,
    _no_form,
    headers_dict,
    plain_answer,
)

_AUTH = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/{}/aws4_request, "
    "SignedHeaders=host, Signature=x"
)
_VOLATILE = {
    "CreationDateTime",
    "MessageId",
    "ReceiptHandle",
    "TableId",
    "EventId",
    "executionArn",
    "startDate",
    "creationDate",
}
# A random id; and two that follow the body (a timestamp's digits), checked apart.
_UNCOMPARED_HEADERS = {"x-amzn-requestid", "x-amz-crc32", "content-length"}


@pytest.fixture
def flask_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    calls: list[str] = []
    original = flask.Flask.__call__

    def counting(self: flask.Flask, environ: Any, start_response: Any) -> Any:
        calls.append(str(environ.get("HTTP_X_AMZ_TARGET")))
        return original(self, environ, start_response)

    monkeypatch.setattr(flask.Flask, "__call__", counting)
    yield calls


def _requests(suffix: str) -> list[tuple[str, str, dict[str, Any]]]:
    table, queue = f"t_{suffix}", f"q_{suffix}"
    key = {"id": {"S": "a"}}
    put = {
        "TableName": table,
        "Item": {"id": {"S": "a"}, "v": {"N": "1"}},
        "ConditionExpression": "attribute_not_exists(id)",
    }
    return [
        (
            "dynamodb",
            "DynamoDB_20120810.CreateTable",
            {
                "TableName": table,
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
                "BillingMode": "PAY_PER_REQUEST",
            },
        ),
        ("dynamodb", "DynamoDB_20120810.PutItem", put),
        ("dynamodb", "DynamoDB_20120810.PutItem", put),  # ConditionalCheckFailedException
        ("dynamodb", "DynamoDB_20120810.GetItem", {"TableName": table, "Key": key}),
        (
            "dynamodb",
            "DynamoDB_20120810.UpdateItem",
            {
                "TableName": table,
                "Key": key,
                "UpdateExpression": "SET v = v + :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
                "ReturnValues": "ALL_NEW",
            },
        ),
        (
            "dynamodb",
            "DynamoDB_20120810.TransactWriteItems",
            {"TransactItems": [{"Put": put}]},  # TransactionCanceledException
        ),
        (
            "dynamodb",
            "DynamoDB_20120810.ExecuteStatement",
            {"Statement": f"INSERT INTO \"{table}\" VALUE {{'id': 'a'}}"},  # DuplicateItem
        ),
        ("dynamodb", "DynamoDB_20120810.DescribeTable", {"TableName": "missing"}),
        ("sqs", "AmazonSQS.CreateQueue", {"QueueName": queue}),
        (
            "sqs",
            "AmazonSQS.SendMessage",
            {"QueueUrl": f"http://localhost/123456789012/{queue}", "MessageBody": "m"},
        ),
        (
            "sqs",
            "AmazonSQS.ReceiveMessage",
            {"QueueUrl": f"http://localhost/123456789012/{queue}", "MaxNumberOfMessages": 10},
        ),
        ("sqs", "AmazonSQS.GetQueueUrl", {"QueueName": "missing"}),  # QueueDoesNotExist
        ("events", "AWSEvents.CreateEventBus", {"Name": f"b_{suffix}"}),
        (
            "events",
            "AWSEvents.PutEvents",
            {
                "Entries": [
                    {
                        "EventBusName": f"b_{suffix}",
                        "Source": "orders",
                        "DetailType": "OrderPlaced",
                        "Detail": '{"id": "a"}',
                    }
                ]
            },
        ),
        ("events", "AWSEvents.DescribeEventBus", {"Name": "missing"}),  # ResourceNotFound
        (
            "states",
            "AWSStepFunctions.CreateStateMachine",
            {
                "name": f"sm_{suffix}",
                "definition": '{"StartAt": "A", "States": {"A": {"Type": "Pass", "End": true}}}',
                "roleArn": "arn:aws:iam::123456789012:role/r",
            },
        ),
        (
            "states",
            "AWSStepFunctions.StartExecution",
            {
                "stateMachineArn": f"arn:aws:states:us-east-1:123456789012:stateMachine:sm_{suffix}",
                "name": "a",
            },
        ),
        (
            "states",
            "AWSStepFunctions.DescribeStateMachine",
            {"stateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:missing"},
        ),
    ]


def _sns_requests(suffix: str) -> list[dict[str, str]]:
    topic = f"arn:aws:sns:us-east-1:123456789012:t_{suffix}"
    return [
        {"Action": "CreateTopic", "Name": f"t_{suffix}"},
        {"Action": "Publish", "TopicArn": topic, "Message": '{"id": "a"}'},
        {
            "Action": "PublishBatch",
            "TopicArn": topic,
            "PublishBatchRequestEntries.member.1.Id": "one",
            "PublishBatchRequestEntries.member.1.Message": "m",
        },
        {"Action": "GetTopicAttributes", "TopicArn": topic + "_missing"},  # NotFound
    ]


def _post(client: Client, service: str, target: str, body: dict[str, Any]) -> Any:
    return client.post(
        "/",
        data=json.dumps(body),
        headers={
            "X-Amz-Target": target,
            "Content-Type": "application/x-amz-json-1.1"
            if service == "events"
            else "application/x-amz-json-1.0",
            "Authorization": _AUTH.format(service),
        },
    )


def _normalised(body: bytes, suffix: str) -> Any:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(body.decode().replace(suffix, "SUFFIX")))


def test_fast_path_answers_as_the_full_path(flask_calls: list[str]) -> None:
    patches.apply()
    full = Client(DomainDispatcherApplication(create_backend_app))
    fast = Client(JsonProtocolFastPath(DomainDispatcherApplication(create_backend_app)))
    for (service, target, body), (_, _, fast_body) in zip(
        _requests("full"), _requests("fast"), strict=True
    ):
        expected = _post(full, service, target, body)
        flask_calls.clear()
        got = _post(fast, service, target, fast_body)
        assert flask_calls == [], target
        assert got.status == expected.status, target
        assert [(k, v) for k, v in got.headers.items() if k.lower() not in _UNCOMPARED_HEADERS] == [
            (k, v) for k, v in expected.headers.items() if k.lower() not in _UNCOMPARED_HEADERS
        ], target
        assert _normalised(got.get_data(), "fast") == _normalised(expected.get_data(), "full")
        if service == "dynamodb":  # botocore verifies it
            assert got.headers["x-amz-crc32"] == str(zlib.crc32(got.get_data()) & 0xFFFFFFFF)
        assert got.headers["x-amzn-requestid"]
        assert got.headers["Content-Length"] == str(len(got.get_data()))


def _post_query(client: Client, body: dict[str, str]) -> Any:
    return client.post(
        "/",
        data=urllib.parse.urlencode({**body, "Version": "2010-03-31"}),
        headers={
            "Content-Type": "application/x-www-form-urlencoded; charset=utf-8",
            "Authorization": _AUTH.format("sns"),
        },
    )


def _query_normalised(body: bytes, suffix: str) -> bytes:
    text = body.decode().replace(suffix, "SUFFIX")
    return re.sub(r"<(RequestId|MessageId)>[^<]*<", r"<\1><", text).encode()


def test_sns_query_protocol_answers_as_the_full_path(flask_calls: list[str]) -> None:
    patches.apply()
    full = Client(DomainDispatcherApplication(create_backend_app))
    fast = Client(JsonProtocolFastPath(DomainDispatcherApplication(create_backend_app)))
    for body, fast_body in zip(_sns_requests("full"), _sns_requests("fast"), strict=True):
        expected = _post_query(full, body)
        flask_calls.clear()
        got = _post_query(fast, fast_body)
        assert flask_calls == [], body["Action"]
        assert got.status == expected.status, body["Action"]
        assert [(k, v) for k, v in got.headers.items() if k.lower() not in _UNCOMPARED_HEADERS] == [
            (k, v) for k, v in expected.headers.items() if k.lower() not in _UNCOMPARED_HEADERS
        ], body["Action"]
        assert _query_normalised(got.get_data(), "fast") == _query_normalised(
            expected.get_data(), "full"
        )


def test_unknown_action_fails_as_on_the_full_path() -> None:
    patches.apply()
    full = Client(DomainDispatcherApplication(create_backend_app))
    fast = Client(JsonProtocolFastPath(DomainDispatcherApplication(create_backend_app)))
    with pytest.raises(Exception) as on_full:
        _post(full, "dynamodb", "DynamoDB_20120810.NoSuchAction", {})
    with pytest.raises(Exception) as on_fast:
        _post(fast, "dynamodb", "DynamoDB_20120810.NoSuchAction", {})
    assert type(on_fast.value) is type(on_full.value)


@pytest.mark.parametrize(
    ("headers", "data"),
    [
        pytest.param(  # unsigned
            {
                "X-Amz-Target": "DynamoDB_20120810.ListTables",
                "Content-Type": "application/x-amz-json-1.0",
            },
            "{}",
            id="unsigned",
        ),
        pytest.param(  # signed for another service than the target's
            {
                "X-Amz-Target": "DynamoDB_20120810.ListTables",
                "Content-Type": "application/x-amz-json-1.0",
                "Authorization": _AUTH.format("sqs"),
            },
            "{}",
            id="other-signing-service",
        ),
        pytest.param(  # SQS's query protocol
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Authorization": _AUTH.format("sqs"),
            },
            "Action=ListQueues&Version=2012-11-05",
            id="query-protocol",
        ),
        pytest.param(  # SNS's query protocol from a browser
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Authorization": _AUTH.format("sns"),
                "Origin": "http://example.com",
            },
            "Action=ListTopics&Version=2010-03-31",
            id="sns-origin",
        ),
        pytest.param(  # JSON signed for SNS: not SNS's protocol
            {
                "X-Amz-Target": "AWSEvents.ListEventBuses",
                "Content-Type": "application/x-amz-json-1.1",
                "Authorization": _AUTH.format("sns"),
            },
            "{}",
            id="target-of-another-service",
        ),
        pytest.param(  # a browser's request: flask-cors answers it
            {
                "X-Amz-Target": "DynamoDB_20120810.ListTables",
                "Content-Type": "application/x-amz-json-1.0",
                "Authorization": _AUTH.format("dynamodb"),
                "Origin": "http://example.com",
            },
            "{}",
            id="origin",
        ),
    ],
)
def test_other_requests_take_the_full_path(
    flask_calls: list[str], headers: dict[str, str], data: str
) -> None:
    patches.apply()
    full = Client(DomainDispatcherApplication(create_backend_app))
    fast = Client(JsonProtocolFastPath(DomainDispatcherApplication(create_backend_app)))
    expected = _outcome(full, headers, data)
    flask_calls.clear()
    got = _outcome(fast, headers, data)
    assert len(flask_calls) == 1
    assert got == expected


def _outcome(client: Client, headers: dict[str, str], data: str) -> tuple[str, bytes]:
    try:
        response = client.post("/", data=data, headers=headers)
    except Exception as exc:  # moto's app raises what it does not understand
        return f"raised {type(exc).__name__}", b""
    # the request id is random, in the body of a query-protocol answer too
    return response.status, re.sub(rb"<RequestId>[^<]*<", b"<RequestId><", response.get_data())


def test_each_host_gets_its_own_urls_as_on_the_full_path() -> None:
    patches.apply()
    full = Client(DomainDispatcherApplication(create_backend_app))
    fast = Client(JsonProtocolFastPath(DomainDispatcherApplication(create_backend_app)))
    for client, queue in ((full, "hosts_full"), (fast, "hosts_fast")):
        _post(client, "sqs", "AmazonSQS.CreateQueue", {"QueueName": queue})
    for host in ("a.example:1234", "b.example", "a.example:1234"):
        answers = []
        for client, queue in ((full, "hosts_full"), (fast, "hosts_fast")):
            response = client.post(
                "/",
                data=json.dumps({"QueueName": queue}),
                headers={
                    "Host": host,
                    "X-Amz-Target": "AmazonSQS.GetQueueUrl",
                    "Content-Type": "application/x-amz-json-1.0",
                    "Authorization": _AUTH.format("sqs"),
                },
            )
            answers.append(json.loads(response.get_data())["QueueUrl"].replace(queue, "Q"))
        assert answers[0] == answers[1] == f"http://{host}/123456789012/Q"


@pytest.mark.parametrize(
    "environ",
    [
        pytest.param(
            {
                "REQUEST_METHOD": "POST",
                "CONTENT_TYPE": "application/x-amz-json-1.0",
                "CONTENT_LENGTH": "12",
                "HTTP_HOST": "localhost",
                "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.PutItem",
                "HTTP_AUTHORIZATION": "AWS4-HMAC-SHA256 Credential=a/b/c/d/e",
                "HTTP_X_AMZ_CRC32": "1",
                "moto.preserved_header_names": {},
            },
            id="boto3",
        ),
        pytest.param({"CONTENT_TYPE": "", "CONTENT_LENGTH": "", "HTTP_X": "1"}, id="empty-content"),
        pytest.param(
            {"HTTP_CONTENT_TYPE": "a", "CONTENT_TYPE": "b", "HTTP_CONTENT_LENGTH": "3"},
            id="http-content",
        ),
        pytest.param({"HTTP_X_AMZ_META_A_B": "v", "HTTP_ÉTÉ": "w", "HTTP_1A": "x"}, id="odd"),
        pytest.param(
            {
                "HTTP_X_AMZ_META_MY_KEY": "v",
                "moto.preserved_header_names": {"HTTP_X_AMZ_META_MY_KEY": "x-amz-meta-my_key"},
            },
            id="preserved",
        ),
    ],
)
def test_the_headers_handed_to_moto_are_moto_s(environ: dict[str, Any]) -> None:
    expected = dict(ServerRequest(environ).headers)
    for _ in range(2):  # the second time from what is kept
        assert headers_dict(environ) == expected
        assert list(headers_dict(environ)) == list(expected)


def test_kept_header_keys_look_up_as_moto_s_headers() -> None:
    environ = {
        "CONTENT_TYPE": "application/x-amz-json-1.0",
        "CONTENT_LENGTH": "12",
        "HTTP_X_AMZ_TARGET": "DynamoDB_20120810.PutItem",
        "HTTP_HOST": "127.0.0.1:5000",
        "HTTP_X_AMZ_META_MY_KEY": "v",
        "HTTP_CONTENT_TYPE": "text/plain",
    }
    moto_s, kept = EnvironHeaders(environ), KeptKeyHeaders(environ)
    assert type(ServerRequest(environ).headers) is KeptKeyHeaders
    names = [
        "content-type",
        "Content-Length",
        "X-Amz-Target",
        "x_amz_target",
        "HOST",
        "x-amz-meta-my_key",
        "Authorization",
        "",
        "http-host",
        "CONTENT_TYPE",
    ]
    for _ in range(2):  # the second time from what is kept
        for name in names:
            assert (name in kept) == (name in moto_s), name
            assert kept.get(name) == moto_s.get(name), name
            if name in moto_s:
                assert kept[name] == moto_s[name], name
        assert list(kept) == list(moto_s)
    for odd in (1, b"host", None):
        with pytest.raises(KeyError) as raised:
            kept[odd]  # type: ignore[index]
        with pytest.raises(type(raised.value)):
            moto_s[odd]  # type: ignore[index]


@pytest.mark.parametrize(
    "content_type", ["application/x-amz-json-1.0", "application/x-amz-json-1.1"]
)
def test_a_json_body_is_read_as_werkzeug_reads_it(content_type: str) -> None:
    body = b'{"TableName": "orders", "Key": {"id": {"S": "a=b&c+d"}}}'

    def request() -> ServerRequest:
        return ServerRequest(
            {
                "REQUEST_METHOD": "POST",
                "CONTENT_TYPE": content_type,
                "CONTENT_LENGTH": str(len(body)),
                "wsgi.input": io.BytesIO(body),
                "wsgi.input_terminated": False,
            }
        )

    loaded, ours = request(), request()
    _no_form(ours)
    assert ours.data == loaded.data == body
    assert ours.form == loaded.form and type(ours.form) is type(loaded.form)
    assert ours.files == loaded.files and type(ours.files) is type(loaded.files)
    assert ours.stream.read() == loaded.stream.read() == b""
    assert ours.get_data() == loaded.get_data() == body


@pytest.mark.parametrize(
    ("status", "headers", "content", "plain"),
    [
        (200, {"Content-Type": "application/x-amz-json-1.0", "x-amz-crc32": 123}, '{"a": 1}', True),
        (400, {"server": "amazon.com", "status": "400"}, b'{"__type": "x"}', True),
        (200, {}, "", True),
        (200, {"content-TYPE": "text/xml"}, "<a>é</a>", True),
        (500, {"X-Many": "1"}, b"", True),
        (201, {"Location": "/a"}, b"x", False),  # Flask rewrites it: Flask's own
        (204, {}, b"", False),
        (299, {}, b"", False),
        (200, {"Access-Control-Allow-Origin": ""}, b"", False),
        (200, {"Content-Length": "3"}, b"abc", False),
        (200, {"X-List": ["a", "b"]}, b"", False),
        ("200", {}, b"", False),
        (200, {}, ["a", "b"], False),
    ],
)
def test_a_plain_answer_is_what_flask_sends(
    status: Any, headers: Any, content: Any, plain: bool
) -> None:
    def sent(app: Any) -> tuple[str, list[tuple[str, str]], bytes]:
        started: list[Any] = []
        body = b"".join(app({"REQUEST_METHOD": "POST"}, lambda s, h: started.append((s, h))))
        return started[0][0], started[0][1], body

    def flask_response(environ: Any, start_response: Any) -> Any:
        response = flask.Response(response=content, status=status, headers=dict(headers))
        if not response.headers.get("Access-Control-Allow-Origin"):
            response.headers["Access-Control-Allow-Origin"] = "*"
        return response(environ, start_response)

    expected = sent(flask_response)
    answer = plain_answer(status, dict(headers), content)
    assert (answer is not None) == plain
    if answer is not None:
        assert answer == expected

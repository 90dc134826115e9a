"""The races moto leaves open, reproduced on purpose, and closed by loadtest's fixes.

Under the GIL these races are rare on a real server (they need a thread switch at one
exact point), so a test that merely hammers the server proves little. Here each race
window is widened with a short sleep at the point moto is preempted, in process, so that
without the fix the race happens every time and with it never does. Each test runs the
unfixed code first, as a control that the window really is open.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.sqs.models import Message, SQSBackend, sqs_backends
from werkzeug.test import Client

from loadtest.backend import patches
from loadtest.backend.embedded import SerialisedDynamoDB

T = TypeVar("T")
THREADS = 8
WINDOW_S = 0.02

patches.apply()


def _together(work: Callable[[int], T]) -> list[T]:
    """``work(index)`` in ``THREADS`` threads released at the same moment."""
    barrier = threading.Barrier(THREADS)

    def run(index: int) -> T:
        barrier.wait()
        return work(index)

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        return list(pool.map(run, range(THREADS)))


@contextmanager
def _pause(owner: Any, name: str, *, before: bool) -> Iterator[None]:
    """Make ``owner.name`` sleep ``WINDOW_S`` before or after it runs: a thread switch there."""
    original = getattr(owner, name)

    def paused(*args: Any, **kwargs: Any) -> Any:
        if before:
            time.sleep(WINDOW_S)
        result = original(*args, **kwargs)
        if not before:
            time.sleep(WINDOW_S)
        return result

    setattr(owner, name, paused)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _dynamodb_call(app: Any, target: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = Client(app).post(
        "/",
        data=json.dumps(body),
        headers={
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"DynamoDB_20120810.{target}",
            "Authorization": "AWS4-HMAC-SHA256 Credential=testing/20250101/us-east-1/"
            "dynamodb/aws4_request, SignedHeaders=host, Signature=0",
        },
    )
    return response.status_code, json.loads(response.get_data() or b"{}")


def _conditional_put_winners(app: Any) -> int:
    table = f"race-{uuid.uuid4().hex[:12]}"
    status, _ = _dynamodb_call(
        app,
        "CreateTable",
        {
            "TableName": table,
            "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
            "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
        },
    )
    assert status == 200

    def put(writer: int) -> int:
        status, _ = _dynamodb_call(
            app,
            "PutItem",
            {
                "TableName": table,
                "Item": {"id": {"S": "the-key"}, "writer": {"N": str(writer)}},
                "ConditionExpression": "attribute_not_exists(id)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            },
        )
        assert status in (200, 400)
        return status

    # PutItem reads the current item with Table.get_item, then checks the condition on it.
    with _pause(Table, "get_item", before=False):
        statuses = _together(put)
    _dynamodb_call(app, "DeleteTable", {"TableName": table})
    return statuses.count(200)


def test_serialised_dynamodb_makes_conditional_put_atomic() -> None:
    moto_app = DomainDispatcherApplication(create_backend_app)
    assert _conditional_put_winners(moto_app) > 1  # control: moto alone, many winners
    assert _conditional_put_winners(SerialisedDynamoDB(moto_app)) == 1


def _received_ids(receive: Callable[..., list[Message]]) -> list[str]:
    backend: SQSBackend = sqs_backends["123456789012"]["us-east-1"]
    name = backend.create_queue(f"race-{uuid.uuid4().hex[:12]}").name
    try:
        for index in range(THREADS):
            backend.send_message(name, f"m{index}")
        # moto's receive checks Message.visible, then (a few steps later) marks it received.
        with _pause(Message, "mark_received", before=True):
            batches = _together(lambda _: receive(backend, name, 10, 0, 300))
        return [message.id for batch in batches for message in batch]
    finally:
        backend.delete_queue(name)


def test_patched_receive_hands_each_message_to_one_poller() -> None:
    moto_receive = SQSBackend.receive_message.__wrapped__  # type: ignore[attr-defined]
    control = _received_ids(moto_receive)
    assert len(control) > len(set(control))  # control: moto alone, messages handed out twice
    received = _received_ids(SQSBackend.receive_message)
    assert sorted(received) == sorted(set(received))
    assert len(received) == THREADS


def test_sqs_requests_do_not_wait_for_the_dynamodb_lock() -> None:
    """A long poll in flight must not stall DynamoDB, nor DynamoDB a poll."""
    dynamodb_answered = threading.Event()

    def inner(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        if environ.get("HTTP_X_AMZ_TARGET", "").startswith("DynamoDB"):
            dynamodb_answered.set()
            status = "200 OK"
        else:  # a long poll that ends once DynamoDB has answered meanwhile
            status = "200 OK" if dynamodb_answered.wait(timeout=10) else "504 Timeout"
        start_response(status, [])
        return [b"{}"]

    app = SerialisedDynamoDB(inner)
    sqs = {"X-Amz-Target": "AmazonSQS.ReceiveMessage"}
    with ThreadPoolExecutor(max_workers=1) as pool:
        poll = pool.submit(Client(app).post, "/", headers=sqs)
        dynamodb = Client(app).post("/", headers={"X-Amz-Target": "DynamoDB_20120810.GetItem"})
        assert dynamodb.status_code == 200
        assert poll.result().status_code == 200
    with app.lock:  # a DynamoDB request in progress
        assert Client(app).post("/", headers=sqs).status_code == 200


def test_dynamodb_requests_run_one_at_a_time() -> None:
    inside = 0
    most_inside = 0
    counter = threading.Lock()

    def inner(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        nonlocal inside, most_inside
        with counter:
            inside += 1
            most_inside = max(most_inside, inside)
        time.sleep(WINDOW_S)
        with counter:
            inside -= 1
        start_response("200 OK", [])
        return [environ["wsgi.input"].read()]

    app = SerialisedDynamoDB(inner)

    def call(index: int) -> bytes:
        response = Client(app).post(
            "/", data=f"body {index}", headers={"X-Amz-Target": "DynamoDB_20120810.PutItem"}
        )
        return response.get_data()

    assert _together(call) == [f"body {index}".encode() for index in range(THREADS)]
    assert most_inside == 1

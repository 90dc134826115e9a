"""The observer layer's handler: the consumer runs unchanged, its writes reach the queue."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest

from loadtest.deploy.collect import InvocationEnd, InvocationStart, parse
from loadtest.deploy.lambda_deploy import Clients, layer_modules, layer_zip
from loadtest.model.history.log import WriteOutcome, WriteRecord
from loadtest.observer import lambda_entry, layer_environment


class _Context:
    def __init__(self, request_id: str) -> None:
        self.aws_request_id = request_id

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def _event(body: dict[str, Any], message_id: str) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": message_id,
                "receiptHandle": "secret-receipt-handle",
                "body": json.dumps(body),
                "attributes": {"ApproximateReceiveCount": "1"},
                "messageAttributes": {},
                "eventSource": "aws:sqs",
            }
        ]
    }


@pytest.fixture
def entry(aws: Clients, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    aws.dynamodb.create_table(
        TableName="orders",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    url = aws.sqs.create_queue(QueueName="observations")["QueueUrl"]
    for name, value in {
        "TABLE_NAME": "orders",
        lambda_entry.WATCH_TABLE_ENV: "orders",
        lambda_entry.OBSERVATION_QUEUE_ENV: "observations",
        lambda_entry.ORIGINAL_HANDLER_ENV: "consumer.conditional.handler",
    }.items():
        monkeypatch.setenv(name, value)
    import consumer._orders

    monkeypatch.setattr(consumer._orders, "_client", None)  # a client made inside moto
    try:
        yield url
    finally:
        if lambda_entry._state is not None:
            lambda_entry.stop(lambda_entry._state)
        lambda_entry._state = None


def _lines(aws: Clients, url: str) -> list[str]:
    lines: list[str] = []
    while True:
        got = aws.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
        messages = got.get("Messages", [])
        if not messages:
            return lines
        for message in messages:
            lines.append(message["Body"])
            aws.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])


def test_the_lab_through_the_wrapper_ships_every_write_decision(aws: Clients, entry: str) -> None:
    first = lambda_entry.handler(_event({"id": "dedup-order", "quantity": 4}, "m1"), _Context("r1"))
    again = lambda_entry.handler(_event({"id": "dedup-order", "quantity": 4}, "m2"), _Context("r2"))
    assert first == {"id": "dedup-order", "quantity": 4, "processed": True, "duplicate": False}
    assert again["duplicate"] is True  # the consumer saw exactly the answer it asked for

    lines = _lines(aws, entry)
    assert all("secret-receipt-handle" not in line for line in lines)
    parsed = [parse(line) for line in lines]
    writes = [o for o in parsed if isinstance(o, WriteRecord)]
    assert [(w.request_id, w.outcome) for w in writes] == [
        ("r1", WriteOutcome.ACCEPTED),
        ("r2", WriteOutcome.REJECTED),
    ]
    assert (
        writes[1].item_before
        == writes[1].item_after
        == {
            "id": {"S": "dedup-order"},
            "quantity": {"N": "4"},
            "total_cents": {"N": "1100"},
        }
    )
    # Each invocation reports its records and its end, around its write decisions.
    starts = [o for o in parsed if isinstance(o, InvocationStart)]
    ends = [o for o in parsed if isinstance(o, InvocationEnd)]
    assert [(s.request_id, s.records[0][:2]) for s in starts] == [
        ("r1", ("m1", 1)),
        ("r2", ("m2", 1)),
    ]
    assert [(e.request_id, e.outcome, e.lines) for e in ends] == [("r1", "ok", 2), ("r2", "ok", 2)]
    assert all(s.started_ns <= w.started_ns for s, w in zip(starts, writes, strict=True))


def test_a_raising_handler_reports_an_exception_end(aws: Clients, entry: str) -> None:
    with pytest.raises(ValueError):
        lambda_entry.handler(_event({"id": "x", "quantity": 99}, "m1"), _Context("r1"))
    (end,) = [o for o in map(parse, _lines(aws, entry)) if isinstance(o, InvocationEnd)]
    assert (end.request_id, end.outcome, end.failed) == ("r1", "exception", ())
    assert end.error is not None and end.error.startswith("ValueError")


class _Killed(BaseException):
    """Stands for the process ending (``os._exit``) inside the test process."""


def test_the_crash_mid_handler_ships_the_write_then_ends_the_process(
    aws: Clients, entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(layer_environment.CRASH_MID_HANDLER_ENV, "1")
    codes: list[int] = []

    def exit_now(code: int) -> None:
        codes.append(code)
        raise _Killed

    monkeypatch.setattr(os, "_exit", exit_now)
    with pytest.raises(_Killed):
        lambda_entry.handler(_event({"id": "dedup-order", "quantity": 4}, "m1"), _Context("r1"))
    assert codes == [lambda_entry.CRASH_MID_HANDLER_EXIT]
    parsed = [parse(line) for line in _lines(aws, entry)]
    # The write was answered and shipped; the invocation never ended (a crash to the collector).
    writes = [o for o in parsed if isinstance(o, WriteRecord)]
    assert [(w.request_id, w.outcome) for w in writes] == [("r1", WriteOutcome.ACCEPTED)]
    assert [type(o) for o in parsed if isinstance(o, (InvocationStart, InvocationEnd))] == [
        InvocationStart
    ]


def test_a_bad_original_handler_is_named() -> None:
    with pytest.raises(ValueError, match=r"module\.function"):
        lambda_entry.load_original("handler")
    with pytest.raises(AttributeError, match="nope"):
        lambda_entry.load_original("consumer.conditional.nope")


def test_the_layer_alone_imports_the_entry_point(tmp_path: Path) -> None:
    zipfile.ZipFile(BytesIO(layer_zip())).extractall(tmp_path)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import loadtest.observer.lambda_entry as e; print(e.__file__);"
        "[print(m.__file__) for n, m in list(sys.modules.items()) if n.startswith('loadtest')]"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-I", "-c", code, str(tmp_path / "python")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    # Every loadtest module the observer needs came from the layer: none is missing from it.
    loaded = done.stdout.split()
    assert loaded[0].startswith(str(tmp_path / "python" / "loadtest"))
    assert all(path.startswith(str(tmp_path / "python" / "loadtest")) for path in loaded)
    assert "dynamodb/partiql/syntax.py" in " ".join(loaded)  # the observer's imports were followed


def test_the_layer_carries_what_the_observer_imports_and_nothing_above_it() -> None:
    names = layer_modules()
    assert {
        "observer/write_observer.py",
        "model/dynamodb/update_expressions.py",
        "model/__init__.py",
    } <= set(names)
    assert not any(
        n.startswith(("cli/", "reports/", "deploy/", "emulation/", "aws/", "backend/"))
        for n in names
    )
    assert "api.py" not in names and "engine.py" not in names


def test_a_local_environment_runs_the_entry_point_from_the_unpacked_layer(
    tmp_path: Path,
) -> None:
    import anyio

    from loadtest.emulation.environment.handlers import parse_ref
    from loadtest.emulation.environment.parent_environments import (
        ExecutionEnvironment,
        FunctionConfig,
    )

    config = FunctionConfig(
        handler=parse_ref("conditional"),
        function_name="local-fn",
        table_name="orders",
        region="us-east-1",
        endpoint_url="http://127.0.0.1:9",  # never called: no invocation is sent
        memory_mb=128,
        timeout_s=5,
    )

    async def cold_start() -> str:
        env = ExecutionEnvironment(config, 0, str(tmp_path))
        try:
            await env.start()
            return env.entry_file
        finally:
            await env.aclose()

    entry = anyio.run(cold_start)
    layer_dir = tmp_path / "layer" / "python"
    assert entry == str(layer_dir / "loadtest" / "observer" / "lambda_entry.py")
    packed = zipfile.ZipFile(BytesIO(layer_zip()))
    assert Path(entry).read_bytes() == packed.read("python/loadtest/observer/lambda_entry.py")


def test_a_deployed_handler_reports_what_the_run_did_not_provide(
    aws: Clients, entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A table the run never made: the refused call rides on the invocation's end line.
    monkeypatch.setenv(
        lambda_entry.ORIGINAL_HANDLER_ENV,
        "tests.integration.consumers.configured.hardcoded_orders.handler",
    )
    with pytest.raises(Exception, match="ResourceNotFoundException"):
        lambda_entry.handler(_event({"id": "x", "quantity": 1}, "m1"), _Context("r1"))
    (end,) = [o for o in map(parse, _lines(aws, entry)) if isinstance(o, InvocationEnd)]
    assert end.missing == (
        "loadtest: the handler's PutItem call on 'Orders' failed with ResourceNotFoundException",
    )


def test_a_deployed_handler_names_a_variable_it_lacks(
    aws: Clients, entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        lambda_entry.ORIGINAL_HANDLER_ENV,
        "tests.integration.consumers.configured.env_named.handler",
    )
    monkeypatch.delenv("DYNAMODB_TABLE", raising=False)
    with pytest.raises(KeyError):
        lambda_entry.handler(_event({"id": "x", "quantity": 1}, "m1"), _Context("r1"))
    (end,) = [o for o in map(parse, _lines(aws, entry)) if isinstance(o, InvocationEnd)]
    assert end.error == "KeyError: 'DYNAMODB_TABLE' [os.environ has no 'DYNAMODB_TABLE']"
    assert end.missing == ()

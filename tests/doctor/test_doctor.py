"""``loadtest.doctor.checkup`` against a real backend: every check passes, only its own resources go.

The backend is the embedded one when ``loadtest.backend.embedded`` is importable, else a
plain ``python -m moto.server``.
"""

from __future__ import annotations

import importlib.util
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
import boto3
import pytest

from loadtest.aws import clients as aws
from loadtest.doctor import checks as doctor_checks
from loadtest.doctor import checkup as doctor
from loadtest.doctor import dynamodb as doctor_dynamodb
from loadtest.doctor.checkup import (
    CHECK_NAMES,
    RESOURCE_PREFIX,
    CheckResult,
    exit_ok,
    run_doctor,
)
from loadtest.errors import BackendError, InputError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_sqs.client import SQSClient

HAVE_EMBEDDED = importlib.util.find_spec("loadtest.backend.embedded") is not None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def backend_url() -> Iterator[str]:
    if HAVE_EMBEDDED:
        from loadtest.backend.embedded import EmbeddedBackend

        with EmbeddedBackend() as backend:
            yield backend.endpoint_url
        return
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/moto-api/", timeout=1):
                    break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _sync_clients(url: str) -> tuple[SQSClient, DynamoDBClient]:
    session = boto3.Session(
        aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    return session.client("sqs", endpoint_url=url), session.client("dynamodb", endpoint_url=url)


@dataclass(frozen=True)
class DoctorRun:
    url: str
    results: list[CheckResult]
    reported: list[CheckResult]
    keep_table: str
    keep_queue_url: str


KEEP_ITEM = {"id": {"S": "keep"}, "note": {"S": "keep unchanged"}}


@pytest.fixture(scope="module")
def doctor_run(backend_url: str) -> DoctorRun:
    """One doctor run, with a table and a queue of someone else's made before it."""
    sqs, dynamodb = _sync_clients(backend_url)
    suffix = secrets.token_hex(4)
    keep_table = f"keep-{suffix}"
    dynamodb.create_table(
        TableName=keep_table,
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(TableName=keep_table, Item=KEEP_ITEM)
    keep_queue_url = sqs.create_queue(QueueName=f"keep-{suffix}")["QueueUrl"]
    sqs.send_message(QueueUrl=keep_queue_url, MessageBody="keep unchanged")

    reported: list[CheckResult] = []
    target = aws.Target.resolve(aws.BackendKind.ENDPOINT, backend_url)

    async def main() -> list[CheckResult]:
        return await run_doctor(target, keys=100, writers=8, rounds=2, on_check=reported.append)

    results = anyio.run(main, backend="asyncio")
    return DoctorRun(backend_url, results, reported, keep_table, keep_queue_url)


def test_every_check_passes(doctor_run: DoctorRun) -> None:
    failed = [f"{r.name}: {r.summary}" for r in doctor_run.results if not r.ok]
    assert not failed
    assert [r.name for r in doctor_run.results] == list(CHECK_NAMES)
    assert exit_ok(doctor_run.results)


def test_on_check_sees_each_result_in_order(doctor_run: DoctorRun) -> None:
    assert doctor_run.reported == doctor_run.results


def test_figures(doctor_run: DoctorRun) -> None:
    by_name = {r.name: r for r in doctor_run.results}
    atomic = by_name[doctor_checks.ATOMIC].details
    assert atomic["puts"] == 2 * 100 * 8
    assert atomic["keys_exactly_one_winner"] == 200
    assert atomic["keys_multiple_winners"] == 0
    assert atomic["accepted"] == 200
    assert by_name[doctor_checks.ALL_OLD].details["old_item_matches"] == 2 * 100 * 7
    assert by_name[doctor_checks.PARTIQL].details == {
        "duplicate_insert_error": "DuplicateItemException",
        "duplicate_item_unchanged": 1,
        "parameterised_insert_error": "none",
        "parameterised_item_stored": 1,
    }
    assert by_name[doctor_checks.PARTIQL].summary == (
        "INSERT of a stored key: refused with DuplicateItemException, item unchanged; "
        "parameterised INSERT: stored its item"
    )
    assert by_name[doctor_checks.VISIBILITY].details["extra_receipts_within_timeout"] == 0
    assert by_name[doctor_checks.REDELIVERY].details["second_receive_count"] == 2
    assert by_name[doctor_checks.REDRIVE].details["same_message_id"] == 1
    assert "1600 conditional puts on 200 keys" in by_name[doctor_checks.ATOMIC].summary


def test_own_resources_are_gone(doctor_run: DoctorRun) -> None:
    sqs, dynamodb = _sync_clients(doctor_run.url)
    assert sqs.list_queues(QueueNamePrefix=RESOURCE_PREFIX).get("QueueUrls", []) == []
    tables = dynamodb.list_tables()["TableNames"]
    assert not [name for name in tables if name.startswith(RESOURCE_PREFIX)]


def test_other_resources_are_untouched(doctor_run: DoctorRun) -> None:
    sqs, dynamodb = _sync_clients(doctor_run.url)
    assert doctor_run.keep_table in dynamodb.list_tables()["TableNames"]
    scanned = dynamodb.scan(TableName=doctor_run.keep_table, ConsistentRead=True)["Items"]
    assert scanned == [KEEP_ITEM]
    assert doctor_run.keep_queue_url in sqs.list_queues(QueueNamePrefix="keep-")["QueueUrls"]
    attributes = sqs.get_queue_attributes(
        QueueUrl=doctor_run.keep_queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    assert attributes["ApproximateNumberOfMessages"] == "1"


def test_unreachable_endpoint_raises_backend_error_quickly() -> None:
    target = aws.Target.resolve(aws.BackendKind.ENDPOINT, f"http://127.0.0.1:{_free_port()}")

    async def main() -> list[CheckResult]:
        return await run_doctor(target, keys=1, writers=2, rounds=1)

    started_s = time.monotonic()
    with pytest.raises(BackendError, match="could not reach"):
        anyio.run(main, backend="asyncio")
    assert time.monotonic() - started_s < 15


def test_exit_ok() -> None:
    passed = CheckResult("a", True, "fine")
    failed = CheckResult("b", False, "broken")
    assert exit_ok([passed])
    assert not exit_ok([passed, failed])
    assert not exit_ok([])


def test_a_check_that_hangs_is_reported_failed() -> None:
    async def hangs() -> list[CheckResult]:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def main() -> list[CheckResult]:
        return await doctor._bounded(("slow-a", "slow-b"), 0.1, hangs)

    results = anyio.run(main, backend="asyncio")
    assert [(r.name, r.ok) for r in results] == [("slow-a", False), ("slow-b", False)]
    assert results[0].summary == "did not finish within 0.1 s"


def test_an_error_answer_inside_a_task_group_fails_the_check() -> None:
    async def answers_error() -> list[CheckResult]:
        async def task() -> None:
            raise doctor_checks.BackendAnswered("InternalError: boom")

        async with anyio.create_task_group() as group:
            group.start_soon(task)
        return []

    async def main() -> list[CheckResult]:
        return await doctor._bounded(("c",), 5, answers_error)

    (result,) = anyio.run(main, backend="asyncio")
    assert not result.ok
    assert result.summary == "backend error: InternalError: boom"


def test_a_backend_error_inside_a_task_group_is_raised_unwrapped() -> None:
    async def unreachable() -> list[CheckResult]:
        async def task() -> None:
            raise BackendError("could not reach it")

        async with anyio.create_task_group() as group:
            group.start_soon(task)
        return []

    async def main() -> list[CheckResult]:
        return await doctor._bounded(("c",), 5, unreachable)

    with pytest.raises(BackendError, match="could not reach it"):
        anyio.run(main, backend="asyncio")


def test_impossible_sizes_are_refused_before_anything_is_created() -> None:
    target = aws.Target.resolve(aws.BackendKind.ENDPOINT, f"http://127.0.0.1:{_free_port()}")

    async def main() -> list[CheckResult]:
        return await run_doctor(target, writers=1)

    with pytest.raises(InputError, match="writers >= 2"):
        anyio.run(main, backend="asyncio")


@pytest.mark.skipif(not HAVE_EMBEDDED, reason="needs loadtest.backend.embedded")
def test_partiql_check_fails_on_plain_moto() -> None:
    """moto as shipped overwrites on INSERT and fails a parameterised one (HTTP 500)."""
    from loadtest.backend.embedded import EmbeddedBackend

    with EmbeddedBackend(patched=False) as backend:
        _, dynamodb = _sync_clients(backend.endpoint_url)
        table = f"{RESOURCE_PREFIX}plain-{secrets.token_hex(4)}"
        dynamodb.create_table(
            TableName=table,
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        target = aws.Target.resolve(aws.BackendKind.ENDPOINT, backend.endpoint_url)

        async def run() -> list[CheckResult]:
            async with aws.clients(target, pool=4) as (_sqs, client):
                return await doctor_dynamodb.check_partiql_insert(client, table, target)

        (result,) = anyio.run(run, backend="asyncio")
    assert not result.ok
    assert result.details["duplicate_insert_error"] == "none"
    assert result.details["duplicate_item_unchanged"] == 0
    assert result.details["parameterised_insert_error"] != "none"
    assert result.summary.startswith("INSERT of a stored key: accepted, item overwritten; ")


def test_fifo_checks_pass_with_their_figures(doctor_run: DoctorRun) -> None:
    found = {r.name: r for r in doctor_run.results}
    dedup, order = found["fifo-deduplication-window"], found["fifo-group-order"]
    assert dedup.ok and order.ok, (dedup.summary, order.summary)
    assert dedup.details["delivered_while_queued"] == 1
    assert dedup.details["delivered_after_delete"] == 0
    assert order.details == {"in_order": 1, "received": 5, "group_messages_while_in_flight": 0}


def test_fifo_deduplication_check_fails_on_plain_moto() -> None:
    """moto as shipped forgets a deduplication id once its message is deleted."""
    from loadtest.backend.embedded import EmbeddedBackend
    from loadtest.doctor.fifo import check_fifo

    with EmbeddedBackend(patched=False) as backend:
        target = aws.Target.resolve(aws.BackendKind.ENDPOINT, backend.endpoint_url)
        made: list[str] = []

        async def run() -> list[CheckResult]:
            async with aws.clients(target, pool=4) as (sqs, _dynamodb):
                try:
                    return await check_fifo(sqs, target, made.append)
                finally:
                    for url in made:
                        await sqs.delete_queue(QueueUrl=url)

        dedup, order = anyio.run(run, backend="asyncio")
    assert not dedup.ok
    assert dedup.details["delivered_while_queued"] == 1  # moto drops a copy while queued ...
    assert dedup.details["delivered_after_delete"] == 1  # ... and forgets it after a delete
    assert order.ok  # group order and exclusivity are moto's own

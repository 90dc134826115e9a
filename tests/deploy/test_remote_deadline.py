"""A deployed run's deadline: evidence that never came is inconclusive, a backlog fails.

``drive`` runs against the embedded backend's queues and table with no function
behind them: a thread stands for a mapping that deletes every message and reports
nothing (a lost observation channel), or nothing consumes at all (a backlog).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import pytest

from loadtest.aws import clients as aws
from loadtest.aws.clients import BackendKind, Target
from loadtest.deploy.remote_run import Endpoints, RemoteVariant, drive
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.model.scenario.loading import load_scenario
from tests.integration.helpers import client

MESSAGES = 4  # seed-lab: dedup-order x3, other-order x1


@dataclass
class Queues:
    url: str
    where: Endpoints
    names: aws.ResourceNames


@pytest.fixture
def queues(backend_url: str) -> Iterator[Queues]:
    sqs, dynamodb = client("sqs", backend_url), client("dynamodb", backend_url)
    run = uuid.uuid4().hex[:8]
    jobs = sqs.create_queue(QueueName=f"deadline-{run}-jobs")["QueueUrl"]
    observations = sqs.create_queue(QueueName=f"deadline-{run}-observations")["QueueUrl"]
    table = f"deadline-{run}-orders"
    dynamodb.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    where = Endpoints(
        queue_url=jobs, dlq_url=None, observations_url=observations, table=table, partial=False
    )
    names = aws.ResourceNames(queue=f"deadline-{run}-jobs", dlq="", table=table)
    try:
        yield Queues(backend_url, where, names)
    finally:
        sqs.delete_queue(QueueUrl=jobs)
        sqs.delete_queue(QueueUrl=observations)
        dynamodb.delete_table(TableName=table)


def _drive(queues: Queues) -> RemoteVariant:
    scenario = load_scenario("seed-lab").with_overrides(deadline_s=3)
    target = Target.resolve(BackendKind.ENDPOINT, queues.url)
    return anyio.run(
        drive,
        scenario,
        parse_ref("conditional"),
        target,
        queues.where,
        queues.names,
        backend="asyncio",
    )


def test_messages_taken_from_the_queue_but_never_reported_are_inconclusive(
    queues: Queues,
) -> None:
    sqs = client("sqs", queues.url)
    stop = threading.Event()
    deleted: list[str] = []

    def silent_mapping() -> None:
        while not stop.is_set():
            got = sqs.receive_message(
                QueueUrl=queues.where.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
            )
            for message in got.get("Messages", []):
                sqs.delete_message(
                    QueueUrl=queues.where.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
                deleted.append(message["MessageId"])

    consumer = threading.Thread(target=silent_mapping)
    consumer.start()
    try:
        run = _drive(queues)
    finally:
        stop.set()
        consumer.join()
    assert len(deleted) == MESSAGES
    assert run.history.timed_out
    assert run.incomplete is not None
    assert f"{MESSAGES} of {MESSAGES} messages neither acknowledged nor dead-lettered" in (
        run.incomplete
    )
    assert "the queue is empty, so no invocation reported them" in run.incomplete
    assert run.check.counts.unsettled == MESSAGES
    assert run.check.verdict == "inconclusive", run.check.reasons
    assert run.check.reasons == ()


def test_a_backlog_left_in_the_queue_at_the_deadline_fails(queues: Queues) -> None:
    run = _drive(queues)
    assert run.history.timed_out
    assert run.incomplete is not None and "the queue is empty" not in run.incomplete
    assert (run.end_state.queue_visible, run.check.counts.unsettled) == (MESSAGES, MESSAGES)
    assert run.check.verdict == "fail"
    assert any("neither acknowledged nor dead-lettered" in r for r in run.check.reasons)

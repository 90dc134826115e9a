"""The doctor's FIFO checks: deduplication holds inside the window, also after a delete, and a
message group is delivered in order, one message at a time.

Owns the FIFO queue these checks create (recorded with the caller the moment it exists, so
the doctor's teardown deletes it) and the two results. Must not touch any other resource.
A backend failing these makes the FIFO scenarios' figures untrustworthy: a resend the
queue should have dropped would be counted as the consumer's duplicate.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import TYPE_CHECKING

from loadtest.aws import clients as aws
from loadtest.doctor.checks import (
    FIFO_DEDUP,
    FIFO_ORDER,
    POLL_WAIT_S,
    RESOURCE_PREFIX,
    CheckResult,
    backend_calls,
)

if TYPE_CHECKING:
    from types_aiobotocore_sqs.client import SQSClient

FIFO_CHECK_TIMEOUT_S = 30.0
FIFO_VISIBILITY_TIMEOUT_S = 30
"""Visibility timeout (in seconds) of the FIFO queue: nothing may come back by timing out."""
ORDERED_MESSAGES = 5
"""Messages sent to the ordered group."""


async def _send(
    sqs: SQSClient, url: str, target: aws.Target, entries: list[tuple[str, str, str]]
) -> list[str]:
    """Send (body, group, deduplication id) entries in one batch; their MessageIds."""
    with backend_calls("send FIFO messages", target):
        sent = await sqs.send_message_batch(
            QueueUrl=url,
            Entries=[
                {
                    "Id": str(index),
                    "MessageBody": body,
                    "MessageGroupId": group,
                    "MessageDeduplicationId": dedup,
                }
                for index, (body, group, dedup) in enumerate(entries)
            ],
        )
    ids = {entry["Id"]: entry["MessageId"] for entry in sent.get("Successful", [])}
    return [ids.get(str(index), "") for index in range(len(entries))]


async def _receive(
    sqs: SQSClient, url: str, target: aws.Target, *, max_messages: int = 10, wait_s: int = 0
) -> list[tuple[str, str]]:
    """(body, receipt handle) of each message received."""
    with backend_calls("receive FIFO messages", target):
        got = await sqs.receive_message(
            QueueUrl=url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=wait_s,
            VisibilityTimeout=FIFO_VISIBILITY_TIMEOUT_S,
        )
    return [(m["Body"], m["ReceiptHandle"]) for m in got.get("Messages", [])]


async def _delete(sqs: SQSClient, url: str, target: aws.Target, handle: str) -> None:
    with backend_calls("delete a FIFO message", target):
        await sqs.delete_message(QueueUrl=url, ReceiptHandle=handle)


async def check_fifo(
    sqs: SQSClient, target: aws.Target, record: Callable[[str], None]
) -> list[CheckResult]:
    """Create a FIFO queue (``record`` gets its URL at once) and run both FIFO checks on it."""
    name = f"{RESOURCE_PREFIX}{secrets.token_hex(4)}-fifo.fifo"
    with backend_calls("create the doctor's FIFO queue", target):
        created = await sqs.create_queue(
            QueueName=name,
            Attributes={"FifoQueue": "true", "VisibilityTimeout": str(FIFO_VISIBILITY_TIMEOUT_S)},
        )
    url = created["QueueUrl"]
    record(url)
    return [await check_deduplication(sqs, url, target), await check_group_order(sqs, url, target)]


async def _drain(sqs: SQSClient, url: str, target: aws.Target) -> list[str]:
    """Receive and delete until a long poll comes back empty; the bodies received."""
    bodies: list[str] = []
    while got := await _receive(sqs, url, target, wait_s=POLL_WAIT_S):
        for body, handle in got:
            bodies.append(body)
            await _delete(sqs, url, target, handle)
    return bodies


async def check_deduplication(sqs: SQSClient, url: str, target: aws.Target) -> CheckResult:
    """One id sent while its first message waits, then again after that message was
    deleted: SQS delivers the first only (it keeps the id for five minutes after a delete)."""
    first_id, queued_id = await _send(
        sqs, url, target, [("first", "dedup", "same-id"), ("while queued", "dedup", "same-id")]
    )
    while_queued = await _drain(sqs, url, target)
    (after_id,) = await _send(sqs, url, target, [("after delete", "dedup", "same-id")])
    after_delete = await _drain(sqs, url, target)
    ok = while_queued == ["first"] and not after_delete
    summary = (
        "one deduplication id sent twice while the first waited, then once after it was "
        f"deleted: delivered {', '.join(while_queued + after_delete) or 'nothing'} (expected: "
        "first only; SQS keeps the id for 5 minutes, even after a delete)"
    )
    return CheckResult(
        FIFO_DEDUP,
        ok,
        summary,
        {
            "delivered_while_queued": len(while_queued),
            "delivered_after_delete": len(after_delete),
            "duplicate_answered_first_id": int(first_id == queued_id == after_id),
        },
    )


async def check_group_order(sqs: SQSClient, url: str, target: aws.Target) -> CheckResult:
    """A group's messages come one receive-and-delete at a time, in send order; another
    group is not held up meanwhile."""
    bodies = [f"ordered-{n}" for n in range(1, ORDERED_MESSAGES + 1)]
    await _send(sqs, url, target, [(body, "ordered", body) for body in bodies])
    await _send(sqs, url, target, [("other-group", "other", "other-group")])
    order: list[str] = []
    while_in_flight: list[str] = []
    first = await _receive(sqs, url, target, max_messages=1, wait_s=POLL_WAIT_S)
    if first:
        order.append(first[0][0])
        # The first is in flight: its group must be held back; the other group may come.
        others = await _receive(sqs, url, target, wait_s=POLL_WAIT_S)
        while_in_flight = [body for body, _ in others]
        for _, handle in others:
            await _delete(sqs, url, target, handle)
        await _delete(sqs, url, target, first[0][1])
    for _ in range(ORDERED_MESSAGES):
        got = await _receive(sqs, url, target, max_messages=1, wait_s=POLL_WAIT_S)
        if not got:
            break
        order.append(got[0][0])
        await _delete(sqs, url, target, got[0][1])
    held = [body for body in while_in_flight if body.startswith("ordered-")]
    ok = order[: len(bodies)] == bodies and not held
    summary = (
        f"{len(bodies)} messages of one group received one at a time in the order "
        f"{', '.join(b.removeprefix('ordered-') for b in order) or 'none'} (expected "
        f"{', '.join(b.removeprefix('ordered-') for b in bodies)}); while the first was in "
        f"flight {len(held)} more of its group were handed out (expected 0)"
    )
    return CheckResult(
        FIFO_ORDER,
        ok,
        summary,
        {
            "in_order": int(order[: len(bodies)] == bodies),
            "received": len(order),
            "group_messages_while_in_flight": len(held),
        },
    )

"""The doctor's SQS checks: a received message stays hidden from other pollers, an undeleted one
comes back with its receive count increased, and redrive reaches the DLQ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio

from loadtest.aws import clients as aws

if TYPE_CHECKING:
    from types_aiobotocore_sqs.client import SQSClient
from loadtest.doctor.checks import (
    POLL_WAIT_S,
    REDELIVERY,
    REDRIVE,
    VISIBILITY,
    BackendAnswered,
    CheckResult,
    backend_calls,
)

VISIBILITY_MESSAGES = 50
VISIBILITY_POLLERS = 6
VISIBILITY_TIMEOUT_S = 30
"""Visibility timeout (in seconds) of the visibility check; its time bound stays well below."""
VISIBILITY_CHECK_TIMEOUT_S = 20.0
VISIBILITY_SETTLE_S = 2.0
"""After every message was seen once, keep polling this long (in seconds) for a duplicate."""

SHORT_VISIBILITY_TIMEOUT_S = 1
"""Visibility timeout (in seconds) of the redelivery and redrive queues."""
REDELIVERY_CHECK_TIMEOUT_S = 20.0
REDELIVERY_WAIT_S = 12.0
"""How long (in seconds) an undeleted message may take to come back before the check fails."""
REDRIVE_MAX_RECEIVE_COUNT = 2
REDRIVE_CHECK_TIMEOUT_S = 30.0
REDRIVE_WAIT_S = 20.0
"""How long (in seconds) after the first receive the message may take to reach the DLQ."""


# --- queues -------------------------------------------------------------------------------


async def send_messages(
    sqs: SQSClient, queue_url: str, bodies: Sequence[str], target: aws.Target
) -> None:
    with backend_calls("send messages", target):
        for start in range(0, len(bodies), 10):
            chunk = bodies[start : start + 10]
            sent = await sqs.send_message_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(start + index), "MessageBody": body}
                    for index, body in enumerate(chunk)
                ],
            )
            if sent.get("Failed"):
                failed = sent["Failed"][0]
                raise BackendAnswered(
                    f"SendMessageBatch failed {len(sent['Failed'])} of {len(chunk)} entries: "
                    f"{failed.get('Code')}: {failed.get('Message')}"
                )


async def receive_messages(
    sqs: SQSClient,
    queue_url: str,
    target: aws.Target,
    *,
    visibility_timeout_s: int,
    max_messages: int = 10,
    wait_s: int = POLL_WAIT_S,
) -> list[tuple[str, int]]:
    """(MessageId, ApproximateReceiveCount) of each message received."""
    with backend_calls("receive messages", target):
        got = await sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=max_messages,
            VisibilityTimeout=visibility_timeout_s,
            WaitTimeSeconds=wait_s,
            MessageSystemAttributeNames=["ApproximateReceiveCount"],
        )
    return [
        (
            message.get("MessageId", ""),
            int(message.get("Attributes", {}).get("ApproximateReceiveCount", "0")),
        )
        for message in got.get("Messages", [])
    ]


async def check_visibility(sqs: SQSClient, queue_url: str, target: aws.Target) -> list[CheckResult]:
    """Pollers share a queue; a message one holds must stay hidden from the others.

    Messages are never deleted: each stays in flight for ``VISIBILITY_TIMEOUT_S``, longer
    than this check may run, so any second receipt means the timeout did not hold.
    """
    await send_messages(
        sqs, queue_url, [f"visibility-{i}" for i in range(VISIBILITY_MESSAGES)], target
    )
    first_seen_s: dict[str, float] = {}
    receipts: Counter[str] = Counter()
    early_repeats = 0
    all_seen = anyio.Event()
    all_seen_after_s: list[float] = []
    started_s = anyio.current_time()

    async def poll() -> None:
        nonlocal early_repeats
        while True:
            for message_id, _count in await receive_messages(
                sqs, queue_url, target, visibility_timeout_s=VISIBILITY_TIMEOUT_S
            ):
                now_s = anyio.current_time()
                receipts[message_id] += 1
                first = first_seen_s.setdefault(message_id, now_s)
                if now_s - first < VISIBILITY_TIMEOUT_S and receipts[message_id] > 1:
                    early_repeats += 1
                if len(first_seen_s) >= VISIBILITY_MESSAGES and not all_seen.is_set():
                    all_seen_after_s.append(now_s - started_s)
                    all_seen.set()

    async with anyio.create_task_group() as pollers:
        for _ in range(VISIBILITY_POLLERS):
            pollers.start_soon(poll)
        # Leave the remaining time to the caller's bound: keep polling for a repeat.
        with anyio.move_on_after(VISIBILITY_CHECK_TIMEOUT_S - VISIBILITY_SETTLE_S - 1):
            await all_seen.wait()
        await anyio.sleep(VISIBILITY_SETTLE_S)
        pollers.cancel_scope.cancel()

    repeated = sum(1 for count in receipts.values() if count > 1)
    ok = early_repeats == 0 and len(first_seen_s) == VISIBILITY_MESSAGES
    received_in = f" in {all_seen_after_s[0]:.2f} s" if all_seen_after_s else ""
    summary = (
        f"{VISIBILITY_POLLERS} pollers received {len(first_seen_s)}/{VISIBILITY_MESSAGES} "
        f"messages{received_in}, then kept polling {VISIBILITY_SETTLE_S:g} s; {repeated} "
        f"received again within their {VISIBILITY_TIMEOUT_S} s visibility timeout "
        f"({early_repeats} extra receipts)"
    )
    return [
        CheckResult(
            VISIBILITY,
            ok,
            summary,
            {
                "messages": VISIBILITY_MESSAGES,
                "pollers": VISIBILITY_POLLERS,
                "distinct_received": len(first_seen_s),
                "receipts": sum(receipts.values()),
                "received_again": repeated,
                "extra_receipts_within_timeout": early_repeats,
                "visibility_timeout_s": VISIBILITY_TIMEOUT_S,
                "all_received_after_s": round(all_seen_after_s[0], 3) if all_seen_after_s else -1,
            },
        )
    ]


async def receive_one(
    sqs: SQSClient, queue_url: str, target: aws.Target, visibility_timeout_s: int
) -> tuple[str, int]:
    """Poll until one message arrives (the caller bounds the time)."""
    while True:
        got = await receive_messages(
            sqs, queue_url, target, visibility_timeout_s=visibility_timeout_s, max_messages=1
        )
        if got:
            return got[0]


async def check_redelivery(sqs: SQSClient, queue_url: str, target: aws.Target) -> list[CheckResult]:
    """Receive a message, leave it undeleted, and see it return with its count increased."""
    await send_messages(sqs, queue_url, ["redelivery"], target)
    first_id, first_count = await receive_one(sqs, queue_url, target, SHORT_VISIBILITY_TIMEOUT_S)
    received_s = anyio.current_time()
    second_id, second_count = "", 0
    with anyio.move_on_after(REDELIVERY_WAIT_S):
        second_id, second_count = await receive_one(
            sqs, queue_url, target, SHORT_VISIBILITY_TIMEOUT_S
        )
    returned_after_s = anyio.current_time() - received_s
    ok = first_count == 1 and second_count == 2 and second_id == first_id
    if not second_id:
        summary = (
            f"received once (ApproximateReceiveCount {first_count}), not deleted, and not "
            f"received again within {REDELIVERY_WAIT_S:g} s although its visibility timeout "
            f"was {SHORT_VISIBILITY_TIMEOUT_S} s"
        )
    else:
        same = "the same message" if second_id == first_id else f"another message ({second_id})"
        summary = (
            f"{same} came back {returned_after_s:.1f} s after a receive with a "
            f"{SHORT_VISIBILITY_TIMEOUT_S} s visibility timeout; ApproximateReceiveCount "
            f"{first_count} then {second_count} (expected 1 then 2)"
        )
    return [
        CheckResult(
            REDELIVERY,
            ok,
            summary,
            {
                "first_receive_count": first_count,
                "second_receive_count": second_count,
                "same_message": int(second_id == first_id),
                "visibility_timeout_s": SHORT_VISIBILITY_TIMEOUT_S,
                "returned_after_s": round(returned_after_s, 3) if second_id else -1,
            },
        )
    ]


async def check_redrive(
    sqs: SQSClient, queue_url: str, dlq_url: str, target: aws.Target
) -> list[CheckResult]:
    """Receive without deleting until the redrive policy moves the message to the DLQ.

    Expected: ``maxReceiveCount`` deliveries from the source queue, then none; the message
    appears in the DLQ with the same MessageId.
    """
    await send_messages(sqs, queue_url, ["redrive"], target)
    sent_id, _ = await receive_one(sqs, queue_url, target, SHORT_VISIBILITY_TIMEOUT_S)
    source_counts = [1]
    started_s = anyio.current_time()
    dead_lettered: list[str] = []
    with anyio.move_on_after(REDRIVE_WAIT_S):
        while not dead_lettered:
            # Receiving from the source is what lets the backend see the count was reached.
            for got_id, count in await receive_messages(
                sqs, queue_url, target, visibility_timeout_s=SHORT_VISIBILITY_TIMEOUT_S
            ):
                if got_id == sent_id:
                    source_counts.append(count)
            dead_lettered = [
                got_id
                for got_id, _ in await receive_messages(
                    sqs, dlq_url, target, visibility_timeout_s=VISIBILITY_TIMEOUT_S, wait_s=0
                )
            ]
    moved_after_s = anyio.current_time() - started_s
    same = sent_id in dead_lettered
    deliveries = len(source_counts)
    ok = same and deliveries == REDRIVE_MAX_RECEIVE_COUNT
    if not dead_lettered:
        outcome = f"nothing reached the DLQ within {REDRIVE_WAIT_S:g} s"
    elif same:
        outcome = (
            f"in the DLQ with the same MessageId {moved_after_s:.1f} s after the first receive"
        )
    else:
        outcome = "a different message reached the DLQ"
    summary = (
        f"delivered {deliveries} times from the source queue (maxReceiveCount "
        f"{REDRIVE_MAX_RECEIVE_COUNT}, expected {REDRIVE_MAX_RECEIVE_COUNT}), then {outcome}"
    )
    return [
        CheckResult(
            REDRIVE,
            ok,
            summary,
            {
                "max_receive_count": REDRIVE_MAX_RECEIVE_COUNT,
                "source_deliveries": deliveries,
                "last_receive_count": source_counts[-1],
                "same_message_id": int(same),
                "moved_after_s": round(moved_after_s, 3) if dead_lettered else -1,
            },
        )
    ]

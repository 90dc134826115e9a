"""Builders for synthetic run histories (shared by the core tests; no backend)."""

from __future__ import annotations

import json
from typing import Any

from loadtest.model.history.log import (
    Ack,
    EndState,
    History,
    Invocation,
    InvocationOutcome,
    Record,
    SentMessage,
    TypedItem,
    WriteOutcome,
    WriteRecord,
    key_string,
)

CONDITION = "attribute_not_exists(id)"


def order_item(order_id: str, quantity: int) -> TypedItem:
    """The lab's item: total_cents = quantity*250 + 100."""
    return {
        "id": {"S": order_id},
        "quantity": {"N": str(quantity)},
        "total_cents": {"N": str(quantity * 250 + 100)},
    }


def sent(
    index: int,
    business_id: str | None,
    message_id: str | None,
    quantity: int = 1,
    *,
    poison: bool = False,
) -> SentMessage:
    body = json.dumps({"id": business_id, "quantity": quantity})
    return SentMessage(
        index=index,
        business_id=business_id,
        body=body,
        intended_ns=1_000 * index,
        sent_ns=1_000 * index + 10,
        message_id=message_id,
        send_error=None if message_id else "not sent",
        poison=poison,
    )


def write(
    item: TypedItem,
    *,
    outcome: WriteOutcome = WriteOutcome.ACCEPTED,
    before: TypedItem | None = None,
    before_known: bool = False,
    condition: str | None = CONDITION,
    operation: str = "PutItem",
    write_key: TypedItem | None = None,
    started_ns: int = 0,
    noop_when_present: bool = False,
    after_known: bool = True,
) -> WriteRecord:
    """A write of ``item``; a rejected write leaves the item as it was (``before``)."""
    after = item if outcome is WriteOutcome.ACCEPTED else before
    if operation.endswith(("DeleteItem", ".Delete")) and outcome is WriteOutcome.ACCEPTED:
        after = None
    return WriteRecord(
        operation=operation,
        key=write_key if write_key is not None else {"id": item["id"]},
        condition=condition,
        outcome=outcome,
        item_before=before,
        item_after=after,
        before_known=before_known,
        started_ns=started_ns,
        ended_ns=started_ns + 500_000,
        requested=item,
        noop_when_present=noop_when_present,
        after_known=after_known,
        call_id=f"c-{started_ns}-{id(item)}",
    )


def invocation(
    request_id: str,
    records: list[Record],
    writes: list[WriteRecord],
    *,
    outcome: InvocationOutcome = InvocationOutcome.SUCCESS,
    error: str | None = None,
    started_ns: int = 0,
    result: Any = None,
    log_tail: str = "",
) -> Invocation:
    return Invocation(
        request_id=request_id,
        environment=0,
        records=tuple(records),
        received_ns=started_ns,
        started_ns=started_ns,
        ended_ns=started_ns + 2_000_000,
        outcome=outcome,
        error=error,
        writes=tuple(writes),
        result=result,
        log_tail=log_tail,
    )


def record(message_id: str, business_id: str | None, receive_count: int = 1) -> Record:
    return Record(message_id=message_id, receive_count=receive_count, business_id=business_id)


def end_state(items: list[TypedItem]) -> EndState:
    return EndState(
        queue_visible=0,
        queue_in_flight=0,
        dlq_messages=0,
        table_items={key_string({"id": item["id"]}): item for item in items},
    )


def lab_history() -> tuple[History, EndState]:
    """The reference lab's run: dedup-order/4 three times, other-order/1 once, conditional guard.

    2 writes accepted, 2 rejected by the condition (item before == item after).
    """
    dedup = order_item("dedup-order", 4)
    other = order_item("other-order", 1)
    history = History(started_ns=0, ended_ns=50_000_000)
    history.sent = [
        sent(0, "dedup-order", "m-1", 4),
        sent(1, "dedup-order", "m-2", 4),
        sent(2, "dedup-order", "m-3", 4),
        sent(3, "other-order", "m-4", 1),
    ]
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "dedup-order")],
            [write(dedup, started_ns=1_000_000)],
            started_ns=1_000_000,
        ),
        invocation(
            "r-2",
            [record("m-2", "dedup-order")],
            [
                write(
                    dedup,
                    outcome=WriteOutcome.REJECTED,
                    before=dedup,
                    before_known=True,
                    started_ns=5_000_000,
                )
            ],
            started_ns=5_000_000,
        ),
        invocation(
            "r-3",
            [record("m-3", "dedup-order")],
            [
                write(
                    dedup,
                    outcome=WriteOutcome.REJECTED,
                    before=dedup,
                    before_known=True,
                    started_ns=9_000_000,
                )
            ],
            started_ns=9_000_000,
        ),
        invocation(
            "r-4",
            [record("m-4", "other-order")],
            [write(other, started_ns=13_000_000)],
            started_ns=13_000_000,
        ),
    ]
    history.acks = [Ack(message_id=f"m-{n}", acked_ns=20_000_000 + n) for n in range(1, 5)]
    return history, end_state([dedup, other])

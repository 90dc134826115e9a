"""Billable units and prices, against figures computed by hand from AWS's billing rules."""

from __future__ import annotations

import dataclasses
import json

import pytest

from loadtest.errors import PricesError
from loadtest.model.figures.cost import (
    Prices,
    item_bytes,
    lambda_billed_ms,
    parse_prices,
    priced,
    read_units,
    sqs_calls,
    units_of,
    write_units,
)
from loadtest.model.figures.price_tables import default_prices
from loadtest.model.history.log import (
    Ack,
    History,
    Invocation,
    InvocationOutcome,
    ReadRecord,
    Record,
    SentMessage,
    WriteOutcome,
)
from tests.model.builders import lab_history, order_item, write

PRICES = Prices(
    region="us-east-1",
    as_of="2025-06-01",
    currency="USD",
    sqs_standard_per_million_requests=0.40,
    sqs_fifo_per_million_requests=0.50,
    lambda_per_million_requests=0.20,
    lambda_per_gb_s=0.0000166667,
    dynamodb_per_million_write_units=0.625,
    dynamodb_per_million_read_units=0.125,
)


def test_item_sizes_follow_the_sizing_guide() -> None:
    # id: 2 + 11; quantity: 8 + (1 digit -> 1 byte) + 1; total_cents: 11 + ("11" -> 1) + 1
    assert item_bytes(order_item("dedup-order", 4)) == 13 + 10 + 13
    assert item_bytes({"n": {"N": "0.0012300"}}) == 1 + 2 + 1  # "123": 3 digits -> 2 bytes, + 1
    assert item_bytes({"b": {"BOOL": True}, "z": {"NULL": True}}) == 2 + 2
    assert item_bytes({"m": {"M": {"k": {"S": "ab"}}}}) == 1 + 3 + (1 + 1 + 2)
    assert item_bytes({"l": {"L": [{"N": "12"}, {"S": "x"}]}}) == 1 + 3 + (1 + 2) + (1 + 1)
    assert item_bytes(None) == 0


def test_lambda_bills_whole_milliseconds() -> None:
    assert lambda_billed_ms(0, 1) == 1
    assert lambda_billed_ms(0, 1_000_000) == 1
    assert lambda_billed_ms(0, 1_000_001) == 2
    assert lambda_billed_ms(0, 250_200_000) == 251


def _seed_lab() -> History:
    """The lab as the seed-lab scenario runs it: a burst, so one SendMessageBatch of four."""
    history, _ = lab_history()
    history.sent = [dataclasses.replace(m, sent_ns=10) for m in history.sent]
    return history


def test_seed_lab_units_by_hand() -> None:
    units = units_of(_seed_lab(), memory_mb=128)
    # SQS: 1 SendMessageBatch (4 x 36 bytes) + 4 ReceiveMessage + 4 DeleteMessageBatch.
    assert units.sqs_requests == 9
    assert units.sqs_requests_source == "history"
    # Lambda: 4 invocations of 2 ms; 128 MB = 0.125 GB -> 0.125 * 0.008 s.
    assert units.lambda_requests == 4
    assert units.lambda_billed_ms == 8
    assert units.lambda_gb_s == pytest.approx(0.001)
    # DynamoDB: 2 accepted puts of a 36-byte item, and 2 puts rejected by the
    # condition, which still pay for the existing 36-byte item: 4 x 1 WRU.
    assert units.dynamodb_write_units == 4
    assert units.dynamodb_read_units == 0


def test_seed_lab_price_per_million_by_hand() -> None:
    cost = priced(units_of(_seed_lab(), memory_mb=128), PRICES, messages=4)
    # 9 x 0.40/M + (4 x 0.20/M + 0.001 x 0.0000166667) + 4 x 0.625/M
    total = 3.6e-6 + 0.8e-6 + 0.0000000166667 + 2.5e-6
    assert cost["usd"]["total"] == pytest.approx(total, rel=1e-6)
    assert cost["per_million_usd"] == pytest.approx(total / 4 * 1e6, abs=1e-4)
    assert cost["per_million_usd"] == pytest.approx(1.7292, abs=1e-4)
    assert cost["prices"]["queue"] == "standard"


def _batched() -> History:
    """20 messages of 8,000 bytes, batch size 10, read-then-write, 1 GB of memory."""
    pad = "x" * (8000 - len(json.dumps({"id": "o00", "quantity": 1, "pad": ""})))
    sent = [
        SentMessage(
            index=i,
            business_id=f"o{i:02}",
            body=json.dumps({"id": f"o{i:02}", "quantity": 1, "pad": pad}),
            intended_ns=0,
            sent_ns=100 if i < 10 else 200,
            message_id=f"m{i:02}",
        )
        for i in range(20)
    ]
    assert all(len(m.body) == 8000 for m in sent)
    note = "n" * 1500

    def item(i: int) -> dict[str, dict[str, str]]:
        return {"id": {"S": f"o{i:02}"}, "note": {"S": note}}  # 2+3 + 4+1500 = 1509 bytes

    def get(i: int, *, found: bool = False, consistent: bool = False) -> ReadRecord:
        return ReadRecord(
            key={"id": {"S": f"o{i:02}"}},
            found={"id": {"S": f"o{i:02}"}, "blob": {"S": "b" * 5000}} if found else None,
            consistent=consistent,
            started_ns=0,
            ended_ns=0,
        )

    first = [write(item(i), condition=None, started_ns=i) for i in range(10)]
    second = [write(item(i), condition=None, started_ns=i) for i in range(10, 20)]
    # A repeat overwrite of o03 (before known, same size), and a transactional put.
    again = write(item(3), condition=None, before=item(3), before_known=True)
    txn = write(item(4), condition=None, operation="TransactWriteItems.Put")
    # A throttled write consumed nothing.
    throttled = dataclasses.replace(write(item(5)), outcome=WriteOutcome.ERROR)

    def inv(n: int, first_id: int, writes: list, reads: list, ms: float) -> Invocation:  # type: ignore[type-arg]
        return Invocation(
            request_id=f"r{n}",
            environment=0,
            records=tuple(
                Record(f"m{i:02}", 1, f"o{i:02}") for i in range(first_id, first_id + 10)
            ),
            received_ns=0,
            started_ns=0,
            ended_ns=int(ms * 1_000_000),
            outcome=InvocationOutcome.SUCCESS,
            error=None,
            writes=tuple(writes),
            reads=tuple(reads),
        )

    history = History()
    history.sent = sent
    history.invocations = [
        inv(1, 0, [*first, again, txn, throttled], [get(i) for i in range(10)], 250.2),
        inv(
            2,
            10,
            second,
            [get(i) for i in range(10, 19)] + [get(19, found=True, consistent=True)],
            99.0,
        ),
    ]
    history.acks = [Ack(f"m{i:02}", 0, requested_ns=1 if i < 10 else 2) for i in range(20)]
    return history


def test_batched_units_by_hand() -> None:
    history = _batched()
    calls = sqs_calls(history)
    # Each call carries 80,000 bytes of bodies: two 64 KB chunks, two requests.
    assert (calls.send, calls.receive, calls.delete) == (4, 4, 2)
    assert calls.calls == 6 and calls.extra_chunks == 4
    units = units_of(history, memory_mb=1024)
    assert units.sqs_requests == 10
    assert units.lambda_requests == 2
    assert units.lambda_billed_ms == 251 + 99
    assert units.lambda_gb_s == pytest.approx(0.35)
    # 1509-byte items: 2 WRU each. 20 first writes + 1 overwrite = 21 x 2;
    # the transactional put 2 x 2; the throttled write 0.
    assert units.dynamodb_write_units == 21 * 2 + 4
    # 19 eventually consistent misses at 0.5; a strongly consistent read of a
    # 5,008-byte item is two 4 KB steps.
    assert units.dynamodb_read_units == pytest.approx(19 * 0.5 + 2)


def test_backend_count_replaces_the_history_lower_bound_plus_chunks() -> None:
    # The backend served 25 SQS calls (empty long polls included); 4 of the
    # history's calls were two chunks each.
    units = units_of(_batched(), memory_mb=1024, sqs_requests_served=25)
    assert units.sqs_requests == 29
    assert units.sqs_requests_source == "backend"
    assert units.sqs_requests_history == 10


def test_rejected_and_deleted_writes_pay_for_the_existing_item() -> None:
    big = {"id": {"S": "a"}, "blob": {"S": "b" * 3000}}
    small = {"id": {"S": "a"}}
    rejected = write(small, outcome=WriteOutcome.REJECTED, before=big, before_known=True)
    assert write_units(rejected) == 3
    deleted = write(small, operation="DeleteItem", before=big, before_known=True)
    assert write_units(deleted) == 3
    shrink = write(small, before=big, before_known=True)  # a put replacing a larger item
    assert write_units(shrink) == 3
    indeterminate = dataclasses.replace(write(small), outcome=WriteOutcome.INDETERMINATE)
    assert write_units(indeterminate) == 1
    assert (
        read_units(ReadRecord(key=small, found=None, consistent=True, started_ns=0, ended_ns=0))
        == 1.0
    )


def test_fifo_queues_use_the_fifo_request_price() -> None:
    cost = priced(units_of(_seed_lab(), memory_mb=128), PRICES, messages=4, fifo=True)
    assert cost["usd"]["sqs"] == pytest.approx(9 * 0.50 / 1e6)
    assert priced(units_of(History(), memory_mb=128), PRICES, messages=0)["per_million_usd"] is None


def test_committed_price_table_parses_and_bad_tables_are_refused() -> None:
    prices = default_prices()
    assert prices.region == "us-east-1"
    assert prices.dynamodb_per_million_write_units == 0.625
    assert dataclasses.replace(prices, source="built-in") == dataclasses.replace(
        PRICES, source="built-in"
    )
    with pytest.raises(PricesError, match=r"\[sqs\] standard_per_million_requests"):
        parse_prices({"sqs": {"standard_per_million_requests": -1}}, source="mine.toml")


@pytest.mark.parametrize("merged", [False, True])
def test_send_batches_are_counted_by_send_time_in_order_or_merged(merged: bool) -> None:
    """Each distinct send time is one SendMessageBatch, whether the log has a batch's
    messages together in send order or merged from several producers out of it."""
    from loadtest.model.history.log import History, SentMessage

    big = "x" * 40_000  # two of them pass one 64 KB chunk
    messages = [
        SentMessage(i, f"o-{i}", big, 0, sent_ns=1_000 * (i // 3), message_id=f"m-{i}")
        for i in range(12)
    ]  # 4 batches of 3, each 120,000 bytes: 2 chunks
    if merged:  # two producers' logs, a batch split by another's
        messages = messages[:2] + messages[6:9] + messages[2:6] + messages[9:]
    history = History()
    history.sent = messages
    calls = sqs_calls(history)
    assert (calls.send, calls.calls) == (8, 4)

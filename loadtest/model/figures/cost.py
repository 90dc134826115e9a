"""What a run cost: the billable units it consumed, and their price.

Owns the billing rules (how AWS turns requests into billable units) and the
price table's shape. Pure: no I/O, no clock; the price file is read by
``loadtest.model.figures.price_tables`` and the backend's request counts are fetched by the engine.
It never re-derives the checker's counts: it bills every observed call,
whatever the checker made of it.

The rules, as the AWS pricing pages and developer guides state them:

- **SQS**: every API action is a request; each 64 KB chunk of a call's
  payload is billed as one request (a 256 KB send is four). Empty receives
  are requests too, so the backend's own count of the requests it served is
  preferred when it has one (the embedded backend does); the history alone
  gives a lower bound (sends, receives that returned records, deletes).
- **Lambda**: one request per invocation, and GB-seconds = memory (MB / 1024)
  x billed duration, the duration rounded up to the next 1 ms. Crashed,
  timed-out and cut-off invocations are billed too.
- **DynamoDB on-demand**: a write costs one write request unit per 1 KB of
  the item, rounded up per item: for a put or update the larger of the item
  before and after, for a delete the deleted item. A write rejected by its
  condition still consumes, by the size of the existing item (at least one
  unit). Transactional writes (TransactWriteItems, ExecuteTransaction) cost
  twice. A key lookup (the only read the observer records) costs one unit
  per 4 KB (strongly consistent) or half that (eventually consistent), at
  least one 4 KB step even when the item is absent; other reads are not
  billed and the report says so. A write refused with an error (throttled, invalid) consumes
  nothing; an indeterminate one is assumed to have happened.

Item sizes follow DynamoDB's sizing guide: attribute name bytes plus value
bytes (strings UTF-8, numbers 1 byte per two significant digits + 1, binary
raw bytes, bool/null 1, lists and maps 3 + 1 per element + the elements).
"""

from __future__ import annotations

import base64
import math
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from loadtest.errors import PricesError
from loadtest.model.history.log import (
    History,
    ReadRecord,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.workload.ids import IdIndex, count_distinct

SQS_CHUNK_BYTES = 64 * 1024
"""Each 64 KB chunk of one call's payload is billed as one request."""
WRITE_UNIT_BYTES = 1024
READ_UNIT_BYTES = 4 * 1024
TRANSACTIONAL = ("TransactWriteItems", "ExecuteTransaction")
"""Operations (as the observer names them) billed at twice the units."""


@dataclass(frozen=True)
class Prices:
    """On-demand list prices (in USD unless ``currency`` says otherwise)."""

    region: str
    as_of: str
    """When the prices were checked (ISO date)."""
    currency: str
    sqs_standard_per_million_requests: float
    sqs_fifo_per_million_requests: float
    lambda_per_million_requests: float
    lambda_per_gb_s: float
    dynamodb_per_million_write_units: float
    dynamodb_per_million_read_units: float
    source: str = "built-in"
    """Where the table came from (the file passed with ``--prices``, or built-in)."""

    def describe(self) -> str:
        return f"{self.region} list prices as of {self.as_of} ({self.source})"


def parse_prices(data: Mapping[str, Any], source: str = "built-in") -> Prices:
    """A price table from its TOML shape (see ``loadtest/model/figures/prices/us-east-1.toml``)."""

    def price(section: str, name: str) -> float:
        value = data.get(section, {}).get(name) if isinstance(data.get(section), dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise PricesError(
                f"price table {source}: [{section}] {name} must be a number >= 0, got {value!r}"
            )
        return float(value)

    return Prices(
        region=str(data.get("region", "unknown")),
        as_of=str(data.get("as_of", "unknown")),
        currency=str(data.get("currency", "USD")),
        sqs_standard_per_million_requests=price("sqs", "standard_per_million_requests"),
        sqs_fifo_per_million_requests=price("sqs", "fifo_per_million_requests"),
        lambda_per_million_requests=price("lambda", "per_million_requests"),
        lambda_per_gb_s=price("lambda", "per_gb_s"),
        dynamodb_per_million_write_units=price("dynamodb", "per_million_write_request_units"),
        dynamodb_per_million_read_units=price("dynamodb", "per_million_read_request_units"),
        source=source,
    )


# --- item sizes -----------------------------------------------------------------


def _number_bytes(text: str) -> int:
    digits = text.lstrip("+-").lower().split("e")[0].replace(".", "").strip("0")
    return math.ceil(len(digits) / 2) + 1


def value_bytes(value: Mapping[str, Any]) -> int:
    """Size of one typed attribute value, without its name."""
    (kind, raw), *_ = value.items()
    if kind == "S":
        return len(str(raw).encode())
    if kind == "N":
        return _number_bytes(str(raw))
    if kind == "B":
        return len(_raw_bytes(raw))
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(str(s).encode()) for s in raw)
    if kind == "NS":
        return sum(_number_bytes(str(n)) for n in raw)
    if kind == "BS":
        return sum(len(_raw_bytes(b)) for b in raw)
    if kind == "L":
        return 3 + sum(1 + value_bytes(v) for v in raw)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + value_bytes(v) for k, v in raw.items())
    return len(str(raw).encode())


def _raw_bytes(raw: Any) -> bytes:
    if isinstance(raw, bytes | bytearray):
        return bytes(raw)
    try:
        return base64.b64decode(str(raw), validate=True)
    except ValueError:
        return str(raw).encode()


def item_bytes(item: TypedItem | None) -> int:
    """An item's size as DynamoDB bills it (0 for an absent item)."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_bytes(value) for name, value in item.items())


# --- units ----------------------------------------------------------------------


def write_units(write: WriteRecord) -> int:
    """Write request units one observed write consumed."""
    if write.outcome is WriteOutcome.ERROR:
        return 0
    before = item_bytes(write.item_before) if write.before_known else 0
    if write.outcome is WriteOutcome.REJECTED or write.deletes:
        size = before
    else:
        after = write.item_after if write.item_after is not None else write.requested
        size = max(before, item_bytes(after))
    units = max(1, math.ceil(size / WRITE_UNIT_BYTES))
    return units * 2 if write.operation.startswith(TRANSACTIONAL) else units


def read_units(read: ReadRecord) -> float:
    """Read request units one observed key lookup consumed."""
    steps = max(1, math.ceil(item_bytes(read.found) / READ_UNIT_BYTES))
    return float(steps) if read.consistent else steps / 2


def lambda_billed_ms(started_ns: int, ended_ns: int) -> int:
    """Billed duration of one invocation: rounded up to the next millisecond, at least 1."""
    return max(1, math.ceil(max(0, ended_ns - started_ns) / 1_000_000))


def _chunks(payload_bytes: int) -> int:
    return max(1, math.ceil(payload_bytes / SQS_CHUNK_BYTES))


@dataclass(frozen=True)
class SqsCalls:
    """SQS requests the history shows, by API, each call's 64 KB chunks counted."""

    send: int
    receive: int
    delete: int
    calls: int
    """API calls behind those requests (a call of 100 KB is one call, two requests)."""

    @property
    def requests(self) -> int:
        return self.send + self.receive + self.delete

    @property
    def extra_chunks(self) -> int:
        """Requests beyond one per call: what a per-call count misses."""
        return self.requests - self.calls


def sqs_calls(history: History) -> SqsCalls:
    """SQS requests estimated from the history, when the backend does not count them.

    One SendMessageBatch per distinct send time (a batch's messages share it),
    one ReceiveMessage per invocation, one DeleteMessageBatch per distinct
    request time of the acknowledgements. An estimate: empty receives are not
    in the history, and one receive can feed several invocations.
    """
    # A batch's messages share their send time and are logged together, in the order
    # sent: each run of one send time is a batch. A log merged from several producer
    # processes is not in that order: it is read again, every send time kept.
    send = batches = 0
    batch_ns: int | None = None
    batch_bytes = 0
    in_order = True
    ids = IdIndex(len(history.sent))
    sizes = array("q")
    """Each message's body, in bytes, by its position in ``ids``."""
    for m in history.sent:
        size = len(m.body.encode())
        if m.sent_ns != batch_ns:
            if batch_ns is not None:
                in_order = in_order and m.sent_ns > batch_ns
                send, batches = send + _chunks(batch_bytes), batches + 1
            batch_ns, batch_bytes = m.sent_ns, 0
        batch_bytes += size
        if m.message_id:
            ids.add(m.message_id)
            sizes.append(size)
    if batch_ns is not None:
        send, batches = send + _chunks(batch_bytes), batches + 1
    if not in_order:
        by_time: dict[int, int] = {}
        for m in history.sent:
            by_time[m.sent_ns] = by_time.get(m.sent_ns, 0) + len(m.body.encode())
        send, batches = sum(_chunks(b) for b in by_time.values()), len(by_time)
    ids.settle(lambda: (m.message_id for m in history.sent if m.message_id))
    receive = receives = 0
    for inv in history.invocations.without_writes():  # it reads what each one received
        receives += 1
        received = 0
        for r in inv.records:
            found = ids.positions(r.message_id)
            received += sizes[found[0]] if found else 0
        receive += _chunks(received)
    unnamed = 0
    """Acknowledgements with no request time: each its own call."""

    def request_times() -> Iterator[int]:
        nonlocal unnamed
        for a in history.acks:
            if a.requested_ns is None:
                unnamed += 1
            else:
                yield a.requested_ns

    delete = count_distinct(request_times())
    delete += unnamed
    return SqsCalls(send=send, receive=receive, delete=delete, calls=batches + receives + delete)


@dataclass(frozen=True)
class Units:
    """The billable units of one variant run."""

    sqs_requests: int
    """Billed SQS requests (each 64 KB chunk of a call is one)."""
    sqs_requests_source: str
    """``backend`` (the requests the backend served, plus extra chunks) or ``history``."""
    sqs_requests_history: int
    """The estimate the history alone gives (see ``sqs_calls``)."""
    lambda_requests: int
    lambda_billed_ms: int
    """Sum of the invocations' billed durations (in milliseconds)."""
    lambda_gb_s: float
    dynamodb_write_units: int
    dynamodb_read_units: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def units_of(history: History, *, memory_mb: int, sqs_requests_served: int | None = None) -> Units:
    """The units a run consumed, from its history (and the backend's SQS count, if known)."""
    calls = sqs_calls(history)
    if sqs_requests_served is not None:
        sqs, source = sqs_requests_served + calls.extra_chunks, "backend"
    else:
        sqs, source = calls.requests, "history"
    # One pass: each pass over the invocations decodes the whole log.
    billed_ms = write_units_total = 0
    read_units_total: float = 0
    for inv in history.invocations:
        billed_ms += lambda_billed_ms(inv.started_ns, inv.ended_ns)
        for w in inv.writes:
            write_units_total += write_units(w)
        for r in inv.reads:
            read_units_total += read_units(r)
    return Units(
        sqs_requests=sqs,
        sqs_requests_source=source,
        sqs_requests_history=calls.requests,
        lambda_requests=len(history.invocations),
        lambda_billed_ms=billed_ms,
        lambda_gb_s=round(memory_mb / 1024 * billed_ms / 1000, 6),
        dynamodb_write_units=write_units_total,
        dynamodb_read_units=read_units_total,
    )


NOT_COUNTED = (
    "writes and reads of tables other than the orders table "
    "(an idempotency library's own records) are not observed and not billed here",
    "only key lookups of the orders table (GetItem, a PartiQL SELECT by key) are billed as "
    "reads: Query, Scan, BatchGetItem and TransactGetItems are not",
)


def priced(units: Units, prices: Prices, *, messages: int, fifo: bool = False) -> dict[str, Any]:
    """The report's ``cost`` section: units, their price, and the price per million messages.

    ``messages`` is the number of messages the run sent; ``per_million_usd``
    is None when it sent none.
    """
    sqs_price = (
        prices.sqs_fifo_per_million_requests if fifo else prices.sqs_standard_per_million_requests
    )
    usd = {
        "sqs": units.sqs_requests * sqs_price / 1e6,
        "lambda": units.lambda_requests * prices.lambda_per_million_requests / 1e6
        + units.lambda_gb_s * prices.lambda_per_gb_s,
        "dynamodb": units.dynamodb_write_units * prices.dynamodb_per_million_write_units / 1e6
        + units.dynamodb_read_units * prices.dynamodb_per_million_read_units / 1e6,
    }
    total = sum(usd.values())
    return {
        "units": units.as_dict(),
        "usd": {**{k: round(v, 12) for k, v in usd.items()}, "total": round(total, 12)},
        "per_million_usd": round(total / messages * 1e6, 4) if messages else None,
        "prices": {
            "region": prices.region,
            "as_of": prices.as_of,
            "currency": prices.currency,
            "source": prices.source,
            "queue": "fifo" if fifo else "standard",
        },
        "not_counted": list(NOT_COUNTED),
    }

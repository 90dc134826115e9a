"""``loadtest doctor``: does this backend behave the way loadtest's conclusions assume?

Owns the backend conformance checks and the resources they need: one table and four
queues, all named ``loadtest-doctor-<hex>-...``, created by ``run_doctor``, recorded the
moment each exists, and deleted at the end (shielded from cancellation, also on failure).
Must not touch any other table or queue, print, or set an exit code (the CLI does).

The checks, in the order they run:

* ``conditional-put-atomic`` - many clients ``PutItem`` the same key at once under
  ``attribute_not_exists(id)``; exactly one may win, and the stored item is the winner's.
* ``all-old-on-condition-failure`` - every loser's ``ReturnValuesOnConditionCheckFailure=
  ALL_OLD`` item equals the item stored (read back with ``ConsistentRead``).
* ``partiql-insert-refuses-duplicate`` - a PartiQL ``INSERT`` of a stored key is refused
  with ``DuplicateItemException`` and leaves the item unchanged (DynamoDB's INSERT never
  overwrites; a consumer may use it as its conditional write), and a parameterised
  ``INSERT ... VALUE {'id': ?, 'quantity': ?}`` stores its item.
* ``visibility-hides-message`` - concurrent pollers never receive a message another
  poller holds while its visibility timeout lasts.
* ``redelivery-increments-receive-count`` - a received, undeleted message returns after
  its visibility timeout with ``ApproximateReceiveCount`` 2.
* ``redrive-to-dlq`` - a message received ``maxReceiveCount`` times without being deleted
  moves to the dead-letter queue, same ``MessageId``.

A check that does not finish in its time bound, or whose request the backend answers with
an error, is reported as failed. A backend that cannot be reached, or refuses the
credentials, raises the ``BackendError`` that ``loadtest.adapters.aws.translate`` makes of it.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
import botocore.exceptions
from anyio.abc import TaskStatus

from loadtest.adapters import aws
from loadtest.errors import BackendError, CredentialsError, InputError, find_error

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_sqs.client import SQSClient
    from types_aiobotocore_sqs.literals import QueueAttributeNameType

__all__ = ["CHECK_NAMES", "RESOURCE_PREFIX", "CheckResult", "exit_ok", "run_doctor"]

RESOURCE_PREFIX = "loadtest-doctor-"
"""Every table and queue the doctor creates is named ``loadtest-doctor-<hex>-<purpose>``."""

ATOMIC = "conditional-put-atomic"
ALL_OLD = "all-old-on-condition-failure"
PARTIQL = "partiql-insert-refuses-duplicate"
VISIBILITY = "visibility-hides-message"
REDELIVERY = "redelivery-increments-receive-count"
REDRIVE = "redrive-to-dlq"
CHECK_NAMES = (ATOMIC, ALL_OLD, PARTIQL, VISIBILITY, REDELIVERY, REDRIVE)
"""The checks ``run_doctor`` reports, in this order."""

CLEANUP = "cleanup"
"""Reported (failed) only when a created table or queue could not be deleted."""

_MIN_POOL_CONNECTIONS = 128
"""HTTP connections for the doctor's clients: enough for ``writers`` puts on many keys at once."""
_SETUP_TIMEOUT_S = 120.0
"""Time allowed (in seconds) to create the queues and the table and see it ACTIVE."""
_TEARDOWN_TIMEOUT_S = 60.0
"""Time allowed (in seconds) to delete what was created."""
_ATOMIC_BASE_TIMEOUT_S = 30.0
_ATOMIC_PER_PUT_TIMEOUT_S = 0.02
"""The atomicity rounds may take ``_ATOMIC_BASE_TIMEOUT_S`` plus this (in seconds) per put."""

_PARTIQL_CHECK_TIMEOUT_S = 20.0
_DUPLICATE_ITEM = "DuplicateItemException"

_VISIBILITY_MESSAGES = 50
_VISIBILITY_POLLERS = 6
_VISIBILITY_TIMEOUT_S = 30
"""Visibility timeout (in seconds) of the visibility check; its time bound stays well below."""
_VISIBILITY_CHECK_TIMEOUT_S = 20.0
_VISIBILITY_SETTLE_S = 2.0
"""After every message was seen once, keep polling this long (in seconds) for a duplicate."""

_SHORT_VISIBILITY_TIMEOUT_S = 1
"""Visibility timeout (in seconds) of the redelivery and redrive queues."""
_REDELIVERY_CHECK_TIMEOUT_S = 20.0
_REDELIVERY_WAIT_S = 12.0
"""How long (in seconds) an undeleted message may take to come back before the check fails."""
_REDRIVE_MAX_RECEIVE_COUNT = 2
_REDRIVE_CHECK_TIMEOUT_S = 30.0
_REDRIVE_WAIT_S = 20.0
"""How long (in seconds) after the first receive the message may take to reach the DLQ."""
_POLL_WAIT_S = 1
"""Long-poll wait (in seconds) per ReceiveMessage."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one conformance check."""

    name: str
    """One of ``CHECK_NAMES`` (or ``"cleanup"`` when something could not be deleted)."""
    ok: bool
    """True when the backend behaved as loadtest assumes."""
    summary: str
    """One line with the figures, e.g. ``"1600 conditional puts on 200 keys (...): 200 keys
    with exactly one winner, 0 with more than one ..."``."""
    details: dict[str, int | float | str] = field(default_factory=dict)
    """The figures by name; durations carry their unit (``_s``)."""


def exit_ok(results: Sequence[CheckResult]) -> bool:
    """True when there is at least one result and every one passed."""
    return bool(results) and all(result.ok for result in results)


async def run_doctor(
    target: aws.Target,
    *,
    keys: int = 200,
    writers: int = 8,
    rounds: int = 3,
    on_check: Callable[[CheckResult], None] | None = None,
) -> list[CheckResult]:
    """Run every check against ``target`` and return their results in ``CHECK_NAMES`` order.

    ``keys`` distinct keys per round, each ``PutItem``-ed by ``writers`` concurrent writers,
    for ``rounds`` rounds. ``on_check`` is called with each result as soon as it is known.
    Raises ``BackendError`` (``CredentialsError``) when the backend cannot be reached or
    refuses the credentials, ``InputError`` for impossible sizes; a check the backend fails
    is a result, not an exception. A table or queue that could not be deleted at the end
    adds a failed ``"cleanup"`` result naming it.
    """
    if keys < 1 or writers < 2 or rounds < 1:
        raise InputError(
            f"loadtest doctor needs keys >= 1, writers >= 2 and rounds >= 1 (got {keys}, {writers}, {rounds})"
        )
    results: list[CheckResult] = []

    def report(found: list[CheckResult]) -> None:
        for result in found:
            results.append(result)
            if on_check is not None:
                on_check(result)

    names = _Names.new()
    made = _Made()
    # Opening or closing the clients themselves; the checks translate their own calls.
    with aws.translated("open SQS and DynamoDB clients", target):
        async with aws.clients(target, pool=max(_MIN_POOL_CONNECTIONS, writers)) as (
            sqs,
            dynamodb,
        ):
            try:
                resources = await _setup(sqs, dynamodb, names, made, target)
                atomic_timeout_s = (
                    _ATOMIC_BASE_TIMEOUT_S + _ATOMIC_PER_PUT_TIMEOUT_S * keys * writers * rounds
                )
                report(
                    await _bounded(
                        (ATOMIC, ALL_OLD),
                        atomic_timeout_s,
                        lambda: _check_conditional_puts(
                            dynamodb, resources.table, keys, writers, rounds, target
                        ),
                    )
                )
                report(
                    await _bounded(
                        (PARTIQL,),
                        _PARTIQL_CHECK_TIMEOUT_S,
                        lambda: _check_partiql_insert(dynamodb, resources.table, target),
                    )
                )
                report(
                    await _bounded(
                        (VISIBILITY,),
                        _VISIBILITY_CHECK_TIMEOUT_S,
                        lambda: _check_visibility(sqs, resources.visibility_queue, target),
                    )
                )
                report(
                    await _bounded(
                        (REDELIVERY,),
                        _REDELIVERY_CHECK_TIMEOUT_S,
                        lambda: _check_redelivery(sqs, resources.redelivery_queue, target),
                    )
                )
                report(
                    await _bounded(
                        (REDRIVE,),
                        _REDRIVE_CHECK_TIMEOUT_S,
                        lambda: _check_redrive(sqs, resources.redrive_queue, resources.dlq, target),
                    )
                )
            except BaseException as exc:
                problems = await _teardown(sqs, dynamodb, made)
                if problems:
                    exc.add_note("loadtest doctor could not delete: " + "; ".join(problems))
                raise
            problems = await _teardown(sqs, dynamodb, made)
    if problems:
        report(
            [
                CheckResult(
                    CLEANUP,
                    False,
                    f"could not delete {len(problems)} of the doctor's resources: "
                    + "; ".join(problems),
                    {"left_behind": len(problems)},
                )
            ]
        )
    return results


# --- resources ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Names:
    table: str
    visibility_queue: str
    redelivery_queue: str
    redrive_queue: str
    dlq: str

    @staticmethod
    def new() -> _Names:
        base = f"{RESOURCE_PREFIX}{secrets.token_hex(4)}"
        return _Names(
            table=f"{base}-atomic",
            visibility_queue=f"{base}-visibility",
            redelivery_queue=f"{base}-redelivery",
            redrive_queue=f"{base}-redrive",
            dlq=f"{base}-redrive-dlq",
        )


@dataclass
class _Made:
    """What this run created, appended the moment each exists; teardown deletes only these."""

    queue_urls: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Resources:
    table: str
    visibility_queue: str
    redelivery_queue: str
    redrive_queue: str
    dlq: str
    """Queue URLs, except ``table`` (a name)."""


async def _setup(
    sqs: SQSClient, dynamodb: DynamoDBClient, names: _Names, made: _Made, target: aws.Target
) -> _Resources:
    async def queue(name: str, attributes: Mapping[QueueAttributeNameType, str]) -> str:
        created = await sqs.create_queue(QueueName=name, Attributes=attributes)
        made.queue_urls.append(created["QueueUrl"])
        return created["QueueUrl"]

    try:
        with (
            anyio.fail_after(_SETUP_TIMEOUT_S),
            aws.translated("create the doctor's table and queues", target),
        ):
            await aws.create_id_table(
                dynamodb, names.table, record=made.tables.append, created_by="loadtest-doctor"
            )
            visibility = await queue(
                names.visibility_queue, {"VisibilityTimeout": str(_VISIBILITY_TIMEOUT_S)}
            )
            short: dict[QueueAttributeNameType, str] = {
                "VisibilityTimeout": str(_SHORT_VISIBILITY_TIMEOUT_S)
            }
            redelivery = await queue(names.redelivery_queue, short)
            dlq = await queue(names.dlq, {})
            attributes = await sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])
            redrive_policy = {
                "deadLetterTargetArn": attributes["Attributes"]["QueueArn"],
                "maxReceiveCount": str(_REDRIVE_MAX_RECEIVE_COUNT),
            }
            redrive = await queue(
                names.redrive_queue, {**short, "RedrivePolicy": json.dumps(redrive_policy)}
            )
    except TimeoutError as exc:
        raise BackendError(
            f"{target.endpoint_url or 'AWS'}: the doctor's table and queues were not ready "
            f"within {_SETUP_TIMEOUT_S:g} s"
        ) from exc
    return _Resources(names.table, visibility, redelivery, redrive, dlq)


async def _teardown(sqs: SQSClient, dynamodb: DynamoDBClient, made: _Made) -> list[str]:
    """Delete exactly what ``made`` lists; return problems instead of raising."""
    return await aws.delete_resources(
        sqs, dynamodb, made.queue_urls, made.tables, timeout_s=_TEARDOWN_TIMEOUT_S
    )


# --- error handling -----------------------------------------------------------------------


class _BackendAnswered(Exception):
    """The backend answered a check's request with an error: that check fails, the run goes on."""


@contextmanager
def _calls(action: str, target: aws.Target) -> Iterator[None]:
    """Unreachable or refused credentials raise ``BackendError``; other answers fail the check."""
    try:
        with aws.translated(action, target):
            yield
    except BackendError as exc:
        answered = isinstance(exc.__cause__, botocore.exceptions.ClientError)
        if isinstance(exc, CredentialsError) or not answered:
            raise
        raise _BackendAnswered(str(exc)) from exc.__cause__


async def _bounded(
    names: tuple[str, ...],
    timeout_s: float,
    check: Callable[[], Awaitable[list[CheckResult]]],
) -> list[CheckResult]:
    """Run ``check`` within ``timeout_s``; a timeout or an error answer fails ``names``."""
    found: list[CheckResult] = []
    try:
        with anyio.move_on_after(timeout_s) as scope:
            found = await check()
    except Exception as exc:
        # Task groups wrap what their tasks raise; look inside.
        backend = find_error(exc, BackendError)
        if backend is not None:
            raise backend from backend.__cause__
        answered = find_error(exc, _BackendAnswered)
        if answered is None:
            raise
        return [CheckResult(name, False, f"backend error: {answered}") for name in names]
    if scope.cancelled_caught:
        summary = f"did not finish within {timeout_s:g} s"
        return [CheckResult(name, False, summary, {"timeout_s": timeout_s}) for name in names]
    return found


# --- conditional puts ---------------------------------------------------------------------

_ItemT = dict[str, Any]


@dataclass(frozen=True)
class _Put:
    """One writer's conditional put: accepted, or rejected with the old item it was given."""

    writer: int
    item: _ItemT
    accepted: bool
    old_item: _ItemT | None
    started_s: float
    """When the request was sent and its answer came back (event loop clock, in seconds)."""
    answered_s: float


async def _check_conditional_puts(
    dynamodb: DynamoDBClient,
    table: str,
    keys: int,
    writers: int,
    rounds: int,
    target: aws.Target,
) -> list[CheckResult]:
    """``writers`` concurrent conditional puts per key; who won, and what the losers saw.

    Why the gate: the race needs both condition checks to run before either write::

        writer A                                writer B
        attribute_not_exists(id)?  yes
                                                attribute_not_exists(id)?  yes
        store A
                                                store B   -> two winners, A silently lost

    All writers of a key wait on one event and are released together, each on its own
    pooled connection, so a backend that checks and then writes in separate steps shows it.
    """
    keys_in_flight = anyio.CapacityLimiter(max(1, _MIN_POOL_CONNECTIONS // writers))
    puts: dict[str, list[_Put]] = {}
    stored: dict[str, _ItemT | None] = {}

    async def put(
        key: str, writer: int, start: anyio.Event, *, task_status: TaskStatus[None]
    ) -> None:
        item: _ItemT = {
            "id": {"S": key},
            "writer": {"N": str(writer)},
            "nonce": {"S": secrets.token_hex(8)},
        }
        task_status.started()
        await start.wait()
        started_s = anyio.current_time()
        with _calls("put an item under attribute_not_exists(id)", target):
            try:
                await dynamodb.put_item(
                    TableName=table,
                    Item=item,
                    ConditionExpression="attribute_not_exists(id)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except botocore.exceptions.ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                    raise
                old: _ItemT | None = exc.response.get("Item")  # type: ignore[assignment]
                answered_s = anyio.current_time()
                puts[key].append(_Put(writer, item, False, old or None, started_s, answered_s))
                return
        puts[key].append(_Put(writer, item, True, None, started_s, anyio.current_time()))

    async def contend(key: str) -> None:
        async with keys_in_flight:
            puts[key] = []
            start = anyio.Event()
            async with anyio.create_task_group() as writers_group:
                for writer in range(writers):
                    await writers_group.start(put, key, writer, start)
                start.set()
            with _calls("read an item back (ConsistentRead)", target):
                got = await dynamodb.get_item(
                    TableName=table, Key={"id": {"S": key}}, ConsistentRead=True
                )
            found = got.get("Item")
            stored[key] = dict(found) if found else None

    for round_index in range(rounds):
        async with anyio.create_task_group() as keys_group:
            for key_index in range(keys):
                keys_group.start_soon(contend, f"r{round_index}-k{key_index}")

    return [_atomic_result(puts, stored, keys, writers, rounds), _all_old_result(puts, stored)]


def _atomic_result(
    puts: dict[str, list[_Put]],
    stored: dict[str, _ItemT | None],
    keys: int,
    writers: int,
    rounds: int,
) -> CheckResult:
    winners = {key: [p for p in key_puts if p.accepted] for key, key_puts in puts.items()}
    multiple = sum(1 for won in winners.values() if len(won) > 1)
    none = sum(1 for won in winners.values() if not won)
    exactly_one = sum(1 for won in winners.values() if len(won) == 1)
    # With one winner, the stored item must be its item; a loser that overwrote it while
    # being told "rejected" is as bad as two winners.
    stored_not_winner = sum(
        1 for key, won in winners.items() if len(won) == 1 and stored.get(key) != won[0].item
    )
    total_puts = sum(len(key_puts) for key_puts in puts.values())
    accepted = sum(len(won) for won in winners.values())
    max_winners = max((len(won) for won in winners.values()), default=0)
    # Evidence the writers really contended: every put of the key was sent before any
    # answer came back, so all were in flight together.
    contended = sum(
        1
        for key_puts in puts.values()
        if key_puts and max(p.started_s for p in key_puts) < min(p.answered_s for p in key_puts)
    )
    ok = multiple == 0 and none == 0 and stored_not_winner == 0 and exactly_one == len(puts) > 0
    summary = (
        f"{total_puts} conditional puts on {len(puts)} keys ({rounds} rounds x {keys} keys x "
        f"{writers} writers): {exactly_one} keys with exactly one winner, {multiple} with more "
        f"than one (max {max_winners}), {none} with none, {stored_not_winner} whose stored "
        f"item is not the winner's; all writers in flight together on {contended} keys"
    )
    return CheckResult(
        ATOMIC,
        ok,
        summary,
        {
            "puts": total_puts,
            "keys": len(puts),
            "writers_per_key": writers,
            "rounds": rounds,
            "accepted": accepted,
            "rejected": total_puts - accepted,
            "keys_exactly_one_winner": exactly_one,
            "keys_multiple_winners": multiple,
            "keys_no_winner": none,
            "max_winners_per_key": max_winners,
            "stored_not_winner": stored_not_winner,
            "keys_all_writers_in_flight_together": contended,
        },
    )


def _all_old_result(puts: dict[str, list[_Put]], stored: dict[str, _ItemT | None]) -> CheckResult:
    losers = [(key, p) for key, key_puts in puts.items() for p in key_puts if not p.accepted]
    missing = sum(1 for _, p in losers if p.old_item is None)
    differs = sum(1 for key, p in losers if p.old_item is not None and p.old_item != stored[key])
    matches = len(losers) - missing - differs
    ok = bool(losers) and matches == len(losers)
    summary = (
        f"{matches}/{len(losers)} rejected puts returned the stored item as ALL_OLD; "
        f"{missing} returned no item, {differs} a different item"
    )
    return CheckResult(
        ALL_OLD,
        ok,
        summary,
        {
            "rejected": len(losers),
            "old_item_matches": matches,
            "old_item_missing": missing,
            "old_item_differs": differs,
        },
    )


# --- PartiQL INSERT -----------------------------------------------------------------------


async def _check_partiql_insert(
    dynamodb: DynamoDBClient, table: str, target: aws.Target
) -> list[CheckResult]:
    """INSERT of a stored key is refused and leaves it unchanged; ``?`` parameters work.

    A consumer may make ``INSERT`` its conditional write; a backend that lets it overwrite
    (plain moto does) turns every duplicate delivery into an accepted write. Three
    statements: a literal INSERT of key A, a second literal INSERT of A (must be refused
    with ``DuplicateItemException``), a parameterised INSERT of key B (must store it).
    """
    suffix = secrets.token_hex(4)
    duplicate_key, parameterised_key = f"partiql-a-{suffix}", f"partiql-b-{suffix}"
    first: _ItemT = {"id": {"S": duplicate_key}, "quantity": {"N": "1"}}
    parameterised: _ItemT = {"id": {"S": parameterised_key}, "quantity": {"N": "3"}}

    async def insert(statement: str, parameters: list[Any] | None = None) -> str:
        """ "" if accepted, else the error code the backend answered with."""
        with _calls("run a PartiQL INSERT", target):
            try:
                if parameters is None:
                    await dynamodb.execute_statement(Statement=statement)
                else:
                    await dynamodb.execute_statement(Statement=statement, Parameters=parameters)
            except botocore.exceptions.ClientError as exc:
                if isinstance(aws.translate(exc, "run a PartiQL INSERT", target), CredentialsError):
                    raise
                # The refusal is the finding, not a backend error.
                return exc.response.get("Error", {}).get("Code") or "an unnamed error"
        return ""

    async def stored(key: str) -> _ItemT | None:
        with _calls("read an item back (ConsistentRead)", target):
            got = await dynamodb.get_item(
                TableName=table, Key={"id": {"S": key}}, ConsistentRead=True
            )
        found = got.get("Item")
        return dict(found) if found else None

    def literal(quantity: int) -> str:
        return f"INSERT INTO \"{table}\" VALUE {{'id': '{duplicate_key}', 'quantity': {quantity}}}"

    seed_error = await insert(literal(1))
    duplicate_error = await insert(literal(2)) if not seed_error else ""
    unchanged = await stored(duplicate_key) == first
    parameterised_error = await insert(
        f"INSERT INTO \"{table}\" VALUE {{'id': ?, 'quantity': ?}}",
        [parameterised["id"], parameterised["quantity"]],
    )
    parameterised_stored = await stored(parameterised_key) == parameterised

    if seed_error:
        duplicate = f"INSERT of a new key: refused with {seed_error}"
    elif duplicate_error == _DUPLICATE_ITEM:
        after = "item unchanged" if unchanged else "item changed anyway"
        duplicate = f"INSERT of a stored key: refused with {_DUPLICATE_ITEM}, {after}"
    elif duplicate_error:
        duplicate = (
            f"INSERT of a stored key: refused with {duplicate_error} (expected {_DUPLICATE_ITEM})"
        )
    else:
        after = "item unchanged" if unchanged else "item overwritten"
        duplicate = f"INSERT of a stored key: accepted, {after}"
    if parameterised_error:
        with_parameters = f"parameterised INSERT: refused with {parameterised_error}"
    elif parameterised_stored:
        with_parameters = "parameterised INSERT: stored its item"
    else:
        with_parameters = "parameterised INSERT: accepted, but the item stored differs"
    ok = (
        not seed_error
        and duplicate_error == _DUPLICATE_ITEM
        and unchanged
        and not parameterised_error
        and parameterised_stored
    )
    return [
        CheckResult(
            PARTIQL,
            ok,
            f"{duplicate}; {with_parameters}",
            {
                "duplicate_insert_error": duplicate_error or seed_error or "none",
                "duplicate_item_unchanged": int(unchanged),
                "parameterised_insert_error": parameterised_error or "none",
                "parameterised_item_stored": int(parameterised_stored),
            },
        )
    ]


# --- queues -------------------------------------------------------------------------------


async def _send(sqs: SQSClient, queue_url: str, bodies: Sequence[str], target: aws.Target) -> None:
    with _calls("send messages", target):
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
                raise _BackendAnswered(
                    f"SendMessageBatch failed {len(sent['Failed'])} of {len(chunk)} entries: "
                    f"{failed.get('Code')}: {failed.get('Message')}"
                )


async def _receive(
    sqs: SQSClient,
    queue_url: str,
    target: aws.Target,
    *,
    visibility_timeout_s: int,
    max_messages: int = 10,
    wait_s: int = _POLL_WAIT_S,
) -> list[tuple[str, int]]:
    """(MessageId, ApproximateReceiveCount) of each message received."""
    with _calls("receive messages", target):
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


async def _check_visibility(
    sqs: SQSClient, queue_url: str, target: aws.Target
) -> list[CheckResult]:
    """Pollers share a queue; a message one holds must stay hidden from the others.

    Messages are never deleted: each stays in flight for ``_VISIBILITY_TIMEOUT_S``, longer
    than this check may run, so any second receipt means the timeout did not hold.
    """
    await _send(sqs, queue_url, [f"visibility-{i}" for i in range(_VISIBILITY_MESSAGES)], target)
    first_seen_s: dict[str, float] = {}
    receipts: Counter[str] = Counter()
    early_repeats = 0
    all_seen = anyio.Event()
    all_seen_after_s: list[float] = []
    started_s = anyio.current_time()

    async def poll() -> None:
        nonlocal early_repeats
        while True:
            for message_id, _count in await _receive(
                sqs, queue_url, target, visibility_timeout_s=_VISIBILITY_TIMEOUT_S
            ):
                now_s = anyio.current_time()
                receipts[message_id] += 1
                first = first_seen_s.setdefault(message_id, now_s)
                if now_s - first < _VISIBILITY_TIMEOUT_S and receipts[message_id] > 1:
                    early_repeats += 1
                if len(first_seen_s) >= _VISIBILITY_MESSAGES and not all_seen.is_set():
                    all_seen_after_s.append(now_s - started_s)
                    all_seen.set()

    async with anyio.create_task_group() as pollers:
        for _ in range(_VISIBILITY_POLLERS):
            pollers.start_soon(poll)
        # Leave the remaining time to the caller's bound: keep polling for a repeat.
        with anyio.move_on_after(_VISIBILITY_CHECK_TIMEOUT_S - _VISIBILITY_SETTLE_S - 1):
            await all_seen.wait()
        await anyio.sleep(_VISIBILITY_SETTLE_S)
        pollers.cancel_scope.cancel()

    repeated = sum(1 for count in receipts.values() if count > 1)
    ok = early_repeats == 0 and len(first_seen_s) == _VISIBILITY_MESSAGES
    received_in = f" in {all_seen_after_s[0]:.2f} s" if all_seen_after_s else ""
    summary = (
        f"{_VISIBILITY_POLLERS} pollers received {len(first_seen_s)}/{_VISIBILITY_MESSAGES} "
        f"messages{received_in}, then kept polling {_VISIBILITY_SETTLE_S:g} s; {repeated} "
        f"received again within their {_VISIBILITY_TIMEOUT_S} s visibility timeout "
        f"({early_repeats} extra receipts)"
    )
    return [
        CheckResult(
            VISIBILITY,
            ok,
            summary,
            {
                "messages": _VISIBILITY_MESSAGES,
                "pollers": _VISIBILITY_POLLERS,
                "distinct_received": len(first_seen_s),
                "receipts": sum(receipts.values()),
                "received_again": repeated,
                "extra_receipts_within_timeout": early_repeats,
                "visibility_timeout_s": _VISIBILITY_TIMEOUT_S,
                "all_received_after_s": round(all_seen_after_s[0], 3) if all_seen_after_s else -1,
            },
        )
    ]


async def _receive_one(
    sqs: SQSClient, queue_url: str, target: aws.Target, visibility_timeout_s: int
) -> tuple[str, int]:
    """Poll until one message arrives (the caller bounds the time)."""
    while True:
        got = await _receive(
            sqs, queue_url, target, visibility_timeout_s=visibility_timeout_s, max_messages=1
        )
        if got:
            return got[0]


async def _check_redelivery(
    sqs: SQSClient, queue_url: str, target: aws.Target
) -> list[CheckResult]:
    """Receive a message, leave it undeleted, and see it return with its count increased."""
    await _send(sqs, queue_url, ["redelivery"], target)
    first_id, first_count = await _receive_one(sqs, queue_url, target, _SHORT_VISIBILITY_TIMEOUT_S)
    received_s = anyio.current_time()
    second_id, second_count = "", 0
    with anyio.move_on_after(_REDELIVERY_WAIT_S):
        second_id, second_count = await _receive_one(
            sqs, queue_url, target, _SHORT_VISIBILITY_TIMEOUT_S
        )
    returned_after_s = anyio.current_time() - received_s
    ok = first_count == 1 and second_count == 2 and second_id == first_id
    if not second_id:
        summary = (
            f"received once (ApproximateReceiveCount {first_count}), not deleted, and not "
            f"received again within {_REDELIVERY_WAIT_S:g} s although its visibility timeout "
            f"was {_SHORT_VISIBILITY_TIMEOUT_S} s"
        )
    else:
        same = "the same message" if second_id == first_id else f"another message ({second_id})"
        summary = (
            f"{same} came back {returned_after_s:.1f} s after a receive with a "
            f"{_SHORT_VISIBILITY_TIMEOUT_S} s visibility timeout; ApproximateReceiveCount "
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
                "visibility_timeout_s": _SHORT_VISIBILITY_TIMEOUT_S,
                "returned_after_s": round(returned_after_s, 3) if second_id else -1,
            },
        )
    ]


async def _check_redrive(
    sqs: SQSClient, queue_url: str, dlq_url: str, target: aws.Target
) -> list[CheckResult]:
    """Receive without deleting until the redrive policy moves the message to the DLQ.

    Expected: ``maxReceiveCount`` deliveries from the source queue, then none; the message
    appears in the DLQ with the same MessageId.
    """
    await _send(sqs, queue_url, ["redrive"], target)
    sent_id, _ = await _receive_one(sqs, queue_url, target, _SHORT_VISIBILITY_TIMEOUT_S)
    source_counts = [1]
    started_s = anyio.current_time()
    dead_lettered: list[str] = []
    with anyio.move_on_after(_REDRIVE_WAIT_S):
        while not dead_lettered:
            # Receiving from the source is what lets the backend see the count was reached.
            for got_id, count in await _receive(
                sqs, queue_url, target, visibility_timeout_s=_SHORT_VISIBILITY_TIMEOUT_S
            ):
                if got_id == sent_id:
                    source_counts.append(count)
            dead_lettered = [
                got_id
                for got_id, _ in await _receive(
                    sqs, dlq_url, target, visibility_timeout_s=_VISIBILITY_TIMEOUT_S, wait_s=0
                )
            ]
    moved_after_s = anyio.current_time() - started_s
    same = sent_id in dead_lettered
    deliveries = len(source_counts)
    ok = same and deliveries == _REDRIVE_MAX_RECEIVE_COUNT
    if not dead_lettered:
        outcome = f"nothing reached the DLQ within {_REDRIVE_WAIT_S:g} s"
    elif same:
        outcome = (
            f"in the DLQ with the same MessageId {moved_after_s:.1f} s after the first receive"
        )
    else:
        outcome = "a different message reached the DLQ"
    summary = (
        f"delivered {deliveries} times from the source queue (maxReceiveCount "
        f"{_REDRIVE_MAX_RECEIVE_COUNT}, expected {_REDRIVE_MAX_RECEIVE_COUNT}), then {outcome}"
    )
    return [
        CheckResult(
            REDRIVE,
            ok,
            summary,
            {
                "max_receive_count": _REDRIVE_MAX_RECEIVE_COUNT,
                "source_deliveries": deliveries,
                "last_receive_count": source_counts[-1],
                "same_message_id": int(same),
                "moved_after_s": round(moved_after_s, 3) if dead_lettered else -1,
            },
        )
    ]

"""The doctor's DynamoDB checks: conditional puts are atomic, a failed condition returns the old item,
and a PartiQL INSERT of an existing key is refused.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import botocore.exceptions
from anyio.abc import TaskStatus

from loadtest.aws import clients as aws
from loadtest.errors import CredentialsError

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
from loadtest.doctor.checks import (
    ALL_OLD,
    ATOMIC,
    MIN_POOL_CONNECTIONS,
    PARTIQL,
    CheckResult,
    backend_calls,
)

ATOMIC_BASE_TIMEOUT_S = 30.0
ATOMIC_PER_PUT_TIMEOUT_S = 0.02
"""The atomicity rounds may take ``ATOMIC_BASE_TIMEOUT_S`` plus this (in seconds) per put."""

PARTIQL_CHECK_TIMEOUT_S = 20.0
DUPLICATE_ITEM = "DuplicateItemException"


# --- conditional puts ---------------------------------------------------------------------

ItemT = dict[str, Any]


@dataclass(frozen=True)
class Put:
    """One writer's conditional put: accepted, or rejected with the old item it was given."""

    writer: int
    item: ItemT
    accepted: bool
    old_item: ItemT | None
    started_s: float
    """When the request was sent and its answer came back (event loop clock, in seconds)."""
    answered_s: float


async def check_conditional_puts(
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
    keys_in_flight = anyio.CapacityLimiter(max(1, MIN_POOL_CONNECTIONS // writers))
    puts: dict[str, list[Put]] = {}
    stored: dict[str, ItemT | None] = {}

    async def put(
        key: str, writer: int, start: anyio.Event, *, task_status: TaskStatus[None]
    ) -> None:
        item: ItemT = {
            "id": {"S": key},
            "writer": {"N": str(writer)},
            "nonce": {"S": secrets.token_hex(8)},
        }
        task_status.started()
        await start.wait()
        started_s = anyio.current_time()
        with backend_calls("put an item under attribute_not_exists(id)", target):
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
                old: ItemT | None = exc.response.get("Item")  # type: ignore[assignment]
                answered_s = anyio.current_time()
                puts[key].append(Put(writer, item, False, old or None, started_s, answered_s))
                return
        puts[key].append(Put(writer, item, True, None, started_s, anyio.current_time()))

    async def contend(key: str) -> None:
        async with keys_in_flight:
            puts[key] = []
            start = anyio.Event()
            async with anyio.create_task_group() as writers_group:
                for writer in range(writers):
                    await writers_group.start(put, key, writer, start)
                start.set()
            with backend_calls("read an item back (ConsistentRead)", target):
                got = await dynamodb.get_item(
                    TableName=table, Key={"id": {"S": key}}, ConsistentRead=True
                )
            found = got.get("Item")
            stored[key] = dict(found) if found else None

    for round_index in range(rounds):
        async with anyio.create_task_group() as keys_group:
            for key_index in range(keys):
                keys_group.start_soon(contend, f"r{round_index}-k{key_index}")

    return [atomic_result(puts, stored, keys, writers, rounds), all_old_result(puts, stored)]


def atomic_result(
    puts: dict[str, list[Put]],
    stored: dict[str, ItemT | None],
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


def all_old_result(puts: dict[str, list[Put]], stored: dict[str, ItemT | None]) -> CheckResult:
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


async def check_partiql_insert(
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
    first: ItemT = {"id": {"S": duplicate_key}, "quantity": {"N": "1"}}
    parameterised: ItemT = {"id": {"S": parameterised_key}, "quantity": {"N": "3"}}

    async def insert(statement: str, parameters: list[Any] | None = None) -> str:
        """ "" if accepted, else the error code the backend answered with."""
        with backend_calls("run a PartiQL INSERT", target):
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

    async def stored(key: str) -> ItemT | None:
        with backend_calls("read an item back (ConsistentRead)", target):
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
    elif duplicate_error == DUPLICATE_ITEM:
        after = "item unchanged" if unchanged else "item changed anyway"
        duplicate = f"INSERT of a stored key: refused with {DUPLICATE_ITEM}, {after}"
    elif duplicate_error:
        duplicate = (
            f"INSERT of a stored key: refused with {duplicate_error} (expected {DUPLICATE_ITEM})"
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
        and duplicate_error == DUPLICATE_ITEM
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

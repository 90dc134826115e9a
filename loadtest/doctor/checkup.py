"""``loadtest doctor``: does this backend behave the way loadtest's conclusions assume?

Owns the backend conformance checks and the resources they need: one table and four
queues (and the FIFO checks' own FIFO queue, ``loadtest.doctor.fifo``), all named ``loadtest-doctor-<hex>-...``, created by ``run_doctor``, recorded the
moment each exists, and deleted at the end (shielded from cancellation, also on failure).
Must not touch any other table or queue, print, or set an exit code (the CLI does).

The checks, in the order they are reported (the DynamoDB checks run first, then the
queue and sink checks all at once, each on resources of its own):

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
* ``fifo-deduplication-window`` - on a FIFO queue, a deduplication id sent again while its
  message waits, and again after that message was deleted, is accepted and not delivered.
* ``fifo-group-order`` - a group's messages come in send order, none of them while another
  of the group is in flight.
* the sink checks (``loadtest.doctor.sinks``, which owns their sinks): a topic delivers each
  publish, a FIFO topic drops a repeated deduplication id, a bus rule delivers the detail, a
  bucket holds one object per key, an execution name is refused once used.

The data-plane checks (what an event source mapping does with a probe function) are
``loadtest.doctor.mapping``'s; the CLI runs them after these.

A check that does not finish in its time bound, or whose request the backend answers with
an error, is reported as failed. A backend that cannot be reached, or refuses the
credentials, raises the ``BackendError`` that ``loadtest.aws.clients.translate`` makes of it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from loadtest.aws import clients as aws
from loadtest.errors import BackendError, InputError, find_error

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_sqs.client import SQSClient
    from types_aiobotocore_sqs.literals import QueueAttributeNameType
from loadtest.doctor.checks import (
    ALL_OLD,
    ATOMIC,
    CHECK_NAMES,
    CLEANUP,
    FIFO_DEDUP,
    FIFO_ORDER,
    MIN_POOL_CONNECTIONS,
    PARTIQL,
    REDELIVERY,
    REDRIVE,
    RESOURCE_PREFIX,
    SINK_CHECK_NAMES,
    VISIBILITY,
    BackendAnswered,
    CheckResult,
    exit_ok,
)
from loadtest.doctor.dynamodb import (
    ATOMIC_BASE_TIMEOUT_S,
    ATOMIC_PER_PUT_TIMEOUT_S,
    PARTIQL_CHECK_TIMEOUT_S,
    check_conditional_puts,
    check_partiql_insert,
)
from loadtest.doctor.fifo import FIFO_CHECK_TIMEOUT_S, check_fifo
from loadtest.doctor.sinks import SINK_CHECK_TIMEOUT_S, check_sinks
from loadtest.doctor.sqs import (
    REDELIVERY_CHECK_TIMEOUT_S,
    REDRIVE_CHECK_TIMEOUT_S,
    REDRIVE_MAX_RECEIVE_COUNT,
    SHORT_VISIBILITY_TIMEOUT_S,
    VISIBILITY_CHECK_TIMEOUT_S,
    VISIBILITY_TIMEOUT_S,
    check_redelivery,
    check_redrive,
    check_visibility,
)

__all__ = ["CHECK_NAMES", "RESOURCE_PREFIX", "CheckResult", "exit_ok", "run_doctor"]
_SETUP_TIMEOUT_S = 120.0
"""Time allowed (in seconds) to create the queues and the table and see it ACTIVE."""
_TEARDOWN_TIMEOUT_S = 60.0
"""Time allowed (in seconds) to delete what was created."""


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
        async with aws.clients(target, pool=max(MIN_POOL_CONNECTIONS, writers)) as (
            sqs,
            dynamodb,
        ):
            try:
                resources = await _setup(sqs, dynamodb, names, made, target)
                atomic_timeout_s = (
                    ATOMIC_BASE_TIMEOUT_S + ATOMIC_PER_PUT_TIMEOUT_S * keys * writers * rounds
                )
                report(
                    await _bounded(
                        (ATOMIC, ALL_OLD),
                        atomic_timeout_s,
                        lambda: check_conditional_puts(
                            dynamodb, resources.table, keys, writers, rounds, target
                        ),
                    )
                )
                report(
                    await _bounded(
                        (PARTIQL,),
                        PARTIQL_CHECK_TIMEOUT_S,
                        lambda: check_partiql_insert(dynamodb, resources.table, target),
                    )
                )
                # The queue and sink checks each have resources of their own and mostly
                # wait (on visibility timeouts and long polls): they run at once, and are
                # reported in their order as soon as those before them are known.
                await _at_once(
                    report,
                    (
                        (
                            (VISIBILITY,),
                            VISIBILITY_CHECK_TIMEOUT_S,
                            lambda: check_visibility(sqs, resources.visibility_queue, target),
                        ),
                        (
                            (REDELIVERY,),
                            REDELIVERY_CHECK_TIMEOUT_S,
                            lambda: check_redelivery(sqs, resources.redelivery_queue, target),
                        ),
                        (
                            (REDRIVE,),
                            REDRIVE_CHECK_TIMEOUT_S,
                            lambda: check_redrive(
                                sqs, resources.redrive_queue, resources.dlq, target
                            ),
                        ),
                        (
                            (FIFO_DEDUP, FIFO_ORDER),
                            FIFO_CHECK_TIMEOUT_S,
                            lambda: check_fifo(sqs, target, made.queue_urls.append),
                        ),
                        (
                            SINK_CHECK_NAMES,
                            SINK_CHECK_TIMEOUT_S,
                            lambda: anyio.to_thread.run_sync(check_sinks, target),
                        ),
                    ),
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
                names.visibility_queue, {"VisibilityTimeout": str(VISIBILITY_TIMEOUT_S)}
            )
            short: dict[QueueAttributeNameType, str] = {
                "VisibilityTimeout": str(SHORT_VISIBILITY_TIMEOUT_S)
            }
            redelivery = await queue(names.redelivery_queue, short)
            dlq = await queue(names.dlq, {})
            attributes = await sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])
            redrive_policy = {
                "deadLetterTargetArn": attributes["Attributes"]["QueueArn"],
                "maxReceiveCount": str(REDRIVE_MAX_RECEIVE_COUNT),
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


_Check = tuple[tuple[str, ...], float, Callable[[], Awaitable[list[CheckResult]]]]
"""A check's names, its time bound (in seconds) and the check itself (see ``_bounded``)."""


async def _at_once(report: Callable[[list[CheckResult]], None], checks: Sequence[_Check]) -> None:
    """Run ``checks`` concurrently, each ``_bounded``; ``report`` each one's results in the
    order of ``checks``, as soon as those before it are known. An error ``_bounded`` raises
    (a backend that cannot be reached) is raised as it is, not in an exception group."""
    found: list[list[CheckResult] | None] = [None] * len(checks)
    reported = 0

    async def one(index: int, check: _Check) -> None:
        nonlocal reported
        found[index] = await _bounded(*check)
        while reported < len(found) and (ready := found[reported]) is not None:
            reported += 1
            report(ready)

    try:
        async with anyio.create_task_group() as tg:
            for index, check in enumerate(checks):
                tg.start_soon(one, index, check)
    except BaseExceptionGroup as group:
        first: BaseException = group
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from first.__cause__


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
        answered = find_error(exc, BackendAnswered)
        if answered is None:
            raise
        return [CheckResult(name, False, f"backend error: {answered}") for name in names]
    if scope.cancelled_caught:
        summary = f"did not finish within {timeout_s:g} s"
        return [CheckResult(name, False, summary, {"timeout_s": timeout_s}) for name in names]
    return found

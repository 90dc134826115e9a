"""How a variant's run ends: closing its environments, reading the end state (also
when the run failed part-way), and saying why it stopped.

Owns only those end-of-run steps; must not delete resources (``run_variant``'s
cleanup) nor judge the run.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio

from loadtest.aws import clients as aws
from loadtest.emulation.environment.parent_environments import ExecutionEnvironment
from loadtest.errors import BackendError
from loadtest.model.history.log import EndState
from loadtest.model.history.records import SinkContents

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_sqs.client import SQSClient

from loadtest.engine.results import (
    CLEANUP_TIMEOUT_S,
)


async def close_all(environments: Sequence[ExecutionEnvironment]) -> None:
    async with anyio.create_task_group() as tg:
        for env in environments:
            tg.start_soon(env.aclose)


def why(failure: BaseException, end_state: EndState | None) -> str:
    if isinstance(failure, anyio.get_cancelled_exc_class() | KeyboardInterrupt):
        what = "interrupted"
    else:
        what = f"stopped by an error: {failure}"
    if end_state is None:
        what += "; the end state could not be read (table and queue counts are unknown)"
    return what


def with_left_behind(exc: BaseException, problems: list[str]) -> BaseException:
    """``exc`` saying what could not be deleted, for errors the CLI shows."""
    if isinstance(exc, BackendError):
        return type(exc)(f"{exc}; not deleted: {'; '.join(problems)}")
    return exc


async def read_end_state(
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    made: aws.Provisioned,
    target: aws.Target,
    timeout_s: float = CLEANUP_TIMEOUT_S,
    *,
    whole: bool = False,
    sinks: aws.SinkClients | None = None,
) -> EndState:
    """Queue depths, table items and what each sink holds (with ``sinks``' clients) at the
    end.

    Each request must answer within ``timeout_s`` seconds; the table's scan
    takes as many pages as it has (a 33,000-item table is about 25 s of
    pages on the embedded backend). The sinks are read within ``timeout_s``; one
    not read in full in that time says ``complete=False``. With ``whole`` the entire
    read must fit in ``timeout_s`` (a salvage after an interrupt, which must not hang on).
    """
    assert made.queue_url and made.dlq_url and made.table_name
    started = time.monotonic()
    try:
        with anyio.fail_after(timeout_s if whole else None):
            with anyio.fail_after(timeout_s), aws.translated("read the end state", target):
                visible, in_flight = await aws.queue_depth(sqs, made.queue_url)
                dlq_visible, dlq_in_flight = await aws.queue_depth(sqs, made.dlq_url)
            items = await aws.scan_items(
                dynamodb,
                made.table_name,
                made.key_names,
                page_timeout_s=timeout_s,
                errors=lambda: aws.translated("read the end state", target),
            )
            side_tables = tuple(
                [
                    (
                        table,
                        await aws.count_items(
                            dynamodb,
                            table,
                            page_timeout_s=timeout_s,
                            errors=lambda: aws.translated("read the end state", target),
                        ),
                    )
                    for table in made.extra_tables
                ]
            )
            # A salvage's sinks get what is left of its time, less a second to answer in.
            left_s = timeout_s - (time.monotonic() - started) - 1 if whole else timeout_s
            contents = await read_made_sinks(sinks, made, target, max(0.0, left_s))
    except TimeoutError as exc:
        where = target.endpoint_url or "AWS"
        raise BackendError(
            f"{where} did not finish reading the end state within {timeout_s:g} s"
            if whole
            else f"{where} did not answer within {timeout_s:g} s while reading the end state"
        ) from exc
    return EndState(
        visible, in_flight, dlq_visible + dlq_in_flight, items, side_tables, sinks=contents
    )


async def read_made_sinks(
    sinks: aws.SinkClients | None, made: aws.Provisioned, target: aws.Target, timeout_s: float
) -> tuple[SinkContents, ...]:
    """What each of the run's sinks holds (``aws.read_sinks`` in a worker thread, given
    ``timeout_s`` seconds); nothing when the run has none."""
    if sinks is None or not made.sinks:
        return ()
    read = functools.partial(
        aws.read_sinks, sinks, list(made.sinks), target, deadline=time.monotonic() + timeout_s
    )
    # A request that hangs past the reads' own deadline is abandoned, not waited for.
    with anyio.fail_after(timeout_s + SINK_READ_GRACE_S):
        return await anyio.to_thread.run_sync(read, abandon_on_cancel=True)


SINK_READ_GRACE_S = 35
"""How long (in seconds) a sink read may run past its deadline: one request's read timeout
and a little more."""


async def salvage_end_state(
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    made: aws.Provisioned,
    target: aws.Target,
    timeout_s: float,
    *,
    sinks: aws.SinkClients | None = None,
) -> EndState | None:
    """The end state of an interrupted run (its sinks read too, with ``sinks``' clients),
    or ``None`` if it cannot be read in time."""
    if not (made.queue_url and made.dlq_url and made.table_name):
        return None
    try:
        return await read_end_state(sqs, dynamodb, made, target, timeout_s, whole=True, sinks=sinks)
    except BackendError:
        return None

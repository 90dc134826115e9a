"""The engine: runs a scenario's seeded workload against each consumer variant.

For every variant: start the execution environments (importing the handler
validates it before anything is created), create a fresh queue, DLQ and
table, run the producer, pollers and DLQ watcher in one task group until every
message is settled or the deadline passes, read the end state, check it, and
delete exactly what was created — also when the run fails or is interrupted.

Usable as a library (``run``); prints nothing and never exits the process.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from loadtest import aws
from loadtest.checker import Check, LiveDuplicates, check
from loadtest.environments import ExecutionEnvironment, FunctionConfig, new_log_dir
from loadtest.errors import BackendError, find_error
from loadtest.handlers import NEEDS_IDEMPOTENCY_TABLE, HandlerRef
from loadtest.history import EndState, History, Record, WriteRecord
from loadtest.metrics import Latency, latencies
from loadtest.producer import produce
from loadtest.runner import Poller, Progress, Settlement, watch_dead_letters
from loadtest.scenario import ConsumerSettings, Faults, Scenario
from loadtest.schedule import PlannedMessage, plan

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_sqs.client import SQSClient

Clock = Callable[[], int]
ProgressCallback = Callable[[str, Progress, int, float], None]
"""Called about ten times a second: (variant, counters, messages planned, elapsed seconds)."""


@dataclass
class VariantRun:
    """One variant's run: its history, end state, check and measurements."""

    variant: str
    handler: str
    settings: ConsumerSettings
    history: History
    end_state: EndState
    check: Check
    latency: dict[str, Latency]
    duration_s: float
    cold_starts: int
    resources: aws.ResourceNames
    faults: Faults = field(default_factory=Faults)
    cell: dict[str, Any] = field(default_factory=dict)
    """For a sweep: the settings this run's cell overrode."""
    cleanup_problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def messages_per_s(self) -> float:
        settled = self.check.counts.acked + self.check.counts.dead_lettered
        return settled / self.duration_s if self.duration_s > 0 else 0.0


@dataclass
class RunResult:
    scenario: Scenario
    target: aws.Target
    runs: list[VariantRun]


def fault_environment(scenario: Scenario) -> tuple[tuple[str, str], ...]:
    """The scenario's faults as the execution environments read them."""
    faults = scenario.faults
    return (
        ("LOADTEST_HANDLER_DURATION_MS", str(faults.handler_duration_ms)),
        ("LOADTEST_HANDLER_JITTER_MS", str(faults.handler_jitter_ms)),
        ("LOADTEST_RACE_WINDOW_MS", str(faults.race_window_ms)),
        ("LOADTEST_CRASH_AFTER_WRITE", str(faults.crash_after_write)),
        ("LOADTEST_FAULT_SEED", str(scenario.seed)),
    )


def settings_warnings(settings: ConsumerSettings, faults: Faults) -> list[str]:
    """Legal but unwise settings, flagged in the report as a likely cause."""
    warnings = []
    slowest_ms = faults.handler_duration_ms + faults.handler_jitter_ms
    if slowest_ms and settings.visibility_timeout_s * 1000 < slowest_ms:
        warnings.append(
            f"visibility timeout ({settings.visibility_timeout_s} s) is shorter than the handler "
            f"duration (up to {slowest_ms} ms): messages reappear while still being processed and "
            "are delivered again with the same messageId"
        )
    if settings.visibility_timeout_s < settings.function_timeout_s:
        warnings.append(
            f"visibility timeout ({settings.visibility_timeout_s} s) is shorter than the function "
            f"timeout ({settings.function_timeout_s} s): a slow invocation's messages become "
            "visible again and are delivered twice (AWS recommends at least 6x the function timeout)"
        )
    return warnings


async def check_reachable(target: aws.Target) -> None:
    """One cheap call to each service, so an unreachable backend fails before anything is made."""
    async with aws.clients(target, pool=2) as (sqs, dynamodb):
        try:
            with anyio.fail_after(30):
                await sqs.list_queues(MaxResults=1)
                await dynamodb.list_tables(Limit=1)
        except TimeoutError as exc:
            raise BackendError(
                f"{target.endpoint_url or 'AWS'} did not answer within 30 s"
            ) from exc
        except aws.ERRORS as exc:
            raise aws.translate(exc, "list its queues and tables", target) from exc


class _LiveDuplicates:
    """Keeps Progress.duplicate_writes current with the checker's own rule."""

    def __init__(self, progress: Progress, scenario: Scenario) -> None:
        self.progress = progress
        self.count = LiveDuplicates(scenario.outcome)

    def __call__(self, writes: tuple[WriteRecord, ...], records: tuple[Record, ...]) -> None:
        self.progress.duplicate_writes = self.count.add(writes)


async def run_variant(
    scenario: Scenario,
    ref: HandlerRef,
    target: aws.Target,
    planned: Sequence[PlannedMessage],
    names: aws.ResourceNames,
    *,
    on_progress: ProgressCallback | None = None,
    clock: Clock = time.monotonic_ns,
) -> VariantRun:
    settings = scenario.consumer
    config = FunctionConfig(
        handler=ref,
        function_name=names.queue.removesuffix("-jobs") + "-worker",
        table_name=names.table,
        idempotency_table_name=names.idempotency_table,
        region=target.region,
        endpoint_url=target.endpoint_url,
        memory_mb=settings.memory_mb,
        timeout_s=settings.function_timeout_s,
        extra_env=target.credentials_env,
        fault_env=fault_environment(scenario),
        report_batch_item_failures=settings.report_batch_item_failures,
        key_names=scenario.outcome.key_names,
    )
    log_dir = new_log_dir()
    environments = [ExecutionEnvironment(config, n, log_dir) for n in range(settings.concurrency)]
    made = aws.Provisioned()
    history = History()
    progress = Progress()
    try:
        # Cold starts first: a handler that does not import fails here, before
        # any AWS resource exists.
        await environments[0].start()
        async with anyio.create_task_group() as tg:
            for env in environments[1:]:
                tg.start_soon(env.start)
        async with aws.clients(target, pool=max(16, settings.concurrency * 2 + 8)) as (
            sqs,
            dynamodb,
        ):
            try:
                await aws.provision(
                    sqs,
                    dynamodb,
                    names,
                    visibility_timeout_s=settings.visibility_timeout_s,
                    max_receive_count=settings.max_receive_count,
                    into=made,
                    target=target,
                    idempotency_table=ref.variant in NEEDS_IDEMPOTENCY_TABLE,
                    key_names=scenario.outcome.key_names,
                )
                await _drive(
                    scenario,
                    target,
                    planned,
                    environments,
                    sqs,
                    made,
                    history,
                    progress,
                    on_progress,
                    clock,
                )
                end_state = await _end_state(
                    sqs, dynamodb, made, target, scenario.outcome.key_names
                )
            finally:
                problems = await aws.teardown(sqs, dynamodb, made)
    finally:
        with anyio.CancelScope(shield=True):
            for env in environments:
                await env.aclose()
        shutil.rmtree(log_dir, ignore_errors=True)

    result = check(history, end_state, scenario.outcome)
    return VariantRun(
        variant=ref.variant,
        handler=ref.ref if ref.path else f"{ref.module}:{ref.function}",
        settings=settings,
        history=history,
        end_state=end_state,
        check=result,
        latency=latencies(history),
        duration_s=(history.ended_ns - history.started_ns) / 1e9,
        cold_starts=sum(env.cold_starts for env in environments),
        resources=names,
        cleanup_problems=problems,
        warnings=settings_warnings(settings, scenario.faults),
        faults=scenario.faults,
    )


async def _drive(
    scenario: Scenario,
    target: aws.Target,
    planned: Sequence[PlannedMessage],
    environments: list[ExecutionEnvironment],
    sqs: SQSClient,
    made: aws.Provisioned,
    history: History,
    progress: Progress,
    on_progress: ProgressCallback | None,
    clock: Clock,
) -> None:
    assert made.queue_url and made.queue_arn and made.dlq_url
    queue_url, queue_arn, dlq_url = made.queue_url, made.queue_arn, made.dlq_url
    settlement = Settlement()
    stopping = anyio.Event()
    watcher_scope = anyio.CancelScope()
    live = _LiveDuplicates(progress, scenario)
    history.started_ns = clock()

    def on_sent(count: int) -> None:
        progress.sent += count

    async def producer() -> None:
        await produce(
            sqs,
            queue_url,
            planned,
            history,
            history.started_ns,
            on_sent,
            settlement.first_settled,
            clock,
        )
        settlement.expect({m.message_id for m in history.sent if m.message_id})

    async def watcher() -> None:
        with watcher_scope:
            await watch_dead_letters(sqs, dlq_url, history, settlement, progress, clock)

    async def reporter() -> None:
        assert on_progress is not None
        while not stopping.is_set():
            on_progress(scenario.name, progress, len(planned), (clock() - history.started_ns) / 1e9)
            await anyio.sleep(0.1)

    try:
        with anyio.move_on_after(scenario.run.deadline_s) as deadline:
            async with anyio.create_task_group() as tg:
                tg.start_soon(producer)
                for env in environments:
                    poller = Poller(
                        sqs=sqs,
                        queue_url=queue_url,
                        queue_arn=queue_arn,
                        region=target.region,
                        settings=scenario.consumer,
                        environment=env,
                        history=history,
                        settlement=settlement,
                        progress=progress,
                        stopping=stopping,
                        on_writes=live,
                        clock=clock,
                    )
                    tg.start_soon(poller.run)
                tg.start_soon(watcher)
                if on_progress is not None:
                    tg.start_soon(reporter)
                await settlement.done.wait()
                history.ended_ns = clock()
                stopping.set()
                watcher_scope.cancel()
    except BaseException as exc:
        failure: BaseException | None = find_error(exc, aws.ERRORS)
        if failure is None:
            raise
        raise aws.translate(failure, "run the workload", target) from failure
    if deadline.cancelled_caught:
        history.timed_out = True
        history.ended_ns = clock()
    if on_progress is not None:
        on_progress(
            scenario.name, progress, len(planned), (history.ended_ns - history.started_ns) / 1e9
        )


async def _end_state(
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    made: aws.Provisioned,
    target: aws.Target,
    key_names: tuple[str, ...],
) -> EndState:
    assert made.queue_url and made.dlq_url and made.table_name
    try:
        visible, in_flight = await aws.queue_depth(sqs, made.queue_url)
        dlq_visible, dlq_in_flight = await aws.queue_depth(sqs, made.dlq_url)
        items = await aws.scan_items(dynamodb, made.table_name, key_names)
    except aws.ERRORS as exc:
        raise aws.translate(exc, "read the end state", target) from exc
    return EndState(visible, in_flight, dlq_visible + dlq_in_flight, items)


async def run_async(
    scenario: Scenario,
    refs: Sequence[HandlerRef],
    target: aws.Target,
    *,
    on_progress: ProgressCallback | None = None,
    clock: Clock = time.monotonic_ns,
) -> RunResult:
    """Run the scenario's seeded workload against each variant in turn."""
    return await sweep_async(scenario, refs, target, [{}], on_progress=on_progress, clock=clock)


async def sweep_async(
    scenario: Scenario,
    refs: Sequence[HandlerRef],
    target: aws.Target,
    cells: Sequence[dict[str, Any]],
    *,
    on_progress: ProgressCallback | None = None,
    clock: Clock = time.monotonic_ns,
) -> RunResult:
    """Run every variant once per cell (a dict of scenario overrides), in order.

    The cells' scenarios are built (and validated) before anything runs.
    """
    scenarios = [scenario.with_overrides(**cell) for cell in cells]
    await check_reachable(target)
    run_id = aws.new_run_id()
    runs = []
    index = 0
    for cell, cell_scenario in zip(cells, scenarios, strict=True):
        planned = plan(cell_scenario.workload, cell_scenario.seed)
        for ref in refs:
            names = aws.ResourceNames.for_run(run_id, index)
            index += 1
            variant_run = await run_variant(
                cell_scenario, ref, target, planned, names, on_progress=on_progress, clock=clock
            )
            variant_run.cell = dict(cell)
            runs.append(variant_run)
    return RunResult(scenario=scenario, target=target, runs=runs)


@contextmanager
def backend_target(kind: aws.BackendKind, endpoint_url: str | None) -> Iterator[aws.Target]:
    """The run's target; for the embedded backend, start it and stop it afterwards."""
    if kind is aws.BackendKind.EMBEDDED:
        from loadtest.backend.embedded import EmbeddedBackend

        with EmbeddedBackend() as backend:
            yield aws.Target.resolve(kind, backend.endpoint_url)
    else:
        yield aws.Target.resolve(kind, endpoint_url)


def run(
    scenario: Scenario,
    refs: Sequence[HandlerRef],
    *,
    kind: aws.BackendKind = aws.BackendKind.EMBEDDED,
    endpoint_url: str | None = None,
    on_progress: ProgressCallback | None = None,
    cells: Sequence[dict[str, Any]] = ({},),
) -> RunResult:
    """Synchronous entry point: start the backend if embedded, run, stop it.

    ``cells`` makes it a sweep: each variant runs once per cell of overrides.
    """
    for cell in cells:
        scenario.with_overrides(**cell)  # bad input fails before the backend starts
    with backend_target(kind, endpoint_url) as target:

        async def main() -> RunResult:
            return await sweep_async(scenario, refs, target, cells, on_progress=on_progress)

        result: RunResult = anyio.run(main, backend="asyncio")
        return result

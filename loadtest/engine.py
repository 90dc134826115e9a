"""The engine: runs a scenario's seeded workload against each consumer variant.

For every variant: start the execution environments (importing the handler
validates it before anything is created), create a fresh queue, DLQ and
table, run the producer, pollers and DLQ watcher in one task group until every
message is settled or the deadline passes, read the end state, check it, and
delete exactly what was created — also when the run fails or is interrupted.

Usable as a library (``run``); prints nothing and never exits the process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from loadtest.adapters import aws
from loadtest.adapters.producers import Send, producing
from loadtest.emulation.environments import ExecutionEnvironment, FunctionConfig, log_directory
from loadtest.emulation.handlers import NEEDS_IDEMPOTENCY_TABLE, HandlerRef
from loadtest.emulation.runner import (
    Dispatcher,
    Poller,
    Progress,
    Settlement,
    dispatches,
    watch_dead_letters,
)
from loadtest.errors import BackendError
from loadtest.interrupts import Stop
from loadtest.model.checker import Check, LiveDuplicates, check
from loadtest.model.history import EndState, History, Record, WriteRecord
from loadtest.model.metrics import Latency, latencies
from loadtest.model.rate import RateWatch, rate_figures, rate_warning, requested_per_s
from loadtest.model.scenario import ConsumerSettings, Faults, Scenario
from loadtest.model.schedule import PlannedMessage, plan

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_sqs.client import SQSClient

Clock = Callable[[], int]
CLEANUP_TIMEOUT_S = 20.0
"""Default bound (in seconds) on each cleanup step and on the end-state read."""
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
    incomplete: str | None = None
    """Why this run stopped before its workload was settled and judged (``None`` if it was)."""
    rate: dict[str, Any] = field(default_factory=dict)
    """The requested and achieved rates and the backlog (``loadtest.model.rate.rate_figures``)."""
    sqs_requests_served: int | None = None
    """SQS requests the backend itself counted while the workload ran (empty
    receives included), or None when the backend does not count them."""

    @property
    def messages_per_s(self) -> float:
        settled = self.check.counts.acked + self.check.counts.dead_lettered
        return settled / self.duration_s if self.duration_s > 0 else 0.0


@dataclass
class RunResult:
    scenario: Scenario
    target: aws.Target
    runs: list[VariantRun]
    incomplete: str | None = None
    """Why the run stopped early (e.g. ``"interrupted by SIGTERM"``); ``None`` if it finished."""


@dataclass
class Salvage:
    """What a run hands its caller as it goes, so an abrupt end still loses nothing.

    ``runs`` gets each variant run as it ends (a partial one, marked
    ``incomplete``, when it was interrupted or its backend failed); ``live``
    holds what was created and not yet confirmed deleted, so a caller can say
    by name what is left behind.
    """

    runs: list[VariantRun] = field(default_factory=list)
    live: list[aws.Provisioned] = field(default_factory=list)
    target: aws.Target | None = None

    def left_behind(self) -> list[str]:
        """The queues and tables not confirmed deleted, by name."""
        return [name for made in self.live for name in made.names()]


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


def settings_warnings(settings: ConsumerSettings, faults: Faults, variant: str = "") -> list[str]:
    """Legal but unwise settings, flagged in the report as a likely cause (``loadtest lint``'s too)."""
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
    from loadtest.model.lint import lint_warnings

    short = settings.visibility_timeout_s < settings.function_timeout_s
    warnings.extend(lint_warnings(settings, variant, already_short=short))
    return warnings


async def check_reachable(target: aws.Target) -> None:
    """One cheap call to each service, so an unreachable backend fails before anything is made."""
    async with aws.clients(target, pool=2) as (sqs, dynamodb):
        try:
            with anyio.fail_after(30), aws.translated("list its queues and tables", target):
                await sqs.list_queues(MaxResults=1)
                await dynamodb.list_tables(Limit=1)
        except TimeoutError as exc:
            raise BackendError(
                f"{target.endpoint_url or 'AWS'} did not answer within 30 s"
            ) from exc


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
    cleanup_timeout_s: float = CLEANUP_TIMEOUT_S,
    salvage: Salvage | None = None,
) -> VariantRun:
    """Run one variant; every cleanup step and the end-state read take at most ``cleanup_timeout_s``.

    When the run is cancelled (interrupted) or the backend fails mid-run, what
    was measured is judged against a bounded end-state read and added to
    ``salvage.runs`` marked incomplete before the exception goes on.
    """
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
    salvage = salvage if salvage is not None else Salvage()
    made = aws.Provisioned()
    history = History()
    progress = Progress()
    end_state: EndState | None = None
    problems: list[str] = []
    failure: BaseException | None = None
    sqs_served: int | None = None
    with log_directory() as log_dir:
        environments = [
            ExecutionEnvironment(config, n, log_dir) for n in range(settings.concurrency)
        ]
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
                salvage.live.append(made)
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
                    served_before = await aws.served_sqs_requests(target)
                    assert made.queue_url
                    async with producing(
                        scenario.run.producers, target, made.queue_url, planned
                    ) as send:
                        await _drive(
                            scenario,
                            ref.variant,
                            target,
                            send,
                            len(planned),
                            environments,
                            sqs,
                            made,
                            history,
                            progress,
                            on_progress,
                            clock,
                        )
                    served_after = await aws.served_sqs_requests(target)
                    if served_before is not None and served_after is not None:
                        sqs_served = served_after - served_before
                    end_state = await _end_state(sqs, dynamodb, made, target, cleanup_timeout_s)
                except BaseException as exc:
                    failure = exc
                    raise
                finally:
                    with anyio.CancelScope(shield=True):
                        # Invocations in flight are ended before anything is read or deleted.
                        await _close_all(environments)
                        if failure is not None and end_state is None and history.started_ns:
                            end_state = await _salvage_end_state(
                                sqs, dynamodb, made, target, cleanup_timeout_s
                            )
                        problems = await aws.teardown(
                            sqs, dynamodb, made, timeout_s=cleanup_timeout_s
                        )
                    if not problems:
                        salvage.live.remove(made)
        except BaseException as exc:
            failure = failure or exc
            if history.started_ns:
                salvage.runs.append(
                    _variant_run(
                        scenario,
                        ref,
                        names,
                        history,
                        end_state or EndState(0, 0, 0, {}),
                        environments,
                        problems,
                        incomplete=_why(failure, end_state),
                        progress=progress,
                    )
                )
            if problems:
                raise _with_left_behind(exc, problems) from exc
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await _close_all(environments)

    variant_run = _variant_run(
        scenario,
        ref,
        names,
        history,
        end_state,
        environments,
        problems,
        incomplete=progress.stopped_early and f"stopped early: {progress.stopped_early}",
        progress=progress,
    )
    variant_run.sqs_requests_served = sqs_served
    salvage.runs.append(variant_run)
    return variant_run


def _variant_run(
    scenario: Scenario,
    ref: HandlerRef,
    names: aws.ResourceNames,
    history: History,
    end_state: EndState,
    environments: Sequence[ExecutionEnvironment],
    problems: list[str],
    *,
    incomplete: str | None,
    progress: Progress | None = None,
) -> VariantRun:
    settings = scenario.consumer
    if incomplete is not None and not history.ended_ns:
        history.ended_ns = time.monotonic_ns()
    latency = latencies(history)
    summaries = {name: latency[name].summary() for name in ("end_to_end", "queue_dwell")}
    rate = rate_figures(
        history,
        requested_per_s(scenario),
        progress.backlog_peak if progress is not None else 0,
        summaries,
        progress.stopped_early if progress is not None else None,
    )
    warnings = settings_warnings(settings, scenario.faults, ref.variant)
    shortfall = rate_warning(rate, summaries)
    if shortfall is not None:
        warnings.append(shortfall)
    return VariantRun(
        variant=ref.variant,
        handler=ref.ref if ref.path else f"{ref.module}:{ref.function}",
        settings=settings,
        history=history,
        end_state=end_state,
        check=check(history, end_state, scenario.outcome),
        latency=latency,
        duration_s=max(0, history.ended_ns - history.started_ns) / 1e9,
        cold_starts=sum(env.cold_starts for env in environments),
        resources=names,
        cleanup_problems=problems,
        warnings=warnings,
        faults=scenario.faults,
        incomplete=incomplete,
        rate=rate,
    )


async def _close_all(environments: Sequence[ExecutionEnvironment]) -> None:
    async with anyio.create_task_group() as tg:
        for env in environments:
            tg.start_soon(env.aclose)


def _why(failure: BaseException, end_state: EndState | None) -> str:
    if isinstance(failure, anyio.get_cancelled_exc_class() | KeyboardInterrupt):
        what = "interrupted"
    else:
        what = f"stopped by an error: {failure}"
    if end_state is None:
        what += "; the end state could not be read (table and queue counts are unknown)"
    return what


def _with_left_behind(exc: BaseException, problems: list[str]) -> BaseException:
    """``exc`` saying what could not be deleted, for errors the CLI shows."""
    if isinstance(exc, BackendError):
        return type(exc)(f"{exc}; not deleted: {'; '.join(problems)}")
    return exc


async def _drive(
    scenario: Scenario,
    variant: str,
    target: aws.Target,
    send: Send,
    planned_count: int,
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
    watch = RateWatch(requested_per_s(scenario))
    stop_sending = anyio.Event()
    history.started_ns = clock()

    def on_sent(count: int) -> None:
        progress.sent += count

    async def producer() -> None:
        await send(
            sqs, history, history.started_ns, on_sent, settlement.first_settled, clock, stop_sending
        )
        settlement.expect({m.message_id for m in history.sent if m.message_id})

    async def watcher() -> None:
        with watcher_scope:
            await watch_dead_letters(sqs, dlq_url, history, settlement, progress, clock)

    async def reporter() -> None:
        # Watches the rate and the backlog, whether or not anyone shows progress.
        max_backlog = scenario.run.max_backlog
        while not stopping.is_set():
            elapsed_s = (clock() - history.started_ns) / 1e9
            settled = progress.acked + progress.dead_lettered
            progress.rate_note = watch.sample(elapsed_s, progress.sent, settled)
            progress.backlog_peak = watch.backlog_peak
            backlog = progress.sent - settled
            if max_backlog and backlog > max_backlog and not stop_sending.is_set():
                progress.stopped_early = (
                    f"stopped sending when {progress.sent} of {planned_count} messages were sent "
                    f"and {backlog} of them waited unsettled, over max_backlog ({max_backlog})"
                )
                stop_sending.set()
            if on_progress is not None:
                on_progress(variant, progress, planned_count, elapsed_s)
            await anyio.sleep(0.1)

    with aws.translated("run the workload", target):
        with anyio.move_on_after(scenario.run.deadline_s) as deadline:
            async with anyio.create_task_group() as tg:
                tg.start_soon(producer)
                pollers = []
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
                    pollers.append(poller)
                if dispatches(scenario.consumer):
                    tg.start_soon(Dispatcher(pollers, lookahead=_lookahead(scenario)).run)
                else:
                    for poller in pollers:
                        tg.start_soon(poller.run)
                tg.start_soon(watcher)
                tg.start_soon(reporter)
                await settlement.done.wait()
                history.ended_ns = clock()
                stopping.set()
                watcher_scope.cancel()
    if deadline.cancelled_caught:
        history.timed_out = True
        history.ended_ns = clock()
    if on_progress is not None:
        on_progress(variant, progress, planned_count, (history.ended_ns - history.started_ns) / 1e9)


def _lookahead(scenario: Scenario) -> bool:
    """Whether received batches may wait for a free environment.

    A batch that waits has its visibility timeout running; with injected handler
    durations that are a sizeable part of it, the wait could make messages
    reappear that a consumer would otherwise have finished in time.
    """
    faults = scenario.faults
    slowest_ms = faults.handler_duration_ms + faults.handler_jitter_ms + faults.race_window_ms
    return slowest_ms * 10 <= scenario.consumer.visibility_timeout_s * 1000


async def _end_state(
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    made: aws.Provisioned,
    target: aws.Target,
    timeout_s: float = CLEANUP_TIMEOUT_S,
) -> EndState:
    """Queue depths and table items at the end, read within ``timeout_s`` seconds."""
    assert made.queue_url and made.dlq_url and made.table_name
    try:
        with anyio.fail_after(timeout_s), aws.translated("read the end state", target):
            visible, in_flight = await aws.queue_depth(sqs, made.queue_url)
            dlq_visible, dlq_in_flight = await aws.queue_depth(sqs, made.dlq_url)
            items = await aws.scan_items(dynamodb, made.table_name, made.key_names)
    except TimeoutError as exc:
        where = target.endpoint_url or "AWS"
        raise BackendError(
            f"{where} did not answer within {timeout_s:g} s while reading the end state"
        ) from exc
    return EndState(visible, in_flight, dlq_visible + dlq_in_flight, items)


async def _salvage_end_state(
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    made: aws.Provisioned,
    target: aws.Target,
    timeout_s: float,
) -> EndState | None:
    """The end state of an interrupted run, or ``None`` if it cannot be read in time."""
    if not (made.queue_url and made.dlq_url and made.table_name):
        return None
    try:
        return await _end_state(sqs, dynamodb, made, target, timeout_s)
    except BackendError:
        return None


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
    cleanup_timeout_s: float = CLEANUP_TIMEOUT_S,
    salvage: Salvage | None = None,
) -> RunResult:
    """Run every variant once per cell (a dict of scenario overrides), in order.

    The cells' scenarios are built (and validated) before anything runs. Each
    variant run is also added to ``salvage`` as it ends.
    """
    scenarios = [scenario.with_overrides(**cell) for cell in cells]
    salvage = salvage if salvage is not None else Salvage()
    salvage.target = target
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
                cell_scenario,
                ref,
                target,
                planned,
                names,
                on_progress=on_progress,
                clock=clock,
                cleanup_timeout_s=cleanup_timeout_s,
                salvage=salvage,
            )
            variant_run.cell = dict(cell)
            runs.append(variant_run)
    return RunResult(scenario=scenario, target=target, runs=runs)


@contextmanager
def backend_target(kind: aws.BackendKind, endpoint_url: str | None) -> Iterator[aws.Target]:
    """The run's target; for the embedded backend, start it and stop it afterwards."""
    if kind is aws.BackendKind.EMBEDDED:
        from loadtest.adapters.backend.embedded import EmbeddedBackend

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
    stop: Stop | None = None,
    cleanup_timeout_s: float = CLEANUP_TIMEOUT_S,
    salvage: Salvage | None = None,
) -> RunResult:
    """Synchronous entry point: start the backend if embedded, run, stop it.

    ``cells`` makes it a sweep: each variant runs once per cell of overrides.
    A ``stop`` request (a signal, see ``loadtest.interrupts``) ends the run
    early: the result then holds what was measured, with ``incomplete`` set.
    ``salvage`` (the caller's) keeps the finished runs and what is not yet
    deleted even if this raises.
    """
    for cell in cells:
        scenario.with_overrides(**cell)  # bad input fails before the backend starts
    salvage = salvage if salvage is not None else Salvage()
    with backend_target(kind, endpoint_url) as target:

        async def main() -> RunResult:
            with anyio.CancelScope() as scope:
                if stop is None:
                    return await sweep_async(
                        scenario,
                        refs,
                        target,
                        cells,
                        on_progress=on_progress,
                        cleanup_timeout_s=cleanup_timeout_s,
                        salvage=salvage,
                    )
                with stop.cancels(scope):
                    return await sweep_async(
                        scenario,
                        refs,
                        target,
                        cells,
                        on_progress=on_progress,
                        cleanup_timeout_s=cleanup_timeout_s,
                        salvage=salvage,
                    )
            # Only a stop request cancels this scope: keep what was measured.
            reason = stop.reason if stop is not None else None
            return RunResult(
                scenario=scenario,
                target=target,
                runs=list(salvage.runs),
                incomplete=f"interrupted by {reason}" if reason else "interrupted",
            )

        result: RunResult = anyio.run(main, backend="asyncio")
        return result

"""Driving one variant's workload: the producer, the pollers (or the dispatcher), the
DLQ watcher and the rate/backlog reporter in one task group, until every sent message
is settled or the deadline passes.

Owns the run's live phase and its stop signals (``max_backlog``); must not create or
delete resources, nor judge the run (the engine's ``run_variant`` does both).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from loadtest.aws import clients as aws
from loadtest.aws.fifo import fifo_queue
from loadtest.emulation.environment.parent_environments import ExecutionEnvironment
from loadtest.emulation.mapping.runner import (
    FIFO_REPEAT_S,
    Dispatcher,
    Poller,
    Progress,
    Settlement,
    dispatches,
    watch_dead_letters,
)
from loadtest.heap import frozen_heap
from loadtest.model.checker import LiveDuplicates
from loadtest.model.figures.rate import RateWatch, requested_per_s
from loadtest.model.history.log import History, Record, WriteRecord
from loadtest.model.scenario.body import body_shape
from loadtest.model.scenario.loading import CopySpacing, Scenario
from loadtest.producer.processes import Send

if TYPE_CHECKING:
    from types_aiobotocore_sqs.client import SQSClient
from loadtest.engine.results import Clock, ProgressCallback


class _LiveDuplicates:
    """Keeps Progress.duplicate_writes current with the checker's own rule."""

    def __init__(self, progress: Progress, scenario: Scenario) -> None:
        self.progress = progress
        self.count = LiveDuplicates(scenario.judged_outcome)

    def __call__(self, writes: tuple[WriteRecord, ...], records: tuple[Record, ...]) -> None:
        self.progress.duplicate_writes = self.count.add(writes)


async def drive(
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
    settlement = Settlement(
        first_copies=scenario.workload.copy_spacing is CopySpacing.AFTER_COMPLETION,
        remember_s=FIFO_REPEAT_S if fifo_queue(scenario) else 0,
        clock=clock,
    )
    stopping = anyio.Event()
    watcher_scope = anyio.CancelScope()
    live = _LiveDuplicates(progress, scenario)
    shape = body_shape(scenario.workload)
    watch = RateWatch(requested_per_s(scenario))
    stop_sending = anyio.Event()
    history.started_ns = clock()

    def on_sent(message_ids: list[str]) -> None:
        progress.sent += len(message_ids)
        settlement.sent(message_ids)

    async def producer() -> None:
        await send(
            sqs, history, history.started_ns, on_sent, settlement.first_settled, clock, stop_sending
        )
        settlement.expect()

    async def watcher() -> None:
        with watcher_scope:
            await watch_dead_letters(sqs, dlq_url, history, settlement, progress, clock, body=shape)

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

    # The set-up's objects (modules, clients, environments) stay alive through the run:
    # the full collections while messages flow walk only what the flow made.
    with aws.translated("run the workload", target), frozen_heap():
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
                        body=shape,
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
                for poller in pollers:
                    poller.stop_polling()
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

"""The local runtime: a scenario's seeded workload against each variant in emulated environments.

For every variant: start the execution environments (importing the handler
validates it before anything is created), create a fresh queue, DLQ and
table (and the sinks the scenario names), run the producer, pollers and DLQ
watcher in one task group until every message is settled or the deadline
passes, read the end state, check it, and delete exactly what was created —
also when the run fails or is interrupted.

Owns the orchestration of an emulated run (``run``, ``run_async``,
``sweep_async``, ``run_variant``: set up, run, check, clean up) and starting
the embedded backend (``backend_target``). The live phase of a run is
``drive``'s, the end-of-run steps ``ending``'s, the result types ``results``'
and the variant's record ``variant_result``'s. Prints nothing, never exits.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import anyio

from loadtest.aws import clients as aws
from loadtest.aws.fifo import fifo_queue
from loadtest.emulation.environment.handlers import HandlerRef, tables_for
from loadtest.emulation.environment.parent_environments import (
    ExecutionEnvironment,
    FunctionConfig,
    log_directory,
)
from loadtest.emulation.mapping.runner import Progress
from loadtest.engine.drive import drive
from loadtest.engine.ending import (
    close_all,
    read_end_state,
    salvage_end_state,
    why,
    with_left_behind,
)
from loadtest.engine.recording import HistoryWriter
from loadtest.engine.results import (
    CLEANUP_TIMEOUT_S,
    Clock,
    ProgressCallback,
    RunResult,
    Salvage,
    VariantRun,
    check_reachable,
    fault_environment,
    function_environment,
)
from loadtest.engine.variant_result import variant_result
from loadtest.interrupts import Stop
from loadtest.model.figures.metrics import latencies
from loadtest.model.history.log import EndState, History
from loadtest.model.history.observation import SharedValues
from loadtest.model.judging import judge
from loadtest.model.plan import Cell, cells_of
from loadtest.model.scenario.function_config import extra_table_name
from loadtest.model.scenario.loading import Scenario
from loadtest.model.workload.schedule import PlannedMessage, plan
from loadtest.producer.processes import producing
from loadtest.spool import FileFrames


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
    recorder: HistoryWriter | None = None,
    run_index: int = 0,
    cell_index: int = 0,
) -> VariantRun:
    """Run one variant; every cleanup step and the end-state read take at most ``cleanup_timeout_s``.

    When the run is cancelled (interrupted) or the backend fails mid-run, what
    was measured is judged against a bounded end-state read and added to
    ``salvage.runs`` marked incomplete before the exception goes on. With a
    ``recorder``, the history is written to its file as it goes (as the run's
    ``run_index``-th variant run, of the plan's ``cell_index``-th cell), and what
    judged the run once it ends.
    """
    settings = scenario.consumer
    setup = scenario.function
    if setup.table_name:
        names = dataclasses.replace(names, table=setup.table_name)
    tables = tables_for(ref, setup)
    key_schema = setup.key_schema(scenario.outcome.key_names)
    config = FunctionConfig(
        handler=ref,
        function_name=names.queue.removesuffix("-jobs") + "-worker",
        table_name=names.table,
        region=target.region,
        endpoint_url=target.endpoint_url,
        memory_mb=settings.memory_mb,
        timeout_s=settings.function_timeout_s,
        extra_env=target.credentials_env,
        fault_env=fault_environment(scenario),
        report_batch_item_failures=settings.report_batch_item_failures,
        key_names=tuple(name for name, _ in key_schema),
    )
    salvage = salvage if salvage is not None else Salvage()
    made = aws.Provisioned()
    history = (
        recorder.history(run_index, ref, names, cell_index)
        if recorder is not None
        else History(frames=FileFrames)
    )
    progress = Progress()
    end_state: EndState | None = None
    problems: list[str] = []
    failure: BaseException | None = None
    sqs_served: int | None = None
    sinks: aws.SinkClients | None = None
    with log_directory() as log_dir:
        shared = SharedValues()
        environments = [
            ExecutionEnvironment(config, n, log_dir, shared) for n in range(settings.concurrency)
        ]
        try:
            async with aws.clients(target, pool=max(16, settings.concurrency * 2 + 8)) as (
                sqs,
                dynamodb,
            ):
                salvage.live.append(made)
                try:
                    if scenario.sinks:
                        sinks = await anyio.to_thread.run_sync(aws.sink_clients, target)
                    await aws.provision(
                        sqs,
                        dynamodb,
                        names,
                        visibility_timeout_s=settings.visibility_timeout_s,
                        max_receive_count=settings.max_receive_count,
                        into=made,
                        target=target,
                        key_schema=key_schema,
                        extra_tables=tuple(
                            (extra_table_name(names.prefix, t), t.key) for t in tables
                        ),
                        fifo=fifo_queue(scenario),
                    )
                    if sinks is not None:
                        await anyio.to_thread.run_sync(
                            functools.partial(
                                aws.create_sinks,
                                sinks,
                                scenario.sinks,
                                names.prefix,
                                into=made.sinks,
                                target=target,
                            )
                        )
                    variables = function_environment(setup, tables, names, made, target.region)
                    for env in environments:
                        env.config = dataclasses.replace(
                            config,
                            function_env=variables,
                            side_tables=tuple(
                                (extra_table_name(names.prefix, t), t.key_names) for t in tables
                            ),
                            source_queues=tuple(q for q in (made.queue_url, made.queue_arn) if q),
                            dead_letter_queues=tuple(q for q in (made.dlq_url, made.dlq_arn) if q),
                        )
                    # Cold starts once the function's resources exist, as on Lambda: a
                    # handler may read its table when imported. One that does not
                    # import fails here, and what was made is torn down below.
                    await environments[0].start()
                    async with anyio.create_task_group() as tg:
                        for env in environments[1:]:
                            tg.start_soon(env.start)
                    served_before = await aws.served_sqs_requests(target)
                    assert made.queue_url
                    async with producing(
                        scenario.run.producers, target, made.queue_url, planned
                    ) as send:
                        await drive(
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
                    end_state = await read_end_state(
                        sqs, dynamodb, made, target, cleanup_timeout_s, sinks=sinks
                    )
                except BaseException as exc:
                    failure = exc
                    raise
                finally:
                    with anyio.CancelScope(shield=True):
                        # Invocations in flight are ended before anything is read or deleted.
                        await close_all(environments)
                        if failure is not None and end_state is None and history.started_ns:
                            end_state = await salvage_end_state(
                                sqs, dynamodb, made, target, cleanup_timeout_s, sinks=sinks
                            )
                        problems = await aws.teardown(
                            sqs, dynamodb, made, timeout_s=cleanup_timeout_s, sinks=sinks
                        )
                        if sinks is not None:
                            sinks.close()
                    if not problems:
                        salvage.live.remove(made)
        except BaseException as exc:
            failure = failure or exc
            if history.started_ns:
                partial = _variant_run(
                    scenario,
                    ref,
                    names,
                    history,
                    end_state or EndState(0, 0, 0, {}),
                    environments,
                    problems,
                    incomplete=why(failure, end_state),
                    progress=progress,
                    cut_short=True,
                )
                salvage.runs.append(partial)
                if recorder is not None:
                    recorder.ended(
                        run_index,
                        partial,
                        cut_short=True,
                        backlog_peak=progress.backlog_peak,
                        stopped_early=progress.stopped_early,
                    )
            if problems:
                raise with_left_behind(exc, problems) from exc
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await close_all(environments)

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
    if recorder is not None:
        recorder.ended(
            run_index,
            variant_run,
            cut_short=False,
            backlog_peak=progress.backlog_peak,
            stopped_early=progress.stopped_early,
        )
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
    cut_short: bool = False,
) -> VariantRun:
    """The emulated run's measurements, judged, through the one builder (``variant_result``).

    ``cut_short``: the run was interrupted or its backend failed before its workload was
    settled (``check`` then leaves an absence unjudged)."""
    if incomplete is not None and not history.ended_ns:
        history.ended_ns = time.monotonic_ns()
    return variant_result(
        scenario,
        ref,
        names,
        history,
        end_state,
        check=judge(scenario, history, end_state, cut_short=cut_short),
        latency=latencies(history),
        cold_starts=sum(env.cold_starts for env in environments),
        cleanup_problems=problems,
        incomplete=incomplete,
        backlog_peak=progress.backlog_peak if progress is not None else 0,
        stopped_early=progress.stopped_early if progress is not None else None,
    )


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
    cells: Sequence[Cell | Mapping[str, Any]],
    *,
    on_progress: ProgressCallback | None = None,
    clock: Clock = time.monotonic_ns,
    cleanup_timeout_s: float = CLEANUP_TIMEOUT_S,
    salvage: Salvage | None = None,
    recorder: HistoryWriter | None = None,
) -> RunResult:
    """Run every variant once per cell (``loadtest.model.plan.Cell``, or a mapping of
    scenario overrides made into one), in order.

    The cells' scenarios are built (and validated) before anything runs. Each
    variant run is also added to ``salvage`` as it ends, and written to
    ``recorder``'s history file as it goes (flushed every second).
    """
    planned_cells = cells_of(scenario, cells)
    salvage = salvage if salvage is not None else Salvage()
    salvage.target = target
    await check_reachable(target)
    if recorder is not None:
        recorder.backend(target)
    async with recorder.flushing() if recorder is not None else contextlib.nullcontext():
        return await _sweep(
            scenario,
            refs,
            target,
            planned_cells,
            on_progress,
            clock,
            cleanup_timeout_s,
            salvage,
            recorder,
        )


async def _sweep(
    scenario: Scenario,
    refs: Sequence[HandlerRef],
    target: aws.Target,
    planned_cells: Sequence[Cell],
    on_progress: ProgressCallback | None,
    clock: Clock,
    cleanup_timeout_s: float,
    salvage: Salvage,
    recorder: HistoryWriter | None,
) -> RunResult:
    run_id = aws.new_run_id()
    runs = []
    index = 0
    # One folder and one zygote for the whole run; each variant run has a folder within it.
    with log_directory():
        for cell_index, cell in enumerate(planned_cells):
            cell_scenario = cell.scenario
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
                    recorder=recorder,
                    run_index=index - 1,
                    cell_index=cell_index,
                )
                variant_run.cell = dict(cell.overrides)
                runs.append(variant_run)
    return RunResult(scenario=scenario, target=target, runs=runs)


@contextmanager
def backend_target(kind: aws.BackendKind, endpoint_url: str | None) -> Iterator[aws.Target]:
    """The run's target; for the embedded backend, start it and stop it afterwards.

    An embedded backend already running (``endpoint_url`` given with the embedded
    kind, as a test session shares one) is used as it is, and left running.
    """
    if kind is aws.BackendKind.EMBEDDED and endpoint_url is None:
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
    cells: Sequence[Cell | Mapping[str, Any]] = ({},),
    stop: Stop | None = None,
    cleanup_timeout_s: float = CLEANUP_TIMEOUT_S,
    salvage: Salvage | None = None,
    recorder: HistoryWriter | None = None,
) -> RunResult:
    """Synchronous entry point: start the backend if embedded, run, stop it.

    ``cells`` makes it a sweep: each variant runs once per cell of overrides.
    A ``stop`` request (a signal, see ``loadtest.interrupts``) ends the run
    early: the result then holds what was measured, with ``incomplete`` set.
    ``salvage`` (the caller's) keeps the finished runs and what is not yet
    deleted even if this raises. ``recorder`` writes the run's history to its file
    as it goes (``loadtest.engine.recording``); closing it is the caller's.
    """
    cells = cells_of(scenario, cells)  # bad input fails before the backend starts
    salvage = salvage if salvage is not None else Salvage()
    with backend_target(kind, endpoint_url) as target:

        async def main() -> RunResult:
            with anyio.CancelScope() as scope:
                with stop.cancels(scope) if stop is not None else nullcontext():
                    return await sweep_async(
                        scenario,
                        refs,
                        target,
                        cells,
                        on_progress=on_progress,
                        cleanup_timeout_s=cleanup_timeout_s,
                        salvage=salvage,
                        recorder=recorder,
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

"""A run through a deployed consumer: the workload goes through the real event source mapping.

For each variant: deploy (``lambda_deploy``), or attach
(``loadtest.deploy.remote_attach``, which reuses ``drive``),
send the scenario's workload with the producer, drain the observation queue
and the DLQ into a ``Collector`` until every sent message is acknowledged or
dead-lettered and every ended invocation's lines have arrived (or the
scenario's deadline passes: the run is then marked incomplete, which the
verdict treats as inconclusive or failed; messages unaccounted for while the
queue is empty are the evidence missing, not judged), read the end state, and judge it
with the same checker and latencies as a local run. What was made is deleted
unless ``keep``, and an attached function restored, also on error and Ctrl-C.

A ``Journal`` (the engine's history file) given to ``drive`` keeps the run's
history (the sent log as it grows) and gets every batch of observation lines and
every dead letter as they are read, so a run killed hard leaves what it learned.

Owns the remote data path (sends, drains, end state). Does not build the
report: ``loadtest.engine.deployed`` turns a ``RemoteVariant`` into the engine's
``VariantRun``. The control plane is synchronous boto3 (``Clients``); the
data plane is the same aioboto3 clients the local engine uses.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

import anyio

from loadtest.aws import clients as aws
from loadtest.deploy.collect import Collector
from loadtest.deploy.deploy_plan import VariantNames, plan_deploy, variant_names
from loadtest.deploy.lambda_deploy import (
    Clients,
    Deployed,
    deploy,
    function_zip,
    layer_zip,
    teardown,
)
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.emulation.mapping.runner import Progress, Settlement
from loadtest.model.checker import Check
from loadtest.model.figures.metrics import Latency, latencies
from loadtest.model.history.log import EndState, History
from loadtest.model.history.records import SinkContents
from loadtest.model.judging import judge
from loadtest.model.scenario.loading import CopySpacing, Scenario
from loadtest.model.workload.schedule import plan
from loadtest.producer.send import produce
from loadtest.spool import FileFrames

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_sqs.client import SQSClient

Clock = Callable[[], int]
DRAIN_WAIT_S = 1
"""Long-poll wait of each observation-queue receive (in seconds)."""
SETTLE_GRACE_S = 2.0
"""After everything is accounted for, how long (in seconds) to keep draining for
late lines (a standard queue may hold some back from one receive)."""
END_MARGIN_S = 5
"""Beyond the function timeout, how long (in seconds) an invocation may take to report its end."""
DLQ_HIDE_S = 600
"""Visibility timeout (in seconds) of a dead letter once counted: it is read, not deleted."""


@dataclass(frozen=True)
class AttachTo:
    """An already deployed consumer to observe for the run."""

    function: str
    queue_url: str
    table: str


@dataclass
class RemoteVariant:
    """One variant's run through a deployed mapping: what the engine's VariantRun holds."""

    ref: HandlerRef
    history: History
    end_state: EndState
    check: Check
    latency: dict[str, Latency]
    duration_s: float
    cold_starts: int
    names: aws.ResourceNames
    incomplete: str | None = None
    cleanup_problems: list[str] = field(default_factory=list)
    unreadable_lines: int = 0
    orphan_invocations: int = 0
    deployed_warnings: list[str] | None = None
    """An attached consumer's own settings, linted (``loadtest lint --function``'s findings);
    None when the run deployed the scenario's settings, which are linted instead."""
    cut_short: bool = False
    """Judged as a run cut short: the evidence of some messages never came (see ``drive``)."""


class Journal(Protocol):
    """Where a deployed run writes what it learns as it learns it (``HistoryWriter``)."""

    def collecting(
        self,
        run: int,
        ref: HandlerRef,
        names: aws.ResourceNames,
        *,
        partial: bool,
        wall_offset_ns: int,
    ) -> History:
        """The run's history, its logs kept by the journal."""

    def lines(self, run: int, bodies: list[str]) -> None:
        """Observation lines as they were drained, in order."""

    def dead_letter(self, run: int, message_id: str, receive_count: int, seen_ns: int) -> None:
        """A dead letter as it was first seen (``seen_ns`` monotonic)."""

    def flushing(self) -> AbstractAsyncContextManager[None]:
        """Keeps the journal on disk while the run's event loop runs."""


@dataclass(frozen=True)
class Endpoints:
    """Where the queues of one variant are (URLs) and what the run judges."""

    queue_url: str
    dlq_url: str | None
    observations_url: str
    table: str
    partial: bool
    """The mapping reports batch item failures."""
    sinks: tuple[aws.MadeSink, ...] = ()
    """The variant's sinks, read at the end with ``sink_clients``."""
    sink_clients: aws.SinkClients | None = None


async def drive(
    scenario: Scenario,
    ref: HandlerRef,
    target: aws.Target,
    where: Endpoints,
    names: aws.ResourceNames,
    *,
    clock: Clock = time.monotonic_ns,
    wall_clock: Clock = time.time_ns,
    journal: Journal | None = None,
    run: int = 0,
) -> RemoteVariant:
    """Send the workload to ``where.queue_url`` and collect until settled or the deadline.

    ``journal`` (with ``run``, the variant run's index) gets what is learned as it is learned.
    """
    planned = plan(scenario.workload, scenario.seed)
    progress = Progress()
    settlement = Settlement(
        first_copies=scenario.workload.copy_spacing is CopySpacing.AFTER_COMPLETION
    )
    collector = Collector(partial=where.partial, wall_offset_ns=wall_clock() - clock())
    history = (
        journal.collecting(
            run, ref, names, partial=collector.partial, wall_offset_ns=collector.wall_offset_ns
        )
        if journal is not None
        else History(frames=FileFrames)
    )
    sent_all = anyio.Event()
    async with (
        journal.flushing() if journal is not None else contextlib.nullcontext(),
        aws.clients(target) as (sqs, dynamodb),
    ):
        history.started_ns = clock()

        def on_sent(message_ids: list[str]) -> None:
            progress.sent += len(message_ids)

        async def producer() -> None:
            await produce(
                sqs,
                where.queue_url,
                planned,
                history,
                history.started_ns,
                on_sent,
                settlement.first_settled,
                clock,
            )
            settlement.expect({m.message_id for m in history.sent if m.message_id})
            sent_all.set()

        business: dict[str, str | None] = {}
        """Each sent message's business id, read from the sent log as it grows (a scan of
        the whole log per settled message was quadratic)."""
        read = 0

        def business_of(message_id: str) -> str | None:
            nonlocal read
            if message_id not in business:
                for m in history.sent[read:]:
                    read += 1
                    if m.message_id is not None:
                        business[m.message_id] = m.business_id
            return business.get(message_id)

        async def drain_observations() -> None:
            while True:
                got = await sqs.receive_message(
                    QueueUrl=where.observations_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=DRAIN_WAIT_S,
                )
                messages = got.get("Messages", [])
                if journal is not None and messages:
                    journal.lines(run, [m["Body"] for m in messages])
                for message in messages:
                    newly = collector.add(message["Body"])
                    # Work the function sent to its own queue: delivered by the mapping
                    # like the run's messages, so waited for (told before its sender's
                    # message is settled, when its line comes first).
                    resent = collector.take_resent()
                    if resent:
                        settlement.resent(resent)
                    for message_id in newly:
                        settlement.settle(message_id, business_of(message_id))
                if messages:
                    await sqs.delete_message_batch(
                        QueueUrl=where.observations_url,
                        Entries=[
                            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                            for i, m in enumerate(messages)
                        ],
                    )

        async def drain_dead_letters(dlq_url: str) -> None:
            while True:
                got = await sqs.receive_message(
                    QueueUrl=dlq_url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=DRAIN_WAIT_S,
                    VisibilityTimeout=DLQ_HIDE_S,
                    AttributeNames=["All"],
                )
                for message in got.get("Messages", []):
                    count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", 0))
                    message_id = message["MessageId"]
                    seen_ns = clock()
                    if collector.add_dead_letter(message_id, count, seen_ns):
                        if journal is not None:
                            journal.dead_letter(run, message_id, count, seen_ns)
                        settlement.settle(message_id, business_of(message_id))

        # An invocation that never reported its end is given the function timeout
        # (and a margin) to do so; after that it timed out or crashed.
        given_up_ns = (scenario.consumer.function_timeout_s + END_MARGIN_S) * 1_000_000_000

        def complete() -> bool:
            now = wall_clock()
            return (
                settlement.done.is_set()
                and settlement.unsettled() == 0
                and collector.missing_lines() == 0
                and all(
                    now - collector.starts[r].started_ns > given_up_ns
                    for r in collector.never_ended()
                )
            )

        accounted = False
        with aws.translated("run the workload through the mapping", target):
            with anyio.move_on_after(scenario.run.deadline_s) as deadline:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(producer)
                    tg.start_soon(drain_observations)
                    if where.dlq_url:
                        tg.start_soon(drain_dead_letters, where.dlq_url)
                    await sent_all.wait()
                    await settlement.done.wait()
                    # Settled; wait for the lines still on their way (the writes of the
                    # invocations that ended) and for invocations whose end is late.
                    # (polled: completeness depends on the clock, not only on events)
                    while True:
                        if complete():
                            break
                        await anyio.sleep(0.2)
                    history.ended_ns = clock()  # the grace below is not the run's time
                    accounted = True
                    await anyio.sleep(SETTLE_GRACE_S)
                    tg.cancel_scope.cancel()
            incomplete = None
            # The deadline may also pass during the grace drain: then nothing was missing.
            short = deadline.cancelled_caught and not accounted
            if short:
                history.ended_ns = clock()
                history.timed_out = True
            end_state = await _end_state(sqs, dynamodb, where, collector, scenario, target)
            if short:
                incomplete = _shortfall(history, collector, scenario.run.deadline_s, end_state)
    collector.build(history, ended_ns=history.ended_ns)
    # Messages nobody reported while the queue holds none: the mapping took them, and the
    # evidence of what became of them is what is missing. Their absence is not judged
    # (inconclusive, the reason in ``incomplete``); a backlog still in the queue is.
    evidence_missing = short and _unreported(history, collector, end_state) > 0
    return RemoteVariant(
        ref=ref,
        history=history,
        end_state=end_state,
        check=judge(scenario, history, end_state, cut_short=evidence_missing),
        latency=latencies(history),
        duration_s=max(0, history.ended_ns - history.started_ns) / 1e9,
        cold_starts=collector.environments(),
        names=names,
        incomplete=incomplete,
        unreadable_lines=collector.unreadable,
        orphan_invocations=collector.orphans(),
        cut_short=evidence_missing,
    )


def _unreported(history: History, collector: Collector, end: EndState) -> int:
    """Sent messages neither acknowledged nor dead-lettered although the queue is empty
    (0 while it still holds any: those may simply not have been processed yet)."""
    if end.queue_visible + end.queue_in_flight:
        return 0
    sent = {m.message_id for m in history.sent if m.message_id}
    return len(sent - collector.settled())


def _shortfall(history: History, collector: Collector, deadline_s: float, end: EndState) -> str:
    """Why the run is incomplete, telling a backlog from evidence that never came."""
    sent = {m.message_id for m in history.sent if m.message_id}
    unsettled = len(sent - collector.settled())
    parts = [f"the deadline ({deadline_s:g} s) passed"]
    if unsettled:
        parts.append(f"{unsettled} of {len(sent)} messages neither acknowledged nor dead-lettered")
        if _unreported(history, collector, end):
            # The mapping deleted them (or they expired), yet no invocation reported them:
            # what is missing is the evidence, not necessarily the outcome.
            parts.append(
                "the queue is empty, so no invocation reported them: their outcome is "
                "not judged (are the observer layer's lines reaching the observation queue?)"
            )
    if collector.missing_lines():
        parts.append(f"{collector.missing_lines()} observation lines never arrived")
    if collector.never_ended():
        parts.append(f"{len(collector.never_ended())} invocations never reported their end")
    return "; ".join(parts)


async def _end_state(
    sqs: SQSClient,
    dynamodb: DynamoDBClient,
    where: Endpoints,
    collector: Collector,
    scenario: Scenario,
    target: aws.Target,
) -> EndState:
    visible, in_flight = await aws.queue_depth(sqs, where.queue_url)
    items = await aws.scan_items(dynamodb, where.table, scenario.table_key_names)
    sinks: tuple[SinkContents, ...] = ()
    if where.sinks and where.sink_clients is not None:
        read = functools.partial(
            aws.read_sinks,
            where.sink_clients,
            where.sinks,
            target,
            deadline=time.monotonic() + SINK_READ_S,
        )
        sinks = await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
    return EndState(visible, in_flight, len(collector.dead), items, sinks=sinks)


SINK_READ_S = 60
"""How long (in seconds) a deployed run's sinks may take to be read; one not read in full
by then says ``complete=False``."""


def resource_names(names: VariantNames) -> aws.ResourceNames:
    return aws.ResourceNames(
        queue=names.queue,
        dlq=names.dlq,
        table=names.table,
        prefix=names.prefix,
    )


def run_deployed(
    scenario: Scenario,
    refs: Sequence[HandlerRef],
    clients: Clients,
    target: aws.Target,
    *,
    run_id: str,
    keep: bool = False,
    on_variant: Callable[[RemoteVariant], None] | None = None,
    layer: bytes | None = None,
    journal: Journal | None = None,
) -> list[RemoteVariant]:
    """Deploy every variant, drive each through its mapping, delete everything (unless ``keep``).

    Deletion also runs when a step fails or the run is interrupted; what
    could not be deleted is in the last variant's ``cleanup_problems`` (or the
    raised error's notes). ``layer`` replaces the observer layer's zip (tests
    plant a broken wrapper with it). ``journal`` gets each variant's evidence as it comes
    (variant run ``index`` for the variant at ``refs[index]``).
    """
    deploy_plan = plan_deploy(scenario, refs, run_id=run_id, region=target.region)
    code = {
        VariantNames.for_run(run_id, i).function: function_zip(ref) for i, ref in enumerate(refs)
    }
    made = Deployed()
    results: list[RemoteVariant] = []
    problems: list[str] = []
    try:
        deploy(
            deploy_plan,
            clients,
            code,
            into=made,
            layer=layer or layer_zip(),
            target=target if target.endpoint_url else None,
        )
        for index, ref in enumerate(refs):
            names = variant_names(scenario, run_id, index)
            where = Endpoints(
                queue_url=made.get(names.queue).ident,
                dlq_url=made.get(names.dlq).ident,
                observations_url=made.get(names.observations).ident,
                table=names.table,
                partial=scenario.consumer.report_batch_item_failures,
                sinks=tuple(m for m in made.sinks if m.sink.prefix_of(m.name) == names.prefix),
                sink_clients=clients.sinks,
            )
            result = anyio.run(
                functools.partial(drive, journal=journal, run=index),
                scenario,
                ref,
                target,
                where,
                resource_names(names),
                backend="asyncio",
            )
            results.append(result)
            if on_variant is not None:
                on_variant(result)
    except BaseException as exc:
        if not keep:
            problems = teardown(clients, made)
            for problem in problems:
                exc.add_note(f"left behind: {problem}")
        raise
    if not keep:
        problems = teardown(clients, made)
        if results:
            results[-1].cleanup_problems = problems
    return results


__all__ = ["AttachTo", "Endpoints", "Journal", "RemoteVariant", "drive", "run_deployed"]

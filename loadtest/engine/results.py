"""What a run produces and the checks before one: the result types, the faults and
settings warnings handed to environments and reports, the function's variables once its
resources exist, and the reachability probe.

Owns the run's result records (``VariantRun``, ``RunResult``, ``Salvage``); must not
run anything (that is ``loadtest.engine.local``'s ``run_variant``) nor drive the workload (``drive``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from loadtest.aws import clients as aws
from loadtest.emulation.mapping.runner import Progress
from loadtest.errors import BackendError
from loadtest.model.checker import Check
from loadtest.model.figures.metrics import Latency
from loadtest.model.history.log import EndState, History
from loadtest.model.scenario.function_config import (
    ExtraTable,
    FunctionSetup,
    RunResources,
    render,
    table_names,
)
from loadtest.model.scenario.loading import ConsumerSettings, Faults, Scenario
from loadtest.observer import fault_env

if TYPE_CHECKING:
    pass
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
    """The requested and achieved rates and the backlog (``loadtest.model.figures.rate.rate_figures``)."""
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
    return tuple(fault_env.fault_environment(scenario.faults, seed=scenario.seed).items())


def settings_warnings(
    settings: ConsumerSettings, faults: Faults, variant: str = "", intended: Sequence[str] = ()
) -> list[str]:
    """Legal but unwise settings, flagged in the report as a likely cause: the rules of
    ``loadtest.model.advice.lint`` (their one owner), marked where the scenario intends them."""
    from loadtest.model.advice.lint import run_warnings

    return run_warnings(settings, faults, variant, intended)


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


def function_environment(
    setup: FunctionSetup,
    tables: tuple[ExtraTable, ...],
    names: aws.ResourceNames,
    made: aws.Provisioned,
    region: str,
) -> tuple[tuple[str, str], ...]:
    """The function's own variables once its resources exist: the scenario's, with the
    run's resources (its sinks included) filled in, and each of the variant's extra
    tables' (``tables``)."""
    assert made.queue_url and made.queue_arn and made.dlq_url
    rendered = render(
        dataclasses.replace(setup, tables=tables),
        RunResources(
            table=names.table,
            queue_url=made.queue_url,
            queue_arn=made.queue_arn,
            queue_name=names.queue,
            dlq_url=made.dlq_url,
            region=region,
            tables=table_names(names.prefix, tables),
            sinks=made.sink_values(),
        ),
    )
    return tuple(rendered.items())

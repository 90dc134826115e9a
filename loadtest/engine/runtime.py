"""The runtime seam: where a run's variants execute, under one call.

A ``Runtime`` runs a scenario's variants and returns the engine's
``RunResult``: ``Emulated`` runs them in local execution environments against
a backend (embedded, an endpoint, or AWS's queues and tables;
``loadtest.engine.local``), ``Deployed`` as Lambda functions behind real event
source mappings (``loadtest.engine.deployed``). Both build each variant's
record with ``variant_result``, so the reports cannot tell them apart except
by what was measured. ``runtime_for`` is the one place that chooses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from loadtest.aws import clients as aws
from loadtest.deploy.remote_run import AttachTo
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.engine.recording import HistoryWriter
from loadtest.engine.results import CLEANUP_TIMEOUT_S, ProgressCallback, RunResult, Salvage
from loadtest.interrupts import Stop
from loadtest.model.plan import Cell
from loadtest.model.scenario.loading import Scenario


@dataclass(frozen=True)
class RunOptions:
    """How a run is run, whatever the runtime (each runtime uses what applies to it)."""

    cells: Sequence[Cell | Mapping[str, Any]] = ({},)
    """One run per cell and variant (local only): the plan's cells, their scenarios
    already built (a mapping of overrides is made into a cell)."""
    on_progress: ProgressCallback | None = None
    stop: Stop | None = None
    salvage: Salvage | None = None
    """The caller's: finished runs and what is not yet deleted, kept even if the run raises."""
    cleanup_timeout_s: float = CLEANUP_TIMEOUT_S
    recorder: HistoryWriter | None = None
    """The run's history file, written as the run goes."""


class Runtime(Protocol):
    """Runs every variant (once per cell of overrides) and returns what was measured."""

    def run(
        self, scenario: Scenario, refs: Sequence[HandlerRef], options: RunOptions
    ) -> RunResult: ...


@dataclass(frozen=True)
class Emulated:
    """Local execution environments polling the backend's queue (the emulated mapping)."""

    kind: aws.BackendKind = aws.BackendKind.EMBEDDED
    endpoint_url: str | None = None

    def run(self, scenario: Scenario, refs: Sequence[HandlerRef], options: RunOptions) -> RunResult:
        from loadtest.engine.local import run

        return run(
            scenario,
            refs,
            kind=self.kind,
            endpoint_url=self.endpoint_url,
            on_progress=options.on_progress,
            cells=options.cells,
            stop=options.stop,
            salvage=options.salvage,
            cleanup_timeout_s=options.cleanup_timeout_s,
            recorder=options.recorder,
        )


@dataclass(frozen=True)
class Deployed:
    """Lambda functions behind real event source mappings (AWS, or an endpoint serving Lambda).

    ``keep`` leaves what was deployed in place; ``attach`` observes an already
    deployed consumer instead of deploying the variants. A run through a real
    mapping takes no cells, no progress callback and no salvage: its
    cleanup runs in ``loadtest.deploy.remote_run`` also on an interrupt.
    """

    kind: aws.BackendKind
    endpoint_url: str | None = None
    keep: bool = False
    attach: AttachTo | None = None
    run_id: str | None = None

    def run(self, scenario: Scenario, refs: Sequence[HandlerRef], options: RunOptions) -> RunResult:
        from loadtest.engine.deployed import run_deployed

        target = aws.Target.resolve(self.kind, self.endpoint_url)
        if options.salvage is not None:
            options.salvage.target = target
        return run_deployed(
            scenario,
            refs,
            target,
            keep=self.keep,
            attach=self.attach,
            run_id=self.run_id,
            recorder=options.recorder,
        )


def runtime_for(
    kind: aws.BackendKind,
    endpoint_url: str | None,
    *,
    deployed: bool,
    keep: bool = False,
    attach: AttachTo | None = None,
    run_id: str | None = None,
) -> Runtime:
    """The runtime of a run: deployed functions when ``deployed`` (always for real AWS)."""
    if deployed or kind is aws.BackendKind.AWS or attach is not None:
        return Deployed(kind, endpoint_url, keep=keep, attach=attach, run_id=run_id)
    return Emulated(kind, endpoint_url)


__all__ = ["Deployed", "Emulated", "RunOptions", "Runtime", "runtime_for"]

"""The engine: runs a scenario's seeded workload against each consumer variant.

Re-exports only. A run goes through a runtime (``runtime``: the local
emulation in ``local``, or deployed functions behind a real event source
mapping in ``deployed``); each variant's record is built once, by
``variant_result``. The live phase of a local run is ``drive``'s, the
end-of-run steps ``ending``'s, the result types and pre-run checks
``results``'. Usable as a library; prints nothing and never exits the process.
"""

from __future__ import annotations

from loadtest.engine.local import backend_target, run, run_async, run_variant, sweep_async
from loadtest.engine.results import (
    CLEANUP_TIMEOUT_S,
    Clock,
    ProgressCallback,
    RunResult,
    Salvage,
    VariantRun,
    check_reachable,
    fault_environment,
    settings_warnings,
)

__all__ = [
    "CLEANUP_TIMEOUT_S",
    "Clock",
    "ProgressCallback",
    "RunResult",
    "Salvage",
    "VariantRun",
    "backend_target",
    "check_reachable",
    "fault_environment",
    "run",
    "run_async",
    "run_variant",
    "settings_warnings",
    "sweep_async",
]

"""The doctor's data-plane checks on the emulated event source mapping.

Runs each probe workload of ``loadtest.doctor.mapping`` through the local
runtime (the same dispatcher, pollers and execution environments as ``loadtest run``)
against the given endpoint, and judges the history each run recorded. The runs
create and delete their own queues and table as any run does.
"""

from __future__ import annotations

from collections.abc import Callable

from loadtest.aws import clients as aws
from loadtest.doctor.checks import CheckResult
from loadtest.doctor.mapping import probes
from loadtest.emulation.environment.handlers import parse_ref


def run_mapping_checks(
    endpoint_url: str, *, on_check: Callable[[CheckResult], None] | None = None
) -> list[CheckResult]:
    """Every data-plane check against the emulated mapping, with queues on ``endpoint_url``."""
    from loadtest.engine import run  # the engine's entry point, beside this module

    results = []
    for probe in probes():
        (variant,) = run(
            probe.scenario,
            [parse_ref(v) for v in probe.scenario.variants],
            kind=aws.BackendKind.ENDPOINT,
            endpoint_url=endpoint_url,
        ).runs
        result = probe.judge(variant.history)
        results.append(result)
        if on_check is not None:
            on_check(result)
    return results

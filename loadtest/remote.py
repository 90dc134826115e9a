"""The library's runs through deployed Lambda functions: ``execute_remote``.

Owns turning a prepared ``loadtest.api.Plan`` into a run through real event
source mappings (``loadtest.deploy.remote_run``: deploy or attach, send,
collect, delete or restore) and the result into the same ``Report`` a local
run gives: each collected variant becomes the engine's ``VariantRun``, judged
by the same checker, warnings, rate figures and report builder. Sits above
``loadtest.api`` (it uses its plan and report); prints nothing, never exits.
"""

from __future__ import annotations

from loadtest.api import Plan, Report
from loadtest.deploy.remote_run import AttachTo, RemoteVariant
from loadtest.engine import RunResult, VariantRun
from loadtest.model.scenario import Scenario
from loadtest.reports.report import build_report


def execute_remote(
    plan: Plan,
    *,
    keep: bool = False,
    attach: AttachTo | None = None,
    run_id: str | None = None,
    command: str | None = None,
) -> Report:
    """Run a prepared plan through deployed Lambda functions behind real mappings, and judge it.

    ``plan.kind`` is AWS or an endpoint that runs Lambda functions (MiniStack).
    Without ``attach`` each variant is deployed (and deleted afterwards unless
    ``keep``); with it, that already deployed consumer's own handler runs (one
    run, reported as ``attached:NAME``, the plan's variants ignored) and the
    function is restored exactly afterwards. Credentials and region
    come from boto3's chain. Control-plane failures raise ``BackendError``.
    """
    from loadtest.adapters import aws
    from loadtest.deploy import remote_attach, remote_run
    from loadtest.deploy.lambda_cleanup import make_clients

    target = aws.Target.resolve(plan.kind, plan.endpoint_url)
    clients, _ = make_clients(plan.endpoint_url, target.region)
    run_id = run_id or aws.new_run_id()
    if attach is not None:
        # The function's own handler runs, whatever variants the scenario names.
        remote = [remote_attach.run_attached(plan.scenario, attach, clients, target, run_id=run_id)]
    else:
        remote = remote_run.run_deployed(
            plan.scenario, plan.refs, clients, target, run_id=run_id, keep=keep
        )
    runs = [_variant_run(plan.scenario, r) for r in remote]
    result = RunResult(plan.scenario, target, runs)
    return Report(
        build_report(result, command=command, thresholds=plan.thresholds, prices=plan.prices)
    )


def _variant_run(scenario: Scenario, remote: RemoteVariant) -> VariantRun:
    """The engine's record of a variant run, from one collected through a deployed mapping."""
    from loadtest.engine import settings_warnings
    from loadtest.model.rate import rate_figures, requested_per_s

    summaries = {name: remote.latency[name].summary() for name in ("end_to_end", "queue_dwell")}
    if remote.deployed_warnings is not None:  # an attached consumer runs its own settings
        warnings = list(remote.deployed_warnings)
    else:
        warnings = settings_warnings(
            scenario.consumer, scenario.faults, remote.ref.variant, scenario.lint_intended
        )
    if remote.unreadable_lines:
        warnings.append(
            f"{remote.unreadable_lines} lines on the observation queue were not loadtest's"
        )
    if remote.orphan_invocations:
        warnings.append(
            f"{remote.orphan_invocations} invocations wrote without reporting their records"
        )
    ref = remote.ref
    return VariantRun(
        variant=ref.variant,
        handler=ref.ref if ref.path else f"{ref.module}:{ref.function}",
        settings=scenario.consumer,
        history=remote.history,
        end_state=remote.end_state,
        check=remote.check,
        latency=remote.latency,
        duration_s=remote.duration_s,
        cold_starts=remote.cold_starts,
        resources=remote.names,
        faults=scenario.faults,
        cleanup_problems=remote.cleanup_problems,
        warnings=warnings,
        incomplete=remote.incomplete,
        rate=rate_figures(remote.history, requested_per_s(scenario), 0, summaries),
    )

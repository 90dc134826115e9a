"""The report builder: a run's results judged, as the report model.

Owns how a ``RunResult`` becomes a ``ReportModel`` (``loadtest.reports.model``,
whose serialisation is the JSON report, ``schema_version`` 1): each variant run's
figures and evidence (read from its history in ``passes``), then its verdict: the
default verdict, relaxed only where the scenario's ``[verdict.allow]`` says so,
then failed by any threshold of the plan that does not hold, and, for a repeated
run, the ``repeat`` statistics. The plan (``loadtest.model.plan``) brings the
thresholds parsed and the price table: nothing is parsed or rebuilt here. Receipt
handles are never included. Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loadtest.model.checker import verdict_of
from loadtest.model.checker.evidence import EVIDENCE_LIMIT
from loadtest.model.figures.cost import Prices, priced, units_of
from loadtest.model.figures.thresholds import Threshold
from loadtest.model.plan import RunPlan
from loadtest.model.scenario.loading import to_raw
from loadtest.model.search.repeats import repeat_failed, repeat_summary
from loadtest.reports.judge import judged_by, relaxed
from loadtest.reports.model import SCHEMA_VERSION, ReportModel, RunModel
from loadtest.reports.passes import (
    SERIES_POINTS_LIMIT,
    WRITE_DECISIONS_LIMIT,
    Listing,
    dead_letters,
    series_of,
)

if TYPE_CHECKING:
    from loadtest.engine import RunResult, VariantRun

__all__ = [
    "SCHEMA_VERSION",
    "SERIES_POINTS_LIMIT",
    "WRITE_DECISIONS_LIMIT",
    "Listing",
    "build",
    "build_report",
    "run_model",
    "verdict_exit_code",
]


def _cost(run: VariantRun, prices: Prices) -> dict[str, Any]:
    units = units_of(
        run.history,
        memory_mb=run.settings.memory_mb,
        sqs_requests_served=run.sqs_requests_served,
    )
    return priced(units, prices, messages=run.check.counts.messages_sent)


def run_model(run: VariantRun, prices: Prices | None = None) -> RunModel:
    """One run of the report, its default verdict only; ``prices`` default to the
    committed us-east-1 table."""
    if prices is None:
        from loadtest.model.figures.price_tables import default_prices  # the one file read, cached

        prices = default_prices()
    counts = run.check.counts
    series, lists, decisions = series_of(run)
    findings = decisions.findings
    dead = dead_letters(run, WRITE_DECISIONS_LIMIT)
    items = sorted(run.end_state.table_items.items())
    return RunModel(
        variant=run.variant,
        handler=run.handler,
        cell=dict(run.cell),
        settings={
            **dataclasses.asdict(run.settings),
            "faults": {**dataclasses.asdict(run.faults), "point": dict(run.faults.point)},
        },
        faults=run.faults.describe(),
        counts=counts.as_dict(),
        effects=[s.to_json(run.history.started_ns) for s in run.check.effects]
        if counts.effects_sent is not None
        else None,
        queue_after={
            "visible": run.end_state.queue_visible,
            "in_flight": run.end_state.queue_in_flight,
            "dlq": run.end_state.dlq_messages,
        },
        table_after={
            "items": len(run.end_state.table_items),
            # The consumer's extra tables ([[tables]]): what it kept besides outcomes.
            **(
                {"side_tables": dict(run.end_state.side_tables)}
                if run.end_state.side_tables
                else {}
            ),
        },
        latency_us={name: latency.summary() for name, latency in run.latency.items()},
        latency_hdr={name: latency.encoded() for name, latency in run.latency.items()},
        throughput={
            "messages_per_s": round(run.messages_per_s, 2),
            "duration_s": round(run.duration_s, 3),
        },
        rate=dict(run.rate),
        cost=_cost(run, prices),
        thresholds=(),
        # An interrupted run was not judged to the end: unless it already failed,
        # it cannot pass.
        verdict=verdict_of(
            run.check.reasons, run.check.inconclusive, incomplete=run.incomplete is not None
        ).value,
        reasons=tuple(run.check.reasons),
        inconclusive=(
            *([f"incomplete: {run.incomplete}"] if run.incomplete else []),
            *run.check.inconclusive,
        ),
        incomplete=run.incomplete is not None,
        outcome=run.check.outcome,
        key_templates={k: dict(v) for k, v in run.check.templates.items()},
        notes=tuple(run.check.notes),
        unobserved=lists.unobserved,
        warnings=tuple(run.warnings),
        timed_out=run.history.timed_out,
        cold_starts=run.cold_starts,
        resources=dataclasses.asdict(run.resources),
        cleanup_problems=tuple(run.cleanup_problems),
        series=series,
        findings=findings,
        errors=lists.errors,
        dead_letters=dead,
        results=lists.results,
        write_decisions=decisions.write_decisions,
        write_decisions_total=decisions.total,
        write_outcomes=decisions.outcomes,
        table_items=dict(items[:WRITE_DECISIONS_LIMIT]),
        cut=_cut(
            series_interval_s=series["interval_s"],
            findings=(decisions.duplicated, EVIDENCE_LIMIT),
            dead_letters=(len(run.history.dead_letters), WRITE_DECISIONS_LIMIT),
            results=(lists.result_count, WRITE_DECISIONS_LIMIT),
            write_decisions=(decisions.total, WRITE_DECISIONS_LIMIT),
            table_items=(len(items), WRITE_DECISIONS_LIMIT),
        ),
    )


def _cut(series_interval_s: float, **lists: tuple[int, int]) -> dict[str, Any]:
    """What the report lists of each long list, and of how many: counts are always over
    everything, the lists are the first ``listed`` (in the order the report gives)."""
    return {
        "series_interval_s": series_interval_s,
        **{
            name: {"listed": min(total, limit), "total": total, "cut": total > limit}
            for name, (total, limit) in lists.items()
        },
    }


def _judged(
    run: RunModel, thresholds: Sequence[Threshold], allow: Mapping[str, Sequence[str]]
) -> RunModel:
    """The run's verdict after the scenario's relaxations and the plan's thresholds."""
    if run.variant in allow:
        run = relaxed(run, allow[run.variant])
    return judged_by(run, thresholds)


def build(result: RunResult, plan: RunPlan, *, command: str | None = None) -> ReportModel:
    """The report of a run or comparison, judged as ``plan`` asks.

    Costs are priced with the plan's price table (the committed us-east-1 table
    when None). A repeated plan (``RunPlan.repeated``) gains the report's
    ``repeat`` object (``loadtest.model.search.repeats``), its thresholds judged there.
    """
    allow = dict(result.scenario.allow)
    runs = [_judged(run_model(run, plan.prices), plan.thresholds, allow) for run in result.runs]
    repeat = None
    if plan.repeated:
        run_seeds: list[int] = [run.cell.get("seed", result.scenario.seed) for run in runs]
        runs = [dataclasses.replace(run, seed=s) for run, s in zip(runs, run_seeds, strict=True)]
        seeds = list(dict.fromkeys(run_seeds))
        repeat = repeat_summary([run.figures() for run in runs], seeds, plan.thresholds)
    return ReportModel(
        schema_version=SCHEMA_VERSION,
        seed=result.scenario.seed,
        scenario={
            "name": result.scenario.name,
            "source": result.scenario.source,
            **to_raw(result.scenario),
        },
        backend={"kind": result.target.kind.value, "endpoint_url": result.target.endpoint_url},
        command=command,
        incomplete=result.incomplete is not None,
        incomplete_reason=result.incomplete,
        runs=tuple(runs),
        repeat=repeat,
    )


def build_report(
    result: RunResult,
    *,
    command: str | None = None,
    thresholds: Iterable[str] = (),
    prices: Prices | None = None,
    repeat: bool = False,
) -> dict[str, Any]:
    """The JSON report of ``build``, for a caller with threshold texts instead of a plan
    (``repeat``: the runs are one workload under successive seeds)."""
    plan = RunPlan.of(result.scenario, list(thresholds), prices=prices)
    if repeat:
        plan = dataclasses.replace(plan, repeat=max(2, len(result.runs)))
    return build(result, plan, command=command).to_json()


def verdict_exit_code(report: ReportModel | Mapping[str, Any]) -> int:
    """The exit code a report's verdicts make: 1 if any run failed (or a threshold on a
    repeat's statistics), else 4 if any was inconclusive, else 0."""
    if isinstance(report, Mapping):
        report = ReportModel.from_json(report)
    verdicts = {run.verdict for run in report.runs}
    if verdicts - {"pass", "inconclusive"} or repeat_failed({"repeat": report.repeat}):
        return 1
    return 4 if "inconclusive" in verdicts else 0

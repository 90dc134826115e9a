"""The library: one call runs a scenario and returns the report the CLI would show.

Owns ``loadtest.run`` and the ``Report`` it returns. It resolves a scenario
(a built-in name, a path or a ``Scenario``), the variants and handlers, the
overrides and the backend, runs the engine, and builds the report with the
scenario's verdict rules and thresholds applied: ``report.passed`` and
``report.exit_code`` are exactly what the CLI turns into its exit code.

Bad input raises the named errors the CLI maps to exit 2 (``InputError``,
``ScenarioError``, ``HandlerRefError``, ``ThresholdError``) and 3
(``BackendError``, ``CredentialsError``). Prints nothing, never exits.

The report is the builder's model (``loadtest.reports.report``), judged by the
plan's ``RunPlan`` (``loadtest.model.plan``: the cells' scenarios and the
thresholds, built once); ``Report`` (``loadtest.reports.library``) is the typed
view over it. ``new_scenario`` writes a first, commented scenario for a handler
(``loadtest new``) and ``doctor_data_plane`` runs the doctor's mapping checks
(both ``loadtest.assist``).

``run`` is ``execute(prepare(...))``: a caller that must act between the
two (the CLI claims its report files once the scenario's name is known) calls
them apart, and ``salvaged`` turns what an interrupted run measured into a
report marked incomplete.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loadtest.assist import doctor_data_plane, new_scenario
from loadtest.aws.clients import BackendKind
from loadtest.deploy.remote_run import AttachTo
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.engine import CLEANUP_TIMEOUT_S, ProgressCallback, RunResult, Salvage
from loadtest.errors import InputError
from loadtest.inputs import TARGETS, backend_kind, resolve_scenario, resolve_variants
from loadtest.model.figures.cost import Prices
from loadtest.model.figures.thresholds import Threshold, check_variants
from loadtest.model.plan import Cell, RunPlan
from loadtest.model.scenario.loading import Scenario
from loadtest.reports.library import LatencySummary, Report, RunReport
from loadtest.reports.report import build

if TYPE_CHECKING:
    from loadtest.interrupts import Stop

__all__ = [
    "TARGETS",
    "LatencySummary",
    "Plan",
    "Report",
    "RunReport",
    "backend_kind",
    "doctor_data_plane",
    "execute",
    "explore",
    "history_meta",
    "new_scenario",
    "prepare",
    "report_from_history",
    "report_of",
    "resolve_scenario",
    "resolve_variants",
    "run",
    "salvaged",
]


@dataclass(frozen=True)
class Plan:
    """A run checked and ready: bad input has already raised."""

    run: RunPlan
    """The scenario (overrides applied), its cells' scenarios, the thresholds parsed, the
    price table and the repeats: what the engine runs and the report is judged by."""
    refs: tuple[HandlerRef, ...]
    kind: BackendKind
    endpoint_url: str | None
    deployed: bool = False
    """The variants run as Lambda functions behind real event source mappings (always on
    real AWS; on an endpoint with ``deploy=True``) instead of local environments."""
    given_thresholds: tuple[str, ...] = ()
    """The caller's thresholds as given (the scenario's own are in its file): what a
    history file keeps to judge the run again."""

    @property
    def scenario(self) -> Scenario:
        """With the overrides applied."""
        return self.run.scenario

    @property
    def thresholds(self) -> tuple[Threshold, ...]:
        return self.run.thresholds

    @property
    def cells(self) -> tuple[Cell, ...]:
        return self.run.cells

    @property
    def prices(self) -> Prices | None:
        return self.run.prices

    @property
    def repeat(self) -> int:
        return self.run.repeat


def prepare(
    scenario: str | Path | Scenario,
    *,
    variants: Sequence[str] = (),
    handler: str | Sequence[str] | None = None,
    endpoint_url: str | None = None,
    target: str | None = None,
    thresholds: Sequence[str] = (),
    seed: int | None = None,
    cells: Sequence[Mapping[str, Any]] | None = None,
    prices: str | Path | None = None,
    env: Sequence[str] = (),
    repeat: int = 1,
    deploy: bool = False,
    **overrides: Any,
) -> Plan:
    """Resolve and check everything ``run`` takes, before any backend starts.

    Also refuses (``CapacityError``) a run this machine could not hold, and a
    price table that cannot be used (``PricesError``).
    """
    from loadtest.model.figures.price_tables import load_prices

    price_table = load_prices(Path(prices) if prices is not None else None)
    resolved = (
        resolve_scenario(scenario).with_overrides(seed=seed, **overrides).with_environment(env)
    )
    handlers = [handler] if isinstance(handler, str) else list(handler or ())
    refs = resolve_variants(resolved, variants, handlers)
    kind = backend_kind(target, endpoint_url)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise InputError(f"repeat must be a whole number of runs, 1 or more; got {repeat!r}")
    if repeat > 1 and cells:
        raise InputError("repeat runs one workload under several seeds; it takes no sweep cells")
    planned = RunPlan.of(
        resolved, tuple(thresholds), cells=list(cells or ()), prices=price_table, repeat=repeat
    )
    # The caller's thresholds (a scenario's own may name variants a selection leaves out).
    check_variants(planned.thresholds[len(resolved.thresholds) :], [ref.variant for ref in refs])
    if deploy and kind is BackendKind.EMBEDDED:
        raise InputError(
            "deploying (or attaching) needs endpoint_url, a backend that runs Lambda "
            "functions (for AWS itself: target 'aws')"
        )
    deployed = deploy or kind is BackendKind.AWS
    if deployed and (cells or repeat > 1):
        raise InputError(
            "sweep cells and repeat run on the local runtime (embedded or an endpoint "
            "without deploy); not with target 'aws', deploy or an attached function"
        )
    if not deployed:
        _check_capacity(refs, planned.cells)
    return Plan(planned, tuple(refs), kind, endpoint_url, deployed, tuple(thresholds))


def _check_capacity(refs: Sequence[HandlerRef], cells: Sequence[Cell]) -> None:
    from loadtest.emulation.environment.capacity import estimate, machine, refuse_beyond

    runs = [cell.scenario for cell in cells]
    per_run = [
        sum(m.copies for m in s.workload.messages)
        if s.workload.messages
        else s.workload.distinct_ids * s.workload.copies
        for s in runs
    ]
    need = estimate(
        concurrency=max(s.consumer.concurrency for s in runs),
        messages=sum(per_run) * len(refs),
    )
    refuse_beyond(need, machine())


def execute(
    plan: Plan,
    *,
    on_progress: ProgressCallback | None = None,
    command: str | None = None,
    stop: Stop | None = None,
    salvage: Salvage | None = None,
    cleanup_timeout_s: float | None = None,
    keep: bool = False,
    attach: AttachTo | None = None,
    run_id: str | None = None,
    history: str | Path | None = None,
    on_history_problem: Callable[[str], None] | None = None,
    sweep_metric: str | None = None,
) -> Report:
    """Run a prepared plan on its runtime (``loadtest.engine.runtime``) and judge it.

    A ``stop`` request (see ``loadtest.interrupts``) ends a local run early; the
    report then holds what was measured and ``incomplete`` says why.
    ``salvage`` (the caller's) keeps finished runs and what is not yet deleted
    even if this raises. Each cleanup step and the end-state read take at most
    ``cleanup_timeout_s`` seconds (default 20). A deployed plan (``plan.deployed``)
    deletes what it deployed unless ``keep``; ``attach`` runs the workload through an
    already deployed consumer (restored afterwards) instead; ``run_id`` names the
    run's resources (default: a new one). ``history`` writes the run's history to that
    file as it goes (``loadtest.engine.recording``), local or deployed: created before
    anything else (a deployed run's resources too), or ``HistoryPathError`` (exit 2); a
    write that fails later is said through ``on_history_problem`` and the run goes on
    without it. ``sweep_metric`` names
    the grid a sweep's report shows first (the report's ``sweep_metric``).
    """
    from loadtest.engine.recording import HistoryWriter
    from loadtest.engine.runtime import RunOptions, runtime_for

    recorder = None
    if history is not None:
        meta = history_meta(plan, command)
        if sweep_metric is not None:
            meta["sweep_metric"] = sweep_metric
        recorder = HistoryWriter(Path(history), meta, on_problem=on_history_problem)

    runtime = runtime_for(
        plan.kind,
        plan.endpoint_url,
        deployed=plan.deployed,
        keep=keep,
        attach=attach,
        run_id=run_id,
    )
    options = RunOptions(
        cells=plan.cells,
        on_progress=on_progress,
        stop=stop,
        salvage=salvage,
        cleanup_timeout_s=cleanup_timeout_s or CLEANUP_TIMEOUT_S,
        recorder=recorder,
    )
    try:
        result = runtime.run(plan.scenario, plan.refs, options)
    except BaseException as exc:
        if recorder is not None:
            # Closed with why, as the report of what was measured says it.
            recorder.close(_why_stopped(exc, stop))
        raise
    if recorder is not None:
        recorder.close(result.incomplete)
    report = report_of(plan.run, result, command)
    if sweep_metric is not None:
        report = Report(report.model.with_extra(sweep_metric=sweep_metric))
    return report


def _why_stopped(exc: BaseException, stop: Stop | None) -> str:
    """Why a run that raised stopped, in the words of its report of what was measured."""
    from loadtest.errors import LoadtestError, find_error

    if find_error(exc, KeyboardInterrupt) is not None:
        return f"interrupted by {(stop.reason if stop is not None else None) or 'SIGINT'}"
    found = find_error(exc, LoadtestError)
    return str(found) if found is not None else f"{type(exc).__name__}: {exc}"


def history_meta(plan: Plan, command: str | None) -> dict[str, Any]:
    """What a history file keeps of a run besides its records: what judges it again."""
    import dataclasses
    import time

    from loadtest import __version__
    from loadtest.engine.recording import loadtest_commit
    from loadtest.model.history.journal import FORMAT_VERSION
    from loadtest.model.scenario.loading import to_raw

    scenario = plan.scenario
    return {
        "format": FORMAT_VERSION,
        "loadtest": __version__,
        "commit": loadtest_commit(),
        "created_s": time.time(),
        "command": command,
        "scenario": to_raw(scenario),
        "scenario_name": scenario.name,
        "scenario_source": scenario.source,
        "seed": scenario.seed,
        "thresholds": list(plan.given_thresholds),
        "cells": [dict(cell.overrides) for cell in plan.cells] if plan.repeat == 1 else [],
        "repeat": plan.repeat,
        "prices": dataclasses.asdict(plan.prices) if plan.prices is not None else None,
        "variants": [ref.variant for ref in plan.refs],
    }


def report_from_history(path: str | Path, *, thresholds: Sequence[str] = ()) -> Report:
    """The report of the run a history file holds (``run(..., history=PATH)``).

    A closed history (the run ended) gives the report the run gave; one cut short (the
    harness killed) the report of what was measured up to its last whole record, marked
    incomplete, saying where it was cut. ``thresholds`` are judged besides the run's own.
    ``HistoryFileError`` (an ``InputError``: exit 2) names the file and the byte offset
    of what cannot be read.
    """
    from loadtest.engine.replay import replay

    replayed = replay(Path(path), thresholds)
    report = report_of(replayed.plan, replayed.result, replayed.command)
    metric = replayed.meta.get("sweep_metric")
    if isinstance(metric, str):
        report = Report(report.model.with_extra(sweep_metric=metric))
    return report


def report_of(plan: RunPlan, result: RunResult, command: str | None = None) -> Report:
    """A run's result judged as its plan asks (thresholds, prices, repeats)."""
    return Report(build(result, plan, command=command))


def salvaged(
    plan: Plan, salvage: Salvage, why: str, *, command: str | None = None
) -> Report | None:
    """The report of what a run that ended early measured, marked incomplete; ``None`` if nothing."""
    if not salvage.runs or salvage.target is None:
        return None
    partial = RunResult(plan.scenario, salvage.target, list(salvage.runs), incomplete=why)
    return report_of(plan.run, partial, command)


def run(
    scenario: str | Path | Scenario,
    *,
    variants: Sequence[str] = (),
    handler: str | Sequence[str] | None = None,
    endpoint_url: str | None = None,
    target: str | None = None,
    thresholds: Sequence[str] = (),
    seed: int | None = None,
    cells: Sequence[Mapping[str, Any]] | None = None,
    on_progress: ProgressCallback | None = None,
    command: str | None = None,
    cleanup_timeout_s: float | None = None,
    prices: str | Path | None = None,
    env: Sequence[str] = (),
    repeat: int = 1,
    deploy: bool = False,
    keep: bool = False,
    attach: AttachTo | None = None,
    history: str | Path | None = None,
    **overrides: Any,
) -> Report:
    """Run a scenario's seeded workload against its consumer variants and judge it.

    ``scenario`` is a built-in name (``"race-burst"``), a path to a TOML file
    or a ``Scenario``. ``variants`` names built-in variants or handler
    references; ``handler`` adds your own (``"app.py:handler"`` or
    ``"pkg.module:handler"``). Overrides are the scenario's fields
    (``distinct_ids=40``, ``batch_size=10``, ``race_window_ms=20``,
    ``point_faults=["redeliver:0.05"]``, ...), as the
    CLI's options. ``cells`` makes it a sweep (one run per cell of overrides).
    ``on_progress`` is called about ten times a second with (variant, counters,
    messages planned, elapsed seconds). ``prices`` is a price table file
    (default: the committed us-east-1 list prices). ``env`` adds the function's
    variables as ``NAME=VALUE`` (placeholders such as ``{table}`` allowed), over the
    scenario's ``[consumer] environment``. ``repeat=N`` runs the workload N
    times under seeds s, s+1, ...: the report keeps every run and gains a ``repeat``
    object (each figure's min / median / max, each anomaly's share of runs with its 95%
    interval; ``loadtest.model.search.repeats``).

    ``target="aws"`` runs exactly what ``loadtest run --target aws`` runs: each variant
    deployed as a Lambda function behind a real event source mapping, deleted afterwards
    unless ``keep`` (``deploy=True`` does the same on ``endpoint_url``; ``attach``, an
    ``AttachTo``, observes an already deployed consumer instead). The CLI's confirmation
    of the plan is the caller's: this call creates the resources without asking.
    """
    plan = prepare(
        scenario,
        variants=variants,
        handler=handler,
        endpoint_url=endpoint_url,
        target=target,
        thresholds=thresholds,
        seed=seed,
        cells=cells,
        prices=prices,
        env=env,
        repeat=repeat,
        deploy=deploy or attach is not None,
        **overrides,
    )
    return execute(
        plan,
        on_progress=on_progress,
        command=command,
        cleanup_timeout_s=cleanup_timeout_s,
        keep=keep,
        attach=attach,
        history=history,
    )


def explore(
    scenario: str | Path | Scenario,
    *,
    variant: str | None = None,
    handler: str | None = None,
    copies: int | None = None,
    distinct_ids: int | None = None,
    strategy: str = "exhaustive",
    budget: int | None = None,
    time_budget_s: float | None = None,
    faults: str | Sequence[str] | None = None,
    max_faults: int | None = None,
    bound: str | None = None,
    schedule: str | None = None,
    seed: int | None = None,
    clock_jump_s: float | None = None,
    env: Sequence[str] = (),
    stop_at_first: bool = False,
    workers: int | None = None,
    endpoint_url: str | None = None,
    target: str | None = None,
    command: str | None = None,
    interrupted: Callable[[], str | None] | None = None,
) -> Report:
    """Explore the interleavings (and faults) of a few deliveries of one message; see docs/explore.md.

    Runs the deliveries of the scenario's first business id (``copies`` of it,
    default as many as the scenario sends) one step at a time on the local
    runtime: ``strategy`` ``"exhaustive"`` (every distinct interleaving, within
    ``budget`` schedules) or ``"pct"`` (``budget`` random schedules from
    ``seed``), either within ``time_budget_s`` seconds (default 120; checked
    between schedules); ``faults`` (``"crash,redeliver"``, ...) adds up to ``max_faults``
    per schedule (default 1); ``bound`` (``"deliveries=3,crash=1,redeliver=1"``) sets the
    deliveries, business ids and faults in one place instead, with a limit per fault kind
    (given with ``copies``, ``faults`` or ``max_faults`` it is bad input: which would win is
    ambiguous); ``schedule`` replays exactly one schedule token. Every
    schedule is judged by the checker. The search runs to its budget and groups
    the failing schedules into distinct bugs, each shrunk (the report's
    ``explore.bugs``, smallest first; ``explore.counterexample`` is the smallest);
    ``stop_at_first`` stops it at the first failing schedule instead, and shrinks
    that one. ``env``: ``NAME=VALUE`` variables for the function, as ``run``'s (they win
    over ``[consumer] environment``; each replay line carries them). ``workers`` processes run an exhaustive search's schedules (default:
    ``LOADTEST_EXPLORE_WORKERS``, else one per core, at most 4, on Linux and 1 elsewhere;
    1: this process alone): the report is the same as one process gives but for its
    timings. ``interrupted`` is asked
    between schedules: once it names a reason, the exploration stops, drops what it made
    and raises KeyboardInterrupt. The report's
    ``explore`` object says what was run, its ``bound`` what that
    covered and why the search stopped; ``report.exit_code`` is 0
    when no schedule failed, 1 when one did, 4 when one was inconclusive.
    """
    from loadtest.engine import backend_target
    from loadtest.engine.explore import (
        DEFAULT_BUDGET,
        DEFAULT_TIME_BUDGET_S,
        ExploreOptions,
        check_fits,
    )
    from loadtest.engine.explore import explore as explore_schedules
    from loadtest.engine.explore_workers import warm_in_background
    from loadtest.model.explore.bounds import parse_bound
    from loadtest.model.explore.points import parse_faults, parse_token
    from loadtest.reports.explore import explore_report

    if target == "aws":
        raise InputError(
            "explore runs the deliveries on the local runtime, one step at a time: "
            "--target aws is not allowed (use embedded, or --endpoint-url for another backend)"
        )
    if variant and handler:
        raise InputError("give a variant or a handler to explore, not both")
    spec = parse_bound(bound) if bound is not None else None
    if spec is not None:
        given = [
            name
            for name, value in (
                ("copies", copies),
                ("faults", faults),
                ("max_faults", max_faults),
                ("distinct_ids", distinct_ids if spec.ids is not None else None),
            )
            if value is not None
        ]
        if given:
            raise InputError(
                f"bound {bound!r} and {', '.join(given)} both set the space explored: which "
                "wins is ambiguous; give the deliveries, ids and faults in the bound alone"
            )
        distinct_ids = spec.ids if spec.ids is not None else distinct_ids
        ids = 1 if distinct_ids is None else distinct_ids
        copies = spec.copies(ids)
    resolved = resolve_scenario(scenario).with_environment(env)
    refs = resolve_variants(resolved, [variant] if variant else [], [handler] if handler else [])
    options = ExploreOptions(
        strategy=strategy,
        budget=DEFAULT_BUDGET if budget is None else budget,
        time_budget_s=DEFAULT_TIME_BUDGET_S if time_budget_s is None else time_budget_s,
        faults=spec.faults if spec is not None else parse_faults(faults),
        max_faults=spec.max_faults
        if spec is not None
        else (1 if max_faults is None else max_faults),
        schedule=parse_token(schedule) if schedule else None,
        seed=resolved.seed if seed is None else seed,
        copies=copies,
        distinct_ids=1 if distinct_ids is None else distinct_ids,
        clock_jump_s=clock_jump_s,
        env=tuple(env),
        stop_at_first=stop_at_first,
        workers=workers,
        limits=spec.limits if spec is not None else (),
        bound=spec,
    )
    options.check()
    check_fits(resolved, options)
    kind = backend_kind(target, endpoint_url)
    # The clients' models load while the embedded backend starts.
    warming = warm_in_background()
    with backend_target(kind, endpoint_url) as resolved_target:
        warming.join()
        result = explore_schedules(resolved, refs[0], resolved_target, options, interrupted)
    scenario_ref = resolved.name if not isinstance(scenario, str | Path) else str(scenario)
    return Report(explore_report(result, scenario_ref=scenario_ref, command=command))

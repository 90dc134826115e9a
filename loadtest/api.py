"""The library: one call runs a scenario and returns the report the CLI would show.

Owns ``loadtest.run`` and the ``Report`` it returns. It resolves a scenario
(a built-in name, a path or a ``Scenario``), the variants and handlers, the
overrides and the backend, runs the engine, and builds the report with the
scenario's verdict rules and thresholds applied: ``report.passed`` and
``report.exit_code`` are exactly what the CLI turns into its exit code.

Bad input raises the named errors the CLI maps to exit 2 (``InputError``,
``ScenarioError``, ``HandlerRefError``, ``ThresholdError``) and 3
(``BackendError``, ``CredentialsError``). Prints nothing, never exits.

``new_scenario`` writes a first, commented scenario for a handler (``loadtest new``).

``run`` is ``execute(prepare(...))``: a caller that must act between the
two (the CLI claims its report files once the scenario's name is known) calls
them apart, and ``salvaged`` turns what an interrupted run measured into a
report marked incomplete.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from loadtest.aws.clients import BackendKind
from loadtest.deploy.remote_run import AttachTo
from loadtest.doctor.checks import CheckResult
from loadtest.emulation.environment.handlers import BUILTIN_VARIANTS, HandlerRef, parse_ref
from loadtest.engine import CLEANUP_TIMEOUT_S, ProgressCallback, RunResult, Salvage
from loadtest.errors import InputError
from loadtest.model.checker import Counts
from loadtest.model.cost import Prices
from loadtest.model.handler_source import (
    environment_reads,
    hardcoded_tables,
    id_attribute,
    reports_item_failures,
)
from loadtest.model.scaffold import sample_template, scenario_text
from loadtest.model.scenario import Scenario, load_scenario
from loadtest.model.thresholds import check_scenario, check_variants, parse_thresholds
from loadtest.reports.report import build_report, verdict_exit_code

if TYPE_CHECKING:
    from loadtest.interrupts import Stop

TARGETS = ("embedded", "endpoint", "aws")


@dataclass(frozen=True)
class LatencySummary:
    """One latency's percentiles, in microseconds (``None`` when nothing was measured).

    The fields are ``loadtest.model.metrics.LATENCY_STATS`` spelled out (so type
    checkers and editors know ``.p99``); a test holds the two equal.
    """

    count: int
    min: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    p99_9: float | None
    max: float | None
    mean: float | None
    out_of_range: int = 0
    """Values beyond the histogram's range: counted, never dropped silently."""


@dataclass(frozen=True)
class RunReport:
    """One variant's run, as in the JSON report's ``runs[]``."""

    variant: str
    verdict: str
    """"pass", "fail" or "inconclusive" (after the scenario's rules and thresholds)."""
    counts: Counts
    latency: Mapping[str, LatencySummary]
    """By name (``end_to_end``, ``handler``, ``write``, ...), in microseconds."""
    reasons: tuple[str, ...]
    inconclusive: tuple[str, ...]
    raw: Mapping[str, Any]
    """The run's JSON object, every key."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


class Report:
    """A run's or comparison's report: typed views over exactly the JSON report."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)
        self.runs = [_run_report(run) for run in self._data["runs"]]

    @property
    def passed(self) -> bool:
        """Whether every verdict passed (what makes the CLI exit 0)."""
        return self.exit_code == 0

    @property
    def exit_code(self) -> int:
        """0 all passed, 1 a verdict or threshold failed, 4 inconclusive (``verdict_exit_code``).

        An interrupted run's report (``incomplete``) is judged the same way; the
        CLI exits 130 for it instead.
        """
        return verdict_exit_code(self._data)

    @property
    def incomplete(self) -> str | None:
        """Why the run stopped before its workload was settled (``None`` if it finished)."""
        reason = self._data.get("incomplete_reason")
        return str(reason) if reason is not None else None

    def assert_passed(self, *replay: str) -> None:
        """Raise ``AssertionError`` unless every verdict passed.

        Its message is the explanation a person acts on: each run's verdict and the
        counts that failed it, the first counterexample as the terminal shows it (a
        race's reads and writes in order), and the command that replays the run, seed
        included (``replay`` adds lines, such as a test runner's command).
        """
        __tracebackhide__ = True  # pytest: the failure points at the caller's line
        if not self.passed:
            from loadtest.reports.explain import explanation

            raise AssertionError(explanation(self._data, replay))

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (``schema_version`` 1), as ``--json`` writes it."""
        return json.loads(json.dumps(self._data))  # type: ignore[no-any-return]

    def write_json(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(self._data, indent=2) + "\n", encoding="utf-8")
        return target

    def write_html(self, path: str | Path) -> Path:
        from loadtest.reports.html import render_html

        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_html(self._data), encoding="utf-8")
        return target

    def __repr__(self) -> str:
        verdicts = ", ".join(f"{r.variant}={r.verdict}" for r in self.runs)
        return f"<Report {self._data['scenario']['name']}: {verdicts}>"


def _run_report(run: Mapping[str, Any]) -> RunReport:
    counts = Counts(
        **{name: int(run["counts"].get(name, 0)) for name in Counts.__dataclass_fields__}
    )
    known = LatencySummary.__dataclass_fields__
    latency = {
        name: LatencySummary(**{k: v for k, v in values.items() if k in known})
        for name, values in run.get("latency_us", {}).items()
    }
    return RunReport(
        variant=str(run["variant"]),
        verdict=str(run["verdict"]),
        counts=counts,
        latency=latency,
        reasons=tuple(run.get("reasons", [])),
        inconclusive=tuple(run.get("inconclusive", [])),
        raw=run,
    )


def resolve_scenario(scenario: str | Path | Scenario) -> Scenario:
    if isinstance(scenario, Scenario):
        return check_scenario(scenario)
    return check_scenario(load_scenario(str(scenario)))


def resolve_variants(
    scenario: Scenario, variants: Sequence[str] = (), handlers: Sequence[str] = ()
) -> list[HandlerRef]:
    """The consumers to run: named variants (comma lists allowed) and handler references.

    With neither, the scenario's own variants.
    """
    names = [v.strip() for item in variants for v in item.split(",") if v.strip()]
    if not names and not handlers:
        names = list(scenario.variants)
        if not names:
            raise InputError(
                f"{scenario.source}: variants = [] names no consumer; give one with --handler "
                "path/to/file.py:function (or --variants NAME)"
            )
    refs = []
    for name in names:
        if name not in BUILTIN_VARIANTS and ":" not in name:
            raise InputError(
                f"unknown variant {name!r}; built-in variants: {', '.join(BUILTIN_VARIANTS)} "
                "(or give a handler as package.module:function or path/to/file.py:function)"
            )
        refs.append(parse_ref(name))
    refs.extend(parse_ref(h) for h in handlers)
    return refs


def backend_kind(target: str | None, endpoint_url: str | None) -> BackendKind:
    """embedded (default), an endpoint (when ``endpoint_url`` is given) or real AWS.

    ``target="embedded"`` with an ``endpoint_url`` is an embedded backend already
    running there (a test session's, ``loadtest serve``): used as it is, left running.
    """
    if target is not None and target not in TARGETS:
        raise InputError(f"target {target!r} is not allowed; allowed: {', '.join(TARGETS)}")
    if target == "aws":
        if endpoint_url:
            raise InputError("endpoint_url and target 'aws' exclude each other; give one")
        return BackendKind.AWS
    if target == "endpoint" and not endpoint_url:
        raise InputError("target 'endpoint' needs endpoint_url")
    if target == "embedded":
        return BackendKind.EMBEDDED
    return BackendKind.ENDPOINT if endpoint_url else BackendKind.EMBEDDED


@dataclass(frozen=True)
class Plan:
    """A run checked and ready: bad input has already raised."""

    scenario: Scenario
    """With the overrides applied."""
    refs: tuple[HandlerRef, ...]
    thresholds: tuple[str, ...]
    kind: BackendKind
    endpoint_url: str | None
    cells: tuple[dict[str, Any], ...]
    """One run per cell of overrides and variant; ``({},)`` for a plain run."""
    prices: Prices | None = None
    """The price table for the cost per million messages (None: the committed one)."""
    repeat: int = 1
    """Runs of the workload, under seeds s, s+1, ... (each a cell ``{"seed": ...}``)."""
    deployed: bool = False
    """The variants run as Lambda functions behind real event source mappings (always on
    real AWS; on an endpoint with ``deploy=True``) instead of local environments."""


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
    from loadtest.model.price_tables import load_prices

    price_table = load_prices(Path(prices) if prices is not None else None)
    resolved = (
        resolve_scenario(scenario).with_overrides(seed=seed, **overrides).with_environment(env)
    )
    handlers = [handler] if isinstance(handler, str) else list(handler or ())
    refs = resolve_variants(resolved, variants, handlers)
    check_variants(parse_thresholds(thresholds), [ref.variant for ref in refs])
    kind = backend_kind(target, endpoint_url)
    grid = tuple(dict(cell) for cell in cells) if cells else ({},)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise InputError(f"repeat must be a whole number of runs, 1 or more; got {repeat!r}")
    if repeat > 1:
        if cells:
            raise InputError(
                "repeat runs one workload under several seeds; it takes no sweep cells"
            )
        grid = tuple({"seed": resolved.seed + i} for i in range(repeat))
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
        _check_capacity(resolved, refs, grid)
    return Plan(
        resolved,
        tuple(refs),
        tuple(thresholds),
        kind,
        endpoint_url,
        grid,
        price_table,
        repeat,
        deployed,
    )


def _check_capacity(
    scenario: Scenario, refs: Sequence[HandlerRef], cells: Sequence[Mapping[str, Any]]
) -> None:
    from loadtest.emulation.environment.capacity import estimate, machine, refuse_beyond

    runs = [scenario.with_overrides(**cell) for cell in cells]
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
) -> Report:
    """Run a prepared plan on its runtime (``loadtest.engine.runtime``) and judge it.

    A ``stop`` request (see ``loadtest.interrupts``) ends a local run early; the
    report then holds what was measured and ``incomplete`` says why.
    ``salvage`` (the caller's) keeps finished runs and what is not yet deleted
    even if this raises. Each cleanup step and the end-state read take at most
    ``cleanup_timeout_s`` seconds (default 20). A deployed plan (``plan.deployed``)
    deletes what it deployed unless ``keep``; ``attach`` runs the workload through an
    already deployed consumer (restored afterwards) instead; ``run_id`` names the
    run's resources (default: a new one).
    """
    from loadtest.engine.runtime import RunOptions, runtime_for

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
    )
    return _report(plan, runtime.run(plan.scenario, plan.refs, options), command)


def _report(plan: Plan, result: RunResult, command: str | None) -> Report:
    """A run's result judged against what its plan asked (thresholds, prices, repeats)."""
    return Report(
        build_report(
            result,
            command=command,
            thresholds=plan.thresholds,
            prices=plan.prices,
            repeat=plan.repeat > 1,
        )
    )


def salvaged(
    plan: Plan, salvage: Salvage, why: str, *, command: str | None = None
) -> Report | None:
    """The report of what a run that ended early measured, marked incomplete; ``None`` if nothing."""
    if not salvage.runs or salvage.target is None:
        return None
    partial = RunResult(plan.scenario, salvage.target, list(salvage.runs), incomplete=why)
    return _report(plan, partial, command)


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
    interval; ``loadtest.model.repeats``).

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
    )


def explore(
    scenario: str | Path | Scenario,
    *,
    variant: str | None = None,
    handler: str | None = None,
    copies: int | None = None,
    distinct_ids: int = 1,
    strategy: str = "exhaustive",
    budget: int | None = None,
    faults: str | Sequence[str] | None = None,
    max_faults: int = 1,
    schedule: str | None = None,
    seed: int | None = None,
    clock_jump_s: float | None = None,
    endpoint_url: str | None = None,
    target: str | None = None,
    command: str | None = None,
) -> Report:
    """Explore the interleavings (and faults) of a few deliveries of one message; see docs/explore.md.

    Runs the deliveries of the scenario's first business id (``copies`` of it,
    default as many as the scenario sends) one step at a time on the local
    runtime: ``strategy`` ``"exhaustive"`` (every distinct interleaving, within
    ``budget`` schedules) or ``"pct"`` (``budget`` random schedules from
    ``seed``); ``faults`` (``"crash,redeliver"``, ...) adds up to ``max_faults``
    per schedule; ``schedule`` replays exactly one schedule token. Every
    schedule is judged by the checker; the first that fails is shrunk. The
    report's ``explore`` object says what was run; ``report.exit_code`` is 0
    when no schedule failed, 1 when one did, 4 when one was inconclusive.
    """
    from loadtest.engine import backend_target
    from loadtest.engine.explore import DEFAULT_BUDGET, ExploreOptions
    from loadtest.engine.explore import explore as explore_schedules
    from loadtest.model.explore import parse_faults, parse_token
    from loadtest.reports.explore import explore_report

    if target == "aws":
        raise InputError(
            "explore runs the deliveries on the local runtime, one step at a time: "
            "--target aws is not allowed (use embedded, or --endpoint-url for another backend)"
        )
    if variant and handler:
        raise InputError("give a variant or a handler to explore, not both")
    resolved = resolve_scenario(scenario)
    refs = resolve_variants(resolved, [variant] if variant else [], [handler] if handler else [])
    options = ExploreOptions(
        strategy=strategy,
        budget=DEFAULT_BUDGET if budget is None else budget,
        faults=parse_faults(faults),
        max_faults=max_faults,
        schedule=parse_token(schedule) if schedule else None,
        seed=resolved.seed if seed is None else seed,
        copies=copies,
        distinct_ids=distinct_ids,
        clock_jump_s=clock_jump_s,
    )
    options.check()
    kind = backend_kind(target, endpoint_url)
    with backend_target(kind, endpoint_url) as resolved_target:
        result = explore_schedules(resolved, refs[0], resolved_target, options)
    scenario_ref = resolved.name if not isinstance(scenario, str | Path) else str(scenario)
    return Report(explore_report(result, scenario_ref=scenario_ref, command=command))


def new_scenario(
    handler: str, *, sample_message: str | Path | None = None, id_field: str | None = None
) -> str:
    """The commented scenario ``loadtest new`` writes for ``handler``: the body template
    from ``sample_message`` (a JSON file: a body, an SNS notification, an EventBridge event
    or a Lambda SQS event), ``{id}`` where ``id_field`` is, the environment variables and
    table names the handler's source reads, and, with a sample, the table's key as a dry
    run of the handler on one message shows it (``loadtest.engine.dry_run``; the handler's
    code runs). Bad input raises ``InputError``."""
    ref = parse_ref(handler)
    origin = ref.path or _module_file(str(ref.module))
    try:
        source = Path(origin).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"the handler's source {origin!r} could not be read: {exc}") from exc
    sample = None
    if sample_message is not None:
        path = Path(sample_message)
        try:
            message = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"sample message {str(path)!r} could not be read: {exc}") from exc
        except ValueError as exc:
            raise InputError(f"sample message {str(path)!r} is not JSON: {exc}") from exc
        sample = sample_template(message, id_field, str(path))
    elif id_field is not None:
        raise InputError("--id-field names a field of the sample message: give --sample-message")
    write = functools.partial(
        scenario_text,
        handler,
        sample,
        None if sample_message is None else str(sample_message),
        environment_reads(source, origin),
        tables=hardcoded_tables(source, origin),
        item_failures=reports_item_failures(source, origin),
        stored_as=None if sample is None else id_attribute(source, sample.id_key, origin),
    )
    if sample is None:
        return write()
    # A dry run of the scenario as written shows the table key the handler writes.
    from loadtest.engine.dry_run import first_write_key
    from loadtest.model.scenario import parse_text

    guessed = parse_text(write(), "the scenario `loadtest new` writes", "new")
    return write(table_key=first_write_key(guessed, ref))


def _module_file(module: str) -> str:
    import importlib.util
    import os
    import sys

    sys.path.insert(0, os.getcwd())
    try:
        spec = importlib.util.find_spec(module)
    finally:
        sys.path.remove(os.getcwd())
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise InputError(f"the source of handler module {module!r} cannot be found")
    return spec.origin


def doctor_data_plane(
    kind: BackendKind,
    endpoint_url: str | None,
    *,
    on_check: Callable[[CheckResult], None] | None = None,
) -> tuple[list[CheckResult], str | None]:
    """The doctor's data-plane checks (``loadtest.doctor.mapping``) where they can run.

    On loadtest's own backend (embedded, or ``loadtest serve`` behind ``endpoint_url``)
    against the emulated event source mapping; on another endpoint that serves Lambda
    through a deployed probe function and mapping. Returns the results and, when the
    checks did not run, why (a sentence for the user). Never against real AWS: that
    would deploy functions in the user's account.
    """
    import anyio

    from loadtest.aws.clients import Target, served_sqs_requests

    if kind is BackendKind.AWS or not endpoint_url:
        return [], "the data-plane checks run on an endpoint (--endpoint-url) or embedded only"
    target = Target.resolve(BackendKind.ENDPOINT, endpoint_url)
    if anyio.run(served_sqs_requests, target, backend="asyncio") is not None:
        from loadtest.engine.doctor_probe import run_mapping_checks as emulated

        return emulated(endpoint_url, on_check=on_check), None
    from loadtest.deploy.doctor_probe import run_mapping_checks as deployed
    from loadtest.deploy.doctor_probe import serves_lambda

    if not serves_lambda(endpoint_url):
        return [], (
            f"{endpoint_url} serves no Lambda: the data-plane checks (mapping concurrency, "
            "redelivery in flight, partial batch responses, FIFO order) did not run"
        )
    return deployed(endpoint_url, on_check=on_check), None

"""The command line: parses, calls the engine, renders, and maps results to exit codes.

The only module that prints or exits. Exit codes (DESIGN.md): 0 every verdict
passed; 1 a verdict failed; 2 bad input; 3 the backend could not be reached
or refused the credentials; 4 a verdict was inconclusive (the run could not
observe everything it needed to judge).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import secrets
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from loadtest import __version__
from loadtest.aws import BackendKind
from loadtest.cost import Prices
from loadtest.errors import BackendError, InputError, LoadtestError, find_error
from loadtest.handlers import BUILTIN_VARIANTS, HandlerRef, parse_ref
from loadtest.heatmap import metric_named
from loadtest.interrupts import Stop
from loadtest.render import render
from loadtest.report import SCHEMA_VERSION, build_report, verdict_exit_code
from loadtest.runner import Progress
from loadtest.scenario import Scenario, builtin_scenarios, load_scenario
from loadtest.thresholds import check_variants, parse_thresholds


class Exit(IntEnum):
    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    BACKEND = 3
    INCONCLUSIVE = 4
    INTERRUPTED = 130


class TargetChoice(StrEnum):
    EMBEDDED = "embedded"
    AWS = "aws"


app = typer.Typer(
    name="loadtest",
    help=(
        "Load-test idempotent SQS -> DynamoDB consumers: fire duplicate and distinct messages "
        "concurrently, run the same seeded workload against consumer variants, and report "
        "duplicate writes, lost outcomes and latency.\n\n"
        "Start with:  loadtest compare race-burst"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _console(*, stderr: bool = False) -> Console:
    """On a terminal, rich's usual console; in a pipe, one that never cuts or wraps a line.

    A name, path or reproduce command cut or wrapped mid-token breaks when copied.
    """
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=100_000, soft_wrap=True)


out = _console()
err = _console(stderr=True)


def _fail(code: Exit, message: str) -> NoReturn:
    err.print(Text(f"error: {message}", style="bold red"))
    raise typer.Exit(int(code))


def _refs(scenario: Scenario, variants: list[str], handlers: list[str]) -> list[HandlerRef]:
    names = [v.strip() for item in variants for v in item.split(",") if v.strip()]
    if not names and not handlers:
        names = list(scenario.variants)
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


def _backend_kind(endpoint_url: str | None, target: TargetChoice) -> BackendKind:
    if endpoint_url and target is TargetChoice.AWS:
        _fail(Exit.BAD_INPUT, "--endpoint-url and --target aws exclude each other; give one")
    if target is TargetChoice.AWS:
        return BackendKind.AWS
    return BackendKind.ENDPOINT if endpoint_url else BackendKind.EMBEDDED


def _command(scenario: Scenario) -> str:
    args = sys.argv[1:]
    if "--seed" not in args:
        args = [*args, "--seed", str(scenario.seed)]
    return "loadtest " + shlex.join(args)


class _ProgressView:
    """A one-line live status on a terminal; nothing otherwise."""

    def __init__(self, live: Live | None) -> None:
        self.live = live

    def __call__(self, name: str, p: Progress, planned: int, elapsed_s: float) -> None:
        if self.live is None:
            return
        settled = p.acked + p.dead_lettered
        rate = settled / elapsed_s if elapsed_s > 0 else 0.0
        eta = f"{(planned - settled) / rate:.0f}s" if rate > 0 and settled < planned else "-"
        self.live.update(
            Text(
                f"{name}: sent {p.sent}/{planned}  received {p.received}  in flight {p.in_flight}  "
                f"acked {p.acked}  dead-lettered {p.dead_lettered}  duplicate writes {p.duplicate_writes}  "
                f"{elapsed_s:.1f}s elapsed, eta {eta}"
            )
        )


def _write_text(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write report {str(path)!r}: {exc}") from exc


def _check_writable(path: Path, *, directory: bool = False) -> None:
    """Refuse, before the run, an output path the report could not be written to."""
    folder = path if directory else path.parent
    if not directory and path.is_dir():
        raise InputError(f"cannot write report {str(path)!r}: it is a directory")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write report {str(path)!r}: {exc}") from exc
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write report {str(path)!r}: {str(folder)!r} is not writable")


def _claim(folder: Path, stem: str, suffixes: tuple[str, ...]) -> Path:
    """A new path ``folder/stem-XXXXXX`` whose files with ``suffixes`` did not exist.

    Created exclusively (``O_EXCL``): concurrent runs finishing in the same
    second each get their own files, and no existing file is overwritten.
    """
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        base = folder / f"{stem}-{secrets.token_hex(3)}"
        made: list[Path] = []
        try:
            for suffix in suffixes:
                path = base.with_name(base.name + suffix)
                path.open("x").close()
                made.append(path)
        except FileExistsError:
            for path in made:
                path.unlink(missing_ok=True)
            continue
        except OSError as exc:
            raise InputError(f"cannot write report in {str(folder)!r}: {exc}") from exc
        return base


def _write_json(path: Path, report: dict[str, Any]) -> None:
    _write_text(path, json.dumps(report, indent=2) + "\n")


@dataclass(frozen=True)
class Outputs:
    """The optional report files besides the JSON."""

    html: Path | None = None
    markdown: Path | None = None
    junit: Path | None = None
    hgrm: Path | None = None
    """A directory for one ``.hgrm`` percentile distribution per run and latency."""

    def under(self, out_dir: Path | None) -> Outputs:
        """These outputs with relative paths placed in ``out_dir`` (once, never twice)."""
        if out_dir is None:
            return self

        def place(path: Path | None) -> Path | None:
            return path if path is None or path.is_absolute() else out_dir / path

        return Outputs(
            html=place(self.html),
            markdown=place(self.markdown),
            junit=place(self.junit),
            hgrm=place(self.hgrm),
        )

    def check(self) -> None:
        """Refuse unwritable paths before anything runs."""
        for path in (self.html, self.markdown, self.junit):
            if path is not None:
                _check_writable(path)
        if self.hgrm is not None:
            _check_writable(self.hgrm, directory=True)

    def write(self, report: dict[str, Any], out_dir: Path | None) -> list[Path]:
        from loadtest.formats import junit_xml, markdown_summary

        written = []
        renderers: list[tuple[Path | None, Callable[[dict[str, Any]], str]]] = [
            (self.html, _render_html),
            (self.markdown, markdown_summary),
            (self.junit, junit_xml),
        ]
        for path, renderer in renderers:
            if path is None:
                continue
            if out_dir is not None and not path.is_absolute():
                path = out_dir / path
            _write_text(path, renderer(report))
            written.append(path)
        if self.hgrm is not None:
            from loadtest.metrics import hgrm_files

            directory = (
                self.hgrm if out_dir is None or self.hgrm.is_absolute() else out_dir / self.hgrm
            )
            for name, text in hgrm_files(report).items():
                _write_text(directory / name, text)
            written.append(directory)
        return written


def _render_html(report: dict[str, Any]) -> str:
    from loadtest.html import render_html

    return render_html(report)


def _execute(
    scenario_ref: str,
    variants: list[str],
    handlers: list[str],
    *,
    seed: int | None,
    endpoint_url: str | None,
    target: TargetChoice,
    overrides: dict[str, Any],
    json_path: Path | None,
    out_dir: Path | None,
    quiet: bool,
    thresholds: list[str],
    outputs: Outputs,
    cells: list[dict[str, Any]] | None = None,
    cleanup_timeout_s: float | None = None,
    prices_path: Path | None = None,
    metric: str | None = None,
) -> None:
    from loadtest import engine
    from loadtest.prices import load_prices

    stop = Stop()
    salvage = engine.Salvage()
    scenario: Scenario | None = None
    prices = None
    with stop.installed():
        try:
            prices = load_prices(prices_path)
            scenario = load_scenario(scenario_ref).with_overrides(seed=seed, **overrides)
            refs = _refs(scenario, variants, handlers)
            check_variants(parse_thresholds(thresholds), [ref.variant for ref in refs])
            kind = _backend_kind(endpoint_url, target)
            _check_capacity(scenario, refs, cells or [{}])
            json_path, outputs = _plan_outputs(scenario, json_path, out_dir, outputs)
            show_progress = not quiet and err.is_terminal
            with (
                Live(Text("starting…"), console=err, transient=True, refresh_per_second=8)
                if show_progress
                else _null() as live
            ):
                result = engine.run(
                    scenario,
                    refs,
                    kind=kind,
                    endpoint_url=endpoint_url,
                    on_progress=_ProgressView(live),
                    cells=cells or [{}],
                    stop=stop,
                    salvage=salvage,
                    cleanup_timeout_s=cleanup_timeout_s or engine.CLEANUP_TIMEOUT_S,
                )
            report = build_report(
                result, command=_command(scenario), thresholds=thresholds, prices=prices
            )
            if metric is not None:
                report["sweep_metric"] = metric
            written = _write_reports(report, json_path, outputs)
        except BaseException as exc:
            _end_early(exc, scenario, salvage, json_path, outputs, thresholds, stop, prices)
    if not quiet:
        out.print(render(report))
        for path in written:
            out.print(Text(f"Report: {path}", style="dim"))
    if result.incomplete is not None:
        _fail(Exit.INTERRUPTED, _interrupted_message(result.incomplete, salvage, written))
    raise typer.Exit(verdict_exit_code(report))


def _check_capacity(
    scenario: Scenario, refs: list[HandlerRef], cells: list[dict[str, Any]]
) -> None:
    from loadtest.capacity import estimate, machine, refuse_beyond

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


def _plan_outputs(
    scenario: Scenario, json_path: Path | None, out_dir: Path | None, outputs: Outputs
) -> tuple[Path, Outputs]:
    """Every report path, resolved against ``--out`` once and checked before the run.

    With no ``--json``, the JSON and an HTML page get a fresh name of their own
    (never an existing file's); ``--out`` applies to each relative path once.
    """
    outputs = outputs.under(out_dir)
    if json_path is None:
        # No file named: keep the JSON and a page to open, like k6's web dashboard export.
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = out_dir or Path("reports")
        _check_writable(folder, directory=True)
        suffixes = (".json",) if outputs.html is not None else (".json", ".html")
        base = _claim(folder, f"{scenario.name}-{stamp}", suffixes)
        json_path = base.with_name(base.name + ".json")
        if outputs.html is None:
            outputs = dataclasses.replace(outputs, html=base.with_name(base.name + ".html"))
    else:
        if out_dir is not None and not json_path.is_absolute():
            json_path = out_dir / json_path
        _check_writable(json_path)
    outputs.check()
    return json_path, outputs


def _write_reports(report: dict[str, Any], json_path: Path, outputs: Outputs) -> list[Path]:
    _write_json(json_path, report)
    return [json_path, *outputs.write(report, None)]


def _end_early(
    exc: BaseException,
    scenario: Scenario | None,
    salvage: Any,
    json_path: Path | None,
    outputs: Outputs,
    thresholds: list[str],
    stop: Stop,
    prices: Prices | None = None,
) -> NoReturn:
    """A run that ended by an error or an abandoned cleanup: keep what was measured, then exit."""
    if isinstance(exc, typer.Exit):
        raise exc
    written: list[Path] = []
    interrupted = find_error(exc, KeyboardInterrupt) is not None
    problem = "" if interrupted else _error_text(exc)
    if scenario is not None and json_path is not None and salvage.runs:
        from loadtest.engine import RunResult

        why = f"interrupted by {stop.reason or 'SIGINT'}" if interrupted else problem
        partial = RunResult(scenario, salvage.target, list(salvage.runs), incomplete=why)
        try:
            report = build_report(
                partial, command=_command(scenario), thresholds=thresholds, prices=prices
            )
            written = _write_reports(report, json_path, outputs)
        except LoadtestError as write_error:
            err.print(Text(f"warning: {write_error}", style="yellow"))
    elif json_path is not None:
        # Claimed but never written: nothing was measured.
        for path in (json_path, outputs.html):
            if path is not None and path.exists() and path.stat().st_size == 0:
                path.unlink(missing_ok=True)
    if interrupted:
        _fail(
            Exit.INTERRUPTED,
            _interrupted_message(
                f"interrupted by {stop.reason or 'SIGINT'}", salvage, written, abandoned=True
            ),
        )
    for path in written:
        err.print(Text(f"Report (incomplete): {path}", style="dim"))
    _raise_mapped(exc)


def _error_text(exc: BaseException) -> str:
    found = find_error(exc, LoadtestError)
    return str(found) if found is not None else f"{type(exc).__name__}: {exc}"


def _interrupted_message(
    why: str, salvage: Any, written: list[Path], *, abandoned: bool = False
) -> str:
    left = salvage.left_behind()
    kind = salvage.target.kind if salvage.target is not None else None
    if not left:
        cleanup = "the run's resources were deleted"
    elif kind is BackendKind.EMBEDDED:
        cleanup = "the embedded backend was stopped, so nothing the run created remains"
    else:
        verb = "cleanup was abandoned; " if abandoned else ""
        cleanup = f"{verb}NOT deleted (delete them yourself): {', '.join(left)}"
    report = (
        f"; the report of what was measured, marked incomplete: {', '.join(map(str, written))}"
        if written
        else "; nothing was measured, so no report was written"
    )
    return f"{why}; {cleanup}{report}"


def _raise_mapped(exc: BaseException) -> NoReturn:
    """Turn a loadtest error (possibly inside a task group's exception group) into an exit."""
    if isinstance(exc, typer.Exit):
        raise exc
    if find_error(exc, KeyboardInterrupt) is not None:
        _fail(Exit.INTERRUPTED, "interrupted")
    bad = find_error(exc, InputError)
    if bad is not None:
        _fail(Exit.BAD_INPUT, str(bad))
    backend = find_error(exc, BackendError)
    if backend is not None:
        _fail(Exit.BACKEND, str(backend))
    other = find_error(exc, LoadtestError)
    if other is not None:
        _fail(Exit.FAILED, str(other))
    raise exc


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None


# --- options shared by run and compare ---------------------------------------

ScenarioArg = Annotated[
    str,
    typer.Argument(
        help="A built-in scenario name (see `loadtest scenarios`) or a path to a TOML file."
    ),
]
SeedOpt = Annotated[
    int | None, typer.Option(help="Seed for the workload (default: the scenario's).")
]
EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint-url",
        help="An AWS-compatible endpoint (moto, LocalStack, DynamoDB Local…) instead of the embedded backend.",
    ),
]
TargetOpt = Annotated[
    TargetChoice,
    typer.Option(
        "--target", help="embedded (default) or aws (real AWS, boto3's credential chain)."
    ),
]
BatchOpt = Annotated[
    int | None, typer.Option("--batch-size", help="Records per invocation (1-10).")
]
VisOpt = Annotated[
    int | None, typer.Option("--visibility-timeout", help="Queue visibility timeout in seconds.")
]
ConcOpt = Annotated[
    int | None,
    typer.Option("--concurrency", help="Execution environments (concurrent invocations)."),
]
MrcOpt = Annotated[
    int | None,
    typer.Option("--max-receive-count", help="Receives before a message goes to the DLQ."),
]
IdsOpt = Annotated[int | None, typer.Option("--distinct-ids", help="Generated business ids.")]
CopiesOpt = Annotated[
    int | None, typer.Option("--copies", help="Messages per business id (producer resends).")
]
DurationOpt = Annotated[
    int | None,
    typer.Option(
        "--handler-duration", metavar="MS", help="Fault: extra handler time in milliseconds."
    ),
]
JitterOpt = Annotated[
    int | None,
    typer.Option("--handler-jitter", metavar="MS", help="Fault: plus a random 0..MS milliseconds."),
]
RaceOpt = Annotated[
    int | None,
    typer.Option(
        "--race-window", metavar="MS", help="Fault: pause after each read of the orders table."
    ),
]
CrashOpt = Annotated[
    float | None,
    typer.Option(
        "--crash-after-write",
        metavar="P",
        help="Fault: probability of a crash after the writes, before the ack.",
    ),
]
WindowOpt = Annotated[
    float | None,
    typer.Option(
        "--batching-window",
        metavar="S",
        help="Seconds a poller gathers a batch (MaximumBatchingWindowInSeconds).",
    ),
]
ConflictOpt = Annotated[
    float | None,
    typer.Option(
        "--conflict-fraction",
        metavar="F",
        help="Fraction of resends carrying different details (0..1).",
    ),
]
RateOpt = Annotated[
    float | None,
    typer.Option(
        "--rate",
        metavar="PER_S",
        help="Open-loop arrival rate in messages per second (sets arrival = rate).",
    ),
]
PartialOpt = Annotated[
    bool | None,
    typer.Option(
        "--report-batch-item-failures/--no-report-batch-item-failures",
        help="Partial batch responses (batchItemFailures).",
        show_default=False,
    ),
]
DeadlineOpt = Annotated[
    float | None, typer.Option("--deadline", help="Stop after this many seconds and report.")
]
JsonOpt = Annotated[
    Path | None,
    typer.Option(
        "--json",
        metavar="FILE",
        help="Write the JSON report here (default: reports/NAME-TIME.json, with an .html beside it).",
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", metavar="DIR", help="Directory for report files (default: ./reports)."),
]
ThresholdOpt = Annotated[
    list[str],
    typer.Option(
        "--threshold",
        metavar="EXPR",
        help="Pass/fail rule, repeatable, k6-style: 'duplicate_writes == 0', "
        "'end_to_end.p99 < 250ms', 'conditional: throughput.messages_per_s > 100'.",
    ),
]
HtmlOpt = Annotated[
    Path | None,
    typer.Option("--html", metavar="FILE", help="Also write a self-contained HTML report."),
]
MarkdownOpt = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        metavar="FILE",
        help="Also write a Markdown summary (CI job summary, PR comment).",
    ),
]
HgrmOpt = Annotated[
    Path | None,
    typer.Option(
        "--hgrm",
        metavar="DIR",
        help="Also write HdrHistogram percentile distributions (.hgrm, in ms) per run and latency.",
    ),
]
JunitOpt = Annotated[
    Path | None,
    typer.Option(
        "--junit", metavar="FILE", help="Also write JUnit XML: one test case per threshold."
    ),
]
PricesOpt = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        metavar="FILE",
        help="Price table (TOML, the shape of loadtest/prices/us-east-1.toml) for the cost "
        "per million messages (default: the committed us-east-1 on-demand list prices).",
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress and no summary; the exit code tells.")
]
CleanupOpt = Annotated[
    float | None,
    typer.Option(
        "--cleanup-timeout",
        metavar="S",
        min=1,
        help="Seconds each cleanup step and the end-state read may take before loadtest gives up "
        "and names what it could not delete (default: 20).",
    ),
]


@app.command()
def run(
    scenario: ScenarioArg,
    variants: Annotated[
        str | None,
        typer.Option(
            "--variants",
            metavar="A,B,...",
            help="Comma-separated variants or handler refs (default: the scenario's).",
        ),
    ] = None,
    variant: Annotated[
        list[str],
        typer.Option(
            "--variant",
            metavar="NAME",
            help=f"Consumer variant to run, repeatable: {', '.join(BUILTIN_VARIANTS)} (default: the scenario's).",
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    handler: Annotated[
        list[str],
        typer.Option(
            "--handler",
            metavar="REF",
            help="Your own handler: package.module:function or path/to/file.py:function.",
        ),
    ] = [],  # noqa: B006
    seed: SeedOpt = None,
    endpoint_url: EndpointOpt = None,
    target: TargetOpt = TargetChoice.EMBEDDED,
    batch_size: BatchOpt = None,
    visibility_timeout: VisOpt = None,
    concurrency: ConcOpt = None,
    max_receive_count: MrcOpt = None,
    distinct_ids: IdsOpt = None,
    copies: CopiesOpt = None,
    handler_duration: DurationOpt = None,
    handler_jitter: JitterOpt = None,
    race_window: RaceOpt = None,
    crash_after_write: CrashOpt = None,
    batching_window: WindowOpt = None,
    report_batch_item_failures: PartialOpt = None,
    conflict_fraction: ConflictOpt = None,
    rate: RateOpt = None,
    deadline: DeadlineOpt = None,
    threshold: ThresholdOpt = [],  # noqa: B006
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    markdown: MarkdownOpt = None,
    junit: JunitOpt = None,
    hgrm: HgrmOpt = None,
    out_dir: OutOpt = None,
    quiet: QuietOpt = False,
    cleanup_timeout: CleanupOpt = None,
    prices: PricesOpt = None,
) -> None:
    """Run a scenario against its consumer variants and check the outcome.

    Exit code 0 when every verdict passes, 1 when one fails, 2 for bad input,
    3 when the backend cannot be reached.
    """
    _execute(
        scenario,
        [*variant, *([variants] if variants else [])],
        handler,
        seed=seed,
        endpoint_url=endpoint_url,
        target=target,
        overrides=_overrides(locals()),
        json_path=json_path,
        out_dir=out_dir,
        quiet=quiet,
        thresholds=threshold,
        outputs=Outputs(html=html, markdown=markdown, junit=junit, hgrm=hgrm),
        cleanup_timeout_s=cleanup_timeout,
        prices_path=prices,
    )


# compare is run under the name DESIGN.md gives the side-by-side use; both take
# --variant (repeatable) and --variants a,b.
app.command(
    name="compare",
    help=(
        "Run the same seeded workload against several variants, side by side.\n\n"
        "Example: loadtest compare race-burst --variants read-then-write,conditional\n\n"
        "Exit code 0 when every verdict passes, 1 when one fails, 2 for bad input, "
        "3 when the backend cannot be reached."
    ),
)(run)


def _grid(axes: dict[str, str | None]) -> list[dict[str, Any]]:
    """The cells of a sweep: the cartesian product of comma-separated values per field."""
    values: list[tuple[str, list[Any]]] = []
    for name, text in axes.items():
        if text is None:
            continue
        field = _OVERRIDES[name]
        items = [item.strip() for item in text.split(",") if item.strip()]
        try:
            parsed = [float(item) if "." in item else int(item) for item in items]
        except ValueError:
            raise InputError(
                f"--{name.replace('_', '-')} {text!r}: give comma-separated numbers, e.g. 1,10"
            ) from None
        if not parsed:
            raise InputError(f"--{name.replace('_', '-')} needs at least one value")
        values.append((field, parsed))
    if not values:
        raise InputError(
            "a sweep needs at least one axis: --batch-size, --visibility-timeout, --concurrency, "
            "--handler-duration or --race-window, each a comma-separated list"
        )
    return [
        dict(zip([f for f, _ in values], combo, strict=True))
        for combo in itertools.product(*[v for _, v in values])
    ]


_OVERRIDES = {
    "batch_size": "batch_size",
    "visibility_timeout": "visibility_timeout_s",
    "concurrency": "concurrency",
    "max_receive_count": "max_receive_count",
    "distinct_ids": "distinct_ids",
    "copies": "copies",
    "handler_duration": "handler_duration_ms",
    "handler_jitter": "handler_jitter_ms",
    "race_window": "race_window_ms",
    "crash_after_write": "crash_after_write",
    "batching_window": "batching_window_s",
    "report_batch_item_failures": "report_batch_item_failures",
    "conflict_fraction": "conflict_fraction",
    "rate": "rate_per_s",
    "deadline": "deadline_s",
}
"""Command-line option (parameter name) -> scenario field it overrides."""


def _overrides(params: dict[str, Any]) -> dict[str, Any]:
    chosen = {
        field: params[name] for name, field in _OVERRIDES.items() if params.get(name) is not None
    }
    if "rate_per_s" in chosen:
        chosen["arrival"] = "rate"
    return chosen


@app.command()
def sweep(
    scenario: ScenarioArg,
    batch_size: Annotated[
        str | None, typer.Option("--batch-size", metavar="N,N,...", help="Batch sizes to try.")
    ] = None,
    visibility_timeout: Annotated[
        str | None,
        typer.Option(
            "--visibility-timeout", metavar="S,S,...", help="Visibility timeouts (seconds)."
        ),
    ] = None,
    concurrency: Annotated[
        str | None, typer.Option("--concurrency", metavar="N,N,...", help="Execution environments.")
    ] = None,
    handler_duration: Annotated[
        str | None,
        typer.Option(
            "--handler-duration", metavar="MS,MS,...", help="Fault: handler durations (ms)."
        ),
    ] = None,
    race_window: Annotated[
        str | None,
        typer.Option("--race-window", metavar="MS,MS,...", help="Fault: race windows (ms)."),
    ] = None,
    batching_window: Annotated[
        str | None,
        typer.Option("--batching-window", metavar="S,S,...", help="Batching windows (seconds)."),
    ] = None,
    variants: Annotated[
        str | None,
        typer.Option(
            "--variants",
            metavar="A,B,...",
            help="Comma-separated variants (default: the scenario's).",
        ),
    ] = None,
    handler: Annotated[
        list[str], typer.Option("--handler", metavar="REF", help="Also sweep your own handler.")
    ] = [],  # noqa: B006
    distinct_ids: IdsOpt = None,
    copies: CopiesOpt = None,
    deadline: DeadlineOpt = None,
    seed: SeedOpt = None,
    endpoint_url: EndpointOpt = None,
    target: TargetOpt = TargetChoice.EMBEDDED,
    threshold: ThresholdOpt = [],  # noqa: B006
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    markdown: MarkdownOpt = None,
    junit: JunitOpt = None,
    hgrm: HgrmOpt = None,
    out_dir: OutOpt = None,
    quiet: QuietOpt = False,
    cleanup_timeout: CleanupOpt = None,
    prices: PricesOpt = None,
    metric: Annotated[
        str | None,
        typer.Option(
            "--metric",
            metavar="NAME",
            help="Which grid the terminal shows first (and the page's first heatmap): "
            "duplicate_writes, redeliveries, e2e_p99 or cost (default: duplicate_writes).",
        ),
    ] = None,
) -> None:
    """Run a grid of settings: one run per cell and variant, one row each.

    Example: loadtest sweep race-burst --batch-size 1,10 --visibility-timeout 2,30

    A grid table per metric (duplicate writes, redeliveries, end-to-end p99,
    cost per million messages; --metric picks the first), then one row per cell
    and variant; the HTML page shows the grids as heatmaps and the JSON report
    holds every cell as a run.
    """
    try:
        cells = _grid(
            {
                "batch_size": batch_size,
                "visibility_timeout": visibility_timeout,
                "concurrency": concurrency,
                "handler_duration": handler_duration,
                "race_window": race_window,
                "batching_window": batching_window,
            }
        )
        if metric is not None:
            metric = metric_named(metric).name
    except (InputError, ValueError) as exc:
        _fail(Exit.BAD_INPUT, str(exc))
    _execute(
        scenario,
        [variants] if variants else [],
        handler,
        seed=seed,
        endpoint_url=endpoint_url,
        target=target,
        overrides=_overrides(
            {"distinct_ids": distinct_ids, "copies": copies, "deadline": deadline}
        ),
        json_path=json_path,
        out_dir=out_dir,
        quiet=quiet,
        thresholds=threshold,
        outputs=Outputs(html=html, markdown=markdown, junit=junit, hgrm=hgrm),
        cells=cells,
        cleanup_timeout_s=cleanup_timeout,
        prices_path=prices,
        metric=metric,
    )


@app.command()
def scenarios(quiet: QuietOpt = False) -> None:
    """List the built-in scenarios with their descriptions."""
    try:
        found = builtin_scenarios()
    except InputError as exc:
        _fail(Exit.BAD_INPUT, str(exc))
    if quiet:
        raise typer.Exit(int(Exit.OK))
    table = Table(show_header=True, header_style="bold")
    table.add_column("name")
    table.add_column("variants")
    table.add_column("description")
    for name, scenario in found.items():
        table.add_row(name, ", ".join(scenario.variants), scenario.description)
    out.print(table)


@app.command()
def report(
    file: Annotated[Path, typer.Argument(help="A JSON report written by run or compare.")],
    html: HtmlOpt = None,
    markdown: MarkdownOpt = None,
    junit: JunitOpt = None,
    hgrm: HgrmOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Show a saved JSON report again, as the run showed it; optionally re-render it to files."""
    try:
        data = _read_report(file)
        written = Outputs(html=html, markdown=markdown, junit=junit, hgrm=hgrm).write(data, None)
    except InputError as exc:
        _fail(Exit.BAD_INPUT, str(exc))
    if not quiet:
        out.print(render(data))
        for path in written:
            out.print(Text(f"Report: {path}", style="dim"))
    raise typer.Exit(verdict_exit_code(data))


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 5000,
    quiet: QuietOpt = False,
) -> None:
    """Run the embedded backend (SQS and DynamoDB) in the foreground for other tools.

    Conditional writes are atomic and a message is never handed to two pollers
    at once. Stop with Ctrl-C.
    """
    from loadtest.backend.embedded import serve as serve_backend

    def ready(url: str) -> None:
        if not quiet:
            err.print(f"loadtest embedded backend listening on {url} (Ctrl-C to stop)")

    try:
        serve_backend(host, port, on_ready=ready)
    except OSError as exc:
        _fail(Exit.BACKEND, f"cannot listen on {host}:{port}: {exc}")
    except KeyboardInterrupt:
        pass


@app.command()
def doctor(
    endpoint_url: EndpointOpt = None,
    target: TargetOpt = TargetChoice.EMBEDDED,
    keys: Annotated[int, typer.Option(help="Keys raced per round in the atomicity check.")] = 200,
    writers: Annotated[int, typer.Option(help="Concurrent conditional writers per key.")] = 8,
    rounds: Annotated[int, typer.Option(help="Rounds of the atomicity check.")] = 3,
    quiet: QuietOpt = False,
) -> None:
    """Check that a backend honours what loadtest's conclusions depend on.

    Conditional puts on one key from many clients let exactly one win; a failed
    condition returns the old item; a received message stays hidden from other
    pollers; an undeleted one comes back with its receive count increased; redrive
    reaches the DLQ. Exit code 1 when any check fails.
    """
    import anyio

    from loadtest.doctor import exit_ok, run_doctor
    from loadtest.engine import backend_target

    kind = _backend_kind(endpoint_url, target)

    def show(result: Any) -> None:
        if quiet:
            return
        mark = Text("PASS", style="bold green") if result.ok else Text("FAIL", style="bold red")
        out.print(Text.assemble(mark, f"  {result.name}: {result.summary}"))

    try:
        with backend_target(kind, endpoint_url) as resolved:

            async def main() -> list[Any]:
                return await run_doctor(
                    resolved, keys=keys, writers=writers, rounds=rounds, on_check=show
                )

            results = anyio.run(main, backend="asyncio")
    except KeyboardInterrupt:
        _fail(Exit.INTERRUPTED, "interrupted; the doctor's resources were deleted")
    except BaseException as exc:
        _raise_mapped(exc)
    raise typer.Exit(int(Exit.OK if exit_ok(results) else Exit.FAILED))


@app.command()
def diff(
    baseline: Annotated[Path, typer.Argument(help="The baseline JSON report.")],
    new: Annotated[Path, typer.Argument(help="The new JSON report.")],
    max_regression: Annotated[
        str,
        typer.Option("--max-regression", help="Allowed latency/throughput regression, e.g. 10%."),
    ] = "10%",
    quiet: QuietOpt = False,
) -> None:
    """Compare two reports: exit 1 on any correctness or performance regression.

    A count that must be 0 (duplicate, conflicting, lost, unsettled...) and is
    not is a regression whatever the tolerance; latency p50/p90/p99 and
    throughput may move by --max-regression.
    """
    from loadtest.diff import diff_reports, parse_tolerance, render_diff_table

    try:
        tolerance = parse_tolerance(max_regression)
        result = diff_reports(
            _read_report(baseline),
            _read_report(new),
            tolerance,
            baseline_label=str(baseline),
            new_label=str(new),
        )
    except InputError as exc:
        _fail(Exit.BAD_INPUT, str(exc))
    if quiet:
        raise typer.Exit(int(Exit.OK if result.ok else Exit.FAILED))
    out.print(render_diff_table(result))
    if result.ok:
        out.print(Text("No regression.", style="green"))
    else:
        out.print(Text(f"{result.regressions} regression(s).", style="bold red"))
    raise typer.Exit(int(Exit.OK if result.ok else Exit.FAILED))


def _read_report(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read report {str(path)!r}: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise InputError(
            f"{str(path)!r} is not a loadtest report with schema_version {SCHEMA_VERSION}"
        )
    from loadtest.reportcheck import missing_keys

    missing = missing_keys(data)
    if missing:
        shown = ", ".join(missing[:8]) + (
            f" and {len(missing) - 8} more" if len(missing) > 8 else ""
        )
        raise InputError(f"{str(path)!r} is not a complete loadtest report: missing {shown}")
    return data


def _version(value: bool) -> None:
    if value:
        out.print(f"loadtest {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    pass


def main() -> None:
    app()

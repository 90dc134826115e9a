"""The command line: parses, calls the engine, renders, and maps results to exit codes.

The only module that prints or exits. Exit codes (DESIGN.md): 0 every verdict
passed; 1 a verdict failed; 2 bad input; 3 the backend could not be reached
or refused the credentials.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
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
from loadtest.errors import BackendError, InputError, LoadtestError, find_error
from loadtest.handlers import BUILTIN_VARIANTS, HandlerRef, parse_ref
from loadtest.render import render
from loadtest.report import SCHEMA_VERSION, build_report
from loadtest.runner import Progress
from loadtest.scenario import Scenario, builtin_scenarios, load_scenario


class Exit(IntEnum):
    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    BACKEND = 3
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

out = Console()
err = Console(stderr=True)


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


def _write_json(path: Path, report: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write report {str(path)!r}: {exc}") from exc


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
) -> None:
    from loadtest import engine

    try:
        scenario = load_scenario(scenario_ref).with_overrides(seed=seed, **overrides)
        refs = _refs(scenario, variants, handlers)
        if endpoint_url and target is TargetChoice.AWS:
            raise InputError("--endpoint-url and --target aws exclude each other; give one")
        kind = (
            BackendKind.AWS
            if target is TargetChoice.AWS
            else BackendKind.ENDPOINT
            if endpoint_url
            else BackendKind.EMBEDDED
        )
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
            )
        report = build_report(result, command=_command(scenario))
        if json_path is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            json_path = (out_dir or Path("reports")) / f"{scenario.name}-{stamp}.json"
        elif out_dir is not None and not json_path.is_absolute():
            json_path = out_dir / json_path
        _write_json(json_path, report)
    except KeyboardInterrupt:
        _fail(Exit.INTERRUPTED, "interrupted; the run's resources were deleted")
    except BaseException as exc:
        _raise_mapped(exc)
    if not quiet:
        out.print(render(report))
        out.print(Text(f"Report: {json_path}", style="dim"))
    failed = any(run["verdict"] != "pass" for run in report["runs"])
    raise typer.Exit(int(Exit.FAILED if failed else Exit.OK))


def _raise_mapped(exc: BaseException) -> NoReturn:
    """Turn a loadtest error (possibly inside a task group's exception group) into an exit."""
    if isinstance(exc, typer.Exit):
        raise exc
    if find_error(exc, KeyboardInterrupt) is not None:
        _fail(Exit.INTERRUPTED, "interrupted; the run's resources were deleted")
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
DeadlineOpt = Annotated[
    float | None, typer.Option("--deadline", help="Stop after this many seconds and report.")
]
JsonOpt = Annotated[
    Path | None,
    typer.Option("--json", help="Write the JSON report here (default: reports/NAME-TIME.json)."),
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", help="Directory for report files (default: ./reports).")
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress and no summary; the exit code tells.")
]


@app.command()
def run(
    scenario: ScenarioArg,
    variant: Annotated[
        list[str],
        typer.Option(
            "--variant",
            help=f"Consumer variant to run, repeatable: {', '.join(BUILTIN_VARIANTS)} (default: the scenario's).",
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    handler: Annotated[
        list[str],
        typer.Option(
            "--handler",
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
    deadline: DeadlineOpt = None,
    json_path: JsonOpt = None,
    out_dir: OutOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Run a scenario against its consumer variants and check the outcome.

    Exit code 0 when every verdict passes, 1 when one fails, 2 for bad input,
    3 when the backend cannot be reached.
    """
    _execute(
        scenario,
        variant,
        handler,
        seed=seed,
        endpoint_url=endpoint_url,
        target=target,
        overrides=_overrides(
            batch_size,
            visibility_timeout,
            concurrency,
            max_receive_count,
            distinct_ids,
            copies,
            deadline,
        ),
        json_path=json_path,
        out_dir=out_dir,
        quiet=quiet,
    )


@app.command()
def compare(
    scenario: ScenarioArg,
    variants: Annotated[
        str | None,
        typer.Option(
            "--variants", help="Comma-separated variants or handler refs (default: the scenario's)."
        ),
    ] = None,
    handler: Annotated[
        list[str],
        typer.Option(
            "--handler", help="Also run your own handler (module:function or file.py:function)."
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
    deadline: DeadlineOpt = None,
    json_path: JsonOpt = None,
    out_dir: OutOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Run the same seeded workload against several variants, side by side.

    Example: loadtest compare race-burst --variants read-then-write,conditional
    """
    _execute(
        scenario,
        [variants] if variants else [],
        handler,
        seed=seed,
        endpoint_url=endpoint_url,
        target=target,
        overrides=_overrides(
            batch_size,
            visibility_timeout,
            concurrency,
            max_receive_count,
            distinct_ids,
            copies,
            deadline,
        ),
        json_path=json_path,
        out_dir=out_dir,
        quiet=quiet,
    )


def _overrides(
    batch_size: int | None,
    visibility_timeout: int | None,
    concurrency: int | None,
    max_receive_count: int | None,
    distinct_ids: int | None,
    copies: int | None,
    deadline: float | None,
) -> dict[str, Any]:
    return {
        "batch_size": batch_size,
        "visibility_timeout_s": visibility_timeout,
        "concurrency": concurrency,
        "max_receive_count": max_receive_count,
        "distinct_ids": distinct_ids,
        "copies": copies,
        "deadline_s": deadline,
    }


@app.command()
def scenarios() -> None:
    """List the built-in scenarios with their descriptions."""
    try:
        found = builtin_scenarios()
    except InputError as exc:
        _fail(Exit.BAD_INPUT, str(exc))
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
) -> None:
    """Show a saved JSON report again, as the run showed it."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        _fail(Exit.BAD_INPUT, f"cannot read report {str(file)!r}: {exc}")
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        _fail(
            Exit.BAD_INPUT,
            f"{str(file)!r} is not a loadtest report with schema_version {SCHEMA_VERSION}",
        )
    out.print(render(data))
    failed = any(r.get("verdict") != "pass" for r in data.get("runs", []))
    raise typer.Exit(int(Exit.FAILED if failed else Exit.OK))


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 5000,
) -> None:
    """Run the embedded backend (SQS and DynamoDB) in the foreground for other tools.

    Conditional writes are atomic and a message is never handed to two pollers
    at once. Stop with Ctrl-C.
    """
    from loadtest.backend.embedded import serve as serve_backend

    def ready(url: str) -> None:
        err.print(f"loadtest embedded backend listening on {url} (Ctrl-C to stop)")

    try:
        serve_backend(host, port, on_ready=ready)
    except OSError as exc:
        _fail(Exit.BACKEND, f"cannot listen on {host}:{port}: {exc}")
    except KeyboardInterrupt:
        pass


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

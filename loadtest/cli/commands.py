"""The ``loadtest`` commands: parse, call the library, render, exit.

The only place (with the rest of ``loadtest.cli``) that prints or exits; see
``loadtest.cli.console`` for the exit codes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from loadtest import __version__
from loadtest.cli.console import Exit, err, fail, out, raise_mapped
from loadtest.cli.options import (
    CleanupOpt,
    EndpointOpt,
    HgrmOpt,
    HtmlOpt,
    JsonOpt,
    JunitOpt,
    MarkdownOpt,
    OutOpt,
    PricesOpt,
    QuietOpt,
    ScenarioArg,
    SeedOpt,
    TargetChoice,
    TargetOpt,
    ThresholdOpt,
    grid,
    override_options,
    target_kind,
)
from loadtest.cli.outputs import (
    Outputs,
    read_report,
)
from loadtest.cli.running import (
    execute_run,
)
from loadtest.emulation.handlers import BUILTIN_VARIANTS
from loadtest.errors import InputError
from loadtest.model.scenario import builtin_scenarios
from loadtest.reports.heatmap import metric_named
from loadtest.reports.render import render
from loadtest.reports.report import verdict_exit_code

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


@app.command()
@override_options()
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
    overrides: dict[str, Any] | None = None,
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
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Print every AWS resource a --target aws run would create (settings, tags), the "
            "IAM permissions it needs and a cost estimate; call nothing and exit 0.",
        ),
    ] = False,
) -> None:
    """Run a scenario against its consumer variants and check the outcome.

    Exit code 0 when every verdict passes, 1 when one fails, 2 for bad input,
    3 when the backend cannot be reached, 4 when a verdict is inconclusive.
    """
    if plan:
        from loadtest.cli.aws import show_plan

        show_plan(
            scenario,
            [*variant, *([variants] if variants else [])],
            handler,
            seed=seed,
            overrides=overrides or {},
        )
    execute_run(
        scenario,
        [*variant, *([variants] if variants else [])],
        handler,
        seed=seed,
        endpoint_url=endpoint_url,
        target=target,
        overrides=overrides or {},
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


@app.command()
@override_options(sweep=True)
def sweep(
    scenario: ScenarioArg,
    axes: dict[str, str | None] | None = None,
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
    overrides: dict[str, Any] | None = None,
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
        cells = grid(axes or {})
        if metric is not None:
            metric = metric_named(metric).name
    except (InputError, ValueError) as exc:
        fail(Exit.BAD_INPUT, str(exc))
    execute_run(
        scenario,
        [variants] if variants else [],
        handler,
        seed=seed,
        endpoint_url=endpoint_url,
        target=target,
        overrides=overrides or {},
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
def scenarios(
    quiet: QuietOpt = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print a JSON list of {name, variants, description} instead of a table."
        ),
    ] = False,
) -> None:
    """List the built-in scenarios with their descriptions."""
    try:
        found = builtin_scenarios()
    except InputError as exc:
        fail(Exit.BAD_INPUT, str(exc))
    if quiet:
        raise typer.Exit(int(Exit.OK))
    if as_json:
        listing = [
            {"name": name, "variants": list(s.variants), "description": s.description}
            for name, s in found.items()
        ]
        # Plain print: rich would highlight or wrap what another program parses.
        sys.stdout.write(json.dumps(listing, indent=2) + "\n")
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
        data = read_report(file)
        written = Outputs(html=html, markdown=markdown, junit=junit, hgrm=hgrm).write(data, None)
    except InputError as exc:
        fail(Exit.BAD_INPUT, str(exc))
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
    from loadtest.adapters.backend.embedded import serve as serve_backend

    def ready(url: str) -> None:
        if not quiet:
            err.print(f"loadtest embedded backend listening on {url} (Ctrl-C to stop)")

    try:
        serve_backend(host, port, on_ready=ready)
    except OSError as exc:
        fail(Exit.BACKEND, f"cannot listen on {host}:{port}: {exc}")
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

    from loadtest.adapters.doctor import exit_ok, run_doctor
    from loadtest.engine import backend_target

    kind = target_kind(endpoint_url, target)

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
        fail(Exit.INTERRUPTED, "interrupted; the doctor's resources were deleted")
    except BaseException as exc:
        raise_mapped(exc)
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
    from loadtest.reports.diff import diff_reports, parse_tolerance, render_diff_table

    try:
        tolerance = parse_tolerance(max_regression)
        result = diff_reports(
            read_report(baseline),
            read_report(new),
            tolerance,
            baseline_label=str(baseline),
            new_label=str(new),
        )
    except InputError as exc:
        fail(Exit.BAD_INPUT, str(exc))
    if quiet:
        raise typer.Exit(int(Exit.OK if result.ok else Exit.FAILED))
    out.print(render_diff_table(result))
    if result.ok:
        out.print(Text("No regression.", style="green"))
    else:
        out.print(Text(f"{result.regressions} regression(s).", style="bold red"))
    raise typer.Exit(int(Exit.OK if result.ok else Exit.FAILED))


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


# The AWS commands (cleanup, lint) register themselves on ``app``.
from loadtest.cli import aws  # noqa: E402, F401

"""The ``loadtest`` run commands (``run``, ``compare``, ``sweep``) and the global options.

Registered on the Typer app by ``loadtest.cli.app``.

The only place (with the rest of ``loadtest.cli``) that prints or exits; see
``loadtest.cli.console`` for the exit codes.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from loadtest import __version__
from loadtest.cli.console import Exit, fail, out
from loadtest.cli.options import (
    CleanupOpt,
    EndpointOpt,
    HgrmOpt,
    HistoryOpt,
    HtmlOpt,
    JsonOpt,
    JunitOpt,
    KeepHistoryOpt,
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
)
from loadtest.cli.outputs import (
    Outputs,
)
from loadtest.cli.running import (
    execute_run,
)
from loadtest.emulation.environment.handlers import BUILTIN_VARIANTS
from loadtest.errors import InputError
from loadtest.reports.html.heatmap import metric_named


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
    repeat: Annotated[
        int,
        typer.Option(
            "--repeat",
            metavar="N",
            min=1,
            help="Run the workload N times, seeds s, s+1, ...: each figure's min/median/max "
            "across the runs and each anomaly's share of runs with its 95% interval "
            "(thresholds such as 'duplicate_writes.runs_with > 0'). Local runtime and "
            "--endpoint-url only.",
        ),
    ] = 1,
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
    history: HistoryOpt = None,
    keep_history: KeepHistoryOpt = False,
    plan: Annotated[
        bool,
        typer.Option(
            "--plan",
            help="Print every AWS resource a --target aws run would create (settings, tags), the "
            "IAM permissions it needs and a cost estimate; call nothing and exit 0.",
        ),
    ] = False,
    deploy: Annotated[
        bool,
        typer.Option(
            "--deploy",
            help="With --endpoint-url: deploy each variant as a Lambda function behind an SQS "
            "mapping there (an emulator that runs functions, e.g. MiniStack) and run through it. "
            "--target aws always does.",
        ),
    ] = False,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep what a deploy created (loadtest cleanup later).")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", help="Create AWS resources without asking (CI).")
    ] = False,
    function: Annotated[
        str | None,
        typer.Option(
            "--function",
            metavar="NAME",
            help="Attach: run against this deployed function (with --queue-url and --table); "
            "it is observed for the run and restored exactly afterwards.",
        ),
    ] = None,
    queue_url: Annotated[
        str | None,
        typer.Option("--queue-url", metavar="URL", help="Attach: the queue its mapping reads."),
    ] = None,
    table: Annotated[
        str | None,
        typer.Option("--table", metavar="NAME", help="Attach: the table it writes outcomes to."),
    ] = None,
) -> None:
    """Run a scenario against its consumer variants and check the outcome.

    With --target aws (or --deploy --endpoint-url URL) the workload goes
    through deployed functions and real event source mappings; on AWS the plan
    is shown and confirmed first, or --yes (without a terminal and without
    --yes: exit 2, nothing created).

    Exit code 0 when every verdict passes, 1 when one fails, 2 for bad input,
    3 when the backend cannot be reached, 4 when a verdict is inconclusive,
    130 when interrupted (after cleanup).
    """
    chosen = [*variant, *([variants] if variants else [])]
    outputs = Outputs(html=html, markdown=markdown, junit=junit, hgrm=hgrm)
    attach = (function, queue_url, table)
    if any(attach) and not all(attach):
        fail(Exit.BAD_INPUT, "attach needs all three: --function, --queue-url and --table")
    if deploy and not endpoint_url:
        fail(Exit.BAD_INPUT, "--deploy needs --endpoint-url (for AWS itself: --target aws)")
    if plan:
        from loadtest.cli.aws import show_plan

        show_plan(
            scenario,
            chosen,
            handler,
            seed=seed,
            overrides=overrides or {},
            prices_path=prices,
        )
    if deploy or all(attach) or target is TargetChoice.AWS:
        from loadtest.cli.aws import run_remote

        if repeat > 1:
            fail(
                Exit.BAD_INPUT,
                "--repeat runs on the local runtime (or an --endpoint-url backend without "
                "--deploy); not with --target aws, --deploy or an attached function",
            )

        run_remote(
            scenario,
            chosen,
            handler,
            seed=seed,
            endpoint_url=endpoint_url,
            real_aws=target is TargetChoice.AWS,
            overrides=overrides or {},
            attach=(function, queue_url, table) if function and queue_url and table else None,
            keep=keep,
            yes=yes,
            json_path=json_path,
            out_dir=out_dir,
            quiet=quiet,
            thresholds=threshold,
            outputs=outputs,
            prices_path=prices,
            history_path=history,
            keep_history=keep_history,
        )
    execute_run(
        scenario,
        chosen,
        handler,
        seed=seed,
        endpoint_url=endpoint_url,
        target=target,
        overrides=overrides or {},
        json_path=json_path,
        out_dir=out_dir,
        quiet=quiet,
        thresholds=threshold,
        outputs=outputs,
        cleanup_timeout_s=cleanup_timeout,
        prices_path=prices,
        repeat=repeat,
        history_path=history,
        keep_history=keep_history,
    )


# compare is run under its own name for the side-by-side use; both take
# --variant (repeatable) and --variants a,b.
COMPARE_HELP = (
    "Run the same seeded workload against several variants, side by side.\n\n"
    "Example: loadtest compare race-burst --variants read-then-write,conditional\n\n"
    "Exit code 0 when every verdict passes, 1 when one fails, 2 for bad input, "
    "3 when the backend cannot be reached, 4 when a verdict is inconclusive, "
    "130 when interrupted (after cleanup)."
)


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
    history: HistoryOpt = None,
    keep_history: KeepHistoryOpt = False,
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

    Exit code 0 when every cell's verdict passes, 1 when one fails, 2 for bad
    input, 3 when the backend cannot be reached, 4 when a verdict is
    inconclusive, 130 when interrupted (after cleanup).
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
        history_path=history,
        keep_history=keep_history,
    )


def _version(value: bool) -> None:
    if value:
        out.print(f"loadtest {__version__}")
        raise typer.Exit()


def options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    pass

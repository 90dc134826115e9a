"""``loadtest explore``: controlled interleavings of a few deliveries, each distinct bug shrunk.

Parses, calls ``loadtest.api.explore``, prints the bugs and the counterexample with
their replay lines, writes the reports, exits (0 no schedule failed, 1 one failed,
2 bad input, 3 backend unreachable, 4 inconclusive, 130 interrupted).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from loadtest.cli.console import Exit, fail, out, raise_mapped
from loadtest.cli.options import (
    EndpointOpt,
    EnvOpt,
    HtmlOpt,
    JsonOpt,
    OutOpt,
    QuietOpt,
    ScenarioArg,
    TargetChoice,
    TargetOpt,
)
from loadtest.cli.outputs import Outputs, drop_unwritten, plan_outputs, write_reports
from loadtest.emulation.environment.handlers import BUILTIN_VARIANTS
from loadtest.errors import find_error
from loadtest.interrupts import Stop
from loadtest.model.explore.points import Fault


def explore(
    scenario: ScenarioArg,
    variant: Annotated[
        str | None,
        typer.Option(
            "--variant",
            metavar="NAME",
            help=f"Consumer variant to explore: {', '.join(BUILTIN_VARIANTS)} (default: the scenario's first).",
        ),
    ] = None,
    handler: Annotated[
        str | None,
        typer.Option(
            "--handler",
            metavar="REF",
            help="Your own handler: package.module:function or path/to/file.py:function.",
        ),
    ] = None,
    copies: Annotated[
        int | None,
        typer.Option(
            "--copies",
            metavar="K",
            help="Deliveries of the message to interleave (default: the copies the scenario sends).",
        ),
    ] = None,
    distinct_ids: Annotated[
        int | None,
        typer.Option(
            "--distinct-ids", metavar="N", help="Business ids to explore together (1-4, default 1)."
        ),
    ] = None,
    strategy: Annotated[
        str,
        typer.Option(
            "--strategy",
            metavar="exhaustive|pct",
            help="exhaustive: every distinct interleaving (calls on different items commute); "
            "pct: seeded random priorities with a probability bound.",
        ),
    ] = "exhaustive",
    budget: Annotated[
        int | None,
        typer.Option(
            "--budget",
            metavar="N",
            help="Most schedules to run (default 2000); the search stops there and "
            "states what it covered.",
        ),
    ] = None,
    time_budget: Annotated[
        float | None,
        typer.Option(
            "--time-budget",
            metavar="S",
            help="Most seconds to search (default 120, more than 0), checked between "
            "schedules; the search stops there and states what it covered.",
        ),
    ] = None,
    faults: Annotated[
        str | None,
        typer.Option(
            "--faults",
            metavar="F,...",
            help=f"Faults the scheduler may inject at points: {','.join(f.value for f in Fault)}.",
        ),
    ] = None,
    max_faults: Annotated[
        int | None,
        typer.Option("--max-faults", metavar="F", help="Most faults per schedule (default 1)."),
    ] = None,
    bound: Annotated[
        str | None,
        typer.Option(
            "--bound",
            metavar="SPEC",
            help="The space to explore in one place, KEY=N,...: deliveries, ids, a fault's "
            "name with the most of it per schedule, faults (all kinds together); e.g. "
            "deliveries=3,crash=1,redeliver=1. Not with --copies, --faults or --max-faults.",
        ),
    ] = None,
    schedule: Annotated[
        str | None,
        typer.Option(
            "--schedule",
            metavar="TOKEN",
            help="Replay exactly this schedule (the token a counterexample prints).",
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Seed for pct (default: the scenario's).")
    ] = None,
    clock_jump: Annotated[
        float | None,
        typer.Option(
            "--clock-jump",
            metavar="S",
            help="Seconds a clock fault moves time (default: the function timeout minus 1 s).",
        ),
    ] = None,
    env: EnvOpt = [],  # noqa: B006 - typer needs a literal default
    stop_at_first: Annotated[
        bool,
        typer.Option(
            "--stop-at-first",
            help="Stop at the first failing schedule and shrink it (a quick CI gate), "
            "instead of searching to the budget and reporting every distinct bug.",
        ),
    ] = False,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            metavar="N",
            help="Processes an exhaustive search runs its schedules in (default: one per "
            "core, at most 4, on Linux; 1 elsewhere; env LOADTEST_EXPLORE_WORKERS). The "
            "report is the same with any N but for its timings.",
        ),
    ] = None,
    endpoint_url: EndpointOpt = None,
    target: TargetOpt = TargetChoice.EMBEDDED,
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    out_dir: OutOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Drive a few deliveries of one message through every interleaving (and fault) that matters.

    Each delivery stops at its invocation start, before and after each DynamoDB
    call, in sleeps and before its acknowledgement; one scheduler decides who
    goes next. Every schedule is judged as a run is. The search runs until the
    space is covered or --budget or --time-budget runs out (--stop-at-first: at
    the first failure), states the bound it covered, and groups the failing
    schedules into distinct bugs: each is shrunk and listed with its replay line
    (--schedule TOKEN), the smallest printed step by step.

    --bound SPEC sets the deliveries, business ids and faults (each kind with its
    own limit) in one place: deliveries=3,crash=1,redeliver=1.

    Exit code 0 when no schedule failed, 1 when one did, 2 for bad input
    (including --target aws, a --bound or --schedule that does not fit the scenario
    or handler, a --bound given with --copies, --faults or --max-faults), 3 when the backend cannot be reached, 4 when a
    schedule was inconclusive, 130 when interrupted (Ctrl-C, SIGTERM, SIGHUP).
    """
    from loadtest.api import explore as explore_api
    from loadtest.api import resolve_scenario
    from loadtest.reports.explore import explore_text

    stop = Stop()
    # SIGTERM and SIGHUP take Ctrl-C's path: the sessions unwind and drop what they made.
    with stop.installed(), stop.deferred():
        claimed: list[Path | None] = []
        try:
            resolved = resolve_scenario(scenario)
            json_file, outputs = plan_outputs(resolved, json_path, out_dir, Outputs(html=html))
            if json_path is None:
                # Fresh names, made as empty files: dropped again if no report is written.
                claimed = [json_file, outputs.html if html is None else None]
            report = explore_api(
                scenario,
                variant=variant,
                handler=handler,
                copies=copies,
                distinct_ids=distinct_ids,
                strategy=strategy,
                budget=budget,
                time_budget_s=time_budget,
                faults=faults,
                max_faults=max_faults,
                bound=bound,
                schedule=schedule,
                seed=seed,
                clock_jump_s=clock_jump,
                env=env,
                stop_at_first=stop_at_first,
                workers=workers,
                endpoint_url=endpoint_url,
                target=target.value if target is not TargetChoice.EMBEDDED else None,
                command="loadtest " + shlex.join(sys.argv[1:]),
                interrupted=lambda: stop.reason,
            )
            written = write_reports(report, json_file, outputs)
        except BaseException as exc:
            drop_unwritten(claimed)
            if find_error(exc, KeyboardInterrupt) is not None:
                fail(Exit.INTERRUPTED, f"interrupted by {stop.reason or 'SIGINT'}")
            raise_mapped(exc)
    if not quiet:
        out.print(Text(explore_text(report.model)))
        for path in written:
            out.print(Text(f"Report: {Path(path)}", style="dim"))
    raise typer.Exit(report.exit_code)

"""The ``shrink`` command: the smallest workload that still fails, written beside the report.

Parses, calls ``loadtest.shrinking.shrink_report``, writes the minimal scenario
as ``REPORT.minimal.toml`` next to the report, prints each candidate and the
command that reproduces the failure, and exits: 0 a minimal failing workload
was found, 2 bad input (or a report without an anomaly), 4 the report's
workload did not fail again in the tries made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from loadtest.cli.console import Exit, err, fail, out, raise_mapped
from loadtest.cli.options import EndpointOpt, QuietOpt
from loadtest.cli.outputs import read_report
from loadtest.errors import InputError
from loadtest.model.search.shrink import Outcome


def shrink(
    report: Annotated[Path, typer.Argument(help="A JSON report with a failing run.")],
    tries: Annotated[
        int,
        typer.Option(
            "--tries",
            metavar="R",
            min=1,
            help="Runs per candidate (seeds s, s+1, ...); it still fails if one of them does.",
        ),
    ] = 5,
    variant: Annotated[
        str | None,
        typer.Option("--variant", metavar="NAME", help="The failing variant (default: the first)."),
    ] = None,
    endpoint_url: EndpointOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Reduce a failing run's workload (faults, arrival, distinct ids, copies, concurrency,
    batch size) to the smallest that still fails in one of --tries runs; write it as
    REPORT.minimal.toml and print the command that reproduces the failure.

    Exit code 0 when the smallest failing workload was written, 2 for bad input (a
    report with no failing run included), 3 when the backend cannot be reached, 4 when
    the report's workload no longer fails in --tries runs, 130 when interrupted.
    """
    from loadtest.shrinking import shrink_report

    def step(field: str, value: Any, outcome: Outcome) -> None:
        if quiet:
            return
        verdict = f"fails (seed {outcome.failed_seed}: {outcome.detail})"
        err.print(
            Text(f"  {field} = {value}: " + (verdict if outcome.failed_seed else "no failure"))
        )

    try:
        data = read_report(report)
        if not quiet:
            err.print(Text(f"Shrinking {report} ({tries} run(s) per candidate)…", style="dim"))
        result = shrink_report(
            data, variant=variant, tries=tries, endpoint_url=endpoint_url, on_step=step
        )
    except InputError as exc:
        fail(Exit.BAD_INPUT, str(exc))
    except LookupError as exc:
        fail(Exit.INCONCLUSIVE, str(exc))
    except BaseException as exc:
        raise_mapped(exc)
    target = report.with_name(f"{report.stem}.minimal.toml")
    target.write_text(result.toml, encoding="utf-8")
    workload = result.scenario.workload
    consumer = result.scenario.consumer
    out.print(
        Text(
            f"Smallest failing workload of {result.original.name} with {result.variant}: "
            f"{workload.distinct_ids} id(s) x {workload.copies} cop(ies), concurrency "
            f"{consumer.concurrency}, batch size {consumer.batch_size}, arrival "
            f"{workload.arrival.value}, faults: {result.scenario.faults.describe()} "
            f"({result.shrunk.detail}, seed {result.shrunk.seed})",
            style="bold",
        )
    )
    for field, why in result.shrunk.kept.items():
        out.print(Text(f"  kept {field} = {why}", style="yellow"))
    out.print(Text(f"Scenario: {target}", style="dim"))
    out.print(f"Reproduce: {result.command(target)}")
    # A deterministic counterexample: every interleaving of the minimal workload.
    out.print(f"Explore its interleavings: loadtest explore {target} --variant {result.variant}")
    raise typer.Exit(int(Exit.OK))

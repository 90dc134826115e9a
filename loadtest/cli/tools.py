"""The commands around a run: ``scenarios``, ``report``, ``serve``, ``doctor``, ``diff`` and ``new``.

They list what can be run, re-render or compare saved reports, and serve or
check a backend. ``loadtest.cli.app`` registers them on the Typer app. Like
the rest of ``loadtest.cli``, they only
parse, call the library, print and exit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from loadtest.cli.console import Exit, err, fail, out, raise_mapped
from loadtest.cli.options import (
    EndpointOpt,
    HgrmOpt,
    HtmlOpt,
    JsonOpt,
    JunitOpt,
    MarkdownOpt,
    QuietOpt,
    TargetChoice,
    TargetOpt,
    ThresholdOpt,
    target_kind,
)
from loadtest.cli.outputs import Outputs, read_report
from loadtest.errors import InputError
from loadtest.model.scenario.loading import builtin_scenarios
from loadtest.reports.report import verdict_exit_code
from loadtest.reports.text.render import render


def scenarios(
    quiet: QuietOpt = False,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json", help="Print a JSON list of {name, variants, description} instead of a table."
        ),
    ] = False,
) -> None:
    """List the built-in scenarios with their descriptions.

    Exit code 0, or 2 when a built-in scenario cannot be read.
    """
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


def report(
    file: Annotated[
        Path,
        typer.Argument(
            help="A history (run --history) or a JSON report written by run or compare."
        ),
    ],
    json_path: JsonOpt = None,
    html: HtmlOpt = None,
    markdown: MarkdownOpt = None,
    junit: JunitOpt = None,
    hgrm: HgrmOpt = None,
    threshold: ThresholdOpt = [],  # noqa: B006 - typer needs a literal default
    quiet: QuietOpt = False,
) -> None:
    """Judge a run's history again, or show a saved JSON report again; optionally write files.

    A history closed by its run gives the report the run gave (the same JSON); one cut
    short (the run was killed) gives the report of what was measured up to its last
    whole record, marked incomplete: it never passes. --threshold adds rules (a
    history only). A JSON report is re-rendered as it is.

    Exit code as the run's: 0 when every verdict passed, 1 when one failed, 4 when one was
    inconclusive (a history cut short: 4 unless a failure was seen); 2 when the file is not
    a history or a loadtest report (naming the byte offset of a corrupt record), or cannot
    be read or written.
    """
    from loadtest.api import report_from_history
    from loadtest.cli.outputs import is_history, write_json

    try:
        history = is_history(file)
        if history:
            data = report_from_history(file, thresholds=threshold).model
        elif threshold:
            raise InputError("--threshold judges a history again; a JSON report is shown as it is")
        else:
            data = read_report(file)
        written = []
        if json_path is not None:
            write_json(json_path, data.to_json())
            written.append(json_path)
        written += Outputs(html=html, markdown=markdown, junit=junit, hgrm=hgrm).write(data, None)
    except InputError as exc:
        fail(Exit.BAD_INPUT, str(exc))
    if not quiet:
        out.print(render(data))
        if data.incomplete and data.incomplete_reason:
            err.print(Text(f"incomplete: {data.incomplete_reason}", style="yellow"))
        for path in written:
            out.print(Text(f"Report: {path}", style="dim"))
    code = verdict_exit_code(data)
    # A history cut short never passes: what it did not record was not judged.
    raise typer.Exit(4 if history and data.incomplete and code == 0 else code)


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one).")] = 5000,
    quiet: QuietOpt = False,
) -> None:
    """Run the embedded backend (SQS and DynamoDB) in the foreground for other tools.

    Conditional writes are atomic and a message is never handed to two pollers
    at once. Stop with Ctrl-C.

    Exit code 0 when stopped with Ctrl-C or SIGTERM, 3 when the address cannot be
    listened on.
    """
    from loadtest.backend.embedded import serve as serve_backend

    def ready(url: str) -> None:
        if not quiet:
            err.print(f"loadtest embedded backend listening on {url} (Ctrl-C to stop)")

    try:
        serve_backend(host, port, on_ready=ready)
    except OSError as exc:
        fail(Exit.BACKEND, f"cannot listen on {host}:{port}: {exc}")
    except KeyboardInterrupt:
        pass


def doctor(
    endpoint_url: EndpointOpt = None,
    target: TargetOpt = TargetChoice.EMBEDDED,
    keys: Annotated[int, typer.Option(help="Keys raced per round in the atomicity check.")] = 200,
    writers: Annotated[int, typer.Option(help="Concurrent conditional writers per key.")] = 8,
    rounds: Annotated[int, typer.Option(help="Rounds of the atomicity check.")] = 3,
    data_plane: Annotated[
        bool,
        typer.Option(
            "--data-plane/--no-data-plane",
            help="Also measure the event source mapping with a probe function "
            "(embedded, or an endpoint that serves Lambda).",
        ),
    ] = True,
    quiet: QuietOpt = False,
) -> None:
    """Check that a backend honours what loadtest's conclusions depend on.

    Conditional puts on one key from many clients let exactly one win; a failed
    condition returns the old item; a received message stays hidden from other
    pollers; an undeleted one comes back with its receive count increased; redrive
    reaches the DLQ. Then the event source mapping, measured with a probe function:
    invocations at once for a burst, a redelivery while a message is still in
    flight, partial batch responses, FIFO group order.

    Exit code 0 when every check passes, 1 when one fails, 2 for bad input, 3 when
    the backend cannot be reached, 130 when interrupted (after cleanup).
    """
    import anyio

    from loadtest.api import doctor_data_plane
    from loadtest.doctor.checkup import exit_ok, run_doctor
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
            if data_plane:
                measured, skipped = doctor_data_plane(kind, resolved.endpoint_url, on_check=show)
                results += measured
                if skipped and not quiet:
                    out.print(Text(f"SKIP  data plane: {skipped}", style="dim"))
    except KeyboardInterrupt:
        fail(Exit.INTERRUPTED, "interrupted; the doctor's resources were deleted")
    except BaseException as exc:
        raise_mapped(exc)
    raise typer.Exit(int(Exit.OK if exit_ok(results) else Exit.FAILED))


def diff(
    baseline: Annotated[Path, typer.Argument(help="The baseline JSON report.")],
    new: Annotated[Path, typer.Argument(help="The new JSON report.")],
    max_regression: Annotated[
        str,
        typer.Option("--max-regression", help="Allowed latency/throughput regression, e.g. 10%."),
    ] = "10%",
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            help="Significance level for repeated reports (--repeat N): a latency or "
            "throughput change is a regression only if a Mann-Whitney U test rejects "
            "'no change' at this level.",
        ),
    ] = 0.05,
    quiet: QuietOpt = False,
) -> None:
    """Compare two reports: exit 1 on any correctness or performance regression.

    A count that must be 0 (duplicate, conflicting, lost, unsettled...) and is
    not is a regression whatever the tolerance; latency p50/p90/p99 and
    throughput may move by --max-regression. Between repeated reports a move
    beyond it must also be significant at --alpha (Mann-Whitney U over the
    per-run values); single runs are judged without a test, and the output
    says so.

    Exit code 0 when nothing regressed, 1 when something did, 2 for bad input.
    """
    from loadtest.reports.diff import diff_reports, parse_tolerance
    from loadtest.reports.text.diff_view import render_diff_table

    try:
        tolerance = parse_tolerance(max_regression)
        result = diff_reports(
            read_report(baseline),
            read_report(new),
            tolerance,
            baseline_label=str(baseline),
            new_label=str(new),
            alpha=alpha,
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


def new(
    handler: Annotated[
        str,
        typer.Option(
            "--handler", help="The handler: path/to/app.py:handler or package.module:function."
        ),
    ],
    sample_message: Annotated[
        Path | None,
        typer.Option(
            "--sample-message",
            help="A message as the queue delivers it (JSON): a body, an SNS notification, an "
            "EventBridge event or a Lambda SQS event.",
        ),
    ] = None,
    id_field: Annotated[
        str | None,
        typer.Option("--id-field", help="The sample's business id field (order.id when nested)."),
    ] = None,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Write the scenario here (never overwritten).")
    ] = None,
) -> None:
    """Write a commented scenario for a handler: its body template, envelope, environment and
    (from a dry run of the handler on one message) its table's key.

    Exit code 0 when the scenario was written, 2 for bad input (a handler that cannot
    be imported, an unreadable sample, an --out file that exists).
    """
    from loadtest.api import new_scenario

    if out_file is not None and out_file.exists():
        fail(Exit.BAD_INPUT, f"{out_file} exists; loadtest new never overwrites a file")
    if sample_message is not None:
        err.print("running the handler once on the sample (a dry run) to read its table's key...")
    try:
        text = new_scenario(handler, sample_message=sample_message, id_field=id_field)
    except InputError as exc:
        fail(Exit.BAD_INPUT, str(exc))
    if out_file is None:
        sys.stdout.write(text)
        return
    try:
        with out_file.open("x", encoding="utf-8") as written:
            written.write(text)
    except FileExistsError:
        fail(Exit.BAD_INPUT, f"{out_file} exists; loadtest new never overwrites a file")
    except OSError as exc:
        fail(Exit.BAD_INPUT, f"{out_file} could not be written: {exc}")
    err.print(f"wrote {out_file}; run it with: loadtest run {out_file}")

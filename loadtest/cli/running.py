"""Running a scenario from the command line: the live line, the library call, and an early end.

An interrupted or failed run still writes the report of what was measured,
marked incomplete, and says by name what it could not delete.
"""

from __future__ import annotations

import secrets
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from rich.live import Live
from rich.text import Text

from loadtest.aws.target import BackendKind
from loadtest.cli.console import Exit, err, error_text, fail, out, raise_mapped
from loadtest.cli.options import TargetChoice, library_target
from loadtest.cli.outputs import Outputs, plan_outputs, write_reports
from loadtest.errors import LoadtestError, find_error
from loadtest.interrupts import Stop
from loadtest.model.scenario.loading import Scenario
from loadtest.reports.text.render import render

if TYPE_CHECKING:
    from loadtest.api import Plan
    from loadtest.emulation.mapping.runner import Progress


def reproduce_command(scenario: Scenario) -> str:
    """The command line that ran, quoted for a shell, with the seed it used."""
    args = sys.argv[1:]
    if "--seed" not in args:
        args = [*args, "--seed", str(scenario.seed)]
    return "loadtest " + shlex.join(args)


class ProgressView:
    """A one-line live status on a terminal; nothing otherwise."""

    def __init__(self, live: Live | None) -> None:
        self.live = live

    def __call__(self, variant: str, p: Progress, planned: int, elapsed_s: float) -> None:
        if self.live is None:
            return
        settled = p.acked + p.dead_lettered
        rate = settled / elapsed_s if elapsed_s > 0 else 0.0
        eta = f"{(planned - settled) / rate:.0f}s" if rate > 0 and settled < planned else "-"
        self.live.update(
            Text(
                f"{variant}: sent {p.sent}/{planned}  received {p.received}  in flight {p.in_flight}  "
                f"acked {p.acked}  dead-lettered {p.dead_lettered}  duplicate writes {p.duplicate_writes}  "
                f"{elapsed_s:.1f}s elapsed, eta {eta}"
                + (f"  ! {p.rate_note}" if p.rate_note else "")
            )
        )


def execute_run(
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
    repeat: int = 1,
    history_path: Path | None = None,
    keep_history: bool = False,
) -> None:
    from loadtest.api import execute, prepare
    from loadtest.engine import Salvage
    from loadtest.engine.recording import check_history_path

    stop = Stop()
    salvage = Salvage()
    plan: Plan | None = None
    history: Path | None = None
    with stop.installed():
        try:
            plan = prepare(
                scenario_ref,
                variants=variants,
                handler=handlers,
                endpoint_url=endpoint_url,
                target=library_target(endpoint_url, target),
                thresholds=thresholds,
                seed=seed,
                cells=cells,
                prices=prices_path,
                repeat=repeat,
                **overrides,
            )
            if history_path is not None:
                check_history_path(history_path)
            json_path, outputs = plan_outputs(plan.scenario, json_path, out_dir, outputs)
            history = history_path or beside(json_path)
            if not quiet:
                err.print(Text(f"History: {history}", style="dim"))
            show_progress = not quiet and err.is_terminal
            with (
                Live(Text("starting…"), console=err, transient=True, refresh_per_second=8)
                if show_progress
                else null_context() as live
            ):
                result = execute(
                    plan,
                    on_progress=ProgressView(live),
                    command=reproduce_command(plan.scenario),
                    stop=stop,
                    salvage=salvage,
                    cleanup_timeout_s=cleanup_timeout_s,
                    history=history,
                    on_history_problem=history_problem,
                    # Which grid the terminal and the page show first (a sweep).
                    sweep_metric=metric,
                )
            written = write_reports(result, json_path, outputs)
            if history_path is None and not keep_history and result.incomplete is None:
                history.unlink(missing_ok=True)
        except BaseException as exc:
            if history is not None and history_path is None and not salvage.runs:
                # Nothing was measured (a handler that does not import, ...): no history to keep.
                history.unlink(missing_ok=True)
            end_early(exc, plan, salvage, json_path, outputs, stop)
    if not quiet:
        out.print(render(result.model))
        for path in written:
            out.print(Text(f"Report: {path}", style="dim"))
    if result.incomplete is not None:
        fail(Exit.INTERRUPTED, interrupted_message(result.incomplete, salvage, written))
    raise typer.Exit(result.exit_code)


def beside(json_path: Path) -> Path:
    """The history's default path: beside the JSON report, never an existing file."""
    path = json_path.with_suffix(".history")
    while path.exists():
        path = json_path.with_name(f"{json_path.stem}-{secrets.token_hex(3)}.history")
    return path


def history_problem(message: str) -> None:
    err.print(Text(f"warning: {message}", style="yellow"))


def end_early(
    exc: BaseException,
    plan: Plan | None,
    salvage: Any,
    json_path: Path | None,
    outputs: Outputs,
    stop: Stop,
) -> NoReturn:
    """A run that ended by an error or an abandoned cleanup: keep what was measured, then exit."""
    if isinstance(exc, typer.Exit):
        raise exc
    written: list[Path] = []
    interrupted = find_error(exc, KeyboardInterrupt) is not None
    problem = "" if interrupted else error_text(exc)
    if plan is not None and json_path is not None and salvage.runs:
        from loadtest.api import salvaged

        why = f"interrupted by {stop.reason or 'SIGINT'}" if interrupted else problem
        try:
            report = salvaged(plan, salvage, why, command=reproduce_command(plan.scenario))
            if report is not None:
                written = write_reports(report, json_path, outputs)
        except LoadtestError as write_error:
            err.print(Text(f"warning: {write_error}", style="yellow"))
    elif json_path is not None:
        # Claimed but never written: nothing was measured.
        for path in (json_path, outputs.html):
            if path is not None and path.exists() and path.stat().st_size == 0:
                path.unlink(missing_ok=True)
    if interrupted:
        fail(
            Exit.INTERRUPTED,
            interrupted_message(
                f"interrupted by {stop.reason or 'SIGINT'}", salvage, written, abandoned=True
            ),
        )
    for path in written:
        err.print(Text(f"Report (incomplete): {path}", style="dim"))
    raise_mapped(exc)


def interrupted_message(
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


class null_context:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *args: object) -> None:
        return None

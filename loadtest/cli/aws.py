"""The command line's AWS part: ``run --plan``, runs through deployed functions, ``cleanup``, ``lint``.

``loadtest.cli.app`` registers the commands on the Typer app.
Like ``loadtest.cli``, it only parses, calls the library, prints and exits.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.text import Text

from loadtest.cli.console import Exit, err, out
from loadtest.cli.console import fail as _fail
from loadtest.cli.console import raise_mapped as _raise_mapped
from loadtest.cli.options import EndpointOpt, QuietOpt
from loadtest.cli.outputs import Outputs
from loadtest.errors import InputError


def show_plan(
    scenario_ref: str,
    variants: list[str],
    handlers: list[str],
    *,
    seed: int | None,
    overrides: dict[str, object],
    region: str | None = None,
    prices_path: Path | None = None,
) -> None:
    """Print what a deploy would create, then exit 0; calls nothing, needs no credentials.

    The cost is priced at ``prices_path`` (``--prices``), else the committed table."""
    from loadtest.api import resolve_variants
    from loadtest.aws.clients import region_from_environment
    from loadtest.deploy.deploy_plan import plan_deploy, render_plan
    from loadtest.model.figures.price_tables import load_prices
    from loadtest.model.scenario.loading import load_scenario

    try:
        given = dict(overrides)
        env = given.pop("env", [])
        scenario = (
            load_scenario(scenario_ref).with_overrides(seed=seed, **given).with_environment(env)  # type: ignore[arg-type]
        )
        refs = resolve_variants(scenario, variants, handlers)
        prices = load_prices(prices_path)
    except InputError as exc:
        _fail(Exit.BAD_INPUT, str(exc))
    region = region_from_environment(region)
    plan = plan_deploy(scenario, refs, run_id=secrets.token_hex(4), region=region, prices=prices)
    out.print(Text(render_plan(plan)), end="")
    raise typer.Exit(int(Exit.OK))


CONFIRM_REFUSED = Exit.BAD_INPUT
"""Exit code when real AWS resources would be created without a confirmation (no terminal,
no --yes): 2, like any other input the run cannot go on without."""


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_remote(
    scenario_ref: str,
    variants: list[str],
    handlers: list[str],
    *,
    seed: int | None,
    endpoint_url: str | None,
    real_aws: bool,
    overrides: dict[str, Any],
    attach: tuple[str, str, str] | None,
    keep: bool,
    yes: bool,
    json_path: Path | None,
    out_dir: Path | None,
    quiet: bool,
    thresholds: list[str],
    outputs: Outputs,
    prices_path: Path | None = None,
    history_path: Path | None = None,
    keep_history: bool = False,
) -> NoReturn:
    """Deploy (or attach), run the workload through the real mapping, collect, judge, exit.

    ``history_path`` (or ``keep_history``: beside the JSON report) writes the run's history
    as it goes; a path that cannot be written exits 2 before anything is created.

    On real AWS the plan is printed and confirmed first (``--yes`` skips the
    question; without a terminal and without ``--yes`` it refuses, exit 2).
    What was made is deleted, and an attached function restored, also on an
    error, Ctrl-C or SIGTERM (then exit 130).
    """
    import signal
    import sys

    from loadtest.api import execute, prepare
    from loadtest.aws.clients import region_from_environment
    from loadtest.cli.outputs import plan_outputs, write_reports
    from loadtest.cli.running import beside, history_problem, reproduce_command
    from loadtest.deploy.deploy_plan import plan_attach, plan_deploy, render_plan
    from loadtest.deploy.remote_run import AttachTo
    from loadtest.engine.recording import check_history_path
    from loadtest.errors import LoadtestError
    from loadtest.reports.text.render import render

    try:
        plan = prepare(
            scenario_ref,
            variants=variants,
            handler=handlers,
            endpoint_url=endpoint_url,
            target="aws" if real_aws else None,
            thresholds=thresholds,
            seed=seed,
            prices=prices_path,
            deploy=True,
            **overrides,
        )
        if history_path is not None:
            check_history_path(history_path)
    except LoadtestError as exc:
        _raise_mapped(exc)
    run_id = secrets.token_hex(4)
    region = region_from_environment()
    target_to = AttachTo(*attach) if attach is not None else None
    if real_aws and not yes:
        if target_to is not None:
            shown = plan_attach(
                plan.scenario,
                function=target_to.function,
                function_role_arn="(the function's role)",
                queue_url=target_to.queue_url,
                table=target_to.table,
                run_id=run_id,
                region=region,
                prices=plan.prices,
            )
        else:
            shown = plan_deploy(
                plan.scenario, plan.refs, run_id=run_id, region=region, prices=plan.prices
            )
        out.print(Text(render_plan(shown)), end="")
        if not sys.stdin.isatty():
            _fail(
                CONFIRM_REFUSED,
                "this run creates resources in your AWS account (the plan above); "
                "nobody is here to confirm, so nothing was done: pass --yes to run it unattended",
            )
        if not typer.confirm("Create these resources and run?", default=False):
            err.print("Nothing created.")
            raise typer.Exit(int(Exit.OK))
    json_path, outputs = plan_outputs(plan.scenario, json_path, out_dir, outputs)
    # A deployed run writes its history when asked: a local run's default one is its spool.
    history = history_path or (beside(json_path) if keep_history else None)
    if history is not None and not quiet:
        err.print(Text(f"History: {history}", style="dim"))
    previous = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        report = execute(
            plan,
            keep=keep,
            attach=target_to,
            run_id=run_id,
            command=reproduce_command(plan.scenario),
            history=history,
            on_history_problem=history_problem,
        )
        written = write_reports(report, json_path, outputs)
    except KeyboardInterrupt as exc:
        left = [note for note in getattr(exc, "__notes__", []) if note.startswith("left behind")]
        if keep:
            cleanup = "its resources were kept (--keep)"
        elif left:
            cleanup = "NOT everything was deleted: " + "; ".join(left)
        else:
            cleanup = (
                "the attached function was restored"
                if target_to is not None
                else "what it created was deleted"
            )
        kept = f"; what it measured: `loadtest report {history}`" if history is not None else ""
        _fail(
            Exit.INTERRUPTED,
            f"run {run_id} interrupted; {cleanup}; `loadtest cleanup --run {run_id}` "
            f"finds anything left{kept}",
        )
    except LoadtestError as exc:
        _raise_mapped(exc)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not quiet:
        out.print(render(report.model))
        if keep and target_to is None:
            out.print(Text(f"Kept run {run_id}'s resources: loadtest cleanup --run {run_id}"))
        for path in written:
            out.print(Text(f"Report: {path}", style="dim"))
    raise typer.Exit(report.exit_code)


def cleanup(
    run: Annotated[
        str | None,
        typer.Option(
            "--run", metavar="ID", help="Only this run's resources (default: every run's)."
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Delete without asking.")] = False,
    endpoint_url: EndpointOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Delete the functions, mappings, layers, roles, queues, tables and sinks tagged loadtest:run.

    Never anything untagged. A function a killed attach run left redirected is
    restored, not deleted. Lists what it found and asks first, unless --yes.
    Exit code 0 when everything found was deleted, 1 when something was not,
    3 when the backend cannot be reached or refuses the credentials.
    """
    from loadtest.deploy.lambda_cleanup import delete_found, find_tagged, make_clients, translated
    from loadtest.errors import LoadtestError

    clients, where = make_clients(endpoint_url)
    try:
        with translated("list the resources tagged loadtest:run", where):
            found = find_tagged(clients, run)
    except LoadtestError as exc:
        _raise_mapped(exc)
    scope = f"run {run}" if run else "any run"
    if not found:
        if not quiet:
            out.print(f"Nothing tagged loadtest:run ({scope}) in {where}.")
        raise typer.Exit(int(Exit.OK))
    if not quiet or not yes:
        out.print(f"Tagged loadtest:run ({scope}) in {where}:")
        for item in found:
            out.print(Text(f"  {item.action} {item.kind}  {item.name}  (run {item.run_id})"))
    if not yes and not typer.confirm(f"Delete these {len(found)} resources?", default=False):
        err.print("Nothing deleted.")
        raise typer.Exit(int(Exit.OK))
    problems = delete_found(clients, found)
    if problems:
        for problem in problems:
            err.print(Text(f"not deleted: {problem}", style="yellow"))
        _fail(Exit.FAILED, f"{len(problems)} of {len(found)} resources were not deleted")
    if not quiet:
        out.print(f"Deleted {len(found)} resources.")
    raise typer.Exit(int(Exit.OK))


def lint(
    scenario: Annotated[
        str | None,
        typer.Argument(help="A built-in scenario name or a TOML file (or use --function)."),
    ] = None,
    function: Annotated[
        str | None,
        typer.Option(
            "--function", metavar="NAME", help="Read a deployed function's SQS mappings instead."
        ),
    ] = None,
    variant: Annotated[
        list[str],
        typer.Option(
            "--variant", metavar="NAME", help="Variants to judge (default: the scenario's)."
        ),
    ] = [],  # noqa: B006 - typer needs a literal default
    idempotency_expiry: Annotated[
        int | None,
        typer.Option(
            "--idempotency-expiry",
            metavar="S",
            help="How long the consumer's idempotency records live, in seconds "
            "(default: Powertools' 3600 for the powertools variant, else not checked).",
        ),
    ] = None,
    endpoint_url: EndpointOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Settings that invite duplicates: visibility vs function timeout, batch size and window,
    MaximumConcurrency vs reserved concurrency, redrive maxReceiveCount, idempotency expiry.

    A finding the scenario intends ([lint] intended) is shown as a NOTE and does not fail.
    Exit code 0 when nothing else is found, 1 when something is, 2 for bad input,
    3 when the backend cannot be reached (--function).
    """
    import dataclasses

    from loadtest.model.advice.lint import from_scenario, worded
    from loadtest.model.advice.lint import lint as lint_settings
    from loadtest.model.scenario.loading import load_scenario

    if (scenario is None) == (function is None):
        _fail(Exit.BAD_INPUT, "give a SCENARIO or --function NAME (one of them)")
    intended: tuple[str, ...] = ()
    if function is not None:
        from loadtest.deploy.lambda_cleanup import make_clients
        from loadtest.deploy.lint_aws import deployed_settings
        from loadtest.errors import LoadtestError

        clients, where = make_clients(endpoint_url)
        try:
            targets = deployed_settings(
                clients, function, idempotency_expiry_s=idempotency_expiry, where=where
            )
        except LoadtestError as exc:
            _raise_mapped(exc)
        if not targets:
            _fail(Exit.BAD_INPUT, f"function {function} has no SQS event source mapping ({where})")
    else:
        assert scenario is not None
        try:
            loaded = load_scenario(scenario)
        except InputError as exc:
            _fail(Exit.BAD_INPUT, str(exc))
        settings = from_scenario(loaded, variant)
        if idempotency_expiry is not None:
            settings = dataclasses.replace(settings, idempotency_expiry_s=idempotency_expiry)
        targets = [settings]
        intended = loaded.lint_intended
    findings = 0
    for settings in targets:
        found = lint_settings(settings)
        findings += sum(finding.rule not in intended for finding in found)
        if quiet:
            continue
        if not found:
            out.print(Text(f"OK  {settings.source}", style="green"))
        for finding in found:
            label = Text("WARN", style="bold yellow")
            if finding.rule in intended:
                label = Text("NOTE", style="bold")
            out.print(
                Text.assemble(
                    label, f"  {settings.source}: [{finding.rule}] {worded(finding, intended)}"
                )
            )
    raise typer.Exit(int(Exit.FAILED if findings else Exit.OK))

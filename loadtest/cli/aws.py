"""The command line's AWS part: ``run --plan``, ``cleanup`` and ``lint``.

``loadtest.cli.commands`` registers these on its app (``register``), so the
Lambda path adds commands without reshaping the main module.
Like ``loadtest.cli``, it only parses, calls the library, prints and exits.
"""

from __future__ import annotations

import os
import secrets
from typing import Annotated

import typer
from rich.text import Text

from loadtest.api import resolve_variants as _refs
from loadtest.cli.commands import app
from loadtest.cli.console import Exit, err, out
from loadtest.cli.console import fail as _fail
from loadtest.cli.console import raise_mapped as _raise_mapped
from loadtest.cli.options import EndpointOpt, QuietOpt
from loadtest.errors import InputError


def show_plan(
    scenario_ref: str,
    variants: list[str],
    handlers: list[str],
    *,
    seed: int | None,
    overrides: dict[str, object],
    region: str | None = None,
) -> None:
    """Print what a deploy would create, then exit 0; calls nothing, needs no credentials."""
    from loadtest.adapters.aws import DEFAULT_REGION
    from loadtest.deploy.deploy_plan import plan_deploy, render_plan
    from loadtest.model.scenario import load_scenario

    try:
        scenario = load_scenario(scenario_ref).with_overrides(seed=seed, **overrides)
        refs = _refs(scenario, variants, handlers)
    except InputError as exc:
        _fail(Exit.BAD_INPUT, str(exc))
    region = (
        region
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or DEFAULT_REGION
    )
    plan = plan_deploy(scenario, refs, run_id=secrets.token_hex(4), region=region)
    out.print(Text(render_plan(plan)), end="")
    raise typer.Exit(int(Exit.OK))


@app.command()
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
    """Delete the functions, mappings, layers, roles, queues and tables tagged loadtest:run.

    Never anything untagged. A function a killed attach run left redirected is
    restored, not deleted. Lists what it found and asks first, unless --yes.
    Exit code 0 when everything found was deleted, 1 when something was not,
    3 when the backend cannot be reached or refuses the credentials.
    """
    from loadtest.deploy.lambda_cleanup import (
        delete_found,
        find_tagged,
        make_clients,
        translate_call_error,
    )
    from loadtest.deploy.lambda_deploy import CALL_ERRORS

    clients, where = make_clients(endpoint_url)
    try:
        found = find_tagged(clients, run)
    except CALL_ERRORS as exc:
        _raise_mapped(translate_call_error(exc, "list the resources tagged loadtest:run", where))
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


@app.command()
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

    Exit code 0 when nothing is found, 1 when something is, 2 for bad input,
    3 when the backend cannot be reached (--function).
    """
    import dataclasses

    from loadtest.model.lint import from_scenario
    from loadtest.model.lint import lint as lint_settings
    from loadtest.model.scenario import load_scenario

    if (scenario is None) == (function is None):
        _fail(Exit.BAD_INPUT, "give a SCENARIO or --function NAME (one of them)")
    if function is not None:
        from loadtest.deploy.lambda_cleanup import make_clients, translate_call_error
        from loadtest.deploy.lambda_deploy import CALL_ERRORS
        from loadtest.deploy.lint_aws import deployed_settings

        clients, where = make_clients(endpoint_url)
        try:
            targets = deployed_settings(clients, function, idempotency_expiry_s=idempotency_expiry)
        except CALL_ERRORS as exc:
            if getattr(exc, "response", {}).get("Error", {}).get("Code") == (
                "ResourceNotFoundException"
            ):
                _fail(Exit.BAD_INPUT, f"function {function} does not exist ({where})")
            _raise_mapped(translate_call_error(exc, f"read function {function}'s mappings", where))
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
    findings = 0
    for settings in targets:
        found = lint_settings(settings)
        findings += len(found)
        if quiet:
            continue
        if not found:
            out.print(Text(f"OK  {settings.source}", style="green"))
        for finding in found:
            out.print(
                Text.assemble(
                    Text("WARN", style="bold yellow"),
                    f"  {settings.source}: [{finding.rule}] {finding.message}",
                )
            )
    raise typer.Exit(int(Exit.FAILED if findings else Exit.OK))

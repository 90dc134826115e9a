"""The command line's AWS part: ``run --plan``, ``cleanup`` and ``lint``.

Kept beside ``loadtest.cli`` (which imports it last, so these commands join
its app) so the Lambda path adds commands without reshaping the main module.
Like ``loadtest.cli``, it only parses, calls the library, prints and exits.
"""

from __future__ import annotations

import secrets

import typer
from rich.text import Text

from loadtest.cli import (
    Exit,
    _fail,
    _refs,
    out,
)
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
    import os

    from loadtest.aws import DEFAULT_REGION
    from loadtest.deploy_plan import plan_deploy, render_plan
    from loadtest.scenario import load_scenario

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

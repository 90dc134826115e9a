"""The Typer app: owns ``app`` and registers every command module's commands on it, once.

Command modules define plain functions and never import ``app``; the order of
registration is the order ``loadtest --help`` and the generated CLI reference
list them.
"""

from __future__ import annotations

import typer

from loadtest.cli import aws, commands, explore, shrinking, tools
from loadtest.cli.pipes import guard_standard_streams

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
app.callback()(commands.options)
app.command()(commands.run)
app.command(name="compare", help=commands.COMPARE_HELP)(commands.run)
app.command()(commands.sweep)
app.command()(aws.cleanup)
app.command()(aws.lint)
app.command()(explore.explore)
app.command()(shrinking.shrink)
app.command()(tools.scenarios)
app.command()(tools.report)
app.command()(tools.serve)
app.command()(tools.doctor)
app.command()(tools.diff)
app.command()(tools.new)


def main() -> None:
    """The ``loadtest`` command: a reader that closes its end of stdout early (``| head``)
    changes nothing, the exit code included (``loadtest.cli.pipes``)."""
    guard_standard_streams()
    app()


__all__ = ["app", "main"]

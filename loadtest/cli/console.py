"""The command line's consoles, exit codes and error mapping: where a failure becomes an exit.

On a terminal, rich's usual console; in a pipe, one that never cuts or wraps a
name, number or path. Exit codes: 0 every verdict passed; 1 a
verdict failed; 2 bad input; 3 the backend could not be reached or refused the
credentials; 4 a verdict was inconclusive, or loadtest's own machinery failed
(a ``ZygoteError``: no verdict can be given, and 1 would blame the consumer);
130 interrupted.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NoReturn

import typer
from rich.console import Console
from rich.text import Text

from loadtest.errors import BackendError, InputError, LoadtestError, find_error


class Exit(IntEnum):
    OK = 0
    FAILED = 1
    BAD_INPUT = 2
    BACKEND = 3
    INCONCLUSIVE = 4
    INTERRUPTED = 130


def _console(*, stderr: bool = False) -> Console:
    """On a terminal, rich's usual console; in a pipe, one that never cuts or wraps a line.

    A name, path or reproduce command cut or wrapped mid-token breaks when copied.
    """
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    return Console(stderr=stderr, width=100_000, soft_wrap=True)


out = _console()
err = _console(stderr=True)


def fail(code: Exit, message: str) -> NoReturn:
    err.print(Text(f"error: {message}", style="bold red"))
    raise typer.Exit(int(code))


def error_text(exc: BaseException) -> str:
    found = find_error(exc, LoadtestError)
    return str(found) if found is not None else f"{type(exc).__name__}: {exc}"


def raise_mapped(exc: BaseException) -> NoReturn:
    """Turn a loadtest error (possibly inside a task group's exception group) into an exit."""
    if isinstance(exc, typer.Exit):
        raise exc
    if find_error(exc, KeyboardInterrupt) is not None:
        fail(Exit.INTERRUPTED, "interrupted")
    bad = find_error(exc, InputError)
    if bad is not None:
        fail(Exit.BAD_INPUT, str(bad))
    backend = find_error(exc, BackendError)
    if backend is not None:
        fail(Exit.BACKEND, str(backend))
    other = find_error(exc, LoadtestError)
    if other is not None:
        # loadtest's own failure: the run ended without a verdict. Exit 1 would
        # tell a CI job that the consumer failed.
        fail(Exit.INCONCLUSIVE, f"{other} (no verdict)")
    raise exc

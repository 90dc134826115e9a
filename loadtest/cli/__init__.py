"""The command line: the only layer that parses arguments, prints, writes report files and exits.

Owns the ``loadtest`` commands (``commands``) and the developer benchmark
(``python -m loadtest.cli.bench``). It calls the library (``loadtest.api``)
and renders what it returns; no rule of the run or the verdict lives here.
"""

from __future__ import annotations

from loadtest.cli.commands import app, main

__all__ = ["app", "main"]

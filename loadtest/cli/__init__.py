"""The command line: the only layer that parses arguments, prints, writes report files and exits.

The Typer app and its registration of every command is ``app``'s; the run
commands are ``commands``', the others ``aws``, ``explore``, ``shrinking`` and
``tools``'. It calls the library (``loadtest.api``)
and renders what it returns; no rule of the run or the verdict lives here.
"""

from __future__ import annotations

from loadtest.cli.app import app, main

__all__ = ["app", "main"]

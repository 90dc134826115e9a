"""MkDocs hooks: the reference pages generated from the code at build time, so they cannot drift.

A page asks for a generated part with a marker comment on a line of its own:

- ``<!-- generated: scenario-fields -->``: every scenario section's fields, with their
  type, default, allowed range, command-line override and description, read from
  ``loadtest.model.scenario.settings`` (the dataclasses, ``LIMITS`` and the field docstrings);
- ``<!-- generated: builtin-scenarios -->``: the built-in scenarios and their descriptions;
- ``<!-- generated: lint-rules -->``: the lint rules a scenario may name in ``[lint] intended``;
- ``<!-- generated: cli -->``: every command of the Typer app with its usage, help and
  options, as ``loadtest COMMAND --help`` shows them.

Wired in mkdocs.yml (``hooks:``); ``nox -s docs`` builds with ``--strict``.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import textwrap
from enum import StrEnum
from typing import Any

MARKERS = ("scenario-fields", "builtin-scenarios", "cli", "lint-rules")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    for marker in MARKERS:
        token = f"<!-- generated: {marker} -->"
        if token in markdown:
            markdown = markdown.replace(token, GENERATORS[marker]())
    return markdown


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _field_docs(cls: type) -> dict[str, str]:
    """The docstrings written under a class's fields or members (attribute docstrings)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    definition = tree.body[0]
    assert isinstance(definition, ast.ClassDef)
    docs: dict[str, str] = {}
    for node, following in itertools.pairwise(definition.body):
        target: ast.expr | None = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if (
            isinstance(target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[target.id] = inspect.cleandoc(following.value.value)
    return docs


def _type_name(kind: Any) -> str:
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        return " \\| ".join(f'`"{member.value}"`' for member in kind)
    return {"int": "integer", "float": "number", "bool": "boolean", "str": "string"}.get(
        getattr(kind, "__name__", str(kind)), str(kind)
    )


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def _default(value: Any) -> str:
    if isinstance(value, StrEnum):
        return f'`"{value.value}"`'
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"


STRUCTURED_SHAPES = {
    "messages": ("array of tables", "`body`, `copies`, `poison`"),
    "body": ("table", "a template: strings may hold `{id}`, `{quantity}`, ..."),
    "envelope": ("string or table", '`"none"`, `"sns"`, `"eventbridge"`'),
    "attributes": ("table", "name = String, Number or Binary value"),
}
"""How the workload's structured fields (tables and arrays, no override) are written."""


def scenario_fields() -> str:
    import typing

    from loadtest.cli.options import option_name
    from loadtest.model.scenario.fields import STRUCTURED
    from loadtest.model.scenario.settings import (
        LIMITS,
        OVERRIDE,
        ConsumerSettings,
        Faults,
        RunSettings,
        Workload,
    )

    out: list[str] = []
    for section, cls in (
        ("workload", Workload),
        ("consumer", ConsumerSettings),
        ("faults", Faults),
        ("run", RunSettings),
    ):
        hints = typing.get_type_hints(cls)
        docs = _field_docs(cls)
        out += [
            f"### `[{section}]`",
            "",
            _cell(inspect.getdoc(cls) or ""),
            "",
            "| field | type | default | allowed | override | meaning |",
            "|---|---|---|---|---|---|",
        ]
        for f in dataclasses.fields(cls):
            if f.name in STRUCTURED:
                kind, allowed = STRUCTURED_SHAPES.get(f.name, ("table", ""))
                out.append(
                    f"| `{f.name}` | {kind} | none | {allowed} | | {_cell(docs.get(f.name, ''))} |"
                )
                continue
            low_high = LIMITS.get(f.name)
            allowed = f"{_number(low_high[0])} .. {_number(low_high[1])}" if low_high else ""
            override = (
                f"`--{option_name(f.name).replace('_', '-')}`" if OVERRIDE in f.metadata else ""
            )
            meaning = docs.get(f.name) or (
                f.metadata[OVERRIDE].help if OVERRIDE in f.metadata else ""
            )
            out.append(
                f"| `{f.name}` | {_type_name(hints[f.name])} | {_default(f.default)} | {allowed} "
                f"| {override} | {_cell(meaning)} |"
            )
        out.append("")
    return "\n".join(out)


def builtin_scenarios() -> str:
    from loadtest.model.scenario.loading import builtin_scenarios as scenarios

    out = ["| scenario | variants | description |", "|---|---|---|"]
    for name, scenario in scenarios().items():
        variants = ", ".join(f"`{v}`" for v in scenario.variants)
        out.append(f"| `{name}` | {variants} | {_cell(scenario.description)} |")
    return "\n".join(out) + "\n"


def cli() -> str:
    import typer

    from loadtest.cli import app

    root = typer.main.get_command(app)
    out: list[str] = []
    ctx = typer.Context(root, info_name="loadtest")
    group: Any = root  # a TyperGroup (Typer carries its own copy of click)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        sub = typer.Context(command, info_name=name, parent=ctx)
        out += [f"## `loadtest {name}`", "", "```text", f"{command.get_usage(sub)}", "```", ""]
        out += [inspect.cleandoc(command.help or ""), ""]
        rows = []
        for param in command.get_params(sub):
            record = param.get_help_record(sub)
            if record is None:
                continue
            names, help_text = record
            rows.append(f"| `{_cell(names)}` | {_cell(help_text)} |")
        if rows:
            out += ["| option | meaning |", "|---|---|", *rows, ""]
    return "\n".join(out)


def lint_rules() -> str:
    from loadtest.model.advice.lint import Rule

    docs = _field_docs(Rule)
    out = ["| rule | fires when |", "|---|---|"]
    out += [f"| `{rule.value}` | {_cell(docs.get(rule.name, ''))} |" for rule in Rule]
    return "\n".join(out) + "\n"


GENERATORS = {
    "scenario-fields": scenario_fields,
    "builtin-scenarios": builtin_scenarios,
    "cli": cli,
    "lint-rules": lint_rules,
}

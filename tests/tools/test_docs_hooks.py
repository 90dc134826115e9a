"""tools/docs_hooks.py: the generated reference pages cover every field, command and rule."""

from __future__ import annotations

import dataclasses

import typer

from loadtest.cli import app
from loadtest.model.advice.lint import Rule
from loadtest.model.scenario.loading import builtin_scenarios
from loadtest.model.scenario.settings import ConsumerSettings, Faults, RunSettings, Workload
from tools import docs_hooks


def test_every_scenario_field_has_a_row_with_its_default() -> None:
    text = docs_hooks.scenario_fields()
    for cls in (Workload, ConsumerSettings, Faults, RunSettings):
        for f in dataclasses.fields(cls):
            assert f"| `{f.name}` |" in text, f.name
    assert "| `visibility_timeout_s` | integer | `30` | 0 .. 43,200 | `--visibility-timeout` |" in (
        text
    )


def test_every_command_and_its_options_are_listed() -> None:
    text = docs_hooks.cli()
    group = typer.main.get_command(app)
    ctx = typer.Context(group, info_name="loadtest")
    names = group.list_commands(ctx)  # type: ignore[attr-defined]
    assert len(names) >= 10
    for name in names:
        assert f"## `loadtest {name}`" in text
        command = group.get_command(ctx, name)  # type: ignore[attr-defined]
        sub = typer.Context(command, info_name=name, parent=ctx)
        section = text.split(f"## `loadtest {name}`")[1].split("\n## ")[0]
        for param in command.get_params(sub):
            for opt in param.opts:
                if opt.startswith("--"):
                    assert opt in section, (name, opt)


def test_builtin_scenarios_and_lint_rules_are_listed() -> None:
    scenarios = docs_hooks.builtin_scenarios()
    for name in builtin_scenarios():
        assert f"| `{name}` |" in scenarios
    rules = docs_hooks.lint_rules()
    for rule in Rule:
        assert f"| `{rule.value}` |" in rules


def test_a_marker_is_replaced_and_other_text_kept() -> None:
    page = "# Title\n\n<!-- generated: lint-rules -->\n\nAfter.\n"
    out = docs_hooks.on_page_markdown(page, None, None, None)
    assert out.startswith("# Title\n\n| rule | fires when |") and out.endswith("\n\nAfter.\n")
    assert "<!-- generated" not in out

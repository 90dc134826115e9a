"""Scenarios by name or by file: the built-in scenarios, and loading a scenario's TOML.

Owns ``load_scenario`` (a built-in name or a path to a TOML file: the one file it reads),
``builtin_scenarios`` (the TOML files shipped with the package) and ``parse_text``. The
scenario itself, its file format and its validation are ``loadtest.model.scenario.model``'s
(the field checks ``loadtest.model.scenario.fields``', the sections ``settings``'); their
names are re-exported here, so ``loadtest.model.scenario.loading`` is the one name to import a
scenario by. Every refusal names the file and what is allowed and raises ``ScenarioError``.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from loadtest.errors import ScenarioError
from loadtest.model.scenario.fields import NAME_MAX_CHARS, RELAXABLE, check_name, safe_name
from loadtest.model.scenario.model import (
    POINT_FAULTS_OVERRIDE,
    Scenario,
    override_fields,
    parse_scenario,
    to_raw,
)
from loadtest.model.scenario.settings import (
    LIMITS,
    OVERRIDE,
    Arrival,
    ConsumerSettings,
    CopySpacing,
    Deduplication,
    ExplicitMessage,
    Faults,
    JsonObject,
    MessageGroup,
    Order,
    Override,
    RunSettings,
    Workload,
)

__all__ = [
    "LIMITS",
    "NAME_MAX_CHARS",
    "OVERRIDE",
    "POINT_FAULTS_OVERRIDE",
    "RELAXABLE",
    "Arrival",
    "ConsumerSettings",
    "CopySpacing",
    "Deduplication",
    "ExplicitMessage",
    "Faults",
    "JsonObject",
    "MessageGroup",
    "Order",
    "Override",
    "RunSettings",
    "Scenario",
    "Workload",
    "builtin_scenarios",
    "check_name",
    "load_scenario",
    "override_fields",
    "parse_scenario",
    "parse_text",
    "safe_name",
    "to_raw",
]


def _builtin_dir() -> Any:
    """The built-in scenarios: the top-level scenarios/ folder.

    An installed wheel carries it as the package ``loadtest.scenarios``; an
    editable install or a source checkout reads the folder beside the package.
    """
    try:
        return resources.files("loadtest.scenarios")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[3] / "scenarios"


def _builtin_files() -> dict[str, Any]:
    """Each built-in scenario's TOML file by name, in name order (nothing parsed)."""
    files = {
        entry.name.removesuffix(".toml"): entry
        for entry in _builtin_dir().iterdir()
        if entry.name.endswith(".toml")
    }
    return dict(sorted(files.items()))


def _parse_builtin(name: str, entry: Any) -> Scenario:
    return _parse_text(entry.read_text(encoding="utf-8"), f"builtin:{name}", name)


def builtin_scenarios() -> dict[str, Scenario]:
    """Every built-in scenario by name (the TOML files shipped with the package)."""
    return {name: _parse_builtin(name, entry) for name, entry in _builtin_files().items()}


def _parse_text(text: str, source: str, default_name: str) -> Scenario:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message already carries "(at line N, column M)".
        raise ScenarioError(f"{source}: not valid TOML: {exc}") from exc
    if not raw:
        raise ScenarioError(
            f"{source}: the scenario is empty; give at least a [workload] table (see "
            "scenarios/*.toml), so nothing runs by accident with the defaults"
        )
    return parse_scenario(raw, source=source, default_name=default_name)


def parse_text(text: str, source: str, default_name: str = "scenario") -> Scenario:
    """A scenario from TOML text; ``source`` names it in messages."""
    return _parse_text(text, source, default_name)


def load_scenario(ref: str) -> Scenario:
    """Load a scenario by built-in name or by path to a TOML file."""
    path = Path(ref)
    if ref.endswith(".toml") or path.exists() or "/" in ref:
        if path.is_dir():
            raise ScenarioError(
                f"scenario {ref!r} is a directory; give a path to a .toml file in it "
                f"or a built-in name ({', '.join(_builtin_files())})"
            )
        if not path.is_file():
            raise ScenarioError(
                f"scenario file {ref!r} does not exist; give a path to a .toml file "
                f"or a built-in name ({', '.join(_builtin_files())})"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"scenario file {ref!r} could not be read: {exc}") from exc
        return _parse_text(text, str(path), path.stem)
    # Only the named file is parsed: a run loads its one scenario, not all of them.
    builtins = _builtin_files()
    if ref not in builtins:
        raise ScenarioError(
            f"unknown scenario {ref!r}; built-in scenarios: {', '.join(builtins)} "
            "(or give a path to a .toml file)"
        )
    return _parse_builtin(ref, builtins[ref])

"""What a caller names, resolved and checked: the scenario, the consumers, the backend.

Owns turning a library call's or a command line's names into the objects a run
takes: a scenario (a built-in name, a path or a ``Scenario``; its own thresholds
checked), the variants and handler references to run, and the backend kind
(``embedded``, ``endpoint``, ``aws``). Bad input raises ``InputError`` or
``ScenarioError`` naming what is allowed. Re-exported by ``loadtest.api``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from loadtest.aws.clients import BackendKind
from loadtest.emulation.environment.handlers import BUILTIN_VARIANTS, HandlerRef, parse_ref
from loadtest.errors import InputError
from loadtest.model.figures.thresholds import check_scenario
from loadtest.model.scenario.loading import Scenario, load_scenario

TARGETS = ("embedded", "endpoint", "aws")


def resolve_scenario(scenario: str | Path | Scenario) -> Scenario:
    if isinstance(scenario, Scenario):
        return check_scenario(scenario)
    return check_scenario(load_scenario(str(scenario)))


def resolve_variants(
    scenario: Scenario, variants: Sequence[str] = (), handlers: Sequence[str] = ()
) -> list[HandlerRef]:
    """The consumers to run: named variants (comma lists allowed) and handler references.

    With neither, the scenario's own variants.
    """
    names = [v.strip() for item in variants for v in item.split(",") if v.strip()]
    if not names and not handlers:
        names = list(scenario.variants)
        if not names:
            raise InputError(
                f"{scenario.source}: variants = [] names no consumer; give one with --handler "
                "path/to/file.py:function (or --variants NAME)"
            )
    refs = []
    for name in names:
        if name not in BUILTIN_VARIANTS and ":" not in name:
            raise InputError(
                f"unknown variant {name!r}; built-in variants: {', '.join(BUILTIN_VARIANTS)} "
                "(or give a handler as package.module:function or path/to/file.py:function)"
            )
        refs.append(parse_ref(name))
    refs.extend(parse_ref(h) for h in handlers)
    return refs


def backend_kind(target: str | None, endpoint_url: str | None) -> BackendKind:
    """embedded (default), an endpoint (when ``endpoint_url`` is given) or real AWS.

    ``target="embedded"`` with an ``endpoint_url`` is an embedded backend already
    running there (a test session's, ``loadtest serve``): used as it is, left running.
    """
    if target is not None and target not in TARGETS:
        raise InputError(f"target {target!r} is not allowed; allowed: {', '.join(TARGETS)}")
    if target == "aws":
        if endpoint_url:
            raise InputError("endpoint_url and target 'aws' exclude each other; give one")
        return BackendKind.AWS
    if target == "endpoint" and not endpoint_url:
        raise InputError("target 'endpoint' needs endpoint_url")
    if target == "embedded":
        return BackendKind.EMBEDDED
    return BackendKind.ENDPOINT if endpoint_url else BackendKind.EMBEDDED

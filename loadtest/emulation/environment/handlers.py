"""Handler references: built-in variant names and ``module:function`` / ``file.py:function``.

Resolving a reference to a callable happens inside an execution environment
(``loadtest.emulation.environment.child_host``); this module only names and parses references, so the
parent never imports user code.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from loadtest.errors import HandlerRefError
from loadtest.model.scenario.function_config import ExtraTable, FunctionSetup

BUILTIN_VARIANTS: dict[str, str] = {
    "conditional": "consumer.conditional:handler",
    "read-then-write": "consumer.read_then_write:handler",
    "unconditional": "consumer.unconditional:handler",
    "transactional": "consumer.transactional:handler",
    "powertools": "consumer.powertools:handler",
    "publish-before-guard": "consumer.publish_before_guard:handler",
    "publish-after-guard": "consumer.publish_after_guard:handler",
    "outbox": "consumer.outbox:handler",
}
"""Built-in consumer variants and the handler each runs."""

VARIANT_TABLES: dict[str, tuple[ExtraTable, ...]] = {
    "powertools": (
        ExtraTable(
            name=None,
            key=(("id", "S"),),
            env="IDEMPOTENCY_TABLE_NAME",
            purpose="idempotency records (Powertools)",
        ),
    ),
}
"""The extra tables a built-in variant needs, declared as a scenario's ``[[tables]]`` are."""


def tables_for(ref: HandlerRef, setup: FunctionSetup) -> tuple[ExtraTable, ...]:
    """The extra tables a run of ``ref`` makes: the scenario's, then the built-in variant's
    own (unless the scenario already declares a table behind the same variable)."""
    declared = {t.env for t in setup.tables if t.env}
    own = tuple(t for t in VARIANT_TABLES.get(ref.variant, ()) if t.env not in declared)
    return (*setup.tables, *own)


@dataclass(frozen=True)
class HandlerRef:
    """A parsed handler reference."""

    variant: str
    """The name shown in reports: a built-in name, or the reference as given."""
    module: str | None
    """Dotted module path (``pkg.module``), or None for a file reference."""
    path: str | None
    """Absolute path of a ``.py`` file, or None for a module reference."""
    function: str

    @property
    def ref(self) -> str:
        return f"{self.path or self.module}:{self.function}"


def parse_ref(text: str) -> HandlerRef:
    """Parse a variant name or handler reference; check that the file or module exists.

    Does not import anything: import errors are reported by the execution
    environment that loads it (its cold start, once the run's resources exist).
    """
    variant = text
    if text in BUILTIN_VARIANTS:
        text = BUILTIN_VARIANTS[text]
    module_part, sep, function = text.rpartition(":")
    allowed = (
        f"a built-in variant ({', '.join(BUILTIN_VARIANTS)}), "
        "package.module:function, or path/to/file.py:function"
    )
    if not sep or not module_part or not function.isidentifier():
        raise HandlerRefError(f"handler reference {variant!r} is not valid; use {allowed}")
    if module_part.endswith(".py") or "/" in module_part:
        path = Path(module_part).resolve()
        if not path.is_file():
            raise HandlerRefError(f"handler file {module_part!r} (in {variant!r}) does not exist")
        return HandlerRef(variant=variant, module=None, path=str(path), function=function)
    if not all(part.isidentifier() for part in module_part.split(".")):
        raise HandlerRefError(f"handler reference {variant!r} is not valid; use {allowed}")
    try:
        # Execution environments run with the working directory on their path
        # (a Lambda task root); look the module up the same way.
        sys.path.insert(0, os.getcwd())
        try:
            spec = importlib.util.find_spec(module_part)
        finally:
            sys.path.remove(os.getcwd())
    except (ImportError, ValueError) as exc:
        raise HandlerRefError(f"handler module {module_part!r} cannot be found: {exc}") from exc
    if spec is None:
        raise HandlerRefError(
            f"handler module {module_part!r} (in {variant!r}) cannot be found on the Python path; "
            f"use {allowed}"
        )
    return HandlerRef(variant=variant, module=module_part, path=None, function=function)

"""The consumer's function configuration as deployed: its environment and the tables it needs.

Owns three parts of a scenario and their validation:

- ``[consumer] environment = { NAME = "VALUE" }`` (and ``--env NAME=VALUE``, which wins):
  variables the function is configured with. A value may name the run's resources with
  placeholders: ``{table}``, ``{queue_url}``, ``{queue_arn}``, ``{queue_name}``,
  ``{dlq_url}``, ``{region}``, ``{table:LABEL}`` (an extra table, by its ``name`` or ``env``), and the
  sinks of ``loadtest.model.scenario.placeholders`` (``{topic:NAME}``, ...).
- ``[table]``: the outcome table's own ``name`` (for a consumer that hard-codes it)
  and ``key`` schema (``{ orderId = "S" }``: hash, then optional range; S, N or B).
  Declaring the key says how the table is built, not where outcomes live
  (that is ``[outcome] key``).
- ``[[tables]]``: extra tables a consumer needs (an idempotency store, a lock table),
  each with a ``name`` or a generated one, a ``key`` and the ``env`` variable that
  names it; created per run and deleted after.

Pure: parses, validates and renders text; what the run's resources are called is
given by the caller (``RunResources``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from loadtest.errors import ScenarioError
from loadtest.model.scenario.placeholders import (
    SINK_PLACEHOLDERS,
    Sink,
    sink_forms,
    sink_of,
    sinks_in,
)

PLACEHOLDERS: tuple[str, ...] = (
    "table",
    "queue_url",
    "queue_arn",
    "queue_name",
    "dlq_url",
    "region",
)
"""The run's resources an environment value may name (plus ``{table:LABEL}``)."""
KEY_TYPES: tuple[str, ...] = ("S", "N", "B")
DEFAULT_KEY: tuple[tuple[str, str], ...] = (("id", "S"),)
"""An extra table's key when its entry gives none (Powertools' idempotency table's)."""

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")
_ATTRIBUTE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,255}")
_UNCLOSED = re.compile(
    r"\{\s*("
    + "|".join(
        re.escape(word)
        for word in sorted(
            {*PLACEHOLDERS, *SINK_PLACEHOLDERS},
            key=len,
            reverse=True,
        )
    )
    + r")\b"
)
"""A placeholder's opening left without its closing brace (``{queue_url:orders``)."""
_RESERVED_ENV = frozenset(
    {"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_LAMBDA_FUNCTION_NAME", "AWS_ENDPOINT_URL"}
)
"""Variables the run itself sets for the function (as Lambda does); a scenario may not."""


@dataclass(frozen=True)
class ExtraTable:
    """One ``[[tables]]`` entry: a table the consumer needs besides the outcome table."""

    name: str | None
    """A fixed name (the consumer hard-codes it), or None for a generated one."""
    key: tuple[tuple[str, str], ...] = DEFAULT_KEY
    """Key attributes and their types (hash, then range)."""
    env: str | None = None
    """The environment variable that tells the function its name."""
    purpose: str = field(default="extra table", compare=False)
    """What it is for, in the deploy plan's words."""

    @property
    def key_names(self) -> tuple[str, ...]:
        """Its key attributes' names (hash, then range)."""
        return tuple(name for name, _ in self.key)

    @property
    def labels(self) -> tuple[str, ...]:
        """What ``{table:LABEL}`` may call it: its name and its variable."""
        return tuple(label for label in (self.name, self.env) if label)


@dataclass(frozen=True)
class FunctionSetup:
    """The function's configuration a scenario declares (all optional)."""

    environment: tuple[tuple[str, str], ...] = ()
    """Variables, their values still holding placeholders."""
    table_name: str | None = None
    """``[table] name``: the outcome table's fixed name, or None for a generated one."""
    table_key: tuple[tuple[str, str], ...] = ()
    """``[table] key``; empty: the outcome key's attributes, strings."""
    tables: tuple[ExtraTable, ...] = ()

    @property
    def sinks(self) -> tuple[Sink, ...]:
        """The sinks the variables name (``{topic:NAME}``, ...), each once, in order."""
        return sinks_in(value for _, value in self.environment)

    def with_environment(self, pairs: Sequence[str], source: str = "--env") -> FunctionSetup:
        """Add ``NAME=VALUE`` pairs (the command line's; they win over the file's)."""
        given: dict[str, str] = dict(self.environment)
        for pair in pairs:
            name, sep, value = pair.partition("=")
            if not sep:
                raise ScenarioError(
                    f"{source} {pair!r} is not allowed; give NAME=VALUE, e.g. "
                    '--env DYNAMODB_TABLE="{table}"'
                )
            given[name.strip()] = value
        environment = _environment(given, source, self.tables, where=source)
        return replace(self, environment=environment)

    def key_schema(self, outcome_key_names: Sequence[str]) -> tuple[tuple[str, str], ...]:
        """The outcome table's key schema: ``[table] key``, else the outcome key's (strings)."""
        return self.table_key or tuple((name, "S") for name in outcome_key_names)

    def to_raw(self) -> dict[str, Any]:
        """The parts given, as scenario TOML data (``{}`` when none)."""
        raw: dict[str, Any] = {}
        table: dict[str, Any] = {}
        if self.table_name:
            table["name"] = self.table_name
        if self.table_key:
            table["key"] = dict(self.table_key)
        if table:
            raw["table"] = table
        if self.tables:
            raw["tables"] = [
                {
                    **({"name": t.name} if t.name else {}),
                    "key": dict(t.key),
                    **({"env": t.env} if t.env else {}),
                }
                for t in self.tables
            ]
        return raw


@dataclass(frozen=True)
class RunResources:
    """What a run's resources are called: what placeholders stand for."""

    table: str
    queue_url: str
    queue_arn: str
    queue_name: str
    dlq_url: str
    region: str
    tables: Mapping[str, str] = field(default_factory=dict)
    """Each extra table's name, by every label it answers to."""
    sinks: Mapping[str, str] = field(default_factory=dict)
    """What each sink placeholder stands for, by its text (``topic:orders`` -> the ARN)."""


def parse_setup(
    consumer: Mapping[str, Any], table: Mapping[str, Any], tables: Any, source: str
) -> FunctionSetup:
    """Validate ``[consumer] environment``, ``[table]`` and ``[[tables]]``."""
    extra = _tables(tables, source)
    raw_env = consumer.get("environment", {})
    if not isinstance(raw_env, Mapping):
        raise ScenarioError(
            f'{source}: consumer.environment must be a table of NAME = "VALUE", e.g. '
            f'environment = {{ DYNAMODB_TABLE = "{{table}}" }}; got {raw_env!r}'
        )
    environment = _environment(raw_env, source, extra, where=f"{source}: consumer.environment")
    unknown = sorted(set(table) - {"name", "key"})
    if unknown:
        raise ScenarioError(f"{source}: unknown key table.{unknown[0]!r}; allowed: key, name")
    name = table.get("name")
    if name is not None:
        name = _table_name(name, f"{source}: table.name")
    key = _key(table["key"], f"{source}: table.key") if "key" in table else ()
    names = [t.name for t in extra if t.name] + ([name] if name else [])
    if len(set(names)) != len(names):
        raise ScenarioError(f"{source}: tables: two tables are both named {_first_dup(names)!r}")
    envs = [t.env for t in extra if t.env]
    if len(set(envs)) != len(envs):
        raise ScenarioError(
            f"{source}: tables: two tables set the same env variable {_first_dup(envs)!r}"
        )
    generated = [extra_table_name("", t) for t in extra if not t.name]
    if len(set(generated)) != len(generated):
        raise ScenarioError(
            f"{source}: tables: two entries' variables give one generated table name "
            f"(loadtest-...{_first_dup(generated)}); give one of them a name"
        )
    clash = sorted(set(envs) & {n for n, _ in environment})
    if clash:
        raise ScenarioError(
            f"{source}: consumer.environment.{clash[0]} is also a [[tables]] entry's env; "
            "the table's entry sets it: leave it out of consumer.environment"
        )
    return FunctionSetup(environment, name, key, extra)


def render(setup: FunctionSetup, resources: RunResources) -> dict[str, str]:
    """The variables the function gets: each extra table's, then the declared ones filled in."""
    values: dict[str, str] = {
        "table": resources.table,
        "queue_url": resources.queue_url,
        "queue_arn": resources.queue_arn,
        "queue_name": resources.queue_name,
        "dlq_url": resources.dlq_url,
        "region": resources.region,
    }
    out = {t.env: resources.tables[t.env] for t in setup.tables if t.env}

    def fill(match: re.Match[str]) -> str:
        inner = match.group(1)
        if inner.startswith("table:"):
            return resources.tables[inner.removeprefix("table:")]
        if inner in resources.sinks:
            return resources.sinks[inner]
        return values[inner]

    for name, template in setup.environment:
        out[name] = _PLACEHOLDER.sub(fill, template)
    return out


def extra_table_name(prefix: str, table: ExtraTable) -> str:
    """An extra table's name: its own, or ``PREFIX-`` and its variable without a ``_TABLE`` or
    ``_TABLE_NAME`` ending, e.g. ``loadtest-1a2b-0-idempotency`` for ``IDEMPOTENCY_TABLE``."""
    if table.name:
        return table.name
    stem = (table.env or "extra").lower()
    for ending in ("_table_name", "_table", "_name"):
        if stem.endswith(ending) and len(stem) > len(ending):
            stem = stem.removesuffix(ending)
            break
    return f"{prefix}-{stem.replace('_', '-')}"[:255]


def table_names(prefix: str, tables: Sequence[ExtraTable]) -> dict[str, str]:
    """Each extra table's name by every label it answers to (``RunResources.tables``)."""
    return {label: extra_table_name(prefix, t) for t in tables for label in t.labels}


def allowed_placeholders(tables: Sequence[ExtraTable]) -> str:
    labels = [f"{{table:{label}}}" for t in tables for label in t.labels]
    return ", ".join([*(f"{{{p}}}" for p in PLACEHOLDERS), *labels, sink_forms()])


def _field(where: str, name: str) -> str:
    return f"{where} {name}" if where.startswith("--") else f"{where}.{name}"


def _environment(
    raw: Mapping[str, Any], source: str, tables: Sequence[ExtraTable], *, where: str
) -> tuple[tuple[str, str], ...]:
    labels = {label for t in tables for label in t.labels}
    out = []
    for name, value in raw.items():
        if not _ENV_NAME.fullmatch(str(name)):
            raise ScenarioError(
                f"{where}: variable name {name!r} is not allowed; letters, digits and '_', "
                "not starting with a digit"
            )
        if name in _RESERVED_ENV or str(name).startswith("LOADTEST_"):
            raise ScenarioError(
                f"{_field(where, name)} is set by the run itself (as Lambda sets it); leave it out"
            )
        if not isinstance(value, str):
            raise ScenarioError(
                f'{_field(where, name)} must be a string, got {value!r}; e.g. {name} = "{{table}}"'
            )
        rest = _PLACEHOLDER.sub("", value)
        unclosed = _UNCLOSED.search(rest)
        if unclosed:
            raise ScenarioError(
                f"{_field(where, name)} = {value!r}: the placeholder at "
                f"{rest[unclosed.start() :]!r} has no closing '}}'; allowed: "
                f"{allowed_placeholders(tables)}"
            )
        for inner in _PLACEHOLDER.findall(value):
            try:
                sink = sink_of(inner)
            except ValueError as exc:
                raise ScenarioError(f"{_field(where, name)} = {value!r}: {exc}") from exc
            known = (
                sink is not None
                or inner in PLACEHOLDERS
                or (inner.startswith("table:") and inner.removeprefix("table:") in labels)
            )
            if not known:
                raise ScenarioError(
                    f"{_field(where, name)} = {value!r}: unknown placeholder {{{inner}}}; allowed: "
                    f"{allowed_placeholders(tables)}"
                    + (
                        " ({table:LABEL} names a [[tables]] entry by its name or env)"
                        if inner.startswith("table:")
                        else ""
                    )
                )
        out.append((str(name), value))
    return tuple(out)


def _table_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _TABLE_NAME.fullmatch(value):
        raise ScenarioError(
            f"{where} = {value!r} is not a DynamoDB table name; allowed: 3 to 255 letters, "
            "digits, '_', '-' or '.'"
        )
    return value


def _key(value: Any, where: str) -> tuple[tuple[str, str], ...]:
    allowed = (
        'one or two attributes with their types, e.g. { orderId = "S" } or { pk = "S", sk = "N" }'
    )
    if not isinstance(value, Mapping) or not 1 <= len(value) <= 2:
        raise ScenarioError(f"{where} must be {allowed} (hash, then range); got {value!r}")
    out = []
    for name, kind in value.items():
        if not _ATTRIBUTE_NAME.fullmatch(str(name)):
            raise ScenarioError(f"{where}: attribute name {name!r} is not allowed")
        if kind not in KEY_TYPES:
            raise ScenarioError(
                f"{where}.{name} = {kind!r} is not allowed; allowed: "
                f"{', '.join(repr(k) for k in KEY_TYPES)}"
            )
        out.append((str(name), str(kind)))
    return tuple(out)


def _tables(raw: Any, source: str) -> tuple[ExtraTable, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(entry, Mapping) for entry in raw):
        raise ScenarioError(
            f'{source}: tables must be an array of tables ([[tables]] with key and env = "NAME")'
        )
    out = []
    for index, entry in enumerate(raw):
        where = f"{source}: tables[{index}]"
        unknown = sorted(set(entry) - {"name", "key", "env"})
        if unknown:
            raise ScenarioError(f"{where}: unknown key {unknown[0]!r}; allowed: env, key, name")
        name = _table_name(entry["name"], f"{where}.name") if "name" in entry else None
        env = entry.get("env")
        if env is not None and (not isinstance(env, str) or not _ENV_NAME.fullmatch(env)):
            raise ScenarioError(f"{where}.env = {env!r} must be an environment variable name")
        if env is not None and (env in _RESERVED_ENV or env.startswith("LOADTEST_")):
            raise ScenarioError(f"{where}.env = {env!r} is set by the run itself; pick another")
        if name is None and env is None:
            raise ScenarioError(
                f"{where} needs env (the variable that names it, e.g. env = "
                '"IDEMPOTENCY_TABLE") or name (the name the consumer hard-codes)'
            )
        key = _key(entry["key"], f"{where}.key") if "key" in entry else DEFAULT_KEY
        purpose = f"extra table named by {env}" if env else "extra table the consumer names"
        out.append(ExtraTable(name=name, key=key, env=env, purpose=purpose))
    return tuple(out)


def _first_dup(values: Sequence[str]) -> str:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return ""

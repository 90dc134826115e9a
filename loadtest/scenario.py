"""The scenario model: what to send, to which consumers, with which settings.

Owns parsing and validating scenario TOML (and CLI overrides) into frozen
values. Pure: reads no clock and touches no AWS; ``load_scenario`` reads the
one file it is given. Every refusal names the file, the field and what is
allowed, and raises ``ScenarioError`` before anything is created.

File format (every table and key optional unless noted)::

    name = "race-burst"                 # defaults to the file name
    description = "one line shown by `loadtest scenarios`"
    seed = 1
    variants = ["read-then-write", "conditional"]   # names or module:function refs

    [workload]
    distinct_ids = 150                  # generated ids: "<id_prefix>-00001" ...
    copies = 4                          # producer resends per id (new messageId each)
    id_prefix = "order"
    arrival = "burst"                   # all messages at once
    order = "grouped"                   # copies of an id adjacent | "shuffled"

    [[workload.messages]]               # explicit bodies instead of generated ids
    body = { id = "dedup-order", quantity = 4 }
    copies = 3

    [consumer]                          # the event source mapping and the function
    batch_size = 1
    visibility_timeout_s = 30
    concurrency = 4                     # execution environments
    max_receive_count = 3               # redrive to the DLQ after this many receives
    function_timeout_s = 30
    memory_mb = 128
    report_batch_item_failures = false

    [run]
    deadline_s = 120                    # stop and report whatever is unfinished

    thresholds = [                      # k6-style; see loadtest.thresholds
        "duplicate_writes == 0",
        "conditional: end_to_end.p99 < 5s",
    ]

    [verdict.allow]                     # a demonstration that expects a variant to fail
    "read-then-write" = ["duplicate_writes"]   # pair it with a threshold expecting it
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from loadtest.errors import ScenarioError, ThresholdError
from loadtest.thresholds import RELAXABLE, parse_threshold

JsonObject = dict[str, Any]
E = TypeVar("E", bound=StrEnum)


class Arrival(StrEnum):
    """How the producer spaces messages in time."""

    BURST = "burst"


class Order(StrEnum):
    """How copies of one business id are ordered in the send schedule."""

    GROUPED = "grouped"
    SHUFFLED = "shuffled"


@dataclass(frozen=True)
class ExplicitMessage:
    """A literal message body, sent ``copies`` times in a row."""

    body: JsonObject
    copies: int = 1


@dataclass(frozen=True)
class Workload:
    """What the producer sends."""

    distinct_ids: int = 100
    """Number of generated business ids (ignored when ``messages`` is given)."""
    copies: int = 3
    """Messages per generated id: the original plus producer resends."""
    id_prefix: str = "order"
    arrival: Arrival = Arrival.BURST
    order: Order = Order.GROUPED
    messages: tuple[ExplicitMessage, ...] = ()
    """Explicit bodies; when present they replace the generated ids."""


@dataclass(frozen=True)
class ConsumerSettings:
    """The event source mapping and the function configuration."""

    batch_size: int = 1
    """Records per invocation (1..10, as SQS ReceiveMessage allows)."""
    visibility_timeout_s: int = 30
    """Queue visibility timeout (in seconds, 0..43200)."""
    concurrency: int = 4
    """Execution environments, each running one invocation at a time."""
    max_receive_count: int = 3
    """Receives before the redrive policy moves a message to the DLQ."""
    function_timeout_s: int = 30
    """Function timeout (in seconds); the invocation is stopped after it."""
    memory_mb: int = 128
    report_batch_item_failures: bool = False


@dataclass(frozen=True)
class RunSettings:
    deadline_s: float = 120.0
    """Wall time (in seconds) after which the run stops and reports what is unfinished."""


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: data only."""

    name: str
    description: str = ""
    seed: int = 1
    variants: tuple[str, ...] = ("conditional",)
    workload: Workload = field(default_factory=Workload)
    consumer: ConsumerSettings = field(default_factory=ConsumerSettings)
    run: RunSettings = field(default_factory=RunSettings)
    thresholds: tuple[str, ...] = ()
    """Threshold expressions (validated when parsed; see ``loadtest.thresholds``)."""
    allow: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Per variant, default-verdict reasons this scenario relaxes (a demonstration)."""
    source: str = "<memory>"
    """Where the scenario came from (a path or ``builtin:NAME``), for messages."""

    def with_overrides(self, **overrides: Any) -> Scenario:
        """Return a copy with CLI overrides applied and validated.

        Keys are field names of ``ConsumerSettings``, ``Workload``, ``RunSettings``
        or ``seed``; ``None`` values are ignored.
        """
        given = {key: value for key, value in overrides.items() if value is not None}
        if not given:
            return self
        sections: dict[str, dict[str, Any]] = {"consumer": {}, "workload": {}, "run": {}}
        top: dict[str, Any] = {}
        for key, value in given.items():
            for section, cls in (
                ("consumer", ConsumerSettings),
                ("workload", Workload),
                ("run", RunSettings),
            ):
                if key in {f.name for f in dataclasses.fields(cls)}:
                    sections[section][key] = value
                    break
            else:
                if key not in ("seed", "variants"):
                    raise ScenarioError(f"unknown override {key!r}")
                top[key] = value
        raw = to_raw(self)
        for section, values in sections.items():
            raw.setdefault(section, {}).update(values)
        raw.update(top)
        return parse_scenario(raw, source=f"{self.source} (with command-line overrides)")


_LIMITS: dict[str, tuple[float, float]] = {
    "seed": (0, 2**63 - 1),
    "distinct_ids": (1, 1_000_000),
    "copies": (1, 1000),
    "batch_size": (1, 10),
    "visibility_timeout_s": (0, 43_200),
    "concurrency": (1, 1000),
    "max_receive_count": (1, 1000),
    "function_timeout_s": (1, 900),
    "memory_mb": (128, 10_240),
    "deadline_s": (1, 86_400),
}


def _where(source: str, path: str) -> str:
    return f"{source}: {path}" if path else source


def _take_table(raw: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{_where(source, key)} must be a table, got {type(value).__name__}")
    return value


def _check_keys(raw: Mapping[str, Any], allowed: set[str], source: str, path: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        prefix = f"{path}." if path else ""
        raise ScenarioError(
            f"{source}: unknown key {prefix}{unknown[0]!r}; allowed: {', '.join(sorted(allowed))}"
        )


def _int(raw: Mapping[str, Any], key: str, default: int, source: str, path: str) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ScenarioError(f"{_where(source, path + key)} must be an integer, got {value!r}")
    low, high = _LIMITS[key]
    if not low <= value <= high:
        raise ScenarioError(
            f"{_where(source, path + key)} = {value} is out of range; allowed {int(low)}..{int(high)}"
        )
    return value


def _float(raw: Mapping[str, Any], key: str, default: float, source: str, path: str) -> float:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{_where(source, path + key)} must be a number, got {value!r}")
    low, high = _LIMITS[key]
    if not low <= value <= high:
        raise ScenarioError(
            f"{_where(source, path + key)} = {value} is out of range; allowed {low:g}..{high:g}"
        )
    return float(value)


def _str(raw: Mapping[str, Any], key: str, default: str, source: str, path: str) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise ScenarioError(f"{_where(source, path + key)} must be a string, got {value!r}")
    return value


def _enum(raw: Mapping[str, Any], key: str, default: E, source: str, path: str) -> E:
    value = raw.get(key, default.value)
    kind = type(default)
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(repr(member.value) for member in kind)
        raise ScenarioError(
            f"{_where(source, path + key)} = {value!r} is not allowed; allowed: {allowed}"
        ) from None


def _fields(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


def parse_scenario(
    raw: Mapping[str, Any], *, source: str, default_name: str = "scenario"
) -> Scenario:
    """Validate a scenario mapping (parsed TOML) into a ``Scenario``."""
    _check_keys(
        raw,
        {"name", "description", "seed", "variants", "workload", "consumer", "run", "thresholds", "verdict"},
        source,
        "",
    )
    variants_raw = raw.get("variants", ["conditional"])
    if (
        not isinstance(variants_raw, list)
        or not variants_raw
        or not all(isinstance(v, str) and v for v in variants_raw)
    ):
        raise ScenarioError(
            f"{source}: variants must be a non-empty list of names, got {variants_raw!r}"
        )

    w_raw = _take_table(raw, "workload", source)
    _check_keys(w_raw, _fields(Workload), source, "workload")
    messages = tuple(_explicit_messages(w_raw.get("messages", []), source))
    workload = Workload(
        distinct_ids=_int(w_raw, "distinct_ids", Workload.distinct_ids, source, "workload."),
        copies=_int(w_raw, "copies", Workload.copies, source, "workload."),
        id_prefix=_str(w_raw, "id_prefix", Workload.id_prefix, source, "workload."),
        arrival=_enum(w_raw, "arrival", Arrival.BURST, source, "workload."),
        order=_enum(w_raw, "order", Order.GROUPED, source, "workload."),
        messages=messages,
    )

    c_raw = _take_table(raw, "consumer", source)
    _check_keys(c_raw, _fields(ConsumerSettings), source, "consumer")
    d = ConsumerSettings()
    rbif = c_raw.get("report_batch_item_failures", d.report_batch_item_failures)
    if not isinstance(rbif, bool):
        raise ScenarioError(f"{source}: consumer.report_batch_item_failures must be true or false")
    consumer = ConsumerSettings(
        batch_size=_int(c_raw, "batch_size", d.batch_size, source, "consumer."),
        visibility_timeout_s=_int(
            c_raw, "visibility_timeout_s", d.visibility_timeout_s, source, "consumer."
        ),
        concurrency=_int(c_raw, "concurrency", d.concurrency, source, "consumer."),
        max_receive_count=_int(
            c_raw, "max_receive_count", d.max_receive_count, source, "consumer."
        ),
        function_timeout_s=_int(
            c_raw, "function_timeout_s", d.function_timeout_s, source, "consumer."
        ),
        memory_mb=_int(c_raw, "memory_mb", d.memory_mb, source, "consumer."),
        report_batch_item_failures=rbif,
    )

    r_raw = _take_table(raw, "run", source)
    _check_keys(r_raw, _fields(RunSettings), source, "run")
    run = RunSettings(
        deadline_s=_float(r_raw, "deadline_s", RunSettings.deadline_s, source, "run.")
    )

    thresholds = _thresholds(raw.get("thresholds", []), source)
    allow = _allow(_take_table(raw, "verdict", source), source)

    return Scenario(
        name=_str(raw, "name", default_name, source, ""),
        description=_str(raw, "description", "", source, ""),
        seed=_int(raw, "seed", 1, source, ""),
        variants=tuple(variants_raw),
        workload=workload,
        consumer=consumer,
        run=run,
        thresholds=thresholds,
        allow=allow,
        source=source,
    )


def _thresholds(raw: Any, source: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise ScenarioError(
            f'{source}: thresholds must be a list of strings like "duplicate_writes == 0"'
        )
    for text in raw:
        try:
            parse_threshold(text)
        except ThresholdError as exc:
            raise ScenarioError(f"{source}: thresholds: {exc}") from exc
    return tuple(raw)


def _allow(raw: Mapping[str, Any], source: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    _check_keys(raw, {"allow"}, source, "verdict")
    table = raw.get("allow", {})
    if not isinstance(table, Mapping):
        raise ScenarioError(f"{source}: verdict.allow must be a table of variant = [counts]")
    out = []
    for variant, names in table.items():
        if not isinstance(names, list) or not all(n in RELAXABLE for n in names):
            raise ScenarioError(
                f"{source}: verdict.allow.{variant} = {names!r}; allowed entries: "
                f"{', '.join(RELAXABLE)} (unsettled messages always fail a run)"
            )
        out.append((str(variant), tuple(names)))
    return tuple(out)


def _explicit_messages(raw: Any, source: str) -> list[ExplicitMessage]:
    if not isinstance(raw, list):
        raise ScenarioError(f"{source}: workload.messages must be an array of tables")
    out = []
    for index, entry in enumerate(raw):
        path = f"workload.messages[{index}]"
        if not isinstance(entry, Mapping):
            raise ScenarioError(f"{source}: {path} must be a table with body and copies")
        _check_keys(entry, {"body", "copies"}, source, path)
        body = entry.get("body")
        if not isinstance(body, Mapping):
            raise ScenarioError(f"{source}: {path}.body must be a table (the JSON message body)")
        copies = _int(entry, "copies", 1, source, f"{path}.")
        out.append(ExplicitMessage(body=dict(body), copies=copies))
    return out


def to_raw(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data (the report's ``scenario`` object; parseable again)."""
    raw = dataclasses.asdict(scenario)
    raw.pop("source")
    raw["variants"] = list(scenario.variants)
    raw["thresholds"] = list(scenario.thresholds)
    raw.pop("allow")
    raw["verdict"] = {"allow": {variant: list(names) for variant, names in scenario.allow}}
    workload = raw["workload"]
    workload["arrival"] = scenario.workload.arrival.value
    workload["order"] = scenario.workload.order.value
    workload["messages"] = [
        {"body": m.body, "copies": m.copies} for m in scenario.workload.messages
    ]
    return raw


def _builtin_dir() -> Any:
    """The built-in scenarios: the top-level scenarios/ folder.

    An installed wheel carries it as the package ``loadtest.scenarios``; an
    editable install or a source checkout reads the folder beside the package.
    """
    try:
        return resources.files("loadtest.scenarios")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / "scenarios"


def builtin_scenarios() -> dict[str, Scenario]:
    """Every built-in scenario by name (the TOML files shipped with the package)."""
    found: dict[str, Scenario] = {}
    for entry in sorted(_builtin_dir().iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            stem = entry.name.removesuffix(".toml")
            found[stem] = _parse_text(entry.read_text(encoding="utf-8"), f"builtin:{stem}", stem)
    return found


def _parse_text(text: str, source: str, default_name: str) -> Scenario:
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message already carries "(at line N, column M)".
        raise ScenarioError(f"{source}: not valid TOML: {exc}") from exc
    return parse_scenario(raw, source=source, default_name=default_name)


def load_scenario(ref: str) -> Scenario:
    """Load a scenario by built-in name or by path to a TOML file."""
    path = Path(ref)
    if ref.endswith(".toml") or path.exists() or "/" in ref:
        if not path.is_file():
            raise ScenarioError(
                f"scenario file {ref!r} does not exist; give a path to a .toml file "
                f"or a built-in name ({', '.join(builtin_scenarios())})"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"scenario file {ref!r} could not be read: {exc}") from exc
        return _parse_text(text, str(path), path.stem)
    builtins = builtin_scenarios()
    if ref not in builtins:
        raise ScenarioError(
            f"unknown scenario {ref!r}; built-in scenarios: {', '.join(builtins)} "
            "(or give a path to a .toml file)"
        )
    return builtins[ref]

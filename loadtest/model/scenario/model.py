"""The scenario model: what to send, to which consumers, with which settings.

Owns ``Scenario`` and parsing and validating a scenario's TOML mapping (and CLI overrides)
into it, and back (``to_raw``). Pure: reads no clock, no file and touches no AWS (reading
a scenario's file, or a built-in one, is ``loadtest.model.scenario.loading``'s). Every refusal names the file, the field and what is
allowed, and raises ``ScenarioError`` before anything is created (the field
checks, FIFO rules among them, live in ``loadtest.model.scenario.fields``).

File format (every table and key optional)::

    name = "race-burst"                 # defaults to the file name
    description = "one line shown by `loadtest scenarios`"
    seed = 1
    variants = ["read-then-write", "conditional"]   # names or module:function refs
    thresholds = ["conditional: duplicate_writes == 0", "end_to_end.p99 < 5s"]

    [verdict.allow]                     # a demonstration that expects a variant to fail:
    "read-then-write" = ["duplicate_writes"]   # pair it with a threshold expecting it

    [workload]
    distinct_ids = 150                  # generated ids: "<id_prefix>-00001" ...
    copies = 4                          # messages per id: original + producer resends
    id_prefix = "order"
    order = "grouped"                   # copies of an id adjacent | "shuffled"
    copy_spacing = "at-once"            # | "spread" (over copy_spread_s) | "after-completion"
    copy_spread_s = 0.0
    conflict_fraction = 0.0             # resends carrying different details (0..1)
    poison_fraction = 0.0               # ids whose messages every consumer refuses (0..1)
    arrival = "burst"                   # | "rate" (open loop) | "ramp" (ramp_from_per_s -> rate_per_s)
    rate_per_s = 0.0
    ramp_from_per_s = 1.0
    deduplication = "per-message"       # FIFO MessageDeduplicationId | "business-id" | "content"
    message_group = "business-id"       # FIFO MessageGroupId per id | "fixed" (message_groups)
    message_groups = 1

    body = { orderId = "{id}", quantity = "{quantity}" }   # template of generated bodies
    envelope = "none"                   # | "sns" (body in Message) | "eventbridge" (in detail)
    attributes = { source = "web" }     # SQS message attributes: String, Number or Binary

    [[workload.messages]]               # explicit bodies instead of generated ids
    body = { id = "dedup-order", quantity = 4 }
    copies = 3
    poison = false                      # true: a record every consumer must refuse

    [expect]                            # what the workload is meant to show
    overlap = true                      # copies of an id are meant to be processed at the
                                        # same time: a run in which none overlapped cannot
                                        # pass (inconclusive). false: sequential on purpose

    [outcome]                           # where a message's outcome is stored
    key = { id = "{id}" }               # the table's key, per attribute; e.g. { pk = "ORDER#{id}", sk = "ORDER" }
    fields = ["status", "total_cents"]  # what every finished outcome item holds (optional)

    [consumer]                          # the event source mapping and the function
    batch_size = 1                      # 1..10; up to 10000 with a batching window >= 1 s
    batching_window_s = 0.0
    visibility_timeout_s = 30
    concurrency = 4                     # execution environments
    max_receive_count = 3               # redrive to the DLQ after this many receives
    function_timeout_s = 30
    memory_mb = 128
    report_batch_item_failures = false
    fifo = false                        # a .fifo queue: batch_size <= 10, no batching window

    [consumer.environment]              # the function's variables; placeholders name the run's
    DYNAMODB_TABLE = "{table}"          # resources (see loadtest.model.scenario.function_config)

    [table]                             # the outcome table itself (both optional)
    name = "Orders"                     # a name the consumer hard-codes (generated otherwise)
    key = { orderId = "S" }             # its key schema: hash, then range; S, N or B

    [[tables]]                          # extra tables the consumer needs, made per run
    env = "IDEMPOTENCY_TABLE"           # the variable that names it (or name = "...")
    key = { id = "S" }

    [faults]                            # opt-in, always labelled in the report
    handler_duration_ms = 0             # slow work before the invocation's first write
    handler_jitter_ms = 0               # plus a uniform 0..jitter
    race_window_ms = 0                  # pause after each read of the orders table
    crash_after_write = 0.0             # probability of a crash after the writes, before the ack
    crash_mid_handler = 0.0             # probability, per write, of a crash once it is answered
    dedup_window_s = 0                  # FIFO: shorten SQS's 300 s deduplication window

    [run]
    deadline_s = 120                    # stop and report whatever is unfinished

    [lint]
    intended = ["visibility-timeout"]   # lint rules broken on purpose: warnings marked intended

    [[effects]]                         # what the consumer sends beyond the table, per sink
    sink = "orders"                     # a label its environment creates ({topic:orders}, ...)
    id = "orderId"                      # where the business id is (see loadtest.model.scenario.effects)
    required = true                     # an acknowledged message must reach it
    delivery = "exactly-once"           # | "at-least-once": duplicates reported, not failed
                                        # | "any": counted, never judged per order (a log)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from loadtest.errors import ScenarioError
from loadtest.model.history.log import OutcomeKey
from loadtest.model.scenario.body import check_attribute_placeholders, compile_template
from loadtest.model.scenario.effects import EffectRule, parse_effects
from loadtest.model.scenario.envelopes import Envelope, parse_attributes, parse_envelope
from loadtest.model.scenario.fields import (
    STRUCTURED,
    _allow,
    _check_combinations,
    _check_keys,
    _explicit_messages,
    _lint,
    _outcome,
    _point_faults,
    _section,
    _table,
    _thresholds,
    _value,
    check_name,
    safe_name,
)
from loadtest.model.scenario.function_config import FunctionSetup, parse_setup
from loadtest.model.scenario.placeholders import Sink
from loadtest.model.scenario.settings import (
    OVERRIDE,
    Arrival,
    ConsumerSettings,
    Faults,
    Override,
    RunSettings,
    Workload,
    parse_point_fault,
)


@dataclass(frozen=True)
class Scenario:
    """A validated scenario: data only."""

    name: str
    description: str = ""
    seed: int = 1
    variants: tuple[str, ...] = ("conditional",)
    workload: Workload = field(default_factory=Workload)
    consumer: ConsumerSettings = field(default_factory=ConsumerSettings)
    faults: Faults = field(default_factory=Faults)
    run: RunSettings = field(default_factory=RunSettings)
    thresholds: tuple[str, ...] = ()
    """Threshold expressions (validated when parsed; see ``loadtest.model.figures.thresholds``)."""
    allow: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Per variant, default-verdict reasons this scenario relaxes (a demonstration)."""
    outcome: OutcomeKey = field(default_factory=OutcomeKey)
    """The key of a message's outcome item (and so of the table loadtest creates)."""
    function: FunctionSetup = field(default_factory=FunctionSetup)
    """The function's environment and the tables it needs (``[consumer] environment``,
    ``[table]``, ``[[tables]]``)."""
    expect_overlap: bool = True
    """``[expect] overlap``: the copies of an id are meant to race, so a run in which no two
    deliveries of one id were processed at the same time is inconclusive; False for a
    scenario whose copies are sequential on purpose (resends after completion)."""
    effects: tuple[EffectRule, ...] = ()
    """``[[effects]]``: how the sinks the consumer's effects reach are judged."""
    lint_intended: tuple[str, ...] = ()
    """Lint rules (``loadtest.model.scenario.lint_rules.Rule`` values) this scenario breaks on purpose."""
    source: str = "<memory>"
    """Where the scenario came from (a path or ``builtin:NAME``), for messages."""

    @property
    def sinks(self) -> tuple[Sink, ...]:
        """The sinks the run makes (``FunctionSetup.sinks``), as ``[[effects]]`` asks them
        made (a FIFO one deduplicating by content)."""
        by_content = {r.sink for r in self.effects if r.content_based_deduplication}
        return tuple(
            dataclasses.replace(s, content_deduplication=True) if s.name in by_content else s
            for s in self.function.sinks
        )

    @property
    def table_key_names(self) -> tuple[str, ...]:
        """The outcome table's key attributes: ``[table] key``, else the outcome key's."""
        return tuple(name for name, _ in self.function.key_schema(self.outcome.key_names))

    @property
    def judged_outcome(self) -> OutcomeKey:
        """Where the checker first looks for outcomes: ``[outcome] key`` when declared; for a
        table declared with a one-attribute ``[table] key``, that attribute holding the id
        (not declared: the checker still looks elsewhere); else the lab's default."""
        key = self.function.table_key
        if self.outcome.declared or len(key) != 1:
            return self.outcome
        return dataclasses.replace(self.outcome, templates=((key[0][0], "{id}"),))

    def with_environment(self, pairs: Sequence[str]) -> Scenario:
        """A copy whose function also gets these ``NAME=VALUE`` variables (``--env``; they win
        over ``[consumer] environment``)."""
        if not pairs:
            return self
        return dataclasses.replace(self, function=self.function.with_environment(pairs))

    def with_overrides(self, **overrides: Any) -> Scenario:
        """Return a copy with CLI overrides applied and validated.

        Keys are field names of a section (``batch_size``, ``race_window_ms``,
        ``distinct_ids``, ``deadline_s``, ...) or ``seed``; ``None`` values are ignored.
        """
        given = {key: value for key, value in overrides.items() if value is not None}
        if not given:
            return self
        if "rate_per_s" in given:
            # A rate given on its own means an open-loop run at that rate.
            given.setdefault("arrival", Arrival.RATE.value)
        raw = to_raw(self)
        if POINT_FAULTS_OVERRIDE in given:
            # --point-fault NAME:P, repeatable: each wins over the scenario's for its name.
            point = raw["faults"]["point"]
            for text in given.pop(POINT_FAULTS_OVERRIDE):
                try:
                    name, probability = parse_point_fault(str(text))
                except ValueError as exc:
                    raise ScenarioError(f"--point-fault: {exc}") from None
                point[name] = probability
        for key, value in given.items():
            section = _SECTION_OF.get(key)
            if section is not None:
                raw.setdefault(section, {})[key] = value
            elif key in ("seed", "variants"):
                raw[key] = value
            else:
                raise ScenarioError(f"unknown override {key!r}")
        return parse_scenario(
            raw, source=f"{self.source} (with command-line overrides)", default_name=self.name
        )


_SECTIONS: dict[str, type] = {
    "workload": Workload,
    "consumer": ConsumerSettings,
    "faults": Faults,
    "run": RunSettings,
}
_SECTION_OF = {
    f.name: section
    for section, cls in _SECTIONS.items()
    for f in dataclasses.fields(cls)
    if f.name not in STRUCTURED
}


POINT_FAULTS_OVERRIDE = "point_faults"
"""The override carrying ``--point-fault NAME:P`` texts (``[faults] point``)."""


def override_fields() -> list[tuple[dataclasses.Field[Any], Override]]:
    """The fields offered as command-line overrides, in section order, with how."""
    return [
        (f, f.metadata[OVERRIDE])
        for cls in _SECTIONS.values()
        for f in dataclasses.fields(cls)
        if OVERRIDE in f.metadata
    ]


def parse_scenario(
    raw: Mapping[str, Any], *, source: str, default_name: str = "scenario"
) -> Scenario:
    """Validate a scenario mapping (parsed TOML) into a ``Scenario``."""
    _check_keys(
        raw,
        {
            "name",
            "description",
            "seed",
            "variants",
            "thresholds",
            "verdict",
            "outcome",
            "table",
            "tables",
            "expect",
            "lint",
            "effects",
            *_SECTIONS,
        },
        source,
        "",
    )
    variants = raw.get("variants", ["conditional"])
    if not isinstance(variants, list) or not all(isinstance(v, str) and v for v in variants):
        # An empty list is a scenario for handlers given at run time (--handler).
        raise ScenarioError(f"{source}: variants must be a list of names, got {variants!r}")
    w_raw = _table(raw, "workload", source)
    workload = _section(Workload, w_raw, source, "workload")
    attributes = parse_attributes(w_raw.get("attributes", {}), source)
    check_attribute_placeholders(attributes, source)
    workload = dataclasses.replace(
        workload,
        messages=tuple(_explicit_messages(w_raw.get("messages", []), source)),
        body=compile_template(w_raw["body"], source) if "body" in w_raw else None,
        envelope=parse_envelope(w_raw.get("envelope", "none"), source),
        attributes=attributes,
    )
    c_raw = _table(raw, "consumer", source)
    _check_keys(
        c_raw,
        {f.name for f in dataclasses.fields(ConsumerSettings)} | {"environment"},
        source,
        "consumer",
    )
    function = parse_setup(c_raw, _table(raw, "table", source), raw.get("tables"), source)
    c_raw = {k: v for k, v in c_raw.items() if k != "environment"}
    consumer = _section(ConsumerSettings, c_raw, source, "consumer")
    f_raw = _table(raw, "faults", source)
    faults = dataclasses.replace(
        _section(Faults, f_raw, source, "faults"),
        point=_point_faults(f_raw.get("point", {}), source),
    )
    run = _section(RunSettings, _table(raw, "run", source), source, "run")
    _check_combinations(workload, consumer, faults, source)
    expect = _table(raw, "expect", source)
    _check_keys(expect, {"overlap"}, source, "expect")
    return Scenario(
        name=check_name(raw["name"], source) if "name" in raw else safe_name(default_name),
        description=_value("description", raw.get("description", ""), str, source, ""),
        seed=_value("seed", raw.get("seed", 1), int, source, ""),
        variants=tuple(variants),
        workload=workload,
        consumer=consumer,
        faults=faults,
        run=run,
        thresholds=_thresholds(raw.get("thresholds", []), source),
        allow=_allow(_table(raw, "verdict", source), source),
        outcome=_outcome(_table(raw, "outcome", source), source),
        function=function,
        expect_overlap=_value("overlap", expect.get("overlap", True), bool, source, "expect."),
        effects=parse_effects(raw.get("effects"), function.environment, source),
        lint_intended=_lint(_table(raw, "lint", source), source),
        source=source,
    )


def to_raw(scenario: Scenario) -> dict[str, Any]:
    """The scenario as plain data (the report's ``scenario`` object; parseable again)."""
    raw: dict[str, Any] = {
        "name": scenario.name,
        "description": scenario.description,
        "seed": scenario.seed,
        "variants": list(scenario.variants),
        "thresholds": list(scenario.thresholds),
        "verdict": {"allow": {variant: list(names) for variant, names in scenario.allow}},
    }
    for section in _SECTIONS:
        values = dataclasses.asdict(getattr(scenario, section))
        raw[section] = {k: v.value if isinstance(v, StrEnum) else v for k, v in values.items()}
    raw["faults"]["point"] = dict(scenario.faults.point)
    workload = scenario.workload
    # The message's shape, where a scenario gave one (the lab's plain body otherwise).
    for name in ("body", "envelope", "attributes"):
        raw["workload"].pop(name)
    if workload.body is not None:
        raw["workload"]["body"] = workload.body.raw
    if workload.envelope != Envelope():
        raw["workload"]["envelope"] = workload.envelope.to_raw()
    if workload.attributes:
        raw["workload"]["attributes"] = {a.name: a.to_raw() for a in workload.attributes}
    raw["workload"]["messages"] = [
        {"body": m.body, "copies": m.copies, **({"poison": True} if m.poison else {})}
        for m in scenario.workload.messages
    ]
    if not scenario.expect_overlap:
        raw["expect"] = {"overlap": False}
    if scenario.outcome.shared:
        raw["outcome"] = {"shared": True}
    elif scenario.outcome.declared or scenario.outcome.templates != OutcomeKey().templates:
        raw["outcome"] = {"key": dict(scenario.outcome.templates)}
    if scenario.function.environment:
        raw["consumer"]["environment"] = dict(scenario.function.environment)
    raw.update(scenario.function.to_raw())
    if scenario.outcome.fields:
        raw.setdefault("outcome", {})["fields"] = list(scenario.outcome.fields)
    if scenario.lint_intended:
        raw["lint"] = {"intended": list(scenario.lint_intended)}
    if scenario.effects:
        raw["effects"] = [rule.to_raw() for rule in scenario.effects]
    return raw

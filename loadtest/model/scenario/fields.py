"""Validating the parts of a scenario: names, scalar fields, tables, and the combinations
of settings that are legal one by one but impossible together (FIFO among them).

Pure, like ``loadtest.model.scenario.loading``, which assembles a ``Scenario`` from these. Every
refusal is a ``ScenarioError`` naming the source, the field, the value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from loadtest.errors import ScenarioError
from loadtest.model.history.log import OutcomeKey
from loadtest.model.scenario.lint_rules import Rule
from loadtest.model.scenario.settings import (
    FIFO_BATCH_MAX,
    LIMITS,
    POINT_FAULTS,
    Arrival,
    ConsumerSettings,
    CopySpacing,
    Deduplication,
    ExplicitMessage,
    Faults,
    MessageGroup,
    Workload,
    point_faults,
)

RELAXABLE: tuple[str, ...] = (
    "duplicate_writes",
    "conflicting_writes",
    "lost_outcomes",
    "unexpected_dead_letters",
    "duplicate_effects",
    "conflicting_effects",
    "lost_effects",
    "duplicate_side_writes",
)
"""Default-verdict reasons a scenario may allow (``[verdict.allow]``), by count name."""


STRUCTURED = frozenset({"messages", "body", "envelope", "attributes", "point"})
"""Fields that are tables or arrays, parsed on their own (not overrides)."""

NAME_MAX_CHARS = 64
"""The longest scenario name: it becomes part of report file names."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def safe_name(text: str) -> str:
    """``text`` as a scenario name: letters, digits, ``.``, ``_`` and ``-``; others become ``-``.

    For names loadtest derives itself (a file's stem); a name the scenario
    gives is checked by ``check_name`` instead, never silently changed.
    """
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip(".-_")[:NAME_MAX_CHARS]
    return slug or "scenario"


def check_name(value: Any, source: str) -> str:
    """A scenario name that is safe in a file name and on a terminal, or ``ScenarioError``."""
    if not isinstance(value, str):
        raise ScenarioError(f"{source}: name must be a string, got {value!r}")
    if not value or len(value) > NAME_MAX_CHARS or not _NAME.fullmatch(value):
        raise ScenarioError(
            f"{source}: name = {value[: NAME_MAX_CHARS + 10]!r} is not allowed; a name is 1 to "
            f"{NAME_MAX_CHARS} letters, digits, '.', '_' or '-', starting with a letter or digit "
            "(it becomes part of the report's file name)"
        )
    return value


_RANGE_TEXT = {"batch_size": "1..10 (up to 10000 with batching_window_s >= 1)"}
"""Ranges that need more words than low..high."""


def _where(source: str, path: str) -> str:
    return f"{source}: {path}" if path else source


def _check_keys(raw: Mapping[str, Any], allowed: set[str], source: str, path: str) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        prefix = f"{path}." if path else ""
        close = difflib.get_close_matches(unknown[0], sorted(allowed), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ScenarioError(
            f"{source}: unknown key {prefix}{unknown[0]!r}{hint}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def _value(key: str, value: Any, kind: Any, source: str, path: str) -> Any:
    """Validate one scalar against its field type and limits."""
    where = _where(source, path + key)
    if kind is bool:
        if not isinstance(value, bool):
            raise ScenarioError(f"{where} must be true or false, got {value!r}")
        return value
    if kind is str:
        if not isinstance(value, str):
            raise ScenarioError(f"{where} must be a string, got {value!r}")
        return value
    if isinstance(kind, type) and issubclass(kind, StrEnum):
        try:
            return kind(value)
        except ValueError:
            allowed = ", ".join(repr(member.value) for member in kind)
            raise ScenarioError(f"{where} = {value!r} is not allowed; allowed: {allowed}") from None
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{where} must be an integer, got {value!r}")
    elif isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(f"{where} must be a number, got {value!r}")
    low, high = LIMITS[key]
    if not low <= value <= high:
        shown = _RANGE_TEXT.get(key) or (
            f"{int(low)}..{int(high)}" if kind is int else f"{low:g}..{high:g}"
        )
        raise ScenarioError(f"{where} = {value} is out of range; allowed {shown}")
    return value if kind is int else float(value)


def _table(raw: Mapping[str, Any], key: str, source: str) -> Mapping[str, Any]:
    value = raw.get(key, {})
    if not isinstance(value, Mapping):
        raise ScenarioError(f"{_where(source, key)} must be a table, got {type(value).__name__}")
    return value


def _section(cls: type[Any], raw: Mapping[str, Any], source: str, path: str) -> Any:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    _check_keys(raw, names, source, path)
    given = {
        name: _value(name, raw[name], hints[name], source, f"{path}.")
        for name in names
        if name in raw and name not in STRUCTURED
    }
    return cls(**given)


_ATTRIBUTE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,255}$")


def _outcome(raw: Mapping[str, Any], source: str) -> OutcomeKey:
    """``[outcome] key = { pk = "ORDER#{id}" }``: one or two key attributes (hash, then
    range); ``[outcome] fields = ["status", "total"]``: what a complete outcome holds;
    ``[outcome] shared = true``: outcomes are aggregates (no per-message key)."""
    _check_keys(raw, {"key", "fields", "shared"}, source, "outcome")
    fields = _outcome_fields(raw.get("fields", []), source)
    shared = raw.get("shared", False)
    if not isinstance(shared, bool):
        raise ScenarioError(f"{source}: outcome.shared must be true or false, got {shared!r}")
    if shared and "key" in raw:
        raise ScenarioError(
            f"{source}: outcome.shared = true judges the items the handler changes on behalf "
            "of several messages (aggregates); outcome.key names one item per message: "
            "give one of them, not both"
        )
    if "key" not in raw:
        return OutcomeKey(fields=fields, declared=shared, shared=shared)
    key = raw["key"]
    allowed = 'a table of one or two attributes, e.g. { id = "{id}" } or { pk = "ORDER#{id}", sk = "ORDER" }'
    if not isinstance(key, Mapping) or not 1 <= len(key) <= 2:
        raise ScenarioError(f"{source}: outcome.key must be {allowed}, got {key!r}")
    for name, template in key.items():
        if not _ATTRIBUTE_NAME.match(str(name)) or not isinstance(template, str) or not template:
            raise ScenarioError(
                f"{source}: outcome.key.{name} = {template!r}; each entry must be "
                "an attribute name = a non-empty template string"
            )
    if not any("{id}" in template for template in key.values()):
        raise ScenarioError(
            f"{source}: outcome.key must place the business id somewhere: one template "
            f"needs {{id}} (got {dict(key)!r})"
        )
    return OutcomeKey(
        tuple((str(name), str(template)) for name, template in key.items()),
        declared=True,
        fields=fields,
    )


def _outcome_fields(fields: Any, source: str) -> tuple[str, ...]:
    """``[outcome] fields``: a list of distinct attribute names."""
    if not isinstance(fields, list) or not all(
        isinstance(name, str) and _ATTRIBUTE_NAME.match(name) for name in fields
    ):
        raise ScenarioError(
            f"{source}: outcome.fields must be a list of attribute names, e.g. "
            f'["status", "total_cents"], got {fields!r}'
        )
    if len(set(fields)) != len(fields):
        raise ScenarioError(f"{source}: outcome.fields names an attribute twice: {fields!r}")
    return tuple(fields)


def _check_combinations(
    workload: Workload, consumer: ConsumerSettings, faults: Faults, source: str
) -> None:
    """Settings legal one by one but impossible together (refused, as AWS would)."""
    _check_fifo(workload, consumer, faults, source)
    _check_body(workload, source)
    if consumer.batch_size > 10 and consumer.batching_window_s < 1:
        raise ScenarioError(
            f"{source}: consumer.batch_size = {consumer.batch_size} needs consumer.batching_window_s "
            ">= 1 (as Lambda requires for SQS batches above 10); allowed without a window: 1..10"
        )
    if workload.arrival in (Arrival.RATE, Arrival.RAMP) and workload.rate_per_s <= 0:
        raise ScenarioError(
            f"{source}: workload.arrival = {workload.arrival.value!r} needs workload.rate_per_s > 0 "
            "(messages per second)"
        )
    if workload.copy_spacing is CopySpacing.SPREAD and workload.copy_spread_s <= 0:
        raise ScenarioError(
            f"{source}: workload.copy_spacing = 'spread' needs workload.copy_spread_s > 0 (seconds)"
        )


def _check_body(workload: Workload, source: str) -> None:
    """A body template's placeholders against the generated workload it serves."""
    if workload.messages and any("{quantity}" in a.value for a in workload.attributes):
        raise ScenarioError(
            f"{source}: workload.attributes place {{quantity}}, which only generated messages "
            "have; [[workload.messages]] gives explicit bodies"
        )
    template = workload.body
    if template is None:
        return
    if workload.messages:
        raise ScenarioError(
            f"{source}: workload.body is a template for generated messages; "
            "[[workload.messages]] gives explicit bodies instead: give one or the other"
        )
    for fraction in ("conflict_fraction", "poison_fraction"):
        if getattr(workload, fraction) > 0 and not template.uses("quantity"):
            raise ScenarioError(
                f"{source}: workload.{fraction} changes a message's {{quantity}}, but "
                'workload.body does not place it: add e.g. quantity = "{quantity}" to the body, '
                f"or leave {fraction} out"
            )


def _check_fifo(
    workload: Workload, consumer: ConsumerSettings, faults: Faults, source: str
) -> None:
    """The event source mapping's FIFO rules (Lambda refuses these mappings), and FIFO-only
    settings given for a standard queue (they would silently do nothing)."""
    if consumer.fifo:
        if consumer.batch_size > FIFO_BATCH_MAX:
            raise ScenarioError(
                f"{source}: consumer.batch_size = {consumer.batch_size} is not allowed with "
                f"consumer.fifo = true; allowed: 1..{FIFO_BATCH_MAX} (Lambda's limit for FIFO queues)"
            )
        if consumer.batching_window_s > 0:
            raise ScenarioError(
                f"{source}: consumer.batching_window_s = {consumer.batching_window_s:g} is not "
                "allowed with consumer.fifo = true; allowed: 0 (Lambda supports no batching "
                "window for FIFO queues)"
            )
        if workload.message_group is MessageGroup.BUSINESS_ID and workload.message_groups != 1:
            raise ScenarioError(
                f"{source}: workload.message_groups = {workload.message_groups} needs "
                "workload.message_group = 'fixed'; with 'business-id' each id is its own group "
                "(leave message_groups out)"
            )
        return
    fifo_only = {
        "workload.message_group": workload.message_group is not MessageGroup.BUSINESS_ID,
        "workload.message_groups": workload.message_groups != 1,
        "workload.deduplication": workload.deduplication is not Deduplication.PER_MESSAGE,
        "faults.dedup_window_s": faults.dedup_window_s > 0,
    }
    for name, given in fifo_only.items():
        if given:
            raise ScenarioError(
                f"{source}: {name} is set but consumer.fifo = false; it applies to FIFO "
                "queues only: set consumer.fifo = true or leave it out"
            )


def _thresholds(raw: Any, source: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise ScenarioError(
            f'{source}: thresholds must be a list of strings like "duplicate_writes == 0"'
        )
    # Their syntax is the evaluation's to judge (thresholds.check_scenario): the
    # model does not import it.
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


def _lint(raw: Mapping[str, Any], source: str) -> tuple[str, ...]:
    """``[lint] intended = ["visibility-timeout", ...]``: lint rules the scenario breaks on
    purpose (its warnings are then marked as intended, and ``loadtest lint`` passes)."""
    _check_keys(raw, {"intended"}, source, "lint")
    names = raw.get("intended", [])
    allowed = ", ".join(rule.value for rule in Rule)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ScenarioError(
            f"{source}: lint.intended must be a list of rule names; allowed: {allowed}"
        )
    for name in names:
        if name not in {rule.value for rule in Rule}:
            raise ScenarioError(
                f"{source}: lint.intended contains {name!r}, which is not a lint rule; "
                f"allowed: {allowed}"
            )
    return tuple(dict.fromkeys(names))


def _explicit_messages(raw: Any, source: str) -> list[ExplicitMessage]:
    if not isinstance(raw, list):
        raise ScenarioError(f"{source}: workload.messages must be an array of tables")
    out = []
    for index, entry in enumerate(raw):
        path = f"workload.messages[{index}]"
        if not isinstance(entry, Mapping):
            raise ScenarioError(f"{source}: {path} must be a table with body and copies")
        _check_keys(entry, {"body", "copies", "poison"}, source, path)
        body = entry.get("body")
        if not isinstance(body, Mapping):
            raise ScenarioError(f"{source}: {path}.body must be a table (the JSON message body)")
        copies = _value("copies", entry.get("copies", 1), int, source, f"{path}.")
        poison = _value("poison", entry.get("poison", False), bool, source, f"{path}.")
        out.append(ExplicitMessage(body=dict(body), copies=copies, poison=poison))
    return out


def _point_faults(raw: Any, source: str) -> tuple[tuple[str, float], ...]:
    """``[faults] point = { redeliver = 0.05, throttle = 1 }``: probabilities 0..1 by name."""
    allowed = ", ".join(POINT_FAULTS)
    if not isinstance(raw, Mapping):
        raise ScenarioError(
            f"{source}: faults.point must be a table of probabilities by fault "
            f"(e.g. {{ redeliver = 0.05 }}), got {raw!r}; faults: {allowed}"
        )
    given: dict[str, float] = {}
    for name, value in raw.items():
        if name not in POINT_FAULTS:
            raise ScenarioError(
                f"{source}: faults.point.{name} is not a point fault; allowed: {allowed}"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise ScenarioError(
                f"{source}: faults.point.{name} = {value!r}; give a probability 0..1"
            )
        given[str(name)] = float(value)
    return point_faults(given)

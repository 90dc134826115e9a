"""What a scenario says about its consumer's effects beyond the table: ``[[effects]]``.

Owns the ``[[effects]]`` entries (``EffectRule``), their validation against the sinks the
scenario's environment creates (the placeholders of
``loadtest.model.scenario.placeholders``: ``{topic:NAME}``, ``{queue_url:NAME}``, ...),
and where an entry finds a business id in an effect (``EffectRule.id_of``). How effects
are judged is ``loadtest.model.checker.effects``'. Pure; every refusal is a ``ScenarioError`` naming the
file, the field and what is allowed.

File format (each entry names one sink by its label)::

    [[effects]]
    sink = "orders"                 # the NAME of {topic:orders} in [consumer] environment
    id = "detail.orderId"           # where the business id is: a dotted path into the
                                    # payload (through JSON strings), or "key" (an S3
                                    # object's key, an execution's name)
    id_pattern = "orders/(?P<id>[^/]+)[.]json"   # optional: the id inside that value
                                    # (alone: inside the payload's text, then an SNS
                                    # message's Subject)
    id_attribute = "orderId"        # instead of id: the SNS or SQS message attribute that
                                    # holds it (a topic's or queue's messages)
    required = true                 # every acknowledged message must reach it
    delivery = "at-least-once"      # downstream deduplicates: duplicates are reported,
                                    # not failed (default "exactly-once"); "any": the
                                    # sink holds no order's outcome (an audit log): its
                                    # entries are counted, never judged per business id
    content_based_deduplication = true   # a FIFO topic or queue: made deduplicating by
                                    # content too, as the consumer's own is
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from loadtest.errors import ScenarioError
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.placeholders import FIFO_SUFFIX, SINK_PLACEHOLDERS, sinks_in

if TYPE_CHECKING:
    from collections.abc import Iterator

KEYED_KINDS = frozenset({EffectKind.BUCKET, EffectKind.STATE_MACHINE})
"""Sinks whose entries are named by a key (an object's key, an execution's name)."""

BY_KEY = "key"
"""``id = "key"``: the business id is (in) the entry's key."""

ATTRIBUTE_KINDS = frozenset({EffectKind.TOPIC, EffectKind.QUEUE})
"""Sinks whose messages carry message attributes (``id_attribute``)."""

_ALLOWED_KEYS = frozenset(
    {
        "sink",
        "id",
        "id_pattern",
        "id_attribute",
        "required",
        "delivery",
        "content_based_deduplication",
    }
)


class Delivery(StrEnum):
    """What the consumer promises a sink."""

    EXACTLY_ONCE = "exactly-once"
    """Each business id reaches it once: a duplicate fails the run."""
    AT_LEAST_ONCE = "at-least-once"
    """Downstream deduplicates by itself: a duplicate is reported, never failed."""
    ANY = "any"
    """The sink holds no order's outcome (an audit log, a summary per batch naming several
    orders): its entries are counted, never judged per business id, and none is needed."""


@dataclass(frozen=True)
class EffectRule:
    """One ``[[effects]]`` entry: how one sink is judged."""

    sink: str
    """The sink's label (the NAME of its placeholder)."""
    kind: EffectKind
    id: str = ""
    """Where the business id is: a dotted path into the payload (``detail.orderId``,
    ``items[0].id``), ``key``, or "" (found as in stored items: any leaf naming a sent id)."""
    id_pattern: str = ""
    """A regular expression applied to that value (without ``id``: to the key of a keyed
    sink, else to the payload text, then to an SNS message's Subject): its group ``id``,
    else its first group, else its match is the business id."""
    id_attribute: str = ""
    """The message attribute (SNS, SQS ``MessageAttributes``) whose value is the business id
    (or holds it, with ``id_pattern``); "" when the id is not in an attribute."""
    required: bool = False
    """Every acknowledged, non-poison message must reach it (else it is required only when
    learned from the run: every clean message reached it)."""
    delivery: Delivery = Delivery.EXACTLY_ONCE
    content_based_deduplication: bool = False
    """A FIFO topic or queue the run makes deduplicating by content too (the consumer sends
    no ``MessageDeduplicationId``, as its own sink's content-based deduplication allows)."""

    @property
    def declares_id(self) -> bool:
        return bool(self.id or self.id_pattern or self.id_attribute)

    def id_of(
        self,
        payload: Any,
        text: str,
        key: str,
        message_attributes: Iterable[tuple[str, str]] = (),
        subject: str = "",
    ) -> str | None:
        """The business id this entry finds in an entry: ``payload`` parsed (None when not
        JSON), its ``text``, its ``key``, its message attributes and its SNS ``subject``;
        None when it is not there."""
        if self.id_attribute:
            return self._matched(dict(message_attributes).get(self.id_attribute))
        if self.id == BY_KEY or (not self.id and self.kind in KEYED_KINDS):
            return self._matched(key or None)
        if self.id:
            return self._matched(_at_path(payload, self.id))
        # A pattern alone: over the payload's text, then over a Subject sent beside it.
        found = self._matched(text)
        return found if found is not None or not subject else self._matched(subject)

    def _matched(self, value: str | None) -> str | None:
        """The business id in ``value``, by ``id_pattern`` when there is one."""
        if value is None or not self.id_pattern:
            return value
        match = re.search(self.id_pattern, value)
        if match is None:
            return None
        if "id" in match.groupdict():
            return match.group("id")
        return match.group(1) if match.re.groups else match.group(0)

    def to_raw(self) -> dict[str, Any]:
        raw: dict[str, Any] = {"sink": self.sink}
        if self.id:
            raw["id"] = self.id
        if self.id_pattern:
            raw["id_pattern"] = self.id_pattern
        if self.id_attribute:
            raw["id_attribute"] = self.id_attribute
        if self.required:
            raw["required"] = True
        if self.delivery is not Delivery.EXACTLY_ONCE:
            raw["delivery"] = self.delivery.value
        if self.content_based_deduplication:
            raw["content_based_deduplication"] = True
        return raw


_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")
_PATH = re.compile(r"[^.\[\]]+(\[\d+\])*(\.[^.\[\]]+(\[\d+\])*)*")


def _steps(path: str) -> Iterator[str | int]:
    for name, index in _STEP.findall(path):
        yield int(index) if index else name


def _at_path(payload: Any, path: str) -> str | None:
    """The scalar at a dotted path, stepping into JSON strings on the way; None if absent."""
    node = payload
    for step in _steps(path):
        if isinstance(node, str):
            try:
                node = json.loads(node)
            except ValueError:
                return None
        if isinstance(step, int):
            if not isinstance(node, list) or step >= len(node):
                return None
            node = node[step]
        elif isinstance(node, dict) and step in node:
            node = node[step]
        else:
            return None
    if node is None or isinstance(node, dict | list):
        return None
    if isinstance(node, bool):
        return str(node).lower()
    return str(node)


def sink_labels(environment: Iterable[tuple[str, str]]) -> dict[str, EffectKind]:
    """The sinks an environment's placeholders create, by label (a label two kinds of
    sink share, ``{topic:orders}`` and ``{queue_url:orders}``, by the first)."""
    found: dict[str, EffectKind] = {}
    for sink in sinks_in(template for _, template in environment):
        found.setdefault(sink.name, sink.kind)
    return found


def _shared_labels(environment: Iterable[tuple[str, str]]) -> dict[str, list[EffectKind]]:
    """Labels more than one kind of sink shares, with their kinds."""
    kinds: dict[str, list[EffectKind]] = {}
    for sink in sinks_in(template for _, template in environment):
        kinds.setdefault(sink.name, []).append(sink.kind)
    return {label: ks for label, ks in kinds.items() if len(ks) > 1}


def _placeholder_of(kind: EffectKind) -> str:
    return next(text for text, of in SINK_PLACEHOLDERS.items() if of is kind)


def _allowed_labels(labels: Mapping[str, EffectKind]) -> str:
    if not labels:
        return (
            "none: [consumer] environment creates no sink (a value such as "
            '"{topic:orders}" creates one)'
        )
    return ", ".join(f"{label!r} ({kind.value})" for label, kind in sorted(labels.items()))


def parse_effects(
    raw: Any, environment: Iterable[tuple[str, str]], source: str
) -> tuple[EffectRule, ...]:
    """Validate ``[[effects]]`` against the sinks ``environment`` creates."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(e, dict) for e in raw):
        raise ScenarioError(
            f'{source}: effects must be an array of tables ([[effects]] sink = "NAME"), got {raw!r}'
        )
    environment = tuple(environment)
    labels = sink_labels(environment)
    shared = _shared_labels(environment)
    rules: list[EffectRule] = []
    for index, entry in enumerate(raw):
        sink = entry.get("sink")
        if isinstance(sink, str) and sink in shared:
            kinds = " and ".join(f"a {kind.value}" for kind in shared[sink])
            last = shared[sink][-1]
            renamed = f"{{{_placeholder_of(last)}:{sink}-{last.value}}}"
            raise ScenarioError(
                f"{source}: effects[{index}].sink = {sink!r} names {kinds} in [consumer] "
                "environment, so which one this entry is for is not said; give them different "
                f'NAMEs (e.g. "{renamed}")'
            )
        rules.append(_rule(entry, labels, source, f"effects[{index}]"))
    seen: set[str] = set()
    for index, rule in enumerate(rules):
        if rule.sink in seen:
            raise ScenarioError(
                f"{source}: effects[{index}].sink = {rule.sink!r} is named by an earlier "
                "[[effects]] entry too; give each sink one entry"
            )
        seen.add(rule.sink)
    return tuple(rules)


def _rule(
    entry: Mapping[str, Any], labels: Mapping[str, EffectKind], source: str, where: str
) -> EffectRule:
    unknown = sorted(set(entry) - _ALLOWED_KEYS)
    if unknown:
        raise ScenarioError(
            f"{source}: unknown key {where}.{unknown[0]}; allowed: {', '.join(sorted(_ALLOWED_KEYS))}"
        )
    sink = entry.get("sink")
    if not isinstance(sink, str) or not sink:
        raise ScenarioError(
            f'{source}: {where}.sink must name a sink by its label (sink = "orders"), got '
            f"{sink!r}; the environment creates: {_allowed_labels(labels)}"
        )
    if sink not in labels:
        raise ScenarioError(
            f"{source}: {where}.sink = {sink!r} is not a sink the run creates; the "
            f"environment's placeholders create: {_allowed_labels(labels)}"
        )
    kind = labels[sink]
    strings = {}
    for name in ("id", "id_pattern", "id_attribute"):
        value = entry.get(name, "")
        if not isinstance(value, str):
            raise ScenarioError(f"{source}: {where}.{name} must be a string, got {value!r}")
        strings[name] = value
    id_path, pattern, attribute = strings["id"], strings["id_pattern"], strings["id_attribute"]
    if attribute and kind not in ATTRIBUTE_KINDS:
        raise ScenarioError(
            f"{source}: {where}.id_attribute = {attribute!r}, but {sink!r} is a "
            f"{kind.value}, whose entries carry no message attributes; id_attribute is for "
            "topics and queues. Give id = a dotted path into the payload"
            + (' or "key"' if kind in KEYED_KINDS else "")
        )
    if attribute and id_path:
        raise ScenarioError(
            f"{source}: {where} gives both id = {id_path!r} and id_attribute = "
            f"{attribute!r}; give one: where the business id is"
        )
    if id_path == BY_KEY and kind not in KEYED_KINDS:
        raise ScenarioError(
            f'{source}: {where}.id = "key", but {sink!r} is a {kind.value}, whose messages '
            'have no key; give a dotted path into the payload (id = "detail.orderId"). "key" '
            "is for buckets (the object's key) and state machines (the execution's name)"
        )
    if id_path and id_path != BY_KEY and not _PATH.fullmatch(id_path):
        raise ScenarioError(
            f"{source}: {where}.id = {id_path!r} is not a dotted path (such as "
            '"detail.orderId" or "items[0].id") nor "key"'
        )
    if pattern:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ScenarioError(
                f"{source}: {where}.id_pattern = {pattern!r} is not a regular expression: {exc}"
            ) from None
    required = entry.get("required", False)
    if not isinstance(required, bool):
        raise ScenarioError(f"{source}: {where}.required must be true or false, got {required!r}")
    if required and not id_path and not pattern and not attribute and kind not in KEYED_KINDS:
        raise ScenarioError(
            f"{source}: {where}: sink {sink!r} is required but says no way to find a business "
            'id in what reaches it; give id = "PATH" (a dotted path into the payload, e.g. '
            'id = "orderId"), id_pattern = "REGEX"'
            + (' or id_attribute = "NAME" (a message attribute)' if kind in ATTRIBUTE_KINDS else "")
        )
    delivery = entry.get("delivery", Delivery.EXACTLY_ONCE.value)
    try:
        delivery = Delivery(delivery)
    except ValueError:
        raise ScenarioError(
            f"{source}: {where}.delivery = {delivery!r}; allowed: "
            f"{', '.join(d.value for d in Delivery)}"
        ) from None
    if delivery is Delivery.ANY and required:
        raise ScenarioError(
            f'{source}: {where}: sink {sink!r} is required but delivery = "any" judges none '
            "of its entries per business id; drop one of the two"
        )
    by_content = entry.get("content_based_deduplication", False)
    if not isinstance(by_content, bool):
        raise ScenarioError(
            f"{source}: {where}.content_based_deduplication must be true or false, got "
            f"{by_content!r}"
        )
    if by_content and not (kind in ATTRIBUTE_KINDS and sink.endswith(FIFO_SUFFIX)):
        raise ScenarioError(
            f"{source}: {where}.content_based_deduplication = true, but {sink!r} is not a "
            f"FIFO topic or queue; it is for a {{topic:NAME.fifo}} or {{queue_url:NAME.fifo}} "
            "sink whose consumer sends no MessageDeduplicationId"
        )
    return EffectRule(sink, kind, id_path, pattern, attribute, required, delivery, by_content)

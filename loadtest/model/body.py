"""A generated message's body, and where a body's business id and details live.

Owns ``[workload] body``, the template a generated message is made from
(``compile_template``, ``BodyTemplate.render``), and ``body_shape``: given a workload,
the path of the business id and of each detail field in the message the queue carries,
through its envelope (an SNS notification's ``Message`` JSON string, an EventBridge
event's ``detail``). Everything else reads a body through a ``BodyShape``: the runner for
a received record's business id, the checker for a message's details.

A template is a JSON-like table whose string values may hold placeholders:

- ``{id}``: the business id (required; where the template puts it is where a consumer
  finds it: no ``id`` field is added to a body that has none);
- ``{quantity}``: the generated detail (1..10; another value on a conflicting resend,
  0 on a poison id);
- ``{copy}`` (0 for the first message of an id, 1.. for its resends), ``{index}`` (the
  message's index in the schedule), ``{uuid}`` and ``{timestamp}``: per message, derived
  from the seed and the index, so a replay sends the same bytes.

A value that is exactly one placeholder keeps its type (``"{quantity}"`` is a number);
within other text a placeholder is written as text. Pure.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from loadtest.errors import ScenarioError
from loadtest.model.envelopes import (
    Envelope,
    EnvelopeKind,
    MessageAttribute,
    derived_time,
    derived_uuid,
    iso_millis,
    wrap,
)

if TYPE_CHECKING:
    from loadtest.model.settings import Workload

ID = "id"
DETAILS = ("quantity",)
"""The generated details a template may place (the schedule draws them)."""
PER_MESSAGE = ("copy", "index", "uuid", "timestamp")
"""Placeholders that differ between the copies of one id: never a message's details."""
PLACEHOLDERS = (ID, *DETAILS, *PER_MESSAGE)
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A placeholder in a template's string (any other brace is literal text)."""


class Decode(Enum):
    """A path step: the value here is a JSON document in a string; read on inside it."""

    JSON = "json"


Step = str | int | Decode
"""A map key, a list index, or ``Decode.JSON``."""
Path = tuple[Step, ...]


def describe(path: Path) -> str:
    """A path as text: ``Message(json).order.eventId``, ``items[0].sku``."""
    out = ""
    for step in path:
        if step is Decode.JSON:
            out += "(json)"
        elif isinstance(step, int):
            out += f"[{step}]"
        else:
            out += f".{step}" if out else str(step)
    return out or "(the body)"


_MISSING = object()


def read(value: Any, path: Path) -> Any:
    """The value at ``path`` in a parsed JSON value, or ``None`` when it is not there."""
    for step in path:
        if step is Decode.JSON:
            if not isinstance(value, str):
                return None
            try:
                value = json.loads(value)
            except ValueError:
                return None
        elif isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return None
            value = value[step]
        else:
            if not isinstance(value, dict):
                return None
            value = value.get(step, _MISSING)
            if value is _MISSING:
                return None
    return value


# --- templates ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Text:
    """A string value: literal parts and placeholder names, alternating (literal first)."""

    parts: tuple[str, ...]

    @property
    def single(self) -> str | None:
        """The placeholder when the value is exactly one (typed when rendered)."""
        return self.parts[1] if len(self.parts) == 3 and not self.parts[0] + self.parts[2] else None


@dataclass(frozen=True)
class Leaf:
    """One value of a template, and where it sits in the body."""

    path: Path
    template: Any
    """The value as given (a string may hold placeholders)."""

    @property
    def names(self) -> tuple[str, ...]:
        if not isinstance(self.template, str):
            return ()
        return tuple(PLACEHOLDER.findall(self.template))


def _compile(value: Any, path: Path, leaves: list[Leaf], source: str) -> Any:
    where = f"{source}: workload.body.{describe(path)}" if path else f"{source}: workload.body"
    if isinstance(value, Mapping):
        return {str(k): _compile(v, (*path, str(k)), leaves, source) for k, v in value.items()}
    if isinstance(value, list):
        return [_compile(v, (*path, i), leaves, source) for i, v in enumerate(value)]
    if isinstance(value, _dt.date | _dt.time):
        raise ScenarioError(
            f"{where} = {value!r}: a TOML date or time is not JSON; write it as a string "
            '(e.g. "2025-01-01T00:00:00Z"), or use "{timestamp}"'
        )
    leaves.append(Leaf(path, value))
    if not isinstance(value, str):
        return value
    pieces = PLACEHOLDER.split(value)
    for name in pieces[1::2]:
        if name not in PLACEHOLDERS:
            raise ScenarioError(
                f"{where} = {value!r}: unknown placeholder {{{name}}}; allowed: "
                + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
            )
    return _Text(tuple(pieces)) if len(pieces) > 1 else value


@dataclass(frozen=True)
class BodyTemplate:
    """A validated ``[workload] body``: compiled for rendering, with its leaves."""

    raw: dict[str, Any]
    """The template as the scenario gave it."""
    compiled: Any = field(compare=False, repr=False)
    leaves: tuple[Leaf, ...] = field(compare=False, repr=False)

    def uses(self, name: str) -> bool:
        return any(name in leaf.names for leaf in self.leaves)

    def render(self, values: Mapping[str, Any]) -> Any:
        """The body (a JSON value) with each placeholder replaced by its value."""
        return _render(self.compiled, values)


def _render(node: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(node, _Text):
        single = node.single
        if single is not None:
            return values[single]
        return "".join(
            part if i % 2 == 0 else str(values[part]) for i, part in enumerate(node.parts)
        )
    if isinstance(node, dict):
        return {k: _render(v, values) for k, v in node.items()}
    if isinstance(node, list):
        return [_render(v, values) for v in node]
    return node


def compile_template(raw: Any, source: str) -> BodyTemplate:
    """Validate ``[workload] body``: a table that places ``{id}`` and only known placeholders."""
    if not isinstance(raw, Mapping) or not raw:
        raise ScenarioError(
            f'{source}: workload.body must be a non-empty table, e.g. {{ orderId = "{{id}}", '
            f'quantity = "{{quantity}}" }}, got {raw!r}'
        )
    leaves: list[Leaf] = []
    compiled = _compile(raw, (), leaves, source)
    if not any(ID in leaf.names for leaf in leaves):
        raise ScenarioError(
            f"{source}: workload.body must place the business id: one value needs {{id}} "
            f'(e.g. orderId = "{{id}}"), got {dict(raw)!r}'
        )
    return BodyTemplate(dict(raw), compiled, tuple(leaves))


class _Values(dict[str, Any]):
    """A message's placeholder values; ``{uuid}`` and ``{timestamp}`` are derived when a
    template or an attribute first reads them (most read neither)."""

    def __init__(self, seed: int, offset_ns: int, **given: Any) -> None:
        super().__init__(given)
        self.seed = seed
        self.offset_ns = offset_ns

    def __missing__(self, key: str) -> Any:
        if key == "uuid":
            value: Any = derived_uuid(self.seed, self["index"])
        elif key == "timestamp":
            value = iso_millis(derived_time(self.seed, self.offset_ns))
        else:
            raise KeyError(key)
        self[key] = value
        return value


def message_values(
    business_id: str, quantity: int, copy: int, index: int, seed: int, offset_ns: int
) -> dict[str, Any]:
    """The placeholders' values for one generated message."""
    return _Values(seed, offset_ns, id=business_id, quantity=quantity, copy=copy, index=index)


def render_attributes(
    attributes: Sequence[MessageAttribute], values: Mapping[str, Any]
) -> tuple[tuple[str, str, str], ...]:
    """Each attribute as ``(name, data type, value)``, its placeholders replaced as text."""
    return tuple(
        (a.name, a.data_type, PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), a.value))
        for a in attributes
    )


def check_attribute_placeholders(attributes: Sequence[MessageAttribute], source: str) -> None:
    for a in attributes:
        for name in PLACEHOLDER.findall(a.value):
            if name not in PLACEHOLDERS:
                raise ScenarioError(
                    f"{source}: workload.attributes.{a.name} = {a.value!r}: unknown placeholder "
                    f"{{{name}}}; allowed: " + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
                )


def render_message(
    workload: Workload,
    template: BodyTemplate | None,
    values: Mapping[str, Any],
    *,
    seed: int,
    offset_ns: int,
) -> tuple[str, tuple[tuple[str, str, str], ...]]:
    """A generated message's queue body (enveloped) and its rendered attributes."""
    body: Any
    if template is not None:
        body = template.render(values)
    else:
        body = {"id": values["id"], "quantity": values["quantity"]}
    return envelop(workload, body, values, seed=seed, offset_ns=offset_ns)


def envelop(
    workload: Workload,
    body: Any,
    values: Mapping[str, Any],
    *,
    seed: int,
    offset_ns: int,
) -> tuple[str, tuple[tuple[str, str, str], ...]]:
    """``body`` in the workload's envelope, and the attributes: on the SQS message, or in an
    SNS notification's ``MessageAttributes`` (as SNS delivers them without raw delivery)."""
    attributes = render_attributes(workload.attributes, values)
    sns = workload.envelope.kind is EnvelopeKind.SNS
    text = wrap(
        workload.envelope,
        body,
        seed=seed,
        index=values["index"],
        offset_ns=offset_ns,
        attributes=attributes if sns else (),
    )
    return text, () if sns else attributes


# --- where the business id and the details live -----------------------------------------


def envelope_root(envelope: Envelope) -> Path:
    """Where the producer's body sits in the queue message."""
    if envelope.kind is EnvelopeKind.SNS:
        return ("Message", Decode.JSON)
    if envelope.kind is EnvelopeKind.EVENTBRIDGE:
        return ("detail",)
    return ()


@dataclass(frozen=True)
class BodyShape:
    """Where a message's business id and details live in the body the queue carries."""

    id_path: Path = (ID,)
    """From the top of the queue message, through its envelope."""
    id_pattern: str | None = None
    """When the id shares its value with other text (``"ORDER#{id}"``): a regular
    expression whose group ``id`` is the business id; ``None``: the value is the id."""
    root: Path = ()
    """Where the producer's body sits in the queue message (``envelope_root``)."""
    detail_paths: tuple[tuple[str, Path], ...] | None = None
    """Each detail field's name and path (from the top of the queue message); ``None``:
    every field of the body at ``root`` except the id's (explicit bodies, and the
    default ``{"id", "quantity"}``)."""

    def business_id(self, body: str) -> str | None:
        """The business id a queue message's body carries, or ``None`` (not JSON, no id)."""
        try:
            value = read(json.loads(body), self.id_path)
        except ValueError:
            return None
        if not isinstance(value, str):
            return None
        if self.id_pattern is None:
            return value
        match = re.fullmatch(self.id_pattern, value)
        return match.group("id") if match else None

    def details(self, body: str) -> dict[str, Any] | None:
        """A queue message's details by name (JSON values, as sent), or ``None`` when the body
        is not the shape's (not JSON, no object where the body should be)."""
        try:
            parsed = json.loads(body)
        except ValueError:
            return None
        if self.detail_paths is None:
            inner = read(parsed, self.root)
            if not isinstance(inner, dict):
                return None
            id_key = self.id_path[-1] if self.id_path[:-1] == self.root else None
            return {k: v for k, v in inner.items() if k != id_key}
        if not isinstance(read(parsed, self.root), dict):
            return None
        return {name: read(parsed, path) for name, path in self.detail_paths}

    def describe(self) -> str:
        """Where the id and the details are, for messages and reports."""
        id_text = describe(self.id_path)
        if self.id_pattern is not None:
            id_text += f" (matching {self.id_pattern})"
        if self.detail_paths is None:
            details = f"the other fields of {describe(self.root)}"
        else:
            details = ", ".join(describe(p) for _, p in self.detail_paths) or "none"
        return f"business id at {id_text}; details at {details}"


FLAT = BodyShape()
"""The lab's body: ``{"id": ..., ...}``, the business id its ``id``, the rest its details."""


def body_shape(workload: Workload) -> BodyShape:
    """Where a workload's messages carry their business id and their details."""
    root = envelope_root(workload.envelope)
    template = workload.body
    if template is None:
        return BodyShape(id_path=(*root, ID), root=root)
    id_leaf = next((leaf for leaf in template.leaves if leaf.template == "{id}"), None)
    pattern = None
    if id_leaf is None:
        id_leaf = next(leaf for leaf in template.leaves if ID in leaf.names)
        pattern = _id_pattern(id_leaf.template)
    detail_leaves = [
        leaf
        for leaf in template.leaves
        if ID not in leaf.names and not set(leaf.names) & set(PER_MESSAGE)
    ]
    names = [_name(leaf.path) for leaf in detail_leaves]
    details = tuple(
        (name if names.count(name) == 1 else describe(leaf.path), (*root, *leaf.path))
        for name, leaf in zip(names, detail_leaves, strict=True)
    )
    return BodyShape(
        id_path=(*root, *id_leaf.path), id_pattern=pattern, root=root, detail_paths=details
    )


def _name(path: Path) -> str:
    """A detail's name: its last key (what a handler storing it would most likely call it)."""
    keys = [step for step in path if isinstance(step, str)]
    return keys[-1] if keys else describe(path)


def _id_pattern(template: str) -> str:
    pieces = PLACEHOLDER.split(template)
    out = ""
    seen_id = False
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            out += re.escape(piece)
        elif piece == ID and not seen_id:
            out += "(?P<id>.+?)"
            seen_id = True
        elif piece == ID:
            out += "(?P=id)"
        else:
            out += ".*?"
    return out

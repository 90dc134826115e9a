"""A generated message's body: the template it is made from, and paths into a JSON body.

Owns ``[workload] body``, the template a generated message is made from
(``compile_template``, ``BodyTemplate.render``), its placeholders' values
(``message_values``), the rendered attributes, and a rendered body in the workload's
envelope (``render_message``, ``envelop``); and the paths a body's values sit at
(``Path``, ``describe``, ``read``). Where a received body carries its business id and
details is ``loadtest.model.scenario.body``'s ``BodyShape``.

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
from typing import Any, Protocol

from loadtest.errors import ScenarioError
from loadtest.model.scenario.envelopes import (
    Envelope,
    EnvelopeKind,
    MessageAttribute,
    derived_time,
    derived_uuid,
    iso_millis,
    wrap,
)

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


class MessageFormat(Protocol):
    """What making and reading a workload's messages needs of it (``settings.Workload``)."""

    @property
    def body(self) -> BodyTemplate | None: ...

    @property
    def envelope(self) -> Envelope: ...

    @property
    def attributes(self) -> Sequence[MessageAttribute]: ...


def render_message(
    workload: MessageFormat,
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
    workload: MessageFormat,
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

"""A generated message's body, and where a body's business id and details live.

Owns ``body_shape``: given a workload, the path of the business id and of each detail
field in the message the queue carries, through its envelope (an SNS notification's
``Message`` JSON string, an EventBridge event's ``detail``). Everything else reads a body
through a ``BodyShape``: the runner for a received record's business id, the checker for
a message's details. The template a generated message is made from is
``loadtest.model.scenario.body_template``'s; its names are re-exported here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from loadtest.model.scenario.body_template import (
    DETAILS,
    ID,
    PER_MESSAGE,
    PLACEHOLDER,
    PLACEHOLDERS,
    BodyTemplate,
    Decode,
    Leaf,
    MessageFormat,
    Path,
    Step,
    check_attribute_placeholders,
    compile_template,
    describe,
    envelop,
    message_values,
    read,
    render_attributes,
    render_message,
)
from loadtest.model.scenario.envelopes import Envelope, EnvelopeKind

__all__ = [
    "DETAILS",
    "FLAT",
    "ID",
    "PER_MESSAGE",
    "PLACEHOLDER",
    "PLACEHOLDERS",
    "BodyShape",
    "BodyTemplate",
    "Decode",
    "Leaf",
    "MessageFormat",
    "Path",
    "Step",
    "body_shape",
    "check_attribute_placeholders",
    "compile_template",
    "describe",
    "envelop",
    "envelope_root",
    "message_values",
    "read",
    "render_attributes",
    "render_message",
]


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


def body_shape(workload: MessageFormat) -> BodyShape:
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

"""The observation protocol: what the write observer sends out of an execution environment.

One owner for the shape of an observation. The observer (inside the
environment, or inside a deployed function) encodes each observation as one
JSON line the moment it happens; the runner decodes the lines back into the
history's records. Observations leave the environment as they happen, so a
write survives its invocation timing out, crashing or being killed.

Lines (``t`` is the tag)::

    {"t": "begin", "call_id", "operation", "request_id", "started_ns"}   # a write call is about to be sent
    {"t": "write", ...WriteRecord fields}                               # one item's write decision
    {"t": "read", ...ReadRecord fields}
    {"t": "unobserved", "operation", "reason", "request_id"}
    {"t": "fault", "operation", "error", "request_id"}                  # the observer's own failure
    {"t": "side", "operation", "table", "items", "request_id"}          # accepted writes to an extra table
    {"t": "effect", ...EffectRecord fields}                             # one entry sent beyond the table

A ``begin`` without a ``write`` of the same ``call_id`` is a write whose
answer never came back: indeterminate. Pure: no I/O, no clock.
"""

from __future__ import annotations

import dataclasses
import json
import json.encoder
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from loadtest.model.history.log import (
    EffectKind,
    EffectRecord,
    ObserverFault,
    ReadRecord,
    SideWrite,
    TypedItem,
    UnobservedCall,
    WorkLeft,
    WriteOutcome,
    WriteRecord,
)


@dataclass(frozen=True)
class WriteBegun:
    """A write call about to be sent: its parts' keys, in case no answer ever comes."""

    call_id: str
    operation: str
    request_id: str
    started_ns: int
    keys: tuple[TypedItem, ...] = ()
    requested: tuple[TypedItem | None, ...] = ()
    record_id: str = ""


Observation = (
    WriteBegun
    | WriteRecord
    | ReadRecord
    | UnobservedCall
    | ObserverFault
    | SideWrite
    | EffectRecord
)

_TAGS: dict[type[Any], str] = {
    WriteBegun: "begin",
    WriteRecord: "write",
    ReadRecord: "read",
    UnobservedCall: "unobserved",
    ObserverFault: "fault",
    SideWrite: "side",
    EffectRecord: "effect",
}


_FIELDS: dict[type[Any], tuple[str, ...]] = {
    kind: tuple(f.name for f in dataclasses.fields(kind)) for kind in _TAGS
}


def encode(observation: Observation) -> str:
    """One JSON line (with its newline). Values are DynamoDB's typed wire form: always JSON.

    The fields are read as they are, not copied through ``dataclasses.asdict``: its deep
    copy of every item cost the observer more than the rest of the line, and ``json.dumps``
    reads the values when it is called either way, so the line is the same. The text is
    ``json.dumps``'s with these separators and ``default=str``, from an encoder made once
    (``json_line_writer``), not one made for each line.
    """
    body = {name: getattr(observation, name) for name in _FIELDS[type(observation)]}
    body["t"] = _TAGS[type(observation)]
    return _json_text(body) + "\n"


def json_line_writer(default: Callable[[Any], Any] | None = str) -> Callable[[Any], str]:
    """``json.dumps(value, separators=(",", ":"), default=default)``, the same text, without
    building an encoder for every call: the C encoder made once (no check for circular
    values: decoded JSON and DynamoDB's wire form have none). ``default=None`` refuses a
    value JSON cannot hold as ``json.dumps`` does (its ``TypeError``)."""
    fallback = json.JSONEncoder().default if default is None else default
    make = getattr(json.encoder, "c_make_encoder", None)  # not in the module's stubs
    if make is None:  # an interpreter without the C accelerator
        return lambda value: json.dumps(value, separators=(",", ":"), default=fallback)
    chunks = make(
        None, fallback, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, True
    )
    return lambda value: "".join(chunks(value, 0))


_json_text = json_line_writer()


SHARED_VALUES_LIMIT = 4096
"""Distinct values a ``SharedValues`` table remembers before it starts afresh."""


class SharedValues:
    """One copy of each distinct JSON value a run's records hold many times.

    Duplicate deliveries write the same items under the same keys: a run of N
    messages holds a few copies of each item (the write's request, the item
    before and after it, the next write's item before). Decoded once per line,
    each copy is its own dict; shared, equal values are one object. Values are
    matched by their exact JSON text (attribute order included, so a shared
    item's ``key_string`` is the one its own write gave); the table keeps only
    the text's hash, and a hash collision with an unequal value shares nothing.

    The records are frozen and nothing mutates their items: a shared value must
    never be changed in place.

    The table remembers at most ``limit`` values, then starts afresh: the copies
    of one item arrive close together, and the history keeps the records it has
    framed (``InvocationLog``) as bytes, where one table per run would only pin
    every item of the run in memory.
    """

    def __init__(self, limit: int = SHARED_VALUES_LIMIT) -> None:
        self.limit = limit
        self._by_hash: dict[int, Any] = {}
        self._texts: dict[str, str] = {}

    def text(self, value: str | None) -> str | None:
        """One copy of a repeated string (an operation's name, a condition, an error code)."""
        if value is None:
            return None
        if len(self._texts) >= self.limit:
            self._texts.clear()
        return self._texts.setdefault(value, value)

    def share(self, value: Any) -> Any:
        """``value``, or the equal value seen before (None and scalars as they are)."""
        if not isinstance(value, (dict, list)):
            return value
        if len(self._by_hash) >= self.limit:
            self._by_hash.clear()
        digest = hash(_json_text(value))
        seen = self._by_hash.setdefault(digest, value)
        return seen if seen is value or seen == value else value

    def __len__(self) -> int:
        return len(self._by_hash)


_ITEM_FIELDS = {
    "write": ("key", "item_before", "item_after", "requested"),
    "read": ("key", "found"),
}
_TEXT_FIELDS = {
    "write": ("operation", "condition", "error_code"),
    "begin": ("operation",),
}


def decode(
    line: str, shared: SharedValues | None = None, request_id: str | None = None
) -> Observation:
    """The observation of one line; raises ValueError on a line that is not one.

    With ``shared``, the items and keys it holds are the table's copies of equal
    values; an observation of ``request_id`` holds that string, not a copy of it.
    """
    body = json.loads(line)
    if not isinstance(body, dict):
        raise ValueError("an observation is a JSON object")
    tag = body.pop("t", None)
    if request_id is not None and body.get("request_id") == request_id:
        body["request_id"] = request_id
    if shared is not None:
        for name in _ITEM_FIELDS.get(tag, ()):
            if name in body:
                body[name] = shared.share(body[name])
        for name in _TEXT_FIELDS.get(tag, ()):
            if isinstance(body.get(name), str):
                body[name] = shared.text(body[name])
    if tag == "write":
        body["outcome"] = WriteOutcome(body["outcome"])
        return WriteRecord(**body)
    if tag == "read":
        return ReadRecord(**body)
    if tag == "begin":
        # Not shared here: most begun writes are answered, and ``collect`` shares the keys
        # of those that are not when it makes them writes.
        body["keys"] = tuple(body.get("keys", ()))
        body["requested"] = tuple(body.get("requested", ()))
        return WriteBegun(**body)
    if tag == "unobserved":
        return UnobservedCall(**body)
    if tag == "fault":
        return ObserverFault(**body)
    if tag == "side":
        return SideWrite(**body)
    if tag == "effect":
        body["kind"] = EffectKind(body["kind"])
        if body.get("message_attributes"):
            body["message_attributes"] = tuple(tuple(a) for a in body["message_attributes"])
        else:
            body.pop("message_attributes", None)
        return EffectRecord(**body)
    raise ValueError(f"unknown observation tag {tag!r}")


@dataclass
class Observed:
    """One invocation's observations, sorted by kind."""

    writes: list[WriteRecord] = dataclasses.field(default_factory=list)
    reads: list[ReadRecord] = dataclasses.field(default_factory=list)
    unobserved: list[UnobservedCall] = dataclasses.field(default_factory=list)
    faults: list[ObserverFault] = dataclasses.field(default_factory=list)
    side: list[SideWrite] = dataclasses.field(default_factory=list)
    effects: list[EffectRecord] = dataclasses.field(default_factory=list)


def collect(
    observations: Iterable[Observation], *, ended_ns: int, shared: SharedValues | None = None
) -> Observed:
    """Sort observations; a begun write with no answer becomes an indeterminate write (its
    key and requested item the ``shared`` table's copies, when given)."""
    out = Observed()
    begun: dict[str, WriteBegun] = {}
    answered: set[str] = set()
    for obs in observations:
        if isinstance(obs, WriteBegun):
            begun[obs.call_id] = obs
        elif isinstance(obs, WriteRecord):
            answered.add(obs.call_id)
            out.writes.append(obs)
        elif isinstance(obs, ReadRecord):
            out.reads.append(obs)
        elif isinstance(obs, UnobservedCall):
            out.unobserved.append(obs)
        elif isinstance(obs, SideWrite):
            out.side.append(obs)
        elif isinstance(obs, EffectRecord):
            out.effects.append(obs)
        else:
            out.faults.append(obs)
    for call_id, begin in begun.items():
        if call_id in answered:
            continue
        for key, requested in zip(begin.keys, begin.requested, strict=False):
            if shared is not None:
                key, requested = shared.share(key), shared.share(requested)
            out.writes.append(
                WriteRecord(
                    operation=begin.operation,
                    key=key,
                    condition=None,
                    outcome=WriteOutcome.INDETERMINATE,
                    item_before=None,
                    item_after=None,
                    before_known=False,
                    started_ns=begin.started_ns,
                    ended_ns=ended_ns,
                    error_code="NoAnswer",
                    call_id=call_id,
                    requested=requested,
                    after_known=False,
                    request_id=begin.request_id,
                    record_id=begin.record_id,
                )
            )
    return out


def left_work_of(body: Mapping[str, Any]) -> tuple[tuple[WorkLeft, ...], tuple[str, ...]]:
    """A local environment's reply's or a function's end line's ``left`` and ``ended``
    (``loadtest.observer.lambda_entry.left_lines``): the work the invocation left running,
    and the ids of work left before that had finished by its return."""
    left = tuple(
        WorkLeft(str(row[0]), str(row[1]), str(row[2]))
        for row in body.get("left") or ()
        if isinstance(row, list) and len(row) == 3
    )
    return left, tuple(str(w) for w in body.get("ended") or ())

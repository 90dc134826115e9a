"""The sinks a scenario names with placeholders, and the placeholder a variable's name suggests.

A sink is a resource a consumer sends effects to, created per run and named to the
function through ``[consumer] environment`` (or ``--env``):

========================== =============================== ===========================
placeholder                what the function is told       what the run creates
========================== =============================== ===========================
``{topic:NAME}``           the SNS topic's ARN             the topic
``{topic_name:NAME}``      that topic's name               the same topic
``{queue_url:NAME}``       the SQS queue's URL             a queue (not the source's)
``{queue_arn:NAME}``       that queue's ARN                the same queue
``{queue_name:NAME}``      that queue's name               the same queue
``{bus:NAME}``             the EventBridge bus's name      the bus
``{bucket:NAME}``          the S3 bucket's name            the bucket
``{state_machine:NAME}``   the state machine's ARN         a one-``Pass``-state machine
``{function:NAME}``        the Lambda function's ARN       a function that captures
                                                           what it is invoked with
========================== =============================== ===========================

A NAME ending in ``.fifo`` makes a FIFO topic or queue (content-based deduplication off:
the consumer gives each message a ``MessageDeduplicationId``, as AWS requires). Each
sink's resource is called ``PREFIX-NAME`` (``Sink.resource_name``), PREFIX being the
run's (``loadtest-1a2b3c4d-0``), so NAME is held to what the service allows after it.

Owns those placeholders, their NAME rules, the names a run gives the resources, and
``suggested_value`` (the one place a variable's name is read as the resource it names:
the checker's missing-variable reasons and ``loadtest new`` both ask it). Pure.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from loadtest.model.history.records import EffectKind

SINK_PLACEHOLDERS: dict[str, EffectKind] = {
    "topic": EffectKind.TOPIC,
    "topic_name": EffectKind.TOPIC,
    "queue_url": EffectKind.QUEUE,
    "queue_arn": EffectKind.QUEUE,
    "queue_name": EffectKind.QUEUE,
    "bus": EffectKind.BUS,
    "bucket": EffectKind.BUCKET,
    "state_machine": EffectKind.STATE_MACHINE,
    "function": EffectKind.FUNCTION,
}
"""Each sink placeholder's kind (``{KIND:NAME}``), in the order messages list them (a
kind's first is what the sink is named by where one placeholder stands for it)."""

PREFIX_MAX = 25
"""The longest run prefix a sink's name starts with (``loadtest-explore-1a2b3c4d``)."""
FIFO_SUFFIX = ".fifo"

_CAPTURE_TAG = {
    EffectKind.QUEUE: "q",
    EffectKind.TOPIC: "t",
    EffectKind.BUS: "e",
    EffectKind.FUNCTION: "f",
}
"""The letter between the prefix and NAME in the SQS queues sinks use (a queue sink, a
topic's, bus's or function's capture queue): queues of different sinks can never share a
name."""

ROLE_NAME_LIMIT = 64
"""The longest IAM role name."""

_NAME_LIMIT = {
    EffectKind.TOPIC: 80 - 2,  # its capture queue, PREFIX-t-NAME, is an SQS queue
    EffectKind.QUEUE: 80 - 2,
    EffectKind.BUS: 80 - 2,
    EffectKind.BUCKET: 63,
    EffectKind.STATE_MACHINE: 80,
    EffectKind.FUNCTION: ROLE_NAME_LIMIT,  # Lambda's 64, which its role's name shares
}
"""The longest resource name each service allows (after the capture tag's room)."""

_WHAT = {
    EffectKind.TOPIC: "an SNS topic",
    EffectKind.QUEUE: "an SQS queue",
    EffectKind.BUS: "an EventBridge bus",
    EffectKind.BUCKET: "an S3 bucket",
    EffectKind.STATE_MACHINE: "a Step Functions state machine",
    EffectKind.FUNCTION: "a Lambda function",
}

_WORD = re.compile(r"[A-Za-z0-9_-]+")
_BUCKET_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?")


def label_limit(kind: EffectKind) -> int:
    """The longest NAME (in characters) a sink of ``kind`` may have."""
    return _NAME_LIMIT[kind] - PREFIX_MAX - 1


@dataclass(frozen=True, order=True)
class Sink:
    """One sink a scenario names: its kind and its NAME (the label the report uses)."""

    kind: EffectKind
    name: str
    content_deduplication: bool = False
    """A FIFO topic or queue that deduplicates by content too (``[[effects]]``
    ``content_based_deduplication``): a message without a ``MessageDeduplicationId`` is
    deduplicated by its body's SHA-256."""

    @property
    def fifo(self) -> bool:
        return self.name.endswith(FIFO_SUFFIX)

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The placeholders that name it, as their text (``topic:orders``; a queue's two)."""
        kinds = [kind for kind, of in SINK_PLACEHOLDERS.items() if of is self.kind]
        return tuple(f"{kind}:{self.name}" for kind in kinds)

    @property
    def service(self) -> str:
        """What it is, in words: ``an SNS topic``, ``a FIFO SQS queue``, ..."""
        what = _WHAT[self.kind]
        return f"a FIFO {what.split(' ', 1)[1]}" if self.fifo else what

    def resource_name(self, prefix: str) -> str:
        """What the run calls the sink's resource: ``PREFIX-NAME`` (a queue sink's
        ``PREFIX-q-NAME``)."""
        if len(prefix) > PREFIX_MAX:
            raise ValueError(f"run prefix {prefix!r} is longer than {PREFIX_MAX} characters")
        if self.kind is EffectKind.QUEUE:
            return f"{prefix}-{_CAPTURE_TAG[self.kind]}-{self.name}"
        return f"{prefix}-{self.name}"

    def role_name(self, prefix: str) -> str:
        """The IAM role a state machine or function sink runs as: its resource's name, or,
        past IAM's 64 characters (a state machine's may be 80), its first 55 and 8 hex
        digits of the whole name's SHA-256, so two sinks of a run never share a role."""
        name = self.resource_name(prefix)
        if len(name) <= ROLE_NAME_LIMIT:
            return name
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        return f"{name[: ROLE_NAME_LIMIT - len(digest) - 1]}-{digest}"

    def prefix_of(self, resource_name: str) -> str:
        """The run prefix ``resource_name`` (one of ``resource_name``'s answers) starts with."""
        tag = f"-{_CAPTURE_TAG[self.kind]}" if self.kind is EffectKind.QUEUE else ""
        return resource_name.removesuffix(f"{tag}-{self.name}")

    def capture_name(self, prefix: str) -> str:
        """The SQS queue that receives what a topic, bus or function delivers:
        ``PREFIX-t-NAME``, ``PREFIX-e-NAME`` or ``PREFIX-f-NAME`` (FIFO for a FIFO topic)."""
        return f"{prefix}-{_CAPTURE_TAG[self.kind]}-{self.name}"

    @property
    def deduplicated(self) -> str:
        """What the sink deduplicates by itself, in words ("" when nothing)."""
        if self.fifo and self.content_deduplication:
            return "deduplication id, or the body's SHA-256, within 5 minutes"
        if self.fifo:
            return "deduplication id within 5 minutes"
        if self.kind is EffectKind.BUCKET:
            return "one object per key"
        if self.kind is EffectKind.STATE_MACHINE:
            return "execution names are unique"
        return ""


def sink_of(inner: str) -> Sink | None:
    """The sink a placeholder's text (``topic:orders``) names, or None when its kind is not
    a sink's (``table``, ``region``, ...). Raises ``ValueError`` (what NAME allows) for a
    bad NAME."""
    kind_text, sep, name = inner.partition(":")
    if not sep or kind_text not in SINK_PLACEHOLDERS:
        return None
    kind = SINK_PLACEHOLDERS[kind_text]
    problem = _name_problem(kind, name)
    if problem:
        raise ValueError(
            f"{{{inner}}} is not {_WHAT[kind]} a run can make: NAME allows {problem}; "
            "the run names it loadtest-<run>-<variant>-NAME"
        )
    return Sink(kind, name)


def _name_problem(kind: EffectKind, name: str) -> str:
    """What NAME allows, when ``name`` breaks it; "" when it is fine."""
    limit = label_limit(kind)
    if kind is EffectKind.BUCKET:
        rule = (
            f"1 to {limit} lowercase letters, digits, '-' or '.', starting and ending with a "
            "letter or digit, no '..'"
        )
        ok = bool(_BUCKET_LABEL.fullmatch(name)) and ".." not in name and len(name) <= limit
        return "" if ok else rule
    fifo_ok = kind in (EffectKind.TOPIC, EffectKind.QUEUE)
    rule = f"1 to {limit} letters, digits, '-' or '_'" + (
        f", ending '{FIFO_SUFFIX}' (counted) for a FIFO {kind.value}" if fifo_ok else ""
    )
    stem = name.removesuffix(FIFO_SUFFIX) if fifo_ok else name
    ok = bool(_WORD.fullmatch(stem)) and len(name) <= limit
    return "" if ok else rule


def sinks_in(values: Iterable[str]) -> tuple[Sink, ...]:
    """The distinct sinks the values' placeholders name, in order of first mention
    (``{queue_url:x}``, ``{queue_arn:x}`` and ``{queue_name:x}`` are one queue). The values
    are valid."""
    found: dict[Sink, None] = {}
    for value in values:
        for inner in re.findall(r"\{([^{}]*)\}", value):
            sink = sink_of(inner)
            if sink is not None:
                found.setdefault(sink, None)
    return tuple(found)


def sink_forms() -> str:
    """The sink placeholders, for a message: ``{topic:NAME}, {queue_url:NAME}, ...``."""
    return ", ".join(f"{{{kind}:NAME}}" for kind in SINK_PLACEHOLDERS)


_SOURCE_QUEUE_WORDS = frozenset(
    {"", "SQS", "SOURCE", "INPUT", "IN", "INBOUND", "JOBS", "JOB", "TRIGGER", "EVENT_SOURCE"}
)
"""A queue variable's qualifier that means the queue feeding the function (``{queue_url}``)."""


def _label(stem: str, default: str) -> str:
    """A NAME from a variable's words: ``ORDER_EVENTS`` -> ``order-events``; ``FIFO`` among
    them makes it a FIFO one (``orders.fifo``)."""
    words = [w for w in stem.lower().split("_") if w]
    fifo = "fifo" in words
    words = [w for w in words if w != "fifo"]
    return "-".join(words or [default]) + (FIFO_SUFFIX if fifo else "")


def _stem(upper: str, *endings: str) -> str:
    for ending in endings:
        if upper.endswith(ending):
            return upper.removesuffix(ending).strip("_")
    return upper


def suggested_value(name: str) -> str | None:
    """The placeholder a variable's name suggests, or None when it suggests none.

    ``ORDERS_TABLE`` -> ``{table}``, ``IDEMPOTENCY_TABLE`` -> ``{table:idempotency}``,
    ``QUEUE_URL`` or ``JOBS_QUEUE_URL`` -> ``{queue_url}`` (the source queue),
    ``NOTIFY_QUEUE_URL`` -> ``{queue_url:notify}``, ``NOTIFY_QUEUE_NAME`` ->
    ``{queue_name:notify}``, ``ORDERS_TOPIC_ARN`` -> ``{topic:orders}``, ``ORDERS_TOPIC_NAME``
    -> ``{topic_name:orders}``, ``EVENT_BUS_NAME`` -> ``{bus:events}``, ``RECEIPTS_BUCKET`` ->
    ``{bucket:receipts}``, ``STATE_MACHINE_ARN`` -> ``{state_machine:workflow}``,
    ``NOTIFY_FUNCTION_NAME`` or ``NOTIFY_FUNCTION_ARN`` -> ``{function:notify}``."""
    upper = name.upper()
    if "REGION" in upper:
        return "{region}"
    if "DLQ" in upper or "DEAD" in upper:
        return "{dlq_url}"
    if "TOPIC" in upper or "SNS" in upper:
        placeholder = "topic_name" if upper.endswith("_NAME") else "topic"
        stem = _stem(upper, "_TOPIC_ARN", "_TOPIC_NAME", "_TOPIC", "_ARN", "_NAME", "_SNS")
        label = _label(stem.replace("TOPIC", "").replace("SNS", ""), "topic")
        return f"{{{placeholder}:{label}}}"
    if "STATE_MACHINE" in upper or "SFN" in upper or "STEP_FUNCTION" in upper:
        stem = re.sub(r"STATE_MACHINE|STEP_FUNCTIONS?|SFN|ARN", "", upper)
        return f"{{state_machine:{_label(stem, 'workflow')}}}"
    if re.search(r"(^|_)(FUNCTION|LAMBDA)(_|$)", upper):
        stem = re.sub(r"(^|_)(FUNCTION|LAMBDA|NAME|ARN)(?=_|$)", "", upper)
        return f"{{function:{_label(stem, 'function')}}}"
    if "BUCKET" in upper or upper.startswith("S3_") or upper.endswith("_S3"):
        stem = re.sub(r"BUCKET|NAME|^S3_|_S3$", "", upper)
        return f"{{bucket:{_label(stem, 'bucket')}}}"
    if "EVENT_BUS" in upper or re.search(r"(^|_)BUS(_|$)", upper) or "EVENTBRIDGE" in upper:
        stem = re.sub(r"EVENT_BUS|EVENTBRIDGE|(^|_)BUS(?=_|$)|NAME|ARN", "", upper)
        return f"{{bus:{_label(stem, 'events')}}}"
    if "QUEUE" in upper or "SQS" in upper:
        arn = "ARN" in upper
        named = upper.endswith("_NAME")
        stem = _stem(
            upper, "_QUEUE_URL", "_QUEUE_ARN", "_QUEUE_NAME", "_QUEUE", "_URL", "_ARN", "_NAME"
        )
        stem = re.sub(r"(^|_)(QUEUE|SQS|URL|ARN)(?=_|$)", "", stem).strip("_")
        placeholder = "queue_arn" if arn else "queue_name" if named else "queue_url"
        if stem in _SOURCE_QUEUE_WORDS:
            return f"{{{placeholder}}}"
        return f"{{{placeholder}:{_label(stem, 'queue')}}}"
    if "TABLE" in upper or "DYNAMO" in upper or "DDB" in upper or upper.endswith("_DB_NAME"):
        if "IDEMPOTENCY" in upper or "LOCK" in upper or "DEDUP" in upper:
            return "{table:idempotency}"
        return "{table}"
    return None

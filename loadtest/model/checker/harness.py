"""Never blame the consumer for the harness: handler failures caused by what the run did not provide.

A handler call that fails because the run lacks something the consumer expects — a
variable it reads from ``os.environ``, a table or queue the run did not create, a
permission the run did not grant, a table keyed as the handler's calls are not — says nothing about the consumer's idempotency. Such
a run is inconclusive, naming what was missing and the scenario line that provides it.

Recognised by error type, from what an invocation leaves in the history: its error text
and log tail. The execution environment marks a ``KeyError`` raised by ``os.environ``
(``[os.environ has no 'NAME']``) and logs each call refused with a missing-resource or
access error (``loadtest: the handler's OPERATION call on 'RESOURCE' failed with CODE``);
a traceback of either kept inside another error's text (a batch processor's) is read too.
Each ``Rule`` turns one error type into a sentence.

``REASONS`` is the one table of how an invocation's error becomes a reason the checker
names, each error type with its effect: the gaps above make a run inconclusive, and the
errors Lambda's runtime reports itself (``Runtime.MarshalError``, ``Runtime.ExitError``)
fail it or only explain it (``runtime_errors`` counts and words those). Pure: text in,
sentences out.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum

from loadtest.model.history.log import History, Invocation
from loadtest.model.scenario import placeholders

_ENVIRON = re.compile(
    r"\[os\.environ has no '([^']+)'\]"
    r"|in __getitem__\n\s+raise KeyError\(key\) from None\n(?:\s*\^+\n)?KeyError: '([^']+)'"
)
_REFUSED = re.compile(
    r"loadtest: the handler's (\w+) call on '([^']*)' failed with ([\w.]+)(?: in ([\w-]+))?",
)
_NO_TABLE_NAME = re.compile(
    r"Invalid (?:type|length) for parameter (?:Entries\[\d+\]\.)?"
    r"(TableName|QueueUrl|TopicArn|EventBusName|stateMachineArn), value: (?:None|0)"
    r'|Invalid (bucket) name ""'
    r"|Required parameter name not set"
)
_UNNAMED = {
    "QueueUrl": ("queue", "{queue_url}"),
    "TopicArn": ("topic", "{topic:NAME}"),
    "EventBusName": ("bus", "{bus:NAME}"),
    "bucket": ("bucket", "{bucket:NAME}"),
    "stateMachineArn": ("state machine", "{state_machine:NAME}"),
}
"""What a parameter the handler left unnamed is, and the placeholder that names it (an S3
``Bucket=None`` is botocore's ``TypeError``, which names nothing; ``Bucket=""`` is read)."""
_NOT_FOUND = re.compile(r"\((ResourceNotFoundException)\) when calling the (\w+) operation")
_NO_QUEUE = re.compile(
    r"\((?:AWS\.SimpleQueueService\.NonExistentQueue|QueueDoesNotExist)\) when calling the "
    r"(\w+) operation"
)
_KEY_MISMATCH = re.compile(
    r"\(ValidationException\) when calling the (\w+) operation: "
    r"(?:The provided key element does not match the schema|One or more parameter values "
    r"were invalid: Missing the key \S+ in the item)"
)
_DENIED = re.compile(
    r"\((AccessDenied(?:Exception)?)\) when calling the (\w+) operation|is not authorized to perform"
)

_NO_DEDUPLICATION_ID = re.compile(
    r"when calling the (\w+) operation: (?:Invalid parameter: )?The (queue|topic) should "
    r"either have ContentBasedDeduplication enabled or MessageDeduplicationId provided"
)

MODELLED_QUEUE = "modelled://"
"""How ``loadtest explore``'s queues are named to the consumer: they are modelled, not made."""
_QUEUE_CODES = ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
_DENIED_CODES = ("AccessDeniedException", "AccessDenied")


@dataclass(frozen=True)
class Gap:
    """One thing an error shows, and the sentence that says it: for the harness's gaps,
    what the run did not provide and how to provide it."""

    key: str
    """What is missing, e.g. ``environ:DYNAMODB_TABLE`` (one reason per key); for a runtime
    error, its type."""
    sentence: str


Rule = Callable[[str], Iterable[Gap]]


def suggested_value(name: str) -> str:
    """The placeholder a variable's name suggests (``ORDERS_TABLE`` -> ``{table}``), or
    ``VALUE`` (``loadtest.model.scenario.placeholders.suggested_value`` decides)."""
    return placeholders.suggested_value(name) or "VALUE"


def _environ(text: str) -> Iterable[Gap]:
    for match in _ENVIRON.finditer(text):
        name = match.group(1) or match.group(2)
        value = suggested_value(name)
        if value.startswith("{table:"):
            yield Gap(
                f"environ:{name}",
                f"the handler read os.environ[{name!r}], which the run does not set: it names "
                f'a table besides the outcome table: add `[[tables]]` with `env = "{name}"` '
                "to the scenario",
            )
            continue
        yield Gap(
            f"environ:{name}",
            f"the handler read os.environ[{name!r}], which the run does not set: add "
            f'`[consumer] environment = {{ {name} = "{value}" }}` to the scenario '
            f"(or --env {name}={value})",
        )


def _refused(text: str) -> Iterable[Gap]:
    for operation, resource, code, service in _REFUSED.findall(text):
        if service and code not in _DENIED_CODES:
            yield Gap(
                f"{service}:{resource}",
                f"the handler's {service} {operation} found no {resource!r} ({code}), which "
                "the run did not create: a run makes its tables, its queues and the sinks "
                f"named by placeholders in `[consumer] environment` ({placeholders.sink_forms()}); "
                "what this call sends to is none of them, so the run cannot stand in for it",
            )
        elif code in _DENIED_CODES:
            yield _denied_gap(operation, resource)
        elif code in _QUEUE_CODES and resource.startswith(MODELLED_QUEUE):
            if operation.startswith("Send"):
                did = "sent work to the queue that feeds it (a retry later, DelaySeconds)"
                run = "delivers what it sends itself"
            else:
                did = "acted on the queue that feeds it itself"
                run = "gives the handler a real queue"
            yield Gap(
                "queue:source",
                f"the handler's {operation} {did}: `loadtest explore` models that queue and "
                "delivers only the scenario's own messages, acknowledged by the run alone, "
                f"so this consumer is not judged here; `loadtest run` {run}",
            )
        elif code in _QUEUE_CODES:
            yield _no_queue_gap(operation, resource)
        elif code == "ValidationException":
            yield _key_gap(operation, resource)
        else:
            yield Gap(
                f"table:{resource}",
                f"the handler's {operation} found no table {resource!r}, which the run did not "
                f'create: for a name the handler hard-codes, `[table] name = "{resource}"` '
                f'(its outcome table) or `[[tables]]` with `name = "{resource}"` (an extra '
                "table); for a name it reads from a variable, "
                '`[consumer] environment = { NAME = "{table}" }` or `[[tables]]` with '
                '`env = "NAME"`',
            )


def _key_gap(operation: str, resource: str) -> Gap:
    on = f" table {resource!r}" if resource else " a table"
    return Gap(
        f"key:{resource or operation}",
        f"the handler's {operation} named a key that{on} does not have (ValidationException: "
        "the provided key element does not match the schema, or the item misses the table's "
        "key): the run makes each table with "
        'the key the scenario declares (by default `{ id = "S" }`): declare the key the '
        "handler uses, `[table] key` for the outcome table, `key` in the table's "
        "`[[tables]]` entry for another one (a handler that reads two table variables keeps "
        "two tables: give the second its own `[[tables]]` entry)",
    )


def _no_queue_gap(operation: str, resource: str) -> Gap:
    named = f" {resource!r}" if resource else ""
    return Gap(
        f"queue:{resource or operation}",
        f"the handler's {operation} found no queue{named}, which the run did not create: "
        "give the handler the run's queue by the variable it reads, "
        '`[consumer] environment = { NAME = "{queue_url}" }` (or `{queue_arn}`, '
        "`{queue_name}`) for the queue that feeds it, `{queue_url:NAME}` (or "
        "`{queue_arn:NAME}`, `{queue_name:NAME}`) for a queue it sends to, which the run "
        "makes",
    )


def _denied_gap(operation: str, resource: str) -> Gap:
    on = f" on {resource!r}" if resource else ""
    return Gap(
        f"denied:{operation}:{resource}",
        f"the handler's {operation}{on} was refused (access denied): the run grants its "
        "function access to the run's own queues and tables only; a resource the handler "
        "needs must be one the run makes (`[table]`, `[[tables]]`, and the variable that "
        "names it in `[consumer] environment`)",
    )


def _unlogged(text: str) -> Iterable[Gap]:
    """The same errors met only in an error's text (no observer line: e.g. a deployed run)."""
    if MARK in text:
        return
    for _, operation in _NOT_FOUND.findall(text):
        yield Gap(
            f"table:?{operation}",
            f"the handler's {operation} found no table (ResourceNotFoundException), which the "
            'run did not create: `[table] name = "NAME"` for a name it hard-codes, '
            '`[consumer] environment = { VARIABLE = "{table}" }` for one it reads from a '
            "variable, `[[tables]]` for a table besides the outcome table",
        )
    for operation in dict.fromkeys(_NO_QUEUE.findall(text)):
        yield _no_queue_gap(operation, "")
    for operation in dict.fromkeys(_KEY_MISMATCH.findall(text)):
        yield _key_gap(operation, "")
    operations = [m.group(2) for m in _DENIED.finditer(text)]
    named = [op for op in operations if op]
    for operation in named or (["call"] if operations else []):
        yield _denied_gap(operation, "")


def _no_name(text: str) -> Iterable[Gap]:
    match = _NO_TABLE_NAME.search(text)
    if match:
        parameter = match.group(1) or match.group(2) or ""
        what, value = _UNNAMED.get(parameter, ("table", "{table}"))
        yield Gap(
            f"unnamed:{what}",
            f"the handler gave no {what} name (None or empty): a variable it reads with "
            "os.environ.get or os.getenv is not set by the run: add "
            f'`[consumer] environment = {{ NAME = "{value}" }}` with the name it reads'
            + (', or `[[tables]]` with `env = "NAME"`' if what == "table" else ""),
        )


def _no_deduplication_id(text: str) -> Iterable[Gap]:
    match = _NO_DEDUPLICATION_ID.search(text)
    if match:
        operation, what = match.groups()
        yield Gap(
            f"fifo:{what}",
            f"the handler's {operation} gave a FIFO {what} no MessageDeduplicationId, and the "
            f"run's FIFO {what}s deduplicate by id only: if the consumer's own {what} has "
            "content-based deduplication, say so, and the run makes it so: `[[effects]]` "
            f'with `sink = "NAME.fifo"` and `content_based_deduplication = true`; '
            "otherwise AWS refuses the send as the run did",
        )


_COROUTINE = "Object of type coroutine is not JSON serializable"


def _marshal(message: str) -> str:
    if _COROUTINE in message:
        return "the handler is `async def`; Lambda's Python runtime does not await it"
    return (
        "the handler returned a value Lambda's Python runtime cannot serialise as JSON "
        f"({message.removeprefix('Unable to marshal response: ')}); only JSON types, "
        "Decimal and bytes are answered"
    )


def _exit(message: str) -> str:
    if "signal: " in message:
        return (
            "the runtime's process was killed by a signal (a crash in native code, or a "
            "kill): Lambda fails the invocation and starts a new execution environment"
        )
    return (
        "the handler ended the runtime's process (sys.exit or os._exit): Lambda fails "
        "the invocation and starts a new execution environment"
    )


def _runtime(kind: str, explanation: Callable[[str], str]) -> Rule:
    """The rule for an error the runtime reports as ``KIND: MESSAGE`` (its error text)."""

    def rule(text: str) -> Iterable[Gap]:
        found, _, message = text.partition(": ")
        if found == kind:
            yield Gap(kind, explanation(message))

    return rule


class Effect(Enum):
    """What a reason does to the verdict."""

    INCONCLUSIVE = "inconclusive"
    """The run did not provide what the handler expects: the run is not judged."""
    FAILS = "fails"
    """The runtime never accepts what the handler does: the run fails by itself."""
    NOTE = "note"
    """Explained only: a consumer must survive it (what it causes is judged as usual)."""


@dataclass(frozen=True)
class ErrorReason:
    """One error type, the rule that reads it and what its reason does to the verdict."""

    kind: str
    effect: Effect
    rule: Rule


REASONS: tuple[ErrorReason, ...] = (
    ErrorReason("KeyError from os.environ", Effect.INCONCLUSIVE, _environ),
    ErrorReason("a refused call the observer logged", Effect.INCONCLUSIVE, _refused),
    ErrorReason("a missing resource or access error in the text", Effect.INCONCLUSIVE, _unlogged),
    ErrorReason("no table, queue or sink name", Effect.INCONCLUSIVE, _no_name),
    ErrorReason("a FIFO sink sent no deduplication id", Effect.INCONCLUSIVE, _no_deduplication_id),
    ErrorReason("Runtime.MarshalError", Effect.FAILS, _runtime("Runtime.MarshalError", _marshal)),
    ErrorReason("Runtime.ExitError", Effect.NOTE, _runtime("Runtime.ExitError", _exit)),
)
"""How an invocation's error becomes a reason: one row per error type. A refused answer
fails the run (the runtime never accepts it); an ended process does not (a consumer must
survive a crash); what the run did not provide leaves it inconclusive."""

RULES: tuple[Rule, ...] = tuple(r.rule for r in REASONS if r.effect is Effect.INCONCLUSIVE)
"""The harness's gaps: the rules of ``REASONS`` whose reason leaves the run inconclusive."""


def gaps_in(text: str) -> list[Gap]:
    """The gaps one invocation's error text or log tail shows, each once."""
    found: dict[str, Gap] = {}
    for rule in RULES:
        for gap in rule(text):
            found.setdefault(gap.key, gap)
    return list(found.values())


MARK = "loadtest: the handler's"
"""What starts the observer's line for a refused call (in an invocation's log tail)."""


@dataclass
class GapTally:
    """The gaps a run's invocations showed, counted as the checker reads them (one pass)."""

    counts: Counter[str] = field(default_factory=Counter)
    sentences: dict[str, str] = field(default_factory=dict)

    def add(self, invocation: Invocation) -> None:
        if invocation.error is None and MARK not in invocation.log_tail:
            return
        for gap in gaps_in(f"{invocation.error or ''}\n{invocation.log_tail}"):
            self.counts[gap.key] += 1
            self.sentences.setdefault(gap.key, gap.sentence)

    def reasons(self) -> list[str]:
        """One inconclusive reason per thing the run did not provide, with how many
        invocations showed it (empty when none did)."""
        return [
            f"{self.sentences[key]} ({n} invocation(s))" for key, n in self.counts.most_common()
        ]


def harness_reasons(history: History) -> list[str]:
    """``GapTally``'s reasons for a whole history (a pass of its own)."""
    tally = GapTally()
    for inv in history.invocations:
        tally.add(inv)
    return tally.reasons()


def not_judged(reasons: Iterable[str]) -> list[str]:
    """The default verdict's failures, kept as inconclusive reasons when the run did not
    provide what the handler expects: they may be the harness's, not the consumer's."""
    return [
        f"{reason}, but the run did not provide what the handler expects: not judged"
        for reason in reasons
    ]


def no_business_outcome(
    reasons: Iterable[str],
    kept: Iterable[str],
    outcome: str,
    side_tables: Iterable[tuple[str, int]],
) -> tuple[list[str], list[str]]:
    """A run whose handler stored nothing in its outcome table but kept records in its extra
    tables (idempotency records, locks): side writes, no business outcome, so absences are
    not evidence either way. Returns the inconclusive reasons to put first and those to put
    last: the failures in ``reasons`` but not in ``kept`` (those that stand), not judged."""
    tables = ", ".join(f"{name} ({n} item(s))" for name, n in side_tables if n)
    standing = set(kept)
    first = [
        "no business outcome to judge: the handler stored nothing in its outcome table "
        f"({outcome}); what it kept is in {tables}, side writes such as idempotency "
        "records. Point the run at the table the business outcome is written to ([table] "
        "name, or the variable that names it in [consumer] environment)"
    ]
    later = [f"{r}: not judged without a business outcome" for r in reasons if r not in standing]
    return first, later

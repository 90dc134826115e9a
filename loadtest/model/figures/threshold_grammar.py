"""The threshold grammar: k6-style pass/fail expressions, parsed and checked.

Owns the grammar below, its parser (``parse_threshold``: an expression to a
``Threshold``, or a ``ThresholdError`` naming it and what is allowed), and the
checks that a scenario's thresholds parse and that a command line's thresholds name
variants that run. Evaluating thresholds against a report is
``loadtest.model.figures.thresholds``'. Pure.

Grammar (spaces around tokens are optional)::

    threshold := [VARIANT ":"] METRIC ["." AGGREGATE] OP VALUE
    METRIC    := COUNT | "counts." COUNT
               | LATENCY "." STAT                   e.g. end_to_end.p99
               | "throughput." ("messages_per_s" | "duration_s")
               | "queue_after." ("visible" | "in_flight" | "dlq")
               | "table_after.items"
               | "cost.per_million_usd"               price per million messages sent
    OP        := "<" | "<=" | ">" | ">=" | "==" | "!="
    VALUE     := NUMBER [UNIT]                      NUMBER: 250, 0.5, -1; "250 ms" == "250ms"
    UNIT      := "us" | "ms" | "s"
    AGGREGATE := "min" | "median" | "max"           across the runs of a --repeat, same unit
               | "runs_with"                        runs in which the metric was above zero
               | "share" | "share_lower" | "share_upper"
                                                    runs_with / runs (0..1), and its 95%
                                                    Clopper-Pearson interval
- ``COUNT`` is a field of the checker's counts (``duplicate_writes``, ...).
- ``STAT`` is one of ``count min p50 p90 p99 p99_9 max mean``.
- A latency (every stat but ``count``) needs a unit; it is compared in
  microseconds, the report's latency unit. A count, ``LATENCY.count``, a
  queue or table figure, ``messages_per_s`` and ``cost.per_million_usd``
  (US dollars, see ``loadtest.model.figures.cost``) take no unit.
  ``throughput.duration_s`` is in seconds and accepts a unit.
- ``AGGREGATE`` addresses a repeat's statistics (``loadtest.model.search.repeats``):
  ``duplicate_writes.runs_with > 0``, ``end_to_end.p99.median < 250ms``,
  ``conditional: duplicate_writes.share_upper < 0.2``. Such a threshold is
  judged once per variant over all its runs (the report's ``repeat`` object),
  needs ``--repeat``, and is never applied to a single run. A metric whose own
  last part is a stat (``end_to_end.max``) is the plain metric.
- ``VARIANT:`` scopes the threshold to that variant; without it the threshold
  applies to every variant. The variant is everything before the *last* colon,
  so a handler reference such as ``pkg.mod:handler`` works as a scope.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from loadtest.errors import ScenarioError, ThresholdError
from loadtest.model.checker import COUNT_NAMES as CHECKER_COUNT_NAMES
from loadtest.model.figures.metrics import LATENCY_NAMES, LATENCY_STATS
from loadtest.model.scenario.loading import Scenario

COUNT_NAMES: tuple[str, ...] = CHECKER_COUNT_NAMES
"""Keys of ``runs[].counts``; each is a metric, bare or as ``counts.NAME``."""

LATENCIES: tuple[str, ...] = LATENCY_NAMES
"""Keys of ``runs[].latency_us`` known by default. Callers that record more
latencies pass their names to :func:`parse_threshold` (``latencies=``)."""


UNITS_US: Mapping[str, int] = {"us": 1, "ms": 1_000, "s": 1_000_000}
"""Duration units and their length in microseconds."""

AGGREGATES: tuple[str, ...] = (
    "min",
    "median",
    "max",
    "runs_with",
    "share",
    "share_lower",
    "share_upper",
)
"""What a threshold may address of a repeat's statistics (``METRIC.AGGREGATE``)."""
_KEEPS_UNIT = ("min", "median", "max")


_OTHER_METRICS: tuple[str, ...] = (
    "throughput.messages_per_s",
    "throughput.duration_s",
    "queue_after.visible",
    "queue_after.in_flight",
    "queue_after.dlq",
    "table_after.items",
    "cost.per_million_usd",
)


class Operator(StrEnum):
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    EQ = "=="
    NE = "!="


class MetricKind(StrEnum):
    """How a metric's value is written in an expression."""

    COUNT = "count"
    """A plain number, no unit: counts, queue/table figures, ``LATENCY.count``."""
    RATE = "rate"
    """Messages per second, no unit."""
    LATENCY_US = "latency_us"
    """A duration with a unit (us, ms, s), compared in microseconds."""
    SECONDS = "seconds"
    """A duration in seconds; a unit is optional (a plain number is seconds)."""
    USD = "usd"
    """A price in the price table's currency (US dollars), no unit."""


@dataclass(frozen=True)
class Threshold:
    """One parsed threshold."""

    expr: str
    """The expression as written, with normalised spacing (``end_to_end.p99 < 250ms``)."""
    variant: str | None
    """The variant it is scoped to, or None for every variant."""
    metric: str
    """Canonical dotted path into a run, e.g. ``latency_us.end_to_end.p99``."""
    operator: Operator
    value: float
    """The bound in the metric's report unit: microseconds for latencies, seconds for
    ``throughput.duration_s``."""
    kind: MetricKind
    aggregate: str | None = None
    """One of ``AGGREGATES``: the threshold addresses a repeat's statistics, not a run."""

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.metric.split("."))

    def applies_to(self, variant: str) -> bool:
        return self.variant is None or self.variant == variant


# The value is matched loosely (any non-space run) so a bad unit gets its own
# message instead of "malformed expression".
_EXPR = re.compile(
    r"^(?P<metric>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+){0,3})\s*"
    r"(?P<op><=|>=|==|!=|<|>)\s*"
    r"(?P<value>\S+(?:\s+[A-Za-zµ]+)?)$"
)
_VALUE = re.compile(r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))(?P<unit>[A-Za-zµ]*)$")


def allowed_help(latencies: Iterable[str] = LATENCIES) -> str:
    """What an expression may contain, for error messages."""
    names = ", ".join(latencies)
    return (
        "expected [VARIANT:] METRIC OP VALUE, e.g. 'end_to_end.p99 < 250ms' or "
        "'conditional: duplicate_writes == 0'. "
        f"Operators: {' '.join(op.value for op in Operator)}. "
        f"Metrics: counts (bare or counts.NAME): {', '.join(COUNT_NAMES)}; "
        f"LATENCY.STAT with LATENCY in {names} and STAT in {', '.join(LATENCY_STATS)}; "
        f"{', '.join(_OTHER_METRICS)}; any of them followed by .AGGREGATE over a --repeat, "
        f"AGGREGATE in {', '.join(AGGREGATES)}. "
        f"Units: {', '.join(UNITS_US)} for latencies (required) and throughput.duration_s "
        "(optional, default s); none for counts, messages_per_s and cost.per_million_usd."
    )


def _resolve(metric: str, latencies: Collection[str]) -> tuple[str, MetricKind] | None:
    """The canonical path and kind of a metric as written, or None if unknown."""
    if "." not in metric:
        return (f"counts.{metric}", MetricKind.COUNT) if metric in COUNT_NAMES else None
    section, name = metric.split(".", 1)
    if section == "counts":
        return (metric, MetricKind.COUNT) if name in COUNT_NAMES else None
    if metric in _OTHER_METRICS:
        if metric == "throughput.messages_per_s":
            return metric, MetricKind.RATE
        if metric == "throughput.duration_s":
            return metric, MetricKind.SECONDS
        if metric == "cost.per_million_usd":
            return metric, MetricKind.USD
        return metric, MetricKind.COUNT
    if section in latencies and name in LATENCY_STATS:
        kind = MetricKind.COUNT if name == "count" else MetricKind.LATENCY_US
        return f"latency_us.{metric}", kind
    return None


def _number(value: float) -> float:
    # Whole numbers stay ints so the normalised report shows 250000, not 250000.0.
    return int(value) if value.is_integer() else value


def parse_threshold(text: str, *, latencies: Collection[str] = LATENCIES) -> Threshold:
    """Parse one expression; raise ThresholdError naming it and what is allowed.

    ``latencies`` are the latency names accepted before ``.STAT`` (the keys of
    ``runs[].latency_us`` the caller records).
    """
    raw = text.strip()
    variant: str | None = None
    body = raw
    if ":" in raw:
        scope, _, body = raw.rpartition(":")
        variant = scope.strip()
        if not variant:
            raise ThresholdError(
                f"threshold {text!r}: empty variant before ':'; {allowed_help(latencies)}"
            )
    match = _EXPR.match(body.strip())
    if match is None:
        raise ThresholdError(f"threshold {text!r} is malformed; {allowed_help(latencies)}")
    # "250 ms" is normalised to "250ms".
    metric_text, op_text = match["metric"], match["op"]
    value_text = re.sub(r"\s+", "", match["value"])
    resolved = _resolve(metric_text, latencies)
    aggregate = None
    base, _, last = metric_text.rpartition(".")
    if resolved is None and base and last in AGGREGATES:
        resolved = _resolve(base, latencies)
        aggregate = last
        if resolved is not None and last not in _KEEPS_UNIT:
            resolved = (resolved[0], MetricKind.COUNT if last == "runs_with" else MetricKind.RATE)
    if resolved is None:
        raise ThresholdError(
            f"threshold {text!r}: unknown metric {metric_text!r}; {allowed_help(latencies)}"
        )
    metric, kind = resolved
    value_match = _VALUE.match(value_text)
    if value_match is None:
        raise ThresholdError(
            f"threshold {text!r}: value {value_text!r} is not a number with an optional unit; "
            f"{allowed_help(latencies)}"
        )
    number = float(value_match["number"])
    unit = value_match["unit"]
    if unit and unit not in UNITS_US:
        raise ThresholdError(
            f"threshold {text!r}: unknown unit {unit!r}; units are {', '.join(UNITS_US)}"
        )
    if kind is MetricKind.LATENCY_US:
        if not unit:
            raise ThresholdError(
                f"threshold {text!r}: {metric_text} is a latency; add a unit "
                f"({', '.join(UNITS_US)}), e.g. '{metric_text} {op_text} {value_text}ms'"
            )
        value = number * UNITS_US[unit]
    elif kind is MetricKind.SECONDS:
        value = number * UNITS_US[unit] / UNITS_US["s"] if unit else number
    else:
        if unit:
            raise ThresholdError(
                f"threshold {text!r}: {metric_text} is a {kind.value}, not a duration; "
                f"remove the unit {unit!r}"
            )
        value = number
    expr = f"{metric_text} {op_text} {value_text}"
    if variant is not None:
        expr = f"{variant}: {expr}"
    return Threshold(
        expr=expr,
        variant=variant,
        metric=metric,
        operator=Operator(op_text),
        value=_number(value),
        kind=kind,
        aggregate=aggregate,
    )


def parse_thresholds(
    texts: Iterable[str], *, latencies: Collection[str] = LATENCIES
) -> list[Threshold]:
    return [parse_threshold(text, latencies=latencies) for text in texts]


def check_variants(thresholds: Iterable[Threshold], variants: Collection[str]) -> None:
    """Refuse a threshold scoped to a variant that is not run.

    For command-line thresholds: a typo in the scope would otherwise apply to
    nothing and pass silently. (A scenario's own thresholds may name variants a
    ``--variant`` selection leaves out; don't call this for those.)
    """
    for threshold in thresholds:
        if threshold.variant is not None and threshold.variant not in variants:
            raise ThresholdError(
                f"threshold {threshold.expr!r} is scoped to variant {threshold.variant!r}, "
                f"which is not run; variants: {', '.join(variants) or '(none)'}"
            )


def check_scenario(scenario: Scenario) -> Scenario:
    """Refuse a scenario whose own thresholds do not parse, naming its file (``ScenarioError``)."""
    for text in scenario.thresholds:
        try:
            parse_threshold(text)
        except ThresholdError as exc:
            raise ScenarioError(f"{scenario.source}: thresholds: {exc}") from exc
    return scenario

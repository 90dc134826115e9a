"""The report model: one typed, frozen report that every rendering reads.

Owns ``ReportModel`` (a run's or comparison's report), ``RunModel`` (one
variant's run in it) and ``ThresholdResult``, and their one serialisation, the
JSON report (``schema_version`` 1): ``to_json`` writes it, ``from_json`` reads it
back (a saved file, ``loadtest report`` and ``loadtest diff``): a report this
version wrote, read back, writes the same bytes, key order included.

The fields are the JSON keys, in the JSON's order. The top level and each run are
typed; figures nested deeper (settings, series, findings, write decisions, ...)
are the JSON's own values, typed read-only (``Mapping``, ``Sequence``): the model
owns them (``from_json`` copies its input) and no reader changes them. Keys a
report older than this one lacks are remembered as ``absent`` (not written back),
and keys this version does not know are kept in ``extra``, in their order.

Pure: no I/O, no clock, nothing printed.
"""

from __future__ import annotations

import copy
import dataclasses
import marshal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Json = Mapping[str, Any]
"""A JSON object of the report, read-only."""

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class ThresholdResult:
    """One threshold judged against one run (or one variant's repeated runs)."""

    expr: str
    """The threshold as written (``end_to_end.p99 < 250ms``)."""
    observed: float | None
    """The run's value in the report's unit (microseconds for a latency); None: no data."""
    ok: bool

    def to_json(self) -> dict[str, Any]:
        return {"expr": self.expr, "observed": self.observed, "ok": self.ok}

    @classmethod
    def from_json(cls, data: Json) -> ThresholdResult:
        return cls(str(data.get("expr", "")), data.get("observed"), bool(data.get("ok", False)))


@dataclass(frozen=True)
class RunModel:
    """One variant's run: its verdict, counts, latencies and evidence (``runs[]``)."""

    variant: str
    """The variant's name, or the handler reference it was given as."""
    handler: str | None = None
    """The handler that ran (``module:function`` or ``path.py:function``)."""
    cell: Json = field(default_factory=dict)
    """For a sweep: the settings this run's cell overrode."""
    settings: Json = field(default_factory=dict)
    """The consumer's settings as run, with the faults injected."""
    faults: str = "none"
    """The faults injected, in words (``none`` when there were none)."""
    counts: Mapping[str, int] = field(default_factory=dict)
    """The checker's counts by name (``duplicate_writes``, ...)."""
    effects: Sequence[Json] | None = None
    """Each sink's effects, judged (``sink``, ``kind``, ``sent``, ``delivered``,
    ``duplicate``, ``conflicting``, ``lost``, ``deduplicated``, ... and ``witnesses``);
    None for a run without sinks and without effects (the key is then left out)."""
    queue_after: Json = field(default_factory=dict)
    """Messages left ``visible``, ``in_flight`` and in the ``dlq`` after the run."""
    table_after: Json = field(default_factory=dict)
    """The outcome table's ``items`` after the run (and each extra table's)."""
    latency_us: Mapping[str, Json] = field(default_factory=dict)
    """Each latency's summary (count, min, p50 ... p99_9, max, mean), in microseconds."""
    latency_hdr: Mapping[str, str] = field(default_factory=dict)
    """Each latency's HdrHistogram, encoded."""
    throughput: Json = field(default_factory=dict)
    """``messages_per_s`` (settled per second) and ``duration_s``."""
    rate: Json = field(default_factory=dict)
    """The requested and achieved rates and the backlog (``loadtest.model.figures.rate``)."""
    cost: Json = field(default_factory=dict)
    """The billed units and the cost per million messages (``loadtest.model.figures.cost``)."""
    thresholds: tuple[ThresholdResult, ...] = ()
    """The results of the thresholds that apply to this run, in the plan's order."""
    verdict: str = "fail"
    """``pass``, ``fail`` or ``inconclusive``, after the scenario's rules and thresholds."""
    reasons: tuple[str, ...] = ()
    """Why the default verdict failed, one sentence each."""
    inconclusive: tuple[str, ...] = ()
    """What the run could not observe or settle, one sentence each."""
    incomplete: bool = False
    """The run was stopped before its workload was settled."""
    outcome: str | None = None
    """Where the checker found the outcomes, in words."""
    key_templates: Json = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    unobserved: Sequence[Json] = ()
    """Calls the observer could not interpret and its own failures, grouped."""
    warnings: tuple[str, ...] = ()
    """Settings that invite duplicates and other likely causes (lint's and the run's)."""
    timed_out: bool = False
    cold_starts: int = 0
    resources: Json = field(default_factory=dict)
    """The names of the queues and tables the run made."""
    cleanup_problems: tuple[str, ...] = ()
    series: Json = field(default_factory=dict)
    """Counts per interval since the run started (``interval_s`` wide)."""
    findings: Sequence[Json] = ()
    """The evidence of the first ids written more than once (their reads and writes)."""
    errors: Sequence[Json] = ()
    """Handler errors grouped by message, most frequent first."""
    dead_letters: Sequence[Json] = ()
    results: Sequence[Any] = ()
    """The first successful invocations' results."""
    write_decisions: Sequence[Json] = ()
    """The first judged writes, in the order the report lists them."""
    write_decisions_total: int = 0
    write_outcomes: Mapping[str, int] = field(default_factory=dict)
    table_items: Json = field(default_factory=dict)
    cut: Json = field(default_factory=dict)
    """What each long list lists of how many (``listed``, ``total``, ``cut``)."""
    relaxed_reasons: tuple[str, ...] | None = None
    """Default-verdict reasons the scenario allows (``[verdict.allow]``), kept visible;
    None when the scenario allows none for this variant (the key is then left out)."""
    seed: int | None = None
    """In a repeated report: the seed this run's workload was planned from (else None,
    and the key is left out)."""
    extra: Json = field(default_factory=dict)
    """Keys this version does not know, as read."""
    absent: frozenset[str] = frozenset()
    """Known keys the report this was read from lacked (an older report)."""

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    def count(self, name: str, missing: int = 0) -> int:
        """A count by name; ``missing`` for a count an older report lacks."""
        return int(self.counts.get(name, missing))

    def known(self, name: str, missing: Any = None) -> Any:
        """A field by name, or ``missing`` where the report (an older one) lacks it."""
        return missing if name in self.absent else getattr(self, name)

    def figures(self) -> dict[str, Any]:
        """What thresholds and a repeat's statistics address, by the JSON's paths
        (``counts.duplicate_writes``, ``latency_us.end_to_end.p99``, ...)."""
        return {
            "variant": self.variant,
            "seed": self.seed,
            "verdict": self.verdict,
            "counts": self.counts,
            "latency_us": self.latency_us,
            "throughput": self.throughput,
            "queue_after": self.queue_after,
            "table_after": self.table_after,
            "cost": self.cost,
        }

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in _RUN_FIELDS:
            value = getattr(self, f)
            if f in self.absent or (f in _RUN_OPTIONAL and value is None):
                continue
            if f == "thresholds":
                out[f] = [t.to_json() for t in value]
            else:
                out[f] = _plain(value)
        out.update(_plain(self.extra))
        return out

    @classmethod
    def from_json(cls, data: Json) -> RunModel:
        rest: dict[str, Any] = _copy(dict(data))
        values: dict[str, Any] = {}
        for f in _RUN_FIELDS:
            if f not in rest:
                continue
            value = rest.pop(f)
            if f == "thresholds":
                value = tuple(ThresholdResult.from_json(t) for t in value)
            elif f in _RUN_TUPLES:
                value = tuple(value)
            values[f] = value
        absent = frozenset(f for f in _RUN_FIELDS if f not in values and f not in _RUN_OPTIONAL)
        return cls(**values, extra=rest, absent=absent)


_RUN_FIELDS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(RunModel) if f.name not in ("extra", "absent")
)
_RUN_TUPLES = frozenset(
    {"reasons", "inconclusive", "notes", "warnings", "cleanup_problems", "relaxed_reasons"}
)
_RUN_OPTIONAL = frozenset({"relaxed_reasons", "seed", "effects"})
"""Keys only some runs have: left out when None."""


@dataclass(frozen=True)
class ReportModel:
    """A run's or comparison's report: every variant run, judged (the JSON report)."""

    seed: int
    scenario: Json
    """The scenario as run: its ``name``, ``source`` and every field."""
    backend: Json
    """``kind`` (embedded, endpoint, aws) and ``endpoint_url``."""
    runs: tuple[RunModel, ...]
    schema_version: int = SCHEMA_VERSION
    command: str | None = None
    """The command that reproduces the run, seed included."""
    incomplete: bool = False
    incomplete_reason: str | None = None
    """Why the run stopped before its workload was settled (None: it finished)."""
    repeat: Json | None = None
    """A repeated run's statistics (``loadtest.model.search.repeats``); None otherwise."""
    explore: Json | None = None
    """What an exploration of interleavings ran and found; None for a run."""
    extra: Json = field(default_factory=dict)
    absent: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return str(self.scenario.get("name", "?"))

    def known(self, name: str, missing: Any = None) -> Any:
        """A field by name, or ``missing`` where the report (an older one) lacks it."""
        return missing if name in self.absent else getattr(self, name)

    def to_json(self) -> dict[str, Any]:
        """The JSON report (``schema_version`` 1), in its key order."""
        out: dict[str, Any] = {}
        for f in _TOP_FIELDS:
            value = getattr(self, f)
            if f in self.absent or (f in ("repeat", "explore") and value is None):
                continue
            out[f] = [run.to_json() for run in value] if f == "runs" else _plain(value)
        out.update(_plain(self.extra))
        return out

    @classmethod
    def from_json(cls, data: Json) -> ReportModel:
        rest = dict(data)
        values: dict[str, Any] = {}
        for f in _TOP_FIELDS:
            if f not in rest:
                continue
            value = rest.pop(f)
            values[f] = (
                tuple(RunModel.from_json(run) for run in value) if f == "runs" else _copy(value)
            )
        absent = frozenset(
            f for f in _TOP_FIELDS if f not in values and f not in ("repeat", "explore")
        )
        values.setdefault("seed", 0)
        values.setdefault("scenario", {})
        values.setdefault("backend", {})
        values.setdefault("runs", ())
        return cls(**values, extra=_copy(rest), absent=absent)

    def with_extra(self, **keys: Any) -> ReportModel:
        """This report with more top-level keys (``sweep_metric``, ...)."""
        return dataclasses.replace(self, extra={**self.extra, **keys})


_TOP_FIELDS: tuple[str, ...] = (
    "schema_version",
    "seed",
    "scenario",
    "backend",
    "command",
    "incomplete",
    "incomplete_reason",
    "runs",
    "repeat",
    "explore",
)


def _copy(value: Any) -> Any:
    """A deep copy of a JSON value: through ``marshal`` (C, and keeping dicts' order, lists
    and tuples as they are), many times faster than ``copy.deepcopy`` on a report's run;
    ``copy.deepcopy`` for a value marshal refuses (an enum member, a mapping that is not a
    dict)."""
    try:
        return marshal.loads(marshal.dumps(value))
    except ValueError:
        return copy.deepcopy(value)


def _plain(value: Any) -> Any:
    """A JSON value the model holds, as a new plain one (a tuple becomes a list)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def as_model(report: ReportModel | Json) -> ReportModel:
    """The model of a report given as a model or as its JSON (a saved file's)."""
    return report if isinstance(report, ReportModel) else ReportModel.from_json(report)


def as_run(run: RunModel | Json) -> RunModel:
    """The model of one run given as a model or as its JSON."""
    return run if isinstance(run, RunModel) else RunModel.from_json(run)

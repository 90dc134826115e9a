"""Regression check: compare a new JSON report against a baseline.

Owns the comparison rules of ``loadtest diff`` (which metrics, what counts as
a regression, the tolerance syntax).
Pure: takes reports already loaded (report models, or their JSON, checked and
read into models), reads no files, prints nothing and sets no exit code — the
CLI does that (exit 1 when ``not result.ok``). The table that shows a result is
``diff_view``'s.

Rules, per variant (matched by name) and metric:

- *correctness*: a count in :data:`CORRECTNESS_COUNTS` that was 0 in the
  baseline and is not 0 now is a regression, whatever the tolerance.
- *latency*: ``p50``/``p90``/``p99`` of each latency in :data:`LATENCIES`
  higher than the baseline by more than ``max_regression`` (relative).
- *throughput*: ``messages_per_s`` lower than the baseline by more than
  ``max_regression`` (relative).

Repeated reports (``--repeat N``: several runs of a variant) compare each
side's median, and a latency or throughput change beyond ``max_regression``
is a regression only when a two-sided Mann-Whitney U test over the per-run
values rejects "no change" at ``alpha`` (``loadtest.model.search.confidence``; exact
for small samples). Mann-Whitney rather than a bootstrap over merged
histograms: a run is the unit that varies (its seed, its scheduling), so the
per-run percentiles are the independent samples; merging histograms would
treat one run's thousand correlated deliveries as a thousand samples and call
noise significant. The row carries the effect (the Hodges-Lehmann shift, new
minus baseline), its 95% interval and the p-value. A correctness count is
compared by its largest value across the runs: 0 in every baseline run and
above 0 in any new run is always a regression, with no test. When either side
has a single run of a variant, today's rule holds and the result says that no
significance was tested.

A variant in only one report is listed in ``only_in_baseline`` /
``only_in_new``, not treated as an error or a regression.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from loadtest.errors import InputError
from loadtest.model.checker import (
    BAD_WHEN_NONZERO,
    INCONCLUSIVE_WHEN_NONZERO,
    OPTIONAL_COUNT_NAMES,
)
from loadtest.model.search.confidence import mann_whitney, median
from loadtest.reports.model import ReportModel, RunModel, as_model

SUPPORTED_SCHEMA_VERSION = 1

CORRECTNESS_COUNTS: tuple[str, ...] = (
    *BAD_WHEN_NONZERO,
    *INCONCLUSIVE_WHEN_NONZERO,
    "dead_lettered",
    "handler_errors",
)
_OPTIONAL_METRICS = frozenset(f"counts.{name}" for name in OPTIONAL_COUNT_NAMES)
"""Counts only runs with sinks or effects (or side items) have: compared where either side
has them."""
LATENCIES: tuple[str, ...] = ("end_to_end", "handler", "write")
GATED_PERCENTILES: tuple[str, ...] = ("p50", "p90", "p99")
THROUGHPUT_METRIC = "messages_per_s"
DEFAULT_ALPHA = 0.05


class RowKind(StrEnum):
    CORRECTNESS = "correctness"
    LATENCY = "latency"
    THROUGHPUT = "throughput"


@dataclass(frozen=True)
class Significance:
    """The two-sample test of one latency or throughput metric over repeated runs."""

    p_value: float
    """Two-sided Mann-Whitney U p-value of "no change"."""
    shift: float
    """The effect: the Hodges-Lehmann shift, new minus baseline, in the metric's unit."""
    interval: tuple[float, float] | None
    """The shift's 95% interval; None when the runs are too few for one."""
    runs: tuple[int, int]
    """Runs compared: (baseline, new)."""
    exact: bool
    smallest_p: float
    """The smallest p-value these numbers of runs can give."""


@dataclass(frozen=True)
class DiffRow:
    """One metric of one variant, baseline against new."""

    variant: str
    metric: str
    """Dotted path in a run: ``counts.duplicate_writes``, ``latency_us.end_to_end.p99``,
    ``throughput.messages_per_s``."""
    baseline: float | None
    """None when the baseline has no data for it (e.g. a latency with count 0)."""
    new: float | None
    change: float | None
    """new - baseline, in the metric's unit (microseconds for latencies); None without both."""
    change_pct: float | None
    """The relative change in percent (50.0 means +50 %).

    None without both values, or when the baseline is 0."""
    kind: RowKind
    regression: bool
    significance: Significance | None = None
    """The test over repeated runs; None when none was made (single runs, correctness)."""
    beyond_tolerance: bool = False
    """The change exceeded ``max_regression`` in the bad direction (tested or not)."""


@dataclass(frozen=True)
class DiffResult:
    """The comparison of two reports."""

    scenario: str
    max_regression: float
    """The tolerance as a fraction (0.10 means 10 %)."""
    rows: tuple[DiffRow, ...]
    only_in_baseline: tuple[str, ...] = field(default=())
    """Variants run in the baseline but not in the new report."""
    only_in_new: tuple[str, ...] = field(default=())
    alpha: float = DEFAULT_ALPHA
    """The significance level of the test over repeated runs."""

    @property
    def tested(self) -> bool:
        """Whether any row was judged by a significance test (repeated reports)."""
        return any(row.significance is not None for row in self.rows)

    @property
    def regressions(self) -> int:
        return sum(1 for row in self.rows if row.regression)

    @property
    def ok(self) -> bool:
        return self.regressions == 0


def parse_tolerance(text: str) -> float:
    """``"10%"`` or ``"0.1"`` -> 0.1 (a fraction). Raise InputError for anything else.

    A plain number is a fraction, so a plain number above 1 is refused as
    ambiguous ("10" might mean 10 % or 1000 %): write ``10%`` or ``0.1``.
    """
    raw = text.strip()
    percent = raw.endswith("%")
    number_text = raw[:-1].strip() if percent else raw
    allowed = "use a non-negative percentage such as 10% or a fraction such as 0.1"
    try:
        number = float(number_text)
    except ValueError:
        raise InputError(f"max regression {text!r} is not a number; {allowed}") from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"max regression {text!r} is not allowed; {allowed}")
    if percent:
        return number / 100
    if number > 1:
        raise InputError(f"max regression {text!r} is ambiguous; write {number:g}% or {allowed}")
    return number


def _validate(report: ReportModel | Mapping[str, Any], label: str) -> None:
    """Refuse what is not a report this version reads (a model was checked when it was read)."""
    version: Any
    scenario: Any
    if isinstance(report, ReportModel):
        version, scenario, runs_ok = report.schema_version, report.scenario, True
    else:
        version, scenario, runs = (report.get(k) for k in ("schema_version", "scenario", "runs"))
        runs_ok = isinstance(runs, list) and all(
            isinstance(run, Mapping) and isinstance(run.get("variant"), str) for run in runs
        )
    if version != SUPPORTED_SCHEMA_VERSION:
        raise InputError(
            f"{label}: schema_version {version!r} is not supported; "
            f"loadtest diff reads schema_version {SUPPORTED_SCHEMA_VERSION} reports"
        )
    if not isinstance(scenario, Mapping) or not isinstance(scenario.get("name"), str):
        raise InputError(f"{label}: not a loadtest report (scenario.name is missing)")
    if not runs_ok:
        raise InputError(f"{label}: not a loadtest report (runs[] with a variant each expected)")


def _get(run: RunModel, path: str) -> float | None:
    node: Any = run.figures()
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    if isinstance(node, bool) or not isinstance(node, int | float):
        return None
    return node


def _row(
    variant: str,
    metric: str,
    kind: RowKind,
    base_values: list[float],
    new_values: list[float],
    max_regression: float,
    alpha: float,
) -> DiffRow:
    """One metric: each side's value is its run's, or across repeated runs the median (the
    largest for a correctness count, which must be 0 in every run)."""
    pick = max if kind is RowKind.CORRECTNESS else median
    baseline = pick(base_values) if base_values else None
    new = pick(new_values) if new_values else None
    change = change_pct = None
    if baseline is not None and new is not None:
        change = new - baseline
        if baseline != 0:
            change_pct = change / baseline * 100
    if kind is RowKind.CORRECTNESS:
        regression = baseline == 0 and new is not None and new != 0
        return DiffRow(variant, metric, baseline, new, change, change_pct, kind, regression)
    beyond = False
    if baseline is not None and new is not None and baseline > 0:
        # Relative to the baseline; a baseline of 0 (or no data) gives nothing to scale.
        if kind is RowKind.LATENCY:
            beyond = new > baseline * (1 + max_regression)
        else:
            beyond = new < baseline * (1 - max_regression)
    significance = None
    regression = beyond
    if len(base_values) > 1 and len(new_values) > 1:
        test = mann_whitney(base_values, new_values)
        significance = Significance(
            test.p_value,
            test.shift,
            test.shift_interval,
            (len(base_values), len(new_values)),
            test.exact,
            test.smallest_p,
        )
        regression = beyond and test.p_value < alpha
    return DiffRow(
        variant, metric, baseline, new, change, change_pct, kind, regression, significance, beyond
    )


def _by_variant(runs: Sequence[RunModel]) -> dict[str, list[RunModel]]:
    grouped: dict[str, list[RunModel]] = {}
    for run in runs:
        grouped.setdefault(run.variant, []).append(run)
    return grouped


def _values(runs: list[RunModel], metric: str) -> list[float]:
    return [v for v in (_get(run, metric) for run in runs) if v is not None]


def _metrics() -> list[tuple[str, RowKind]]:
    metrics = [(f"counts.{name}", RowKind.CORRECTNESS) for name in CORRECTNESS_COUNTS]
    metrics += [
        (f"latency_us.{name}.{stat}", RowKind.LATENCY)
        for name in LATENCIES
        for stat in GATED_PERCENTILES
    ]
    metrics.append((f"throughput.{THROUGHPUT_METRIC}", RowKind.THROUGHPUT))
    return metrics


def diff_reports(
    baseline: ReportModel | Mapping[str, Any],
    new: ReportModel | Mapping[str, Any],
    max_regression: float,
    *,
    baseline_label: str = "baseline",
    new_label: str = "new",
    alpha: float = DEFAULT_ALPHA,
) -> DiffResult:
    """Compare ``new`` against ``baseline``; labels (file names) name the culprit in errors.

    ``max_regression`` is a fraction (0.10 = 10 %), as :func:`parse_tolerance` returns;
    ``alpha`` the significance level of the test over repeated runs (0 < alpha < 1).
    Raise InputError for a report of another schema version, or two reports
    of different scenarios.
    """
    if not math.isfinite(max_regression) or max_regression < 0:
        raise InputError(f"max regression {max_regression!r} must be a non-negative fraction")
    if not 0 < alpha < 1:
        raise InputError(f"alpha {alpha!r} must be a significance level between 0 and 1, e.g. 0.05")
    _validate(baseline, baseline_label)
    _validate(new, new_label)
    baseline, new = as_model(baseline), as_model(new)
    base_name, new_name = baseline.name, new.name
    if base_name != new_name:
        raise InputError(
            f"{new_label} is a report of scenario {new_name!r} but {baseline_label} is of "
            f"{base_name!r}; diff compares two runs of the same scenario"
        )
    base_runs = _by_variant(baseline.runs)
    new_runs = _by_variant(new.runs)
    rows: list[DiffRow] = []
    for variant, base_group in base_runs.items():
        new_group = new_runs.get(variant)
        if new_group is None:
            continue
        for metric, kind in _metrics():
            base_values, new_values = _values(base_group, metric), _values(new_group, metric)
            if metric in _OPTIONAL_METRICS and not base_values and not new_values:
                continue  # neither run had sinks or effects
            rows.append(_row(variant, metric, kind, base_values, new_values, max_regression, alpha))
    return DiffResult(
        scenario=base_name,
        max_regression=max_regression,
        rows=tuple(rows),
        only_in_baseline=tuple(v for v in base_runs if v not in new_runs),
        only_in_new=tuple(v for v in new_runs if v not in base_runs),
        alpha=alpha,
    )

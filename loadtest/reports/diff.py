"""Regression check: compare a new JSON report against a baseline.

Owns the comparison rules of ``loadtest diff`` (which metrics, what counts as
a regression, the tolerance syntax) and the table that shows the result.
Pure: takes report dicts already loaded, reads no files, prints nothing and
sets no exit code — the CLI does that (exit 1 when ``not result.ok``).

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
values rejects "no change" at ``alpha`` (``loadtest.model.confidence``; exact
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
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rich.table import Table
from rich.text import Text

from loadtest.errors import InputError
from loadtest.model.checker import BAD_WHEN_NONZERO, INCONCLUSIVE_WHEN_NONZERO
from loadtest.model.confidence import mann_whitney, median
from loadtest.model.metrics import format_us

SUPPORTED_SCHEMA_VERSION = 1

CORRECTNESS_COUNTS: tuple[str, ...] = (
    *BAD_WHEN_NONZERO,
    *INCONCLUSIVE_WHEN_NONZERO,
    "dead_lettered",
    "handler_errors",
)
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


def _validate(report: Mapping[str, Any], label: str) -> None:
    version = report.get("schema_version")
    if version != SUPPORTED_SCHEMA_VERSION:
        raise InputError(
            f"{label}: schema_version {version!r} is not supported; "
            f"loadtest diff reads schema_version {SUPPORTED_SCHEMA_VERSION} reports"
        )
    scenario = report.get("scenario")
    runs = report.get("runs")
    if not isinstance(scenario, Mapping) or not isinstance(scenario.get("name"), str):
        raise InputError(f"{label}: not a loadtest report (scenario.name is missing)")
    if not isinstance(runs, list) or not all(
        isinstance(run, Mapping) and isinstance(run.get("variant"), str) for run in runs
    ):
        raise InputError(f"{label}: not a loadtest report (runs[] with a variant each expected)")


def _get(run: Mapping[str, Any], path: str) -> float | None:
    node: Any = run
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


def _by_variant(runs: list[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        grouped.setdefault(run["variant"], []).append(run)
    return grouped


def _values(runs: list[Mapping[str, Any]], metric: str) -> list[float]:
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
    baseline: Mapping[str, Any],
    new: Mapping[str, Any],
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
    base_name = baseline["scenario"]["name"]
    new_name = new["scenario"]["name"]
    if base_name != new_name:
        raise InputError(
            f"{new_label} is a report of scenario {new_name!r} but {baseline_label} is of "
            f"{base_name!r}; diff compares two runs of the same scenario"
        )
    base_runs = _by_variant(baseline["runs"])
    new_runs = _by_variant(new["runs"])
    rows: list[DiffRow] = []
    for variant, base_group in base_runs.items():
        new_group = new_runs.get(variant)
        if new_group is None:
            continue
        for metric, kind in _metrics():
            rows.append(
                _row(
                    variant,
                    metric,
                    kind,
                    _values(base_group, metric),
                    _values(new_group, metric),
                    max_regression,
                    alpha,
                )
            )
    return DiffResult(
        scenario=base_name,
        max_regression=max_regression,
        rows=tuple(rows),
        only_in_baseline=tuple(v for v in base_runs if v not in new_runs),
        only_in_new=tuple(v for v in new_runs if v not in base_runs),
        alpha=alpha,
    )


def _format_value(metric: str, value: float | None) -> str:
    if value is None:
        return "–"
    if metric.startswith("latency_us."):
        return format_us(value)
    if isinstance(value, int) or value.is_integer():
        return f"{int(value)}"
    return f"{value:.2f}"


def _format_change(row: DiffRow) -> str:
    if row.change is None:
        return "–"
    absolute = _format_value(row.metric, row.change)
    if not absolute.startswith("-"):
        absolute = "+" + absolute
    if row.change_pct is None:
        return absolute
    return f"{absolute} ({row.change_pct:+.1f}%)"


def _format_effect(row: DiffRow) -> str:
    test = row.significance
    if test is None:
        return "–"
    shift = _format_value(row.metric, test.shift)
    if test.interval is None:
        return f"{shift} (too few runs for an interval)"
    low, high = (_format_value(row.metric, bound) for bound in test.interval)
    return f"{shift} [{low}, {high}]"


def _format_p(row: DiffRow) -> str:
    test = row.significance
    if test is None:
        return "–"
    return f"{test.p_value:.2g}" + ("" if test.exact else " ~")


def significance_note(result: DiffResult) -> str:
    """How the latency and throughput rows were judged, in words."""
    if not result.tested:
        return (
            "single runs: no significance was tested; a latency or throughput change beyond "
            "--max-regression is a regression (repeat both runs with --repeat N for a test)"
        )
    tested = [row.significance for row in result.rows if row.significance is not None]
    runs = sorted({test.runs for test in tested})
    smallest = max(test.smallest_p for test in tested)
    note = (
        f"medians of {', '.join(f'{a} vs {b}' for a, b in runs)} runs; a change beyond "
        f"--max-regression is a regression only when a two-sided Mann-Whitney U test rejects "
        f"'no change' at alpha {result.alpha:g} (effect: Hodges-Lehmann shift, new minus "
        "baseline, [95% interval]; ~ normal approximation)"
    )
    if smallest >= result.alpha:
        note += (
            f"; with this few runs no p-value can be below {smallest:.2g}, so no latency or "
            "throughput change can be called a regression: repeat more"
        )
    return note


def render_diff_table(result: DiffResult) -> Table:
    """The diff as a rich table, regressions in red, for the CLI to print."""
    title = (
        f"{result.scenario} · max regression {result.max_regression * 100:g}% · "
        f"{result.regressions} regression(s)"
    )
    table = Table(title=title, title_justify="left")
    for column in ("variant", "metric", "kind"):
        table.add_column(column)
    for column in ("baseline", "new", "change"):
        table.add_column(column, justify="right")
    if result.tested:
        table.add_column("effect [95% interval]", justify="right")
        table.add_column("p", justify="right")
    table.add_column("")
    for row in result.rows:
        status = (
            Text("REGRESSION", style="bold red") if row.regression else Text("ok", style="green")
        )
        tested = [_format_effect(row), _format_p(row)] if result.tested else []
        table.add_row(
            row.variant,
            row.metric.removeprefix("latency_us.").removeprefix("counts."),
            row.kind.value,
            _format_value(row.metric, row.baseline),
            _format_value(row.metric, row.new),
            _format_change(row),
            *tested,
            status,
            style="red" if row.regression else None,
        )
    notes = [f"only in baseline: {v}" for v in result.only_in_baseline]
    notes += [f"only in new: {v}" for v in result.only_in_new]
    notes.append(significance_note(result))
    table.caption = "; ".join(notes)
    return table

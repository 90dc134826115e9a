"""How ``loadtest diff`` shows a comparison: the table, regressions in red, and its note.

Owns the rendering of a ``DiffResult`` (``loadtest.reports.diff``): each row's
baseline, new value and change in the metric's unit, the effect and p-value of
the test over repeated runs, and the caption saying how the rows were judged.
Returns rich renderables; the CLI prints them.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from loadtest.model.figures.metrics import format_us
from loadtest.reports.diff import DiffResult, DiffRow


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

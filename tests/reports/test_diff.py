"""``loadtest diff`` rules: planted regressions, tolerance, refusals, the table."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from rich.console import Console

from loadtest.errors import InputError
from loadtest.reports.diff import (
    CORRECTNESS_COUNTS,
    DiffRow,
    RowKind,
    diff_reports,
    parse_tolerance,
)
from loadtest.reports.text.diff_view import render_diff_table

STATS = ("min", "p50", "p90", "p99", "p99_9", "max")


def latency(p50: int, p90: int, p99: int) -> dict[str, Any]:
    values = dict(zip(STATS, (p50 // 2, p50, p90, p99, p99, p99), strict=True))
    return {"count": 100, **values, "mean": float(p50), "out_of_range": 0}


def make_run(variant: str) -> dict[str, Any]:
    """A run dict shaped like a report's JSON run (loadtest.reports.model.RunModel.to_json) (only what diff reads, and a bit more)."""
    counts = dict.fromkeys(CORRECTNESS_COUNTS, 0)
    counts.update(messages_sent=600, deliveries=600, redeliveries=0, acked=600)
    return {
        "variant": variant,
        "handler": f"consumer.{variant}:handler",
        "counts": counts,
        "queue_after": {"visible": 0, "in_flight": 0, "dlq": 0},
        "table_after": {"items": 150},
        "latency_us": {
            "end_to_end": latency(100_000, 150_000, 200_000),
            "handler": latency(10_000, 15_000, 20_000),
            "write": latency(2_000, 3_000, 4_000),
        },
        "throughput": {"messages_per_s": 500.0, "duration_s": 1.2},
        "thresholds": [],
        "verdict": "pass",
        "reasons": [],
    }


def make_report(*variants: str, scenario: str = "race-burst") -> dict[str, Any]:
    return {
        "schema_version": 1,
        "seed": 7,
        "scenario": {"name": scenario},
        "backend": {"kind": "embedded", "endpoint_url": None},
        "command": None,
        "runs": [make_run(v) for v in variants],
    }


def row(rows: tuple[DiffRow, ...], variant: str, metric: str) -> DiffRow:
    (found,) = [r for r in rows if r.variant == variant and r.metric == metric]
    return found


def test_identical_reports_pass() -> None:
    baseline = make_report("read-then-write", "conditional")
    result = diff_reports(baseline, copy.deepcopy(baseline), 0.10)
    assert result.ok
    assert result.regressions == 0
    # 6 correctness counts + 3 latencies x 3 percentiles + throughput, per variant.
    assert len(result.rows) == 2 * (len(CORRECTNESS_COUNTS) + 9 + 1)
    assert all(r.change == 0 for r in result.rows)
    assert result.only_in_baseline == ()
    assert result.only_in_new == ()


def test_planted_regressions_are_flagged() -> None:
    baseline = make_report("conditional")
    new = copy.deepcopy(baseline)
    run = new["runs"][0]
    run["counts"]["duplicate_writes"] = 3
    run["latency_us"]["end_to_end"]["p99"] = 300_000  # +50 %
    run["throughput"]["messages_per_s"] = 350.0  # -30 %
    result = diff_reports(baseline, new, parse_tolerance("10%"))

    assert not result.ok
    assert result.regressions == 3
    assert row(result.rows, "conditional", "counts.duplicate_writes") == DiffRow(
        variant="conditional",
        metric="counts.duplicate_writes",
        baseline=0,
        new=3,
        change=3,
        change_pct=None,
        kind=RowKind.CORRECTNESS,
        regression=True,
    )
    p99 = row(result.rows, "conditional", "latency_us.end_to_end.p99")
    assert (p99.baseline, p99.new, p99.change, p99.change_pct) == (200_000, 300_000, 100_000, 50.0)
    assert p99.kind is RowKind.LATENCY
    assert p99.regression
    throughput = row(result.rows, "conditional", "throughput.messages_per_s")
    assert (throughput.change, throughput.change_pct) == (-150.0, -30.0)
    assert throughput.kind is RowKind.THROUGHPUT
    assert throughput.regression
    flagged = {r.metric for r in result.rows if r.regression}
    assert flagged == {
        "counts.duplicate_writes",
        "latency_us.end_to_end.p99",
        "throughput.messages_per_s",
    }


def test_correctness_regression_ignores_tolerance() -> None:
    baseline = make_report("conditional")
    new = copy.deepcopy(baseline)
    new["runs"][0]["counts"]["lost_outcomes"] = 1
    result = diff_reports(baseline, new, 10.0)
    assert result.regressions == 1
    assert row(result.rows, "conditional", "counts.lost_outcomes").regression


def test_a_count_already_nonzero_is_not_a_correctness_regression() -> None:
    baseline = make_report("read-then-write")
    baseline["runs"][0]["counts"]["duplicate_writes"] = 40
    new = copy.deepcopy(baseline)
    new["runs"][0]["counts"]["duplicate_writes"] = 55
    result = diff_reports(baseline, new, 0.10)
    assert result.ok
    dup = row(result.rows, "read-then-write", "counts.duplicate_writes")
    assert (dup.change, dup.change_pct) == (15, 37.5)


def test_changes_within_tolerance_pass_and_improvements_never_regress() -> None:
    baseline = make_report("conditional")
    new = copy.deepcopy(baseline)
    run = new["runs"][0]
    run["latency_us"]["end_to_end"]["p99"] = 220_000  # exactly +10 %: not beyond
    run["latency_us"]["handler"]["p50"] = 5_000  # faster
    run["throughput"]["messages_per_s"] = 450.0  # exactly -10 %
    run["counts"]["dead_lettered"] = 0
    assert diff_reports(baseline, new, 0.10).ok
    run["latency_us"]["end_to_end"]["p99"] = 220_001
    assert diff_reports(baseline, new, 0.10).regressions == 1


def test_latency_without_data_is_not_compared() -> None:
    baseline = make_report("conditional")
    baseline["runs"][0]["latency_us"]["write"]["p50"] = None
    result = diff_reports(baseline, make_report("conditional"), 0.10)
    write = row(result.rows, "conditional", "latency_us.write.p50")
    assert (write.baseline, write.new, write.change, write.regression) == (None, 2_000, None, False)


def test_variant_in_one_report_only_is_reported() -> None:
    baseline = make_report("read-then-write", "conditional")
    new = make_report("conditional", "my:handler")
    result = diff_reports(baseline, new, 0.10)
    assert result.ok
    assert result.only_in_baseline == ("read-then-write",)
    assert result.only_in_new == ("my:handler",)
    assert {r.variant for r in result.rows} == {"conditional"}


def test_schema_version_mismatch_is_refused_naming_the_file() -> None:
    new = make_report("conditional")
    new["schema_version"] = 2
    with pytest.raises(InputError) as info:
        diff_reports(make_report("conditional"), new, 0.1, new_label="new.json")
    assert str(info.value) == (
        "new.json: schema_version 2 is not supported; loadtest diff reads schema_version 1 reports"
    )
    baseline = make_report("conditional")
    del baseline["schema_version"]
    with pytest.raises(InputError, match=r"^reports/baselines/x.json: schema_version None"):
        diff_reports(baseline, new, 0.1, baseline_label="reports/baselines/x.json")


def test_scenario_mismatch_is_refused() -> None:
    with pytest.raises(InputError) as info:
        diff_reports(
            make_report("conditional", scenario="seed-lab"),
            make_report("conditional"),
            0.1,
            baseline_label="base.json",
            new_label="new.json",
        )
    assert str(info.value) == (
        "new.json is a report of scenario 'race-burst' but base.json is of 'seed-lab'; "
        "diff compares two runs of the same scenario"
    )


def test_not_a_report_is_refused() -> None:
    with pytest.raises(InputError, match=r"^old.json: not a loadtest report \(runs"):
        diff_reports(
            {"schema_version": 1, "scenario": {"name": "x"}, "runs": [{}]},
            make_report("a"),
            0.1,
            baseline_label="old.json",
        )


@pytest.mark.parametrize(
    ("text", "value"),
    [("10%", 0.10), ("0.1", 0.1), (" 25 % ", 0.25), ("0", 0.0), ("150%", 1.5), ("1", 1.0)],
)
def test_parse_tolerance(text: str, value: float) -> None:
    assert parse_tolerance(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-5%", "max regression '-5%' is not allowed; use a non-negative percentage"),
        ("-0.1", "max regression '-0.1' is not allowed"),
        ("ten", "max regression 'ten' is not a number"),
        ("", "max regression '' is not a number"),
        ("nan", "max regression 'nan' is not allowed"),
        ("10", "max regression '10' is ambiguous; write 10% or"),
    ],
)
def test_parse_tolerance_refuses(text: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_tolerance(text)
    assert str(info.value).startswith(message)


def test_negative_tolerance_argument_is_refused() -> None:
    with pytest.raises(InputError, match="must be a non-negative fraction"):
        diff_reports(make_report("a"), make_report("a"), -0.1)


def test_render_diff_table() -> None:
    baseline = make_report("conditional", "read-then-write")
    new = copy.deepcopy(baseline)
    new["runs"][0]["latency_us"]["end_to_end"]["p99"] = 300_000
    new["runs"].pop()
    table = render_diff_table(diff_reports(baseline, new, 0.10))
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    text = console.export_text()
    assert "race-burst · max regression 10% · 1 regression(s)" in text
    assert "end_to_end.p99" in text
    assert "200.0 ms" in text
    assert "300.0 ms" in text
    assert "+100.0 ms (+50.0%)" in text
    assert text.count("REGRESSION") == 1
    assert "only in baseline: read-then-write" in text


def repeated(variant: str, handler_p50s_us: list[int], **counts: int) -> dict[str, Any]:
    """A repeated report: one run per value, each with that handler p50."""
    report = make_report()
    for i, p50 in enumerate(handler_p50s_us):
        run = make_run(variant)
        run["seed"] = 7 + i
        run["latency_us"]["handler"] = latency(p50, p50 * 3 // 2, p50 * 2)
        run["counts"].update({name: value if i == 0 else 0 for name, value in counts.items()})
        report["runs"].append(run)
    return report


def test_single_runs_say_no_significance_was_tested() -> None:
    baseline = make_report("conditional")
    result = diff_reports(baseline, copy.deepcopy(baseline), 0.10)
    assert not result.tested
    assert all(r.significance is None for r in result.rows)
    console = Console(width=250, record=True, color_system=None)
    console.print(render_diff_table(result))
    assert "single runs: no significance was tested" in console.export_text()


def test_a_large_but_noisy_change_is_not_a_regression_without_significance() -> None:
    # Medians 10 ms vs 12 ms (+20%, beyond 10%), but the runs overlap: p is large.
    baseline = repeated("conditional", [8_000, 10_000, 12_000, 30_000, 9_000])
    new = repeated("conditional", [7_000, 12_000, 13_000, 11_000, 40_000])
    result = diff_reports(baseline, new, 0.10)
    handler = row(result.rows, "conditional", "latency_us.handler.p50")
    assert handler.beyond_tolerance and not handler.regression
    assert handler.significance is not None
    assert handler.significance.runs == (5, 5)
    assert handler.significance.p_value > 0.05
    assert result.ok


def test_a_shift_in_every_run_is_a_regression_with_its_p_value() -> None:
    baseline = repeated("conditional", [10_000 + 100 * i for i in range(8)])
    new = repeated("conditional", [20_000 + 100 * i for i in range(8)])
    result = diff_reports(baseline, new, 0.10)
    handler = row(result.rows, "conditional", "latency_us.handler.p50")
    assert handler.regression
    assert handler.significance is not None
    assert handler.significance.exact
    assert handler.significance.p_value == pytest.approx(2 / 12870)  # 2 / C(16, 8)
    assert handler.significance.shift == 10_000
    assert handler.significance.interval is not None
    assert handler.significance.interval[0] > 0
    console = Console(width=250, record=True, color_system=None)
    console.print(render_diff_table(result))
    text = console.export_text()
    assert "effect [95% interval]" in text
    assert "0.00016" in text
    assert "Mann-Whitney U" in text


def test_a_correctness_count_appearing_in_one_run_of_many_is_a_regression() -> None:
    baseline = repeated("conditional", [10_000] * 5)
    new = repeated("conditional", [10_000] * 5, duplicate_writes=1)
    result = diff_reports(baseline, new, 0.10)
    duplicates = row(result.rows, "conditional", "counts.duplicate_writes")
    assert (duplicates.baseline, duplicates.new, duplicates.regression) == (0, 1, True)
    assert duplicates.significance is None


def test_too_few_runs_are_said_to_be_unable_to_show_a_regression() -> None:
    baseline = repeated("conditional", [10_000, 10_100])
    new = repeated("conditional", [50_000, 50_100])
    result = diff_reports(baseline, new, 0.10)
    assert not row(result.rows, "conditional", "latency_us.handler.p50").regression
    console = Console(width=250, record=True, color_system=None)
    console.print(render_diff_table(result))
    assert "no p-value can be below 0.33" in console.export_text()


def test_alpha_must_be_a_level() -> None:
    with pytest.raises(InputError, match="alpha"):
        diff_reports(make_report("a"), make_report("a"), 0.1, alpha=1.5)

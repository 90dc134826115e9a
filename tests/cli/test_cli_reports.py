"""doctor, diff, thresholds and the report files, through the CLI."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app

runner = CliRunner()


@pytest.mark.slow
def test_doctor_passes_on_the_embedded_backend(backend_url: str) -> None:
    result = runner.invoke(
        app, ["doctor", "--endpoint-url", backend_url, "--keys", "40", "--rounds", "1"]
    )
    assert result.exit_code == 0, result.output
    for name in (
        "conditional-put-atomic",
        "all-old-on-condition-failure",
        "partiql-insert-refuses-duplicate",
        "visibility-hides-message",
        "redelivery-increments-receive-count",
        "redrive-to-dlq",
        "mapping-concurrency",
        "visibility-redelivers-in-flight",
        "partial-batch-response",
        "fifo-mapping-order",
    ):
        assert f"PASS  {name}" in result.output


def test_thresholds_and_report_files(backend_url: str, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "run",
            "seed-lab",
            "--endpoint-url",
            backend_url,
            "--out",
            str(tmp_path),
            "--json",
            "seed.json",
            "--html",
            "seed.html",
            "--markdown",
            "seed.md",
            "--junit",
            "seed.xml",
            "--threshold",
            "duplicate_writes == 0",
            "--threshold",
            "end_to_end.p99 < 1us",
        ],
    )
    assert result.exit_code == 1, result.output
    assert "✗ conditional: end_to_end.p99 < 1us" in result.output
    report = json.loads((tmp_path / "seed.json").read_text())
    run = report["runs"][0]
    assert [(t["expr"], t["ok"]) for t in run["thresholds"]] == [
        ("duplicate_writes == 0", True),
        ("end_to_end.p99 < 1us", False),
    ]
    assert run["verdict"] == "fail"
    suites = ET.fromstring((tmp_path / "seed.xml").read_text())
    assert suites.get("failures") == "1"
    markdown = (tmp_path / "seed.md").read_text()
    # One environment: no two deliveries overlap ("0 (0 pairs)").
    assert "| `conditional` | ❌ fail | 4 | 4 | 0 | 0 (0 pairs) | 0 | 0 | 0 | 0 |" in markdown
    assert "`end_to_end.p99 < 1us`" in markdown
    page = (tmp_path / "seed.html").read_text()
    assert "<svg" in page and "dedup-order" in page and "receipt" not in page.lower()

    rerendered = runner.invoke(
        app, ["report", str(tmp_path / "seed.json"), "--html", str(tmp_path / "again.html")]
    )
    assert rerendered.exit_code == 1
    assert (tmp_path / "again.html").read_text() == page


def test_bad_threshold_exits_two(backend_url: str) -> None:
    result = runner.invoke(
        app, ["run", "seed-lab", "--endpoint-url", backend_url, "--threshold", "p99 <<< 3"]
    )
    assert result.exit_code == 2
    assert "p99 <<< 3" in result.output


def _report(tmp_path: Path, name: str, mutate: dict[str, int] | None = None) -> Path:
    sample = json.loads((Path(__file__).parents[1] / "reports" / "sample_report.json").read_text())
    report = copy.deepcopy(sample)
    for key, value in (mutate or {}).items():
        report["runs"][1]["counts"][key] = value
    path = tmp_path / name
    path.write_text(json.dumps(report))
    return path


def test_diff_flags_a_planted_regression_and_passes_identical(tmp_path: Path) -> None:
    base = _report(tmp_path, "base.json")
    same = runner.invoke(app, ["diff", str(base), str(_report(tmp_path, "same.json"))])
    assert same.exit_code == 0, same.output
    assert "No regression." in same.output
    worse = runner.invoke(
        app, ["diff", str(base), str(_report(tmp_path, "worse.json", {"duplicate_writes": 3}))]
    )
    assert worse.exit_code == 1
    assert "1 regression(s)." in worse.output


def test_diff_refuses_another_schema(tmp_path: Path) -> None:
    base = _report(tmp_path, "base.json")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema_version": 2, "runs": []}))
    result = runner.invoke(app, ["diff", str(base), str(other)])
    assert result.exit_code == 2
    assert "schema_version 1" in result.output


def test_sweep_runs_every_cell_and_variant(backend_url: str, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "sweep",
            "race-burst",
            "--endpoint-url",
            backend_url,
            "--distinct-ids",
            "8",
            "--copies",
            "2",
            "--concurrency",
            "1,4",
            "--race-window",
            "5,20",
            "--variants",
            "read-then-write,conditional",
            "--json",
            str(tmp_path / "sweep.json"),
        ],
    )
    # race-burst insists read-then-write races; with one environment it cannot,
    # so those cells fail that threshold and the sweep exits 1. With four, a race
    # window of a few milliseconds makes the race all but certain (8 ids: at 0 ms a
    # cell raced none of them in about one run in five).
    assert result.exit_code == 1, result.output
    report = json.loads((tmp_path / "sweep.json").read_text())
    failed = [
        (r["cell"]["concurrency"], r["variant"]) for r in report["runs"] if r["verdict"] == "fail"
    ]
    assert failed == [(1, "read-then-write"), (1, "read-then-write")]
    cells = [
        (run["cell"]["concurrency"], run["cell"]["race_window_ms"], run["variant"])
        for run in report["runs"]
    ]
    assert cells == [
        (c, w, v) for c in (1, 4) for w in (5, 20) for v in ("read-then-write", "conditional")
    ]
    for run in report["runs"]:
        assert run["settings"]["concurrency"] == run["cell"]["concurrency"]
        assert run["settings"]["faults"]["race_window_ms"] == run["cell"]["race_window_ms"]
        assert run["counts"]["messages_sent"] == 16
        if run["variant"] == "conditional":
            assert run["counts"]["duplicate_writes"] == 0
    # One environment processes copies one after another: no race, no duplicate.
    serial = [
        r
        for r in report["runs"]
        if r["cell"]["concurrency"] == 1 and r["variant"] == "read-then-write"
    ]
    assert all(r["counts"]["duplicate_writes"] == 0 for r in serial)
    # ... and no two copies overlapped, so the guard's clean run there proves nothing.
    for run in report["runs"]:
        if run["cell"]["concurrency"] == 1:
            assert run["counts"]["overlapping_ids"] == 0
            if run["variant"] == "conditional":
                assert run["verdict"] == "inconclusive"
    assert "race-burst sweep" in result.output


def test_sweep_refuses_a_bad_axis() -> None:
    result = runner.invoke(app, ["sweep", "race-burst", "--batch-size", "1,x"])
    assert result.exit_code == 2
    assert "--batch-size '1,x': give comma-separated numbers" in result.output
    assert runner.invoke(app, ["sweep", "race-burst"]).exit_code == 2


@pytest.mark.slow
def test_diff_of_repeated_runs_finds_a_slower_handler_by_significance(
    backend_url: str, tmp_path: Path
) -> None:
    def repeat(name: str, *extra: str) -> Path:
        path = tmp_path / name
        # Two environments: what is compared is the runs' figures, not their parallelism.
        args = ["run", "race-burst", "--variant", "conditional", "--distinct-ids", "5"]
        args += ["--concurrency", "2", "--repeat", "6", "--endpoint-url", backend_url]
        args += ["--json", str(path), "--quiet"]
        result = runner.invoke(app, [*args, *extra])
        assert result.exit_code == 0, result.output
        return path

    base, again = repeat("base.json"), repeat("again.json")
    slow = repeat("slow.json", "--handler-duration", "200")
    # A wide tolerance and a strict alpha: two batches of runs on a machine the other test
    # workers share drift by more than 50% in a tail percentile (a cold start at the wrong
    # moment), and among a diff's many metrics one then passes p < 0.05 by chance.
    # The slower handler is 50 times slower at the median, and 6 runs against 6 can reach
    # p = 0.0022: it is flagged at either setting.
    tolerance = ["--max-regression", "100%", "--alpha", "0.01"]
    same = runner.invoke(app, ["diff", str(base), str(again), *tolerance])
    assert same.exit_code == 0, same.output
    assert "medians of 6 vs 6 runs" in same.output
    assert "No regression." in same.output
    worse = runner.invoke(app, ["diff", str(base), str(slow), *tolerance])
    assert worse.exit_code == 1, worse.output
    line = next(
        line for line in worse.output.splitlines() if "handler.p50" in line and "REGRESSION" in line
    )
    # 6 slower runs against 6: 2 / C(12, 6) = 0.0022 exactly, or about 0.005 from the
    # normal approximation when two runs' percentiles tie (HDR buckets).
    cells = [cell.strip() for cell in line.split("│")]
    p_value = float(cells[-3].removesuffix("~").strip())
    assert p_value < 0.01

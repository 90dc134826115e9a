"""Rate honesty end to end: a rate the embedded backend cannot reach is said so, and
``--max-backlog`` stops sending, judges what was sent and names why."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from loadtest.cli import app
from tests.integration.helpers import loadtest_resources

runner = CliRunner()


def test_an_unreachable_rate_is_reported_and_max_backlog_stops_the_run(
    backend_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "rate.json"
    html = tmp_path / "rate.html"
    markdown = tmp_path / "rate.md"
    scenario = tmp_path / "too-fast.toml"
    scenario.write_text(
        'name = "too-fast"\nvariants = ["conditional"]\n'
        '[workload]\ndistinct_ids = 2000\narrival = "rate"\nrate_per_s = 5000\n'
    )
    result = runner.invoke(
        app,
        [
            "run",
            str(scenario),
            "--endpoint-url",
            backend_url,
            "--concurrency",
            "1",
            "--max-backlog",
            "50",
            "--json",
            str(out),
            "--html",
            str(html),
            "--markdown",
            str(markdown),
        ],
    )
    # Stopped early: what was sent is judged, and the run cannot pass (exit 4).
    assert result.exit_code == 4, result.output
    (run,) = json.loads(out.read_text())["runs"]
    rate = run["rate"]
    assert rate["requested_per_s"] == 5000
    assert rate["reached"] is False
    assert rate["backlog_peak"] > 50
    assert "over max_backlog (50)" in rate["stopped_early"]
    assert run["verdict"] == "inconclusive"
    assert any("stopped early" in reason for reason in run["inconclusive"])
    counts = run["counts"]
    assert 50 < counts["messages_sent"] < 2000
    assert counts["acked"] == counts["messages_sent"]  # everything sent was consumed
    (warning,) = [w for w in run["warnings"] if "NOT reached" in w]
    assert "asked 5000 messages/s" in warning and "consumed" in warning
    assert "waiting in the queue" in warning
    assert "NOT reached" in result.output  # the summary says so too
    assert "NOT reached" in html.read_text()
    assert "Requested rate not reached" in markdown.read_text()
    assert loadtest_resources(backend_url) == ([], [])

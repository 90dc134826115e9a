"""loadtest shrink: a failing race-burst report shrinks to one id and its copies, and fails again."""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app

runner = CliRunner()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_shrink_ends_at_one_id_with_its_copies_and_the_command_fails_again(
    backend_url: str, tmp_path: Path
) -> None:
    report = tmp_path / "racy.json"
    ran = runner.invoke(
        app,
        [
            *("run", "race-burst", "--variant", "read-then-write", "--distinct-ids", "8"),
            *("--endpoint-url", backend_url, "--json", str(report), "--quiet"),
        ],
    )
    assert ran.exit_code == 0, ran.output  # a demonstration: the race is expected
    assert json.loads(report.read_text())["runs"][0]["counts"]["duplicate_writes"] > 0

    shrunk = runner.invoke(
        app, ["shrink", str(report), "--tries", "3", "--endpoint-url", backend_url]
    )
    assert shrunk.exit_code == 0, shrunk.output
    minimal = tmp_path / "racy.minimal.toml"
    raw = tomllib.loads(minimal.read_text(encoding="utf-8"))
    assert raw["variants"] == ["read-then-write"]
    assert raw["thresholds"] == [] and raw["verdict"]["allow"] == {}
    assert raw["workload"]["distinct_ids"] == 1
    # Two copies, or the output says why more were kept.
    assert raw["workload"]["copies"] == 2 or "kept copies" in shrunk.output
    assert raw["consumer"]["concurrency"] >= 2  # one environment cannot race
    assert "Smallest failing workload of race-burst with read-then-write: 1 id(s)" in (
        shrunk.output
    )

    [command] = [line for line in shrunk.output.splitlines() if line.startswith("Reproduce: ")]
    args = shlex.split(command.removeprefix("Reproduce: "))
    assert args[:3] == ["loadtest", "run", str(minimal)]
    # The shrink kept a workload that failed in at least one of its tries; the race is a
    # matter of timing, so the printed command (which repeats that many tries) is run until
    # it fails, a few times at most (a busy machine can keep two deliveries apart for a
    # while: more attempts, never a weaker verdict).
    codes = []
    for _ in range(5):
        again = runner.invoke(app, [*args[1:], "--endpoint-url", backend_url, "--quiet"])
        codes.append(again.exit_code)
        if again.exit_code == 1:
            break
    assert codes[-1] == 1 and set(codes) <= {0, 1}, (codes, again.output)
    # The hand-off: the minimal workload is small enough to explore every interleaving.
    assert (
        f"Explore its interleavings: loadtest explore {minimal} --variant read-then-write"
        in shrunk.output
    )
    # ... and exploring it fails by construction, every time.
    explored = runner.invoke(
        app,
        ["explore", str(minimal), "--variant", "read-then-write", "--endpoint-url", backend_url],
    )
    assert explored.exit_code == 1, explored.output


def test_shrink_refuses_a_report_without_an_anomaly(tmp_path: Path) -> None:
    sample = Path(__file__).parents[1] / "reports" / "sample_report.json"
    data = json.loads(sample.read_text(encoding="utf-8"))
    for run in data["runs"]:
        run["counts"]["duplicate_writes"] = 0
    report = tmp_path / "clean.json"
    report.write_text(json.dumps(data), encoding="utf-8")
    result = runner.invoke(app, ["shrink", str(report)])
    assert result.exit_code == 2
    assert "nothing to shrink: no run in the report shows an anomaly" in result.output

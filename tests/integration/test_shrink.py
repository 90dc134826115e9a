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

SLOW_CHECK = """
import json, os, time
import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])

def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        if "Item" not in table.get_item(Key={"id": order["id"]}, ConsistentRead=True):
            time.sleep(0.1)  # reserve the stock with the warehouse
            table.put_item(Item={"id": order["id"], "quantity": order["quantity"]})
"""
"""Read, then write, 0.1 s apart, as a handler that calls another service between its check
and its act: two copies delivered within that time both write, so the race shows in every run
of one id and its copies (the lab's read-then-write, with a millisecond between the two
calls, shows it in about one run of five at one id: a shrink of it stops at one or two ids,
as its tries happen to find it)."""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_shrink_ends_at_one_id_with_its_copies_and_the_command_fails_again(
    backend_url: str, tmp_path: Path
) -> None:
    (tmp_path / "slow_check.py").write_text(SLOW_CHECK, encoding="utf-8")
    handler = f"{tmp_path / 'slow_check.py'}:handler"
    report = tmp_path / "racy.json"
    ran = runner.invoke(
        app,
        [
            # Four ids and four environments: enough to shrink on every dimension it has.
            *("run", "race-burst", "--handler", handler, "--distinct-ids", "4"),
            *("--concurrency", "4", "--endpoint-url", backend_url),
            *("--json", str(report), "--quiet"),
        ],
    )
    assert ran.exit_code == 1, ran.output
    assert json.loads(report.read_text())["runs"][0]["counts"]["duplicate_writes"] > 0

    # Two runs per candidate: one copy, or one environment, never fails, so each such
    # candidate takes all its tries; the others fail at their first (the race is in every run).
    shrunk = runner.invoke(
        app, ["shrink", str(report), "--tries", "2", "--endpoint-url", backend_url]
    )
    assert shrunk.exit_code == 0, shrunk.output
    minimal = tmp_path / "racy.minimal.toml"
    raw = tomllib.loads(minimal.read_text(encoding="utf-8"))
    [variant] = raw["variants"]
    assert raw["thresholds"] == [] and raw["verdict"]["allow"] == {}
    assert raw["workload"]["distinct_ids"] == 1
    # Two copies, or the output says why more were kept.
    assert raw["workload"]["copies"] == 2 or "kept copies" in shrunk.output
    assert raw["consumer"]["concurrency"] >= 2  # one environment cannot race
    assert f"Smallest failing workload of race-burst with {variant}: 1 id(s)" in shrunk.output

    [command] = [line for line in shrunk.output.splitlines() if line.startswith("Reproduce: ")]
    args = shlex.split(command.removeprefix("Reproduce: "))
    assert args[:3] == ["loadtest", "run", str(minimal)]
    again = runner.invoke(
        app, [*args[1:], "--endpoint-url", backend_url, "--quiet", "--out", str(tmp_path)]
    )
    assert again.exit_code == 1, again.output
    # The hand-off: the minimal workload is small enough to explore every interleaving.
    assert f"Explore its interleavings: loadtest explore {minimal} --variant {variant}" in (
        shrunk.output
    )
    # ... and exploring it fails by construction, every time.
    explored = runner.invoke(
        app, ["explore", str(minimal), "--variant", variant, "--endpoint-url", backend_url]
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

"""``loadtest explore --env``: the function's variables, as ``run`` takes them, in the
explored scenario and in every replay line; a pair that is not ``NAME=VALUE`` or names an
unknown placeholder exits 2 before anything is made."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from tests.integration.helpers import loadtest_resources

runner = CliRunner()

CONSUMER = Path(__file__).parents[1] / "integration" / "consumers" / "effects" / "aio_publish.py"
SCENARIO = """
name = "one-order"

[[workload.messages]]
body = { id = "o-1", quantity = 2 }

[consumer]
batch_size = 1
concurrency = 1
visibility_timeout_s = 30
function_timeout_s = 10
"""


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "one-order.toml"
    path.write_text(SCENARIO, encoding="utf-8")
    return path


def test_a_sink_named_by_env_is_explored_and_replayed_with_it(
    backend_url: str, tmp_path: Path
) -> None:
    # The scenario names no sink: --env gives the consumer its topic. A crash after the
    # put loses the event; the schedules without one teach that a delivery publishes.
    report = tmp_path / "explore.json"
    args = [
        "explore",
        str(_scenario(tmp_path)),
        "--handler",
        f"{CONSUMER}:handler",
        "--faults",
        "crash",
        "--env",
        "ORDERS_TOPIC_ARN={topic:orders}",
        "--endpoint-url",
        backend_url,
    ]
    result = runner.invoke(app, [*args, "--json", str(report), "--out", str(tmp_path)])
    assert result.exit_code == 1, result.output
    explore = json.loads(report.read_text(encoding="utf-8"))["explore"]
    (bug,) = explore["bugs"]
    assert bug["reasons"] == [
        "1 lost effect(s): o-1 never published to orders (message message-1 acknowledged)"
    ]
    replay = shlex.split(bug["replay"])
    assert replay[replay.index("--env") + 1] == "ORDERS_TOPIC_ARN={topic:orders}"
    # The replay line reruns the schedule with the variable, exactly.
    again = tmp_path / "again.json"
    result = runner.invoke(
        app,
        [*replay[1:], "--endpoint-url", backend_url, "--json", str(again), "--out", str(tmp_path)],
    )
    assert result.exit_code == 1, result.output
    replayed = json.loads(again.read_text(encoding="utf-8"))["explore"]
    assert replayed["counterexample"]["reasons"] == bug["reasons"]
    assert loadtest_resources(backend_url) == ([], [])


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("ORDERS_TOPIC_ARN", "--env 'ORDERS_TOPIC_ARN' is not allowed; give NAME=VALUE"),
        ("ORDERS_TOPIC_ARN={topik:orders}", "unknown placeholder {topik:orders}"),
    ],
)
def test_an_env_pair_that_does_not_fit_exits_2(
    backend_url: str, tmp_path: Path, pair: str, message: str
) -> None:
    result = runner.invoke(
        app,
        [
            "explore",
            str(_scenario(tmp_path)),
            "--handler",
            f"{CONSUMER}:handler",
            "--env",
            pair,
            "--endpoint-url",
            backend_url,
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert loadtest_resources(backend_url) == ([], [])


def test_an_explore_refused_as_bad_input_leaves_no_report_file(
    backend_url: str, tmp_path: Path
) -> None:
    # No --json: the report's names are claimed in the default folder (./reports; the test's
    # own here) before the exploration, and dropped again when it is refused.
    from loadtest.cli import outputs

    scenario = _scenario(tmp_path)
    result = runner.invoke(
        app,
        ["explore", str(scenario), "--handler", f"{CONSUMER}:handler", "--env", "NO_VALUE"],
    )
    assert result.exit_code == 2, result.output
    assert list(outputs.DEFAULT_FOLDER.iterdir()) == []

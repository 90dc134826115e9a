"""``loadtest run`` through deployed functions: the safety gate, the options, and MiniStack for real."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.deploy.lambda_cleanup import find_tagged, make_clients

runner = CliRunner()


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Any call to AWS would fail (exit 3), so an exit 2 proves nothing was called."""
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_real_aws_without_yes_and_without_a_terminal_shows_the_plan_and_refuses(
    no_credentials: None,
) -> None:
    result = runner.invoke(app, ["run", "seed-lab", "--target", "aws"])
    assert result.exit_code == 2, result.output
    assert "loadtest-" in result.output and "-fn" in result.output  # the plan, resource by resource
    assert "--yes" in result.output


def test_attach_needs_its_three_options_and_deploy_needs_an_endpoint() -> None:
    partial = runner.invoke(app, ["run", "seed-lab", "--function", "f", "--table", "t"])
    assert partial.exit_code == 2
    assert "--queue-url" in partial.output
    lone = runner.invoke(app, ["run", "seed-lab", "--deploy"])
    assert lone.exit_code == 2
    assert "--endpoint-url" in lone.output


def test_a_deploy_to_an_unreachable_endpoint_names_the_endpoint_not_aws() -> None:
    result = runner.invoke(
        app, ["run", "seed-lab", "--deploy", "--endpoint-url", "http://127.0.0.1:9", "--yes"]
    )
    assert result.exit_code == 3, result.output
    message = " ".join(result.output.split())
    assert "could not reach http://127.0.0.1:9 to deploy the run" in message
    assert "AWS (" not in message


@pytest.mark.slow
def test_run_deploy_on_ministack_as_a_subprocess(ministack: str, tmp_path: Path) -> None:
    report = tmp_path / "lab.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadtest",
            "run",
            "seed-lab",
            "--deploy",
            "--endpoint-url",
            ministack,
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = json.loads(report.read_text())["runs"]
    assert run["verdict"] == "pass"
    counts = run["counts"]
    assert (counts["deliveries"], counts["writes_accepted"], counts["writes_rejected"]) == (4, 2, 2)
    assert run["table_after"]["items"] == 2
    clients, _ = make_clients(ministack)
    assert find_tagged(clients, None) == []


@pytest.mark.slow
def test_ctrl_c_during_a_deployed_run_deletes_what_it_made(ministack: str, tmp_path: Path) -> None:
    import signal
    import time

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loadtest",
            "run",
            "race-burst",
            "--deploy",
            "--endpoint-url",
            ministack,
            "--distinct-ids",
            "40",
            "--race-window",
            "300",
            # 160 messages at 2 s each over 8 environments: the run cannot end before the
            # interrupt arrives, however fast or loaded the machine is.
            "--handler-duration",
            "2000",
            "--out",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
    )
    clients, _ = make_clients(ministack)
    deadline = time.monotonic() + 60
    while not find_tagged(clients, None):  # wait until the deploy has made something
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.5)
    time.sleep(3)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 130, output
    assert "interrupted" in output
    assert find_tagged(clients, None) == []

"""``loadtest explore --bound``: a bound or a schedule that does not fit exits 2, naming what
does not fit, before anything is made; a bound sets the space the report states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from tests.integration.helpers import loadtest_resources

runner = CliRunner()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bound", "deliveries=3,explode=1"], "key 'explode' is not known"),
        (["--bound", "deliveries=3,crash=1", "--copies", "2"], "which wins is ambiguous"),
        (["--bound", "crash=1", "--faults", "crash"], "faults both set the space explored"),
        (["--bound", "crash=1", "--max-faults", "2"], "max_faults both set the space"),
        (["--bound", "ids=2", "--distinct-ids", "2"], "distinct_ids both set the space"),
        (["--bound", "ids=3"], "3 business ids asked for, but scenario 'seed-lab' sends 2"),
        (["--distinct-ids", "3"], "3 business ids asked for, but scenario 'seed-lab' sends 2"),
        (["--bound", "deliveries=3,ids=2"], "deliveries=3 is not a multiple of the 2"),
        (
            ["--bound", "crash=1", "--schedule", "1:2=1r"],
            "entry '2=1r' injects redeliver (r), a fault not offered",
        ),
        (["--schedule", "2:3=1c"], "entry '3=1c' injects crash (c), a fault not offered"),
        (["--schedule", "2:3=3"], "names delivery 3, but the schedule has 2 deliveries"),
        (
            ["--bound", "deliveries=2,crash=1", "--schedule", "3:1=1c"],
            "has 3 deliveries, more than the 2 explored",
        ),
        (
            ["--bound", "deliveries=2,crash=1,redeliver=1", "--schedule", "2:1=1c,3=2c"],
            "injects 2 crashes, more than the 1 the bound allows",
        ),
    ],
)
def test_what_does_not_fit_exits_2_before_anything_is_made(
    backend_url: str, args: list[str], message: str
) -> None:
    result = runner.invoke(
        app,
        ["explore", "seed-lab", "--variant", "conditional", "--endpoint-url", backend_url, *args],
    )
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert loadtest_resources(backend_url) == ([], [])


def test_a_token_whose_entries_match_no_step_exits_2(backend_url: str) -> None:
    for token, message in [
        ("2:40=2", "entry '40=2' comes after the last decision"),
        ("2:0=1c", "entry '0=1c' names no option of decision 0 (offered there: 1, 2)"),
    ]:
        result = runner.invoke(
            app,
            [
                "explore",
                "seed-lab",
                "--variant",
                "read-then-write",
                "--faults",
                "crash",
                "--schedule",
                token,
                "--endpoint-url",
                backend_url,
            ],
        )
        assert result.exit_code == 2, result.output
        text = " ".join(result.output.split())
        assert "does not match the steps of read-then-write on seed-lab" in text
        assert message in text


def test_a_bound_sets_the_space_and_the_report_states_it(backend_url: str, tmp_path: Path) -> None:
    out = tmp_path / "bound.json"
    bounded = runner.invoke(
        app,
        [
            "explore",
            "seed-lab",
            "--variant",
            "conditional",
            "--bound",
            "deliveries=1,crash=1,redeliver=1",
            "--endpoint-url",
            backend_url,
            "--json",
            str(out),
        ],
    )
    assert bounded.exit_code == 0, bounded.output
    explored = json.loads(out.read_text())["explore"]
    bound = explored["bound"]
    assert bound["deliveries"] == 1 and bound["exhaustive"] is True
    assert bound["faults"] == {"crash": 1, "redeliver": 1} and bound["max_faults"] == 2
    assert "with at most 1 crash, 1 redelivery per schedule" in bound["sentence"]
    assert f"covered: {bound['sentence']}" in " ".join(bounded.output.split())
    assert explored["bound_spec"] == "deliveries=1,crash=1,redeliver=1"
    # The same deliveries with 2 faults of any kinds: the schedules with 2 crashes or 2
    # redeliveries come in too, so the per-kind bound ran strictly fewer.
    total = tmp_path / "total.json"
    either = runner.invoke(
        app,
        [
            "explore",
            "seed-lab",
            "--variant",
            "conditional",
            "--copies",
            "1",
            "--faults",
            "crash,redeliver",
            "--max-faults",
            "2",
            "--endpoint-url",
            backend_url,
            "--json",
            str(total),
        ],
    )
    assert either.exit_code == 0, either.output
    assert json.loads(total.read_text())["explore"]["bound"]["exhaustive"] is True
    assert bound["schedules"] < json.loads(total.read_text())["explore"]["bound"]["schedules"]


def test_a_bounds_replay_line_carries_the_bound_and_reruns_the_schedule(
    backend_url: str, tmp_path: Path
) -> None:
    handler = "tests/integration/explore/consumers/claim_trusting.py:handler"
    found = runner.invoke(
        app,
        [
            "explore",
            "seed-lab",
            "--handler",
            handler,
            "--bound",
            "deliveries=1,crash=1",
            "--endpoint-url",
            backend_url,
            "--out",
            str(tmp_path),
        ],
    )
    assert found.exit_code == 1, found.output
    line = next(x for x in found.output.splitlines() if x.startswith("replay: "))
    args = line.removeprefix("replay: loadtest ").split()
    assert args[args.index("--bound") + 1] == "deliveries=1,crash=1"
    assert "--copies" not in args and "--faults" not in args
    again = runner.invoke(app, [*args, "--endpoint-url", backend_url, "--out", str(tmp_path)])
    assert again.exit_code == 1, again.output

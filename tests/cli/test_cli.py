"""The CLI: exit codes, error messages and cleanup, through CliRunner and a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from tests.integration.helpers import client, loadtest_resources

runner = CliRunner()
HERE = Path(__file__).parent


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_scenarios_lists_builtins() -> None:
    result = runner.invoke(app, ["scenarios"])
    assert result.exit_code == 0
    assert "seed-lab" in result.output and "race-burst" in result.output


def test_run_writes_json_and_exits_zero(backend_url: str, tmp_path: Path) -> None:
    out = tmp_path / "seed.json"
    result = runner.invoke(
        app, ["run", "seed-lab", "--endpoint-url", backend_url, "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "PASS" in result.output
    report = json.loads(out.read_text())
    assert report["schema_version"] == 1
    assert report["backend"] == {"kind": "endpoint", "endpoint_url": backend_url}
    assert report["command"].endswith("--seed 1")
    assert report["runs"][0]["counts"]["writes_accepted"] == 2

    shown = runner.invoke(app, ["report", str(out)])
    assert shown.exit_code == 0 and "dedup-order" not in shown.output and "PASS" in shown.output


def test_missing_evidence_is_inconclusive_and_exits_four(backend_url: str, tmp_path: Path) -> None:
    out = tmp_path / "unhooked.json"
    result = runner.invoke(
        app,
        [
            "run",
            "seed-lab",
            "--handler",
            f"{HERE.parent / 'integration' / 'unhooked_handler.py'}:handler",
            "--endpoint-url",
            backend_url,
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 4, result.output
    assert "INCONCLUSIVE" in result.output
    assert "stored by no write the observer saw" in " ".join(result.output.split())
    (run,) = json.loads(out.read_text())["runs"]
    assert run["verdict"] == "inconclusive"
    assert run["counts"]["writes_attempted"] == 0
    assert any("stored by no write the observer saw" in line for line in run["inconclusive"])


def test_failed_verdict_exits_one(backend_url: str, tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "run",
            "race-burst",
            "--variant",
            "unconditional",
            "--distinct-ids",
            "5",
            "--copies",
            "2",
            # Two environments, not race-burst's eight (a cold start each): an unconditional
            # write stores every copy again, raced or not.
            "--concurrency",
            "2",
            "--endpoint-url",
            backend_url,
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "duplicate write" in result.output
    assert list(tmp_path.glob("race-burst-*.json"))


@pytest.mark.parametrize(("variant", "verdict_code"), [("conditional", 0), ("unconditional", 1)])
def test_a_closed_stdout_keeps_the_verdicts_exit_code(
    backend_url: str, tmp_path: Path, variant: str, verdict_code: int
) -> None:
    """``loadtest run ... | head -1``: the reader is gone before the summary is printed; the
    exit code is still the verdict's, the report is written, and nothing is printed about it."""
    reader, writer = os.pipe()
    os.close(reader)  # every write to stdout fails with EPIPE from the first one
    try:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "loadtest", "run", "race-burst", "--variant", variant),
                *("--distinct-ids", "5", "--copies", "2", "--concurrency", "2"),
                *("--endpoint-url", backend_url, "--out", str(tmp_path)),
            ],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=240,
        )
    finally:
        os.close(writer)
    assert done.returncode == verdict_code, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    (report,) = tmp_path.glob("race-burst-*.json")
    (run,) = json.loads(report.read_text())["runs"]
    assert run["verdict"] == ("pass" if verdict_code == 0 else "fail")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "no/such/file.toml"], "does not exist"),
        (["run", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
        (["run", "seed-lab", "--variant", "nope"], "unknown variant 'nope'"),
        (["run", "seed-lab", "--handler", "no_such_module_xyz:handler"], "cannot be found"),
        (["run", "seed-lab", "--handler", "missing.py:handler"], "does not exist"),
        (["run", "seed-lab", "--batch-size", "0"], "batch_size = 0 is out of range; allowed 1..10"),
        (["compare", "race-burst", "--variants", "conditional,bogus"], "unknown variant 'bogus'"),
    ],
)
def test_bad_input_exits_two_before_anything_is_created(
    backend_url: str, args: list[str], message: str
) -> None:
    result = runner.invoke(app, [*args, "--endpoint-url", backend_url])
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert loadtest_resources(backend_url) == ([], [])


def test_malformed_toml_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n[consumer]\nbatch_size = \n')
    result = runner.invoke(app, ["run", str(bad)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert str(bad) in text and "line 3" in text


def test_unknown_key_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "typo.toml"
    bad.write_text("[consumer]\nbatchsize = 2\n")
    result = runner.invoke(app, ["run", str(bad)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "unknown key consumer.'batchsize' (did you mean 'batch_size'?)" in text


def test_an_unknown_key_far_from_every_field_suggests_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "typo.toml"
    bad.write_text("[workload]\nzzz = 2\n")
    result = runner.invoke(app, ["run", str(bad)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "unknown key workload.'zzz'; allowed: arrival," in text
    assert "did you mean" not in text


@pytest.mark.parametrize(
    ("command", "codes"),
    [
        ("run", ["0 when", "1 when", "2 for bad input", "3 when", "4 when", "130 when"]),
        ("compare", ["0 when", "1 when", "2 for bad input", "3 when", "4 when", "130 when"]),
        ("doctor", ["0 when", "1 when", "2 for bad input", "3 when", "130 when"]),
    ],
)
def test_help_names_every_exit_code_the_command_can_end_with(
    command: str, codes: list[str]
) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert [code for code in codes if code not in text] == []


def test_handler_that_fails_to_import_leaves_nothing(backend_url: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text(
        "import no_such_dependency_xyz\n\ndef handler(event, context):\n    return None\n"
    )
    result = runner.invoke(
        app, ["run", "seed-lab", "--handler", f"{broken}:handler", "--endpoint-url", backend_url]
    )
    assert result.exit_code == 2, result.output
    assert "could not be loaded" in result.output and "no_such_dependency_xyz" in result.output
    assert loadtest_resources(backend_url) == ([], [])


def test_not_callable_handler(backend_url: str, tmp_path: Path) -> None:
    module = tmp_path / "notcallable.py"
    module.write_text("handler = 42\n")
    result = runner.invoke(
        app, ["run", "seed-lab", "--handler", f"{module}:handler", "--endpoint-url", backend_url]
    )
    assert result.exit_code == 2
    assert "is not callable" in result.output


def test_unreachable_endpoint_exits_three() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    result = runner.invoke(app, ["run", "seed-lab", "--endpoint-url", url])
    assert result.exit_code == 3, result.output
    assert "could not reach" in result.output and url in " ".join(result.output.split())


def test_preexisting_resources_are_untouched(backend_url: str, tmp_path: Path) -> None:
    dynamodb = client("dynamodb", backend_url)
    sqs = client("sqs", backend_url)
    dynamodb.create_table(
        TableName="labex-q05-reference",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    keep = {"id": {"S": "reference"}, "note": {"S": "keep unchanged"}}
    dynamodb.put_item(TableName="labex-q05-reference", Item=keep)
    queue_url = sqs.create_queue(QueueName="someone-elses-queue")["QueueUrl"]
    try:
        result = runner.invoke(
            app, ["run", "seed-lab", "--endpoint-url", backend_url, "--out", str(tmp_path)]
        )
        assert result.exit_code == 0, result.output
        assert dynamodb.scan(TableName="labex-q05-reference")["Items"] == [keep]
        assert queue_url in sqs.list_queues().get("QueueUrls", [])
        assert loadtest_resources(backend_url) == ([], [])
    finally:
        dynamodb.delete_table(TableName="labex-q05-reference")
        sqs.delete_queue(QueueUrl=queue_url)


def _race_burst(backend_url: str, tmp_path: Path, **env: str) -> subprocess.Popen[str]:
    """``loadtest run race-burst`` (conditional, 400 ids, 2 environments) in a subprocess."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "loadtest", "run", "race-burst", "--variant", "conditional"),
            *("--distinct-ids", "400", "--concurrency", "2", "--endpoint-url", backend_url),
            *("--out", str(tmp_path), "--quiet"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **env},
    )


def test_subprocess_interrupt_cleans_up(backend_url: str, tmp_path: Path) -> None:
    """Ctrl-C mid-run: exit 130, and the run's queue and table are deleted."""
    process = _race_burst(backend_url, tmp_path)
    deadline = time.monotonic() + 60
    while loadtest_resources(backend_url)[1] == [] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert loadtest_resources(backend_url)[1], "the run never created its table"
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert loadtest_resources(backend_url) == ([], [])


def _zygote_and_children(harness: int) -> tuple[int | None, list[int]]:
    """The run's zygote (the harness's child running the zygote) and the environments it forked."""
    from loadtest.observer import layer

    marked: dict[int, int | None] = {}  # processes running the zygote's code -> their parent
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if layer.ZYGOTE_MARKER.encode() in args:
            marked[int(entry.name)] = _parent(int(entry.name))
    zygote = next((pid for pid, parent in marked.items() if parent == harness), None)
    return zygote, [pid for pid, parent in marked.items() if zygote and parent == zygote]


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name; None once the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _parent(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != b"Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="zygotes need pidfds")
def test_a_dead_zygote_is_no_verdict_exit_four_and_leaves_nothing(
    backend_url: str, tmp_path: Path
) -> None:
    """loadtest's own failure mid-run is not the consumer's: exit 4 (no verdict), never 1."""
    process = _race_burst(backend_url, tmp_path, LOADTEST_ZYGOTE="1")
    deadline = time.monotonic() + 60
    zygote: int | None = None
    children: list[int] = []
    while (zygote is None or not children) and time.monotonic() < deadline:
        time.sleep(0.1)
        zygote, children = _zygote_and_children(process.pid)
    assert zygote is not None and children, "the run never forked its environments"
    os.kill(zygote, signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 4, stderr
    assert "zygote" in stderr and "no verdict" in stderr and "Traceback" not in stderr
    assert loadtest_resources(backend_url) == ([], [])
    assert not [c for c in children if _alive(c)], "environments outlived their zygote"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="zygotes need pidfds")
def test_ctrl_c_ends_environments_frozen_between_invocations(
    backend_url: str, tmp_path: Path
) -> None:
    """Environments are stopped (SIGSTOP) between invocations: an interrupt still ends
    every one of them, stopped or running, and the run cleans up (exit 130)."""
    process = _race_burst(backend_url, tmp_path, LOADTEST_ZYGOTE="1")
    deadline = time.monotonic() + 60
    children: list[int] = []
    frozen: list[int] = []
    while not frozen and time.monotonic() < deadline:
        time.sleep(0.05)
        _, children = _zygote_and_children(process.pid)
        frozen = [c for c in children if (_stat(c) or [b""])[0] == b"T"]
    assert frozen, "no environment was seen frozen between invocations"
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert loadtest_resources(backend_url) == ([], [])
    assert not [c for c in children if _alive(c)], "an environment outlived the run"


def test_prices_file_prices_the_run_and_a_bad_one_exits_two(
    backend_url: str, tmp_path: Path
) -> None:
    table = (Path(__file__).parents[2] / "loadtest/model/figures/prices/us-east-1.toml").read_text()
    mine = tmp_path / "mine.toml"
    # Ten times the DynamoDB write price: the run's DynamoDB dollars follow it.
    mine.write_text(
        table.replace(
            "per_million_write_request_units = 0.625", "per_million_write_request_units = 6.25"
        )
    )
    out = tmp_path / "seed.json"
    result = runner.invoke(
        app,
        [
            "run",
            "seed-lab",
            "--endpoint-url",
            backend_url,
            "--json",
            str(out),
            "--prices",
            str(mine),
            "--threshold",
            "cost.per_million_usd < 50",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "cost per million msgs" in " ".join(result.output.split())
    cost = json.loads(out.read_text())["runs"][0]["cost"]
    assert cost["prices"]["source"] == str(mine)
    assert cost["usd"]["dynamodb"] == pytest.approx(4 * 6.25 / 1e6)

    broken = tmp_path / "broken.toml"
    broken.write_text('region = "x"\n[sqs]\nstandard_per_million_requests = "cheap"\n')
    result = runner.invoke(
        app, ["run", "seed-lab", "--endpoint-url", backend_url, "--prices", str(broken)]
    )
    assert result.exit_code == 2, result.output
    assert "standard_per_million_requests" in result.output
    assert loadtest_resources(backend_url) == ([], [])


def test_sweep_metric_must_be_a_heatmap_metric() -> None:
    result = runner.invoke(app, ["sweep", "seed-lab", "--batch-size", "1,2", "--metric", "latency"])
    assert result.exit_code == 2, result.output
    assert "duplicate_writes, redeliveries, e2e_p99, cost" in " ".join(result.output.split())


def test_an_import_that_hangs_is_named_with_where_it_hangs(
    backend_url: str, tmp_path: Path
) -> None:
    hanging = tmp_path / "slow_import.py"
    hanging.write_text(
        "import time\n\ndef wait_for_config():\n    time.sleep(600)\n\nwait_for_config()\n\n"
        "def handler(event, context):\n    return None\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadtest",
            "run",
            "seed-lab",
            "--handler",
            f"{hanging}:handler",
            "--endpoint-url",
            backend_url,
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LOADTEST_READY_TIMEOUT_S": "2"},
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "did not finish importing within 2 s" in result.stderr
    assert "wait_for_config" in result.stderr and "Traceback" not in result.stderr
    assert loadtest_resources(backend_url) == ([], [])


def test_serve_on_a_taken_port_says_so_and_exits_3() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "loadtest", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 3, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""

"""--producers N: child processes split the schedule; every count is the same as with one."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.report import build_report
from tests.integration.helpers import run_variants


def test_two_producer_processes_send_and_judge_the_same_workload(backend_url: str) -> None:
    base = load_scenario("race-burst").with_overrides(distinct_ids=30)
    one = build_report(run_variants(base, backend_url, "conditional"))["runs"][0]
    two_scenario = base.with_overrides(producers=2)
    two = build_report(run_variants(two_scenario, backend_url, "conditional"))["runs"][0]

    # Everything but the race exposure, which is timing (which copies happened to overlap).
    timing = ("overlapping_ids", "overlapping_deliveries")

    def measured(run: dict[str, Any]) -> dict[str, int]:
        return {k: v for k, v in run["counts"].items() if k not in timing}

    assert measured(two) == measured(one)
    assert two["counts"]["messages_sent"] == 120
    assert two["counts"]["acked"] == 120
    assert two["verdict"] == "pass"


def test_after_completion_resends_stay_in_the_harness_with_two_producers(
    backend_url: str,
) -> None:
    scenario = load_scenario("resends-after-completion").with_overrides(producers=2)
    run = build_report(run_variants(scenario, backend_url, "conditional"))["runs"][0]

    assert run["counts"]["messages_sent"] == run["counts"]["acked"] + run["counts"]["dead_lettered"]
    assert run["counts"]["send_failures"] == 0
    assert run["counts"]["duplicate_writes"] == 0


def test_max_backlog_stops_producer_processes_and_everything_sent_is_judged(
    backend_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "rate.json"
    scenario = tmp_path / "too-fast.toml"
    scenario.write_text(
        'name = "too-fast"\nvariants = ["conditional"]\n'
        '[workload]\ndistinct_ids = 20000\narrival = "rate"\nrate_per_s = 5000\n'
    )
    result = CliRunner().invoke(
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
            "--producers",
            "2",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 4, result.output
    (run,) = json.loads(out.read_text())["runs"]
    assert "over max_backlog (50)" in run["rate"]["stopped_early"]
    counts = run["counts"]
    assert 50 < counts["messages_sent"] < 20000
    assert counts["acked"] == counts["messages_sent"]  # every message the backend took was judged


_PARENT = """
import sys, anyio
from loadtest.aws.target import BackendKind, Target
from loadtest.model.history.log import History
from loadtest.model.workload.schedule import PlannedMessage
from loadtest.producer.processes import producing

async def main():
    endpoint = sys.argv[1]
    target = Target.resolve(BackendKind.ENDPOINT, endpoint)
    planned = [PlannedMessage(i, f"id-{i}", "{}", 0) for i in range(4)]
    async with producing(2, target, f"{endpoint}/000000000000/q", planned) as send:
        print("ready", flush=True)
        await send(None, History(), 0, print, print, lambda: 0, anyio.Event())

anyio.run(main)
"""


def _children_of(pid: int) -> list[int]:
    """The live (not zombie) children of ``pid``, from ``/proc/*/stat``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] not in (b"Z", b"X"):
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_producer_processes_end_at_once_when_their_harness_is_killed_mid_send(
    tmp_path: Path,
) -> None:
    """Both producers are mid-send to an endpoint that takes the connection and never
    answers (a hung backend): a SIGKILLed harness still takes them, and multiprocessing's
    resource tracker, with it within two seconds."""
    hung = socket.create_server(("127.0.0.1", 0), backlog=64)
    hung.settimeout(30)
    endpoint = f"http://127.0.0.1:{hung.getsockname()[1]}"
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, endpoint],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
    )
    children: list[int] = []
    accepted: list[socket.socket] = []
    try:
        assert parent.stdout is not None
        assert parent.stdout.readline().strip() == b"ready"
        children = _children_of(parent.pid)
        assert len(children) >= 2, children  # two producers (and the resource tracker)
        while len(accepted) < 2:  # each producer has a request on the wire
            accepted.append(hung.accept()[0])
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 2.0
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in children if _alive(pid)], "outlived the killed harness"
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for conn in accepted:
            conn.close()
        hung.close()
        if parent.stdout is not None:
            parent.stdout.close()

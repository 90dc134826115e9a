"""The fault suite: loadtest as a real process, against a backend over HTTP, under hostile conditions.

A case that stops or kills the backend starts a `loadtest serve` of its own; the others
run against the worker's embedded backend (``backend_url``), which they leave empty.

Each case asserts the exit code, the message, the report written (marked
incomplete where interrupted), that no process and no ``loadtest-envs-*``
folder is left (each case gets its own TMPDIR and a marker in the
environment its children inherit) and that no resource is left on the
endpoint. Workloads are small and deadlines short.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from loadtest.api import report_from_history
from tests.integration.helpers import client, loadtest_resources

HERE = Path(__file__).parent

# Each case waits on real processes, signals and timeouts (20-30 s on a busy machine).
pytestmark = pytest.mark.slow


@dataclass
class Served:
    url: str
    process: subprocess.Popen[str]


def _serve(tmp: Path) -> Served:
    with (tmp / "serve.log").open("w") as log:  # the child keeps its own copy
        process = subprocess.Popen(
            [sys.executable, "-m", "loadtest", "serve", "--port", "0"],
            stdout=subprocess.DEVNULL,
            stderr=log,
            text=True,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"http://[0-9.]+:\d+", (tmp / "serve.log").read_text())
        if found:
            return Served(found.group(0), process)
        time.sleep(0.1)
    process.kill()
    raise AssertionError("loadtest serve did not start")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """A `loadtest serve` of this test's own, so it may be stopped or killed (the cases
    that leave the backend running use the worker's, ``backend_url``: each leaves it as
    it found it, which they assert)."""
    backend = _serve(tmp_path)
    yield backend
    if backend.process.poll() is None:
        backend.process.send_signal(signal.SIGCONT)
        backend.process.terminate()
        backend.process.wait(timeout=15)


class Case:
    """One loadtest process with its own TMPDIR and a marker its children inherit."""

    def __init__(self, tmp: Path, args: list[str]) -> None:
        self.tmp = tmp / "tmp"
        self.tmp.mkdir(exist_ok=True)
        self.out = tmp / "out"
        self.marker = uuid.uuid4().hex
        self.process = subprocess.Popen(
            [sys.executable, "-m", "loadtest", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=HERE.parent.parent,
            env={
                **os.environ,
                "NO_COLOR": "1",
                "TMPDIR": str(self.tmp),
                "LOADTEST_FAULT_CASE": self.marker,
            },
        )
        self.stdout = ""
        self.stderr = ""

    def finish(self, timeout_s: float | None = 60) -> int:
        self.stdout, self.stderr = self.process.communicate(timeout=timeout_s)
        return self.process.returncode

    def processes_left(self) -> list[int]:
        """Processes (environments, backends) that carry this case's marker."""
        left = []
        needle = f"LOADTEST_FAULT_CASE={self.marker}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes()
                state = (entry / "stat").read_text().split(")")[-1].split()[0]
            except OSError:
                continue
            if needle in environ and state != "Z":
                left.append(int(entry.name))
        return left

    def folders_left(self) -> list[str]:
        return [p.name for p in self.tmp.glob("loadtest-envs-*")]

    def reports(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted(self.out.glob("*.json"))]

    def assert_nothing_left(self, url: str | None = None) -> None:
        deadline = time.monotonic() + 5  # SIGKILL on parent death is asynchronous
        while self.processes_left() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert self.processes_left() == []
        assert self.folders_left() == []
        if url is not None:
            assert loadtest_resources(url) == ([], [])


def _run_args(url: str, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "race-burst",
        "--variant",
        "conditional",
        "--distinct-ids",
        "300",
        "--concurrency",
        "2",
        "--endpoint-url",
        url,
        "--out",
        str(out),
        "--quiet",
        "--cleanup-timeout",
        "5",
        *extra,
    ]


def _wait_for_table(url: str, case: Case) -> None:
    """Until the run's table holds a first order: messages sent and delivered (the
    environments' cold starts come after the table is created).

    Waits on the run, not on a clock: a busy machine only makes the start slower; a run
    that ends first fails here with its output, and a hang meets the suite's per-test
    timeout."""
    while (
        not (tables := loadtest_resources(url)[1])
        or not client("dynamodb", url).scan(TableName=tables[0], Limit=1)["Items"]
    ):
        _assert_running(case, "the run ended before it stored a first order")
        time.sleep(0.1)
    time.sleep(0.5)  # more messages sent and delivered


def _assert_running(case: Case, what: str) -> None:
    if case.process.poll() is not None:
        case.finish()
        raise AssertionError(f"{what} (exit {case.process.returncode}): {case.stderr}")


def _interrupt(tmp_path: Path, url: str, signals: list[signal.Signals], name: str) -> None:
    case = Case(tmp_path, _run_args(url, tmp_path / "out"))
    _wait_for_table(url, case)
    for sig in signals:
        case.process.send_signal(sig)
        time.sleep(0.05)
    code = case.finish()
    assert code == 130, case.stderr
    assert f"interrupted by {name}" in case.stderr and "Traceback" not in case.stderr
    assert "the run's resources were deleted" in case.stderr
    [report] = case.reports()
    assert report["incomplete"] is True and report["incomplete_reason"] == f"interrupted by {name}"
    assert report["runs"][0]["incomplete"] is True
    assert report["runs"][0]["counts"]["messages_sent"] > 0
    _assert_cut_short_is_not_a_failure(report["runs"][0])
    case.assert_nothing_left(url)
    _assert_history_rebuilds(case)


def _assert_history_rebuilds(case: Case) -> None:
    """The history beside the report is kept (the run did not end normally) and closed:
    judged again, it gives the interrupted run's own report, byte for byte."""
    [written] = sorted(case.out.glob("*.json"))
    [history] = sorted(case.out.glob("*.history"))
    assert history.stem == written.stem
    again = report_from_history(history)
    assert json.dumps(again.to_dict(), indent=2) + "\n" == written.read_text(encoding="utf-8")


def _assert_cut_short_is_not_a_failure(run: dict[str, Any]) -> None:
    """The conditional consumer was cut short: what it did not settle is not its fault."""
    assert run["verdict"] == "inconclusive", run["reasons"]
    assert run["reasons"] == []
    assert any("the run was cut short: not judged" in line for line in run["inconclusive"]), run[
        "inconclusive"
    ]


def test_sigterm_cleans_up_and_reports_incomplete(tmp_path: Path, backend_url: str) -> None:
    _interrupt(tmp_path, backend_url, [signal.SIGTERM], "SIGTERM")


def test_sighup_cleans_up_and_reports_incomplete(tmp_path: Path, backend_url: str) -> None:
    _interrupt(tmp_path, backend_url, [signal.SIGHUP], "SIGHUP")


def test_double_sigint_still_cleans_up(tmp_path: Path, backend_url: str) -> None:
    _interrupt(tmp_path, backend_url, [signal.SIGINT, signal.SIGINT], "SIGINT")


def test_interrupted_compare_keeps_finished_variants(tmp_path: Path, backend_url: str) -> None:
    case = Case(
        tmp_path,
        [
            "compare",
            "seed-lab",
            "--variants",
            "conditional,unconditional,read-then-write",
            "--handler-duration",
            "1500",
            "--endpoint-url",
            backend_url,
            "--out",
            str(tmp_path / "out"),
            "--quiet",
        ],
    )
    while len(loadtest_resources(backend_url)[1]) == 0 or "-1-" not in "".join(
        loadtest_resources(backend_url)[1]
    ):
        _assert_running(case, "the second variant never started")
        time.sleep(0.1)
    time.sleep(0.5)
    case.process.send_signal(signal.SIGTERM)
    assert case.finish() == 130, case.stderr
    [report] = case.reports()
    assert [run["variant"] for run in report["runs"]][:1] == ["conditional"]
    assert report["runs"][0]["incomplete"] is False
    assert report["runs"][0]["verdict"] == "pass"
    assert report["incomplete"] is True
    case.assert_nothing_left(backend_url)
    _assert_history_rebuilds(case)


def _finish_blocked(case: Case) -> tuple[int, float]:
    """Wait for the run to end: its exit code, and the seconds its main thread spent blocked
    (neither on a CPU nor queued for one: waiting on the backend, its timeouts, its children)
    from now to its exit. Read from ``/proc/PID/schedstat`` of the exited, not yet reaped
    process, so a busy machine, which only queues the run longer, does not count."""
    schedstat = Path(f"/proc/{case.process.pid}/schedstat")

    def running_or_queued_s() -> float:
        on_cpu_ns, queued_ns, _ = schedstat.read_text().split()
        return (int(on_cpu_ns) + int(queued_ns)) / 1e9

    assert case.process.stdout is not None and case.process.stderr is not None
    streams = [case.process.stdout, case.process.stderr]
    texts: list[str] = ["", ""]

    def drain(k: int) -> None:
        texts[k] = streams[k].read()

    readers = [threading.Thread(target=drain, args=(k,)) for k in (0, 1)]
    started = time.monotonic()
    before_s = running_or_queued_s()
    for reader in readers:
        reader.start()
    os.waitid(os.P_PID, case.process.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped
    blocked_s = time.monotonic() - started - (running_or_queued_s() - before_s)
    code = case.process.wait()
    for reader, stream in zip(readers, streams, strict=True):
        reader.join()
        stream.close()
    case.stdout, case.stderr = texts
    return code, blocked_s


def test_stopped_backend_is_bounded_and_named(tmp_path: Path, served: Served) -> None:
    case = Case(tmp_path, _run_args(served.url, tmp_path / "out", "--deadline", "4"))
    _wait_for_table(served.url, case)
    served.process.send_signal(signal.SIGSTOP)
    try:
        code, blocked_s = _finish_blocked(case)
    finally:
        served.process.send_signal(signal.SIGCONT)
    assert code == 3, case.stderr
    assert "did not answer" in case.stderr and "Traceback" not in case.stderr
    assert "not deleted" in case.stderr and "loadtest-" in case.stderr
    assert blocked_s < 45, f"blocked {blocked_s:.0f} s with a 4 s deadline and 5 s cleanup limit"
    [report] = case.reports()
    assert report["incomplete"] is True
    case.assert_nothing_left()  # the endpoint's resources are named, not deleted: it was stopped
    _assert_history_rebuilds(case)


def test_killed_backend_exits_three_and_leaves_nothing_local(
    tmp_path: Path, served: Served
) -> None:
    case = Case(tmp_path, _run_args(served.url, tmp_path / "out"))
    _wait_for_table(served.url, case)
    served.process.kill()
    served.process.wait()
    code = case.finish()
    assert code == 3, case.stderr
    assert "could not reach" in case.stderr and "Traceback" not in case.stderr
    [report] = case.reports()
    assert report["incomplete"] is True
    # The end state could not be read: an empty table is no evidence of lost outcomes.
    _assert_cut_short_is_not_a_failure(report["runs"][0])
    case.assert_nothing_left()
    _assert_history_rebuilds(case)


def test_concurrent_runs_in_one_folder_keep_every_report(tmp_path: Path, backend_url: str) -> None:
    for n in range(4):
        (tmp_path / str(n)).mkdir()
    cases = [
        Case(
            tmp_path / str(n),
            [
                "run",
                "seed-lab",
                "--endpoint-url",
                backend_url,
                "--out",
                str(tmp_path / "shared"),
                "--quiet",
            ],
        )
        for n in range(4)
    ]
    # Four interpreters starting at once on a busy machine may take minutes between them:
    # the test asserts the reports, not the time (a hang meets the per-test timeout).
    codes = [case.finish(timeout_s=None) for case in cases]
    assert codes == [0, 0, 0, 0], [c.stderr for c in cases]
    assert len(list((tmp_path / "shared").glob("*.json"))) == 4
    assert len(list((tmp_path / "shared").glob("*.html"))) == 4
    for case in cases:
        case.assert_nothing_left()
    assert loadtest_resources(backend_url) == ([], [])


@pytest.mark.parametrize(
    "name",
    ["../escaped-name", "bad\x1b[31mname", "", "a" * 65, "/abs"],
)
def test_hostile_scenario_names_are_refused(tmp_path: Path, name: str) -> None:
    scenario = tmp_path / "hostile.toml"
    scenario.write_text(f"name = {json.dumps(name)}\n[workload]\ndistinct_ids = 1\n")
    case = Case(tmp_path, ["run", str(scenario), "--out", str(tmp_path / "out"), "--quiet"])
    assert case.finish() == 2, case.stderr
    assert "name = " in case.stderr and "is not allowed" in case.stderr
    assert "\x1b[31m" not in case.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "escaped-name").exists()
    case.assert_nothing_left()


def test_oversized_reply_fails_the_invocation_not_the_run(tmp_path: Path, backend_url: str) -> None:
    handler = tmp_path / "huge.py"
    handler.write_text(
        "def handler(event, context):\n    return {'blob': 'x' * (65 * 1024 * 1024)}\n"
    )
    scenario = tmp_path / "big.toml"
    scenario.write_text(
        'name = "big"\n[workload]\ndistinct_ids = 1\ncopies = 1\n[consumer]\nmemory_mb = 1024\n'
    )
    case = Case(
        tmp_path,
        [
            "run",
            str(scenario),
            "--handler",
            f"{handler}:handler",
            "--max-receive-count",
            "1",
            "--visibility-timeout",
            "1",
            "--concurrency",
            "1",
            "--deadline",
            "20",
            "--endpoint-url",
            backend_url,
            "--out",
            str(tmp_path / "out"),
            "--json",
            "r.json",
            "--quiet",
        ],
    )
    # The verdict is the checker's business; the run must end normally and say why.
    assert case.finish(timeout_s=90) in (0, 1), case.stderr
    assert "Traceback" not in case.stderr
    report = json.loads((tmp_path / "out" / "r.json").read_text())
    [run] = [r for r in report["runs"] if r["variant"].endswith(":handler")]
    assert any("ResponseSizeTooLarge" in e["error"] for e in run["errors"])
    case.assert_nothing_left(backend_url)


def test_memory_mb_is_enforced(tmp_path: Path, backend_url: str) -> None:
    handler = tmp_path / "hog.py"
    handler.write_text(
        "def handler(event, context):\n"
        "    hog = b'x' * (300 * 1024 * 1024)\n"
        "    return {'n': len(hog)}\n"
    )
    case = Case(
        tmp_path,
        [
            "run",
            "seed-lab",
            "--handler",
            f"{handler}:handler",
            "--max-receive-count",
            "1",
            "--visibility-timeout",
            "1",
            "--concurrency",
            "1",
            "--deadline",
            "20",
            "--endpoint-url",
            backend_url,
            "--out",
            str(tmp_path / "out"),
            "--json",
            "r.json",
            "--quiet",
        ],
    )
    assert case.finish(timeout_s=90) == 1, case.stderr
    report = json.loads((tmp_path / "out" / "r.json").read_text())
    [run] = [r for r in report["runs"] if r["variant"].endswith(":handler")]
    assert any("Runtime.OutOfMemory" in e["error"] for e in run["errors"]), run["errors"]
    case.assert_nothing_left(backend_url)


def test_a_run_the_machine_cannot_hold_is_refused_first(tmp_path: Path) -> None:
    case = Case(
        tmp_path,
        ["run", "race-burst", "--concurrency", "1000", "--distinct-ids", "1000000", "--quiet"],
    )
    assert case.finish() == 2, case.stderr
    assert "cannot hold the run" in case.stderr and "MB" in case.stderr
    case.assert_nothing_left()


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_stops_an_exploration_and_its_workers(
    tmp_path: Path, backend_url: str, workers: int
) -> None:
    """An exploration (searched alone, or by worker processes each with its own table):
    SIGTERM stops it at its next schedule and every table is gone."""
    args = ["explore", "seed-lab", "--variant", "conditional", "--copies", "3"]
    where = ["--workers", str(workers), "--endpoint-url", backend_url]
    # Two faults a schedule: a search of thousands of schedules, still running when signalled.
    case = Case(tmp_path, [*args, "--faults", "crash,redeliver", "--max-faults", "2", *where])
    # The caller's own table, or each worker's (the caller makes one only to shrink a bug).
    tables = workers
    while len(loadtest_resources(backend_url)[1]) < tables:
        _assert_running(case, "the exploration ended before its workers made their tables")
        time.sleep(0.1)
    time.sleep(0.5)
    case.process.send_signal(signal.SIGTERM)
    assert case.finish() == 130, case.stderr
    assert "interrupted by SIGTERM" in case.stderr and "Traceback" not in case.stderr
    case.assert_nothing_left(backend_url)

"""The reference lab, reproduced end to end on the real embedded backend."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from loadtest.model.history.log import WriteOutcome
from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.report import build_report
from tests.integration.helpers import loadtest_resources, run_variants

DEDUP = {"id": {"S": "dedup-order"}, "quantity": {"N": "4"}, "total_cents": {"N": "1100"}}
OTHER = {"id": {"S": "other-order"}, "quantity": {"N": "1"}, "total_cents": {"N": "350"}}
LAB_COUNTS = {
    "messages_sent": 4,
    "distinct_ids": 2,
    "deliveries": 4,
    "redeliveries": 0,
    "writes_attempted": 4,
    "writes_accepted": 2,
    "writes_rejected": 2,
    "duplicate_writes": 0,
    "conflicting_writes": 0,
    "lost_outcomes": 0,
    "acked": 4,
    "dead_lettered": 0,
    "handler_errors": 0,
    "unsettled": 0,
}


def test_seed_lab_matches_the_lab(backend_url: str) -> None:
    result = run_variants(load_scenario("seed-lab"), backend_url)
    (run,) = result.runs
    report = build_report(result)["runs"][0]
    assert {k: report["counts"][k] for k in LAB_COUNTS} == LAB_COUNTS
    assert report["verdict"] == "pass"
    assert report["queue_after"] == {"visible": 0, "in_flight": 0, "dlq": 0}
    assert run.end_state.table_items == {"dedup-order": DEDUP, "other-order": OTHER}

    # What it cost, by hand: 4 invocations; 4 x 1 WRU (36-byte items; the two
    # rejected puts still pay); no reads; SQS at least 1 send + 4 receives + 4
    # deletes, and the backend's own count (empty long polls too) when it has one.
    units = report["cost"]["units"]
    assert units["lambda_requests"] == 4
    assert units["dynamodb_write_units"] == 4
    assert units["dynamodb_read_units"] == 0
    assert units["sqs_requests_history"] == 9
    assert units["sqs_requests_source"] == "backend"
    # The backend's own count: at least one send, one receive and one delete (one
    # receive may feed several invocations, deletes are shared across them).
    assert units["sqs_requests"] >= 3
    assert units["lambda_gb_s"] == round(0.125 * units["lambda_billed_ms"] / 1000, 6)
    assert report["cost"]["per_million_usd"] > 0

    # The write decisions: two accepted first writes, two native conditional
    # rejections whose item before and after is the stored order, unchanged.
    writes = [aw.write for aw in run.check.decisions]
    accepted = [w for w in writes if w.outcome is WriteOutcome.ACCEPTED]
    rejected = [w for w in writes if w.outcome is WriteOutcome.REJECTED]
    assert sorted(json.dumps(w.item_after, sort_keys=True) for w in accepted) == sorted(
        json.dumps(i, sort_keys=True) for i in (DEDUP, OTHER)
    )
    assert all(w.item_before is None and w.before_known for w in accepted)
    assert [(w.item_before, w.item_after) for w in rejected] == [(DEDUP, DEDUP), (DEDUP, DEDUP)]
    assert all(w.condition == "attribute_not_exists(id)" for w in writes)

    # The consumer's results, in the lab's shape; no receipt handle in the report.
    results = sorted(json.dumps(r, sort_keys=True) for r in report["results"])
    assert results == sorted(
        [
            json.dumps(
                {"id": "dedup-order", "quantity": 4, "processed": True, "duplicate": False},
                sort_keys=True,
            )
        ]
        + [
            json.dumps(
                {"id": "dedup-order", "quantity": 4, "processed": False, "duplicate": True},
                sort_keys=True,
            )
        ]
        * 2
        + [
            json.dumps(
                {"id": "other-order", "quantity": 1, "processed": True, "duplicate": False},
                sort_keys=True,
            )
        ]
    )
    dumped = json.dumps(build_report(result))
    assert "receiptHandle" not in dumped and "ReceiptHandle" not in dumped
    assert loadtest_resources(backend_url) == ([], [])


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture
def serve_5000(tmp_path: Path) -> Iterator[str]:
    """`loadtest serve --port 5000` as a real subprocess: the lab's handler hard-codes that port."""
    if not _port_free(5000):
        pytest.fail(
            "port 5000 is in use; the lab's unmodified handler needs it for `loadtest serve`"
        )
    log = tmp_path / "serve.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "loadtest", "serve", "--port", "5000"],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while _port_free(5000):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"loadtest serve did not start: {log.read_text()}")
            time.sleep(0.1)
        yield "http://127.0.0.1:5000"
    finally:
        process.terminate()
        assert process.wait(timeout=10) is not None


def test_unmodified_lab_handler_against_loadtest_serve(serve_5000: str, tmp_path: Path) -> None:
    report_path = tmp_path / "lab.json"
    lab_app = Path(__file__).with_name("lab_app.py")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadtest",
            "run",
            "seed-lab",
            "--handler",
            f"{lab_app}:handler",
            "--endpoint-url",
            serve_5000,
            "--json",
            str(report_path),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert completed.returncode == 0, completed.stderr
    report = json.loads(report_path.read_text())
    (run,) = report["runs"]
    assert run["handler"] == f"{lab_app}:handler"
    assert {k: run["counts"][k] for k in LAB_COUNTS} == LAB_COUNTS
    assert run["queue_after"] == {"visible": 0, "in_flight": 0, "dlq": 0}
    assert run["table_after"] == {"items": 2}
    assert loadtest_resources(serve_5000) == ([], [])

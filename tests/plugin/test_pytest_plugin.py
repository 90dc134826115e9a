"""The pytest plugin, as a user's project sees it: a correct consumer passes, a racy one
fails with the interleaving and the commands that replay it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from loadtest import api
from loadtest.pytest_plugin import replay_command

CONSUMERS = """
import json
import os

import boto3
from botocore.exceptions import ClientError


def _table():
    return boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def racy_handler(event, context):
    table = _table()
    for record in event["Records"]:
        order = json.loads(record["body"])
        if "Item" not in table.get_item(Key={"id": order["id"]}, ConsistentRead=True):
            table.put_item(Item={"id": order["id"], "quantity": order["quantity"]})


def safe_handler(event, context):
    table = _table()
    for record in event["Records"]:
        order = json.loads(record["body"])
        try:
            table.put_item(
                Item={"id": order["id"], "quantity": order["quantity"]},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
"""

SCENARIO = """
name = "orders-resent"
[workload]
distinct_ids = 5
copies = 4
copy_spacing = "at-once"
[consumer]
concurrency = 6
[faults]
race_window_ms = 20
[run]
deadline_s = 120
"""

TESTS = """
def test_safe(loadtest):
    report = loadtest.run("orders.toml", handler="orders.py:safe_handler")
    loadtest.assert_passed(report)
    assert report.runs[0].counts.duplicate_writes == 0


def test_racy(loadtest):
    report = loadtest.run("orders.toml", handler="orders.py:racy_handler")
    assert report.passed


def test_explore_racy(loadtest):
    report = loadtest.explore("orders.toml", handler="orders.py:racy_handler", copies=2)
    loadtest.assert_passed(report)


def test_two_runs_one_backend(loadtest, loadtest_backend):
    first = loadtest.compare("orders.toml", handler=["orders.py:safe_handler"], distinct_ids=3)
    second = loadtest.run("orders.toml", handler="orders.py:safe_handler", distinct_ids=3)
    assert first.to_dict()["backend"]["endpoint_url"] == loadtest_backend.endpoint_url
    assert second.to_dict()["backend"]["endpoint_url"] == loadtest_backend.endpoint_url
    assert first.to_dict()["seed"] == second.to_dict()["seed"] == loadtest.seed
"""


@pytest.fixture
def sample(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # The plugin by name only, whether or not this interpreter has loadtest's entry point.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(orders=CONSUMERS, test_orders=TESTS)
    (pytester.path / "orders.toml").write_text(SCENARIO, encoding="utf-8")
    return pytester


@pytest.mark.slow
def test_a_correct_consumer_passes_and_a_racy_one_fails_with_its_race(
    sample: pytest.Pytester, tmp_path: Path
) -> None:
    junit = tmp_path / "junit.xml"
    kept = tmp_path / "kept"
    result = sample.runpytest_subprocess(
        "-p",
        "loadtest.pytest_plugin",
        "--loadtest-seed",
        "5",
        "--loadtest-reports",
        str(kept),
        f"--junitxml={junit}",
        "-W",
        "error",
    )
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "loadtest: seed 5 (replay with --loadtest-seed 5), embedded backend",
            "*test_racy*",
            ">*assert report.passed",
            "*- loadtest: why the run did not pass -*",
            "loadtest: orders-resent · seed 5",
            "orders.py:racy_handler: FAIL (duplicate_writes=*)",
            "*e.g. order-* was written * times:",
            "*env *GetItem saw absent",
            "*env *PutItem accepted: stored it (was absent)",
            "*env *PutItem accepted: wrote the same order again",
            "Reproduce: loadtest run orders.toml --handler orders.py:racy_handler --seed 5",
            "Replay this test: pytest test_orders.py::test_racy --loadtest-seed 5",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*test_explore_racy*",
            "E*AssertionError: explore orders-resent / orders.py:racy_handler: exhaustive, "
            "2 deliveries, faults: none",
            "E*counterexample (2 deliveries, 0 fault(s), * steps)*",
            "E*delivery * GetItem id=order-* -> absent",
            "E*delivery * PutItem id=order-* -> accepted   before {id: order-*",
            "E*replay: loadtest explore orders.toml --handler orders.py:racy_handler --copies 2 --seed 5 "
            "--schedule *",
            "E*verdict: fail",
            "E*Replay this test: pytest test_orders.py::test_explore_racy --loadtest-seed 5",
        ]
    )
    failures = result.stdout.str().split("FAILURES")[1]
    assert "test_safe" not in failures and "test_two_runs_one_backend" not in failures
    # assert_passed showed the explanation already: no second copy after the traceback.
    assert failures.count("why the run did not pass") == 1
    properties = {
        (case.get("name"), prop.get("name")): prop.get("value")
        for case in ET.parse(junit).iter("testcase")
        for prop in case.iter("property")
    }
    racy_json = Path(str(properties["test_racy", "loadtest_report"]))
    assert racy_json.parent == kept / "test_orders.py_test_racy"
    assert racy_json.is_file() and Path(str(properties["test_racy", "loadtest_html"])).is_file()
    assert sorted(p.name for p in racy_json.parent.iterdir()) == [
        "01-orders-resent.html",
        "01-orders-resent.json",
    ]


def test_a_session_without_the_fixtures_starts_nothing_and_prints_its_seed(
    sample: pytest.Pytester,
) -> None:
    sample.makepyfile(test_orders="def test_plain():\n    assert True\n")
    result = sample.runpytest_subprocess("-p", "loadtest.pytest_plugin")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["loadtest: seed * (replay with --loadtest-seed *), embedded backend"]
    )


def test_the_replay_command_spells_the_runs_options_as_the_cli_takes_them() -> None:
    options: dict[str, Any] = {
        "variants": ["conditional,read-then-write"],
        "handler": "consumer.conditional:handler",
        "seed": 9,
        "thresholds": ["duplicate_writes == 0"],
        "distinct_ids": 5,
        "race_window_ms": 20,
        "fifo": False,
        "env": ["MODE=strict"],
    }
    plan = api.prepare("race-burst", **options)
    assert replay_command("race-burst", plan, options, embedded=True) == (
        "loadtest run race-burst --variants conditional,read-then-write --handler consumer.conditional:handler "
        "--seed 9 --threshold 'duplicate_writes == 0' --distinct-ids 5 --race-window 20 "
        "--no-fifo --env MODE=strict"
    )
    assert replay_command("race-burst", plan, {**options, "cells": [{"seed": 1}]}, True) is None


@pytest.mark.slow
def test_the_endpoint_option_runs_the_same_tests_against_another_endpoint(
    sample: pytest.Pytester, backend_url: str, tmp_path: Path
) -> None:
    kept = tmp_path / "kept"
    result = sample.runpytest_subprocess(
        "-p",
        "loadtest.pytest_plugin",
        "--loadtest-seed=5",
        f"--loadtest-endpoint-url={backend_url}",
        f"--loadtest-reports={kept}",
        "-k",
        "test_safe",
    )
    result.assert_outcomes(passed=1, deselected=3)
    result.stdout.fnmatch_lines(
        [f"loadtest: seed 5 (replay with --loadtest-seed 5), {backend_url}"]
    )
    [path] = (kept / "test_orders.py_test_safe").glob("*.json")
    report = json.loads(path.read_text(encoding="utf-8"))
    assert report["backend"] == {"kind": "endpoint", "endpoint_url": backend_url}
    assert report["seed"] == 5
    assert report["command"] == (
        f"loadtest run orders.toml --handler orders.py:safe_handler --seed 5 "
        f"--endpoint-url {backend_url}"
    )


HOLDING = """
import pathlib
import signal
import time

# A shell's background job may start with Ctrl-C ignored; a user's terminal does not.
signal.signal(signal.SIGINT, signal.default_int_handler)


def test_hold(loadtest_backend):
    # Written whole, then renamed: the test reading it never sees it empty.
    written = pathlib.Path("endpoint.tmp")
    written.write_text(loadtest_backend.endpoint_url)
    written.replace("endpoint.txt")
    time.sleep(120)
"""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # it answered, with an error status
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "killed"])
def test_an_interrupted_session_leaves_no_backend_behind(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: signal.Signals
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_hold=HOLDING)
    marker = pytester.path / "endpoint.txt"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "loadtest.pytest_plugin", "test_hold.py"],
        cwd=pytester.path,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        url = marker.read_text()
        assert _answers(url)
        process.send_signal(how)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    deadline = time.monotonic() + 15
    while _answers(url) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _answers(url)

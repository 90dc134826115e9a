"""explore on consumers written with aioboto3 (clients and resources, run with ``asyncio.run``
from a synchronous handler): their DynamoDB calls are points as boto3's are, so the race is
found, shrunk and replayed, and the conditional put is explored through every order."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import loadtest
from loadtest.cli import app

CONSUMERS = Path(__file__).parent / "consumers"
ADVERSARIAL = Path(__file__).parents[1] / "consumers" / "adversarial"
"""The client-API consumers are the load runs' own aioboto3 consumers, explored unchanged."""

RACE = [
    ("1", "invocation starts", None),
    ("1", "GetItem id=dedup-order", "absent"),
    ("2", "invocation starts", None),
    ("2", "GetItem id=dedup-order", "absent"),
    ("2", "PutItem id=dedup-order", "accepted"),
    ("2", "acknowledged", None),
    ("1", "PutItem id=dedup-order", "accepted"),
    ("1", "acknowledged", None),
]


def _explore(backend_url: str, consumer: Path, **options: Any) -> loadtest.Report:
    return loadtest.explore(
        "seed-lab",
        handler=f"{consumer}.py:handler",
        endpoint_url=backend_url,
        **options,
    )


def _steps(explore: dict[str, Any]) -> list[tuple[str, str, str | None]]:
    return [(s["delivery"], s["what"], s["answer"]) for s in explore["counterexample"]["steps"]]


@pytest.mark.slow
@pytest.mark.parametrize(
    "consumer",
    [
        ADVERSARIAL / "aio_racy",
        CONSUMERS / "aio_resource_read_then_write",
        # One event loop for the container: each environment runs its own.
        CONSUMERS / "aio_loop_kept",
    ],
    ids=["client", "resource", "loop-kept"],
)
def test_aioboto3_read_then_write_race_is_found_and_replayed(
    backend_url: str, consumer: Path, tmp_path: Path
) -> None:
    report = _explore(backend_url, consumer)
    assert report.exit_code == 1
    explore = report.to_dict()["explore"]
    example = explore["counterexample"]
    assert example["counts"]["duplicate_writes"] >= 1
    assert _steps(explore) == RACE
    replay = shlex.split(explore["replay"])
    assert replay[:2] == ["loadtest", "explore"]
    assert replay[replay.index("--schedule") + 1] == example["schedule"]

    # The printed replay line reruns exactly that interleaving.
    path = tmp_path / "replay.json"
    result = CliRunner().invoke(
        app, [*replay[1:], "--endpoint-url", backend_url, "--json", str(path), "--quiet"]
    )
    assert result.exit_code == 1, result.output
    again = json.loads(path.read_text(encoding="utf-8"))["explore"]
    assert again["strategy"] == "replay"
    assert again["counterexample"]["steps"] == example["steps"]
    assert again["counterexample"]["counts"] == example["counts"]


@pytest.mark.parametrize(
    "consumer",
    [ADVERSARIAL / "aio_conditional", CONSUMERS / "aio_resource_conditional"],
    ids=["client", "resource"],
)
def test_aioboto3_conditional_put_passes_every_order(backend_url: str, consumer: Path) -> None:
    report = _explore(backend_url, consumer)
    assert report.exit_code == 0
    explore = report.to_dict()["explore"]
    assert explore["counterexample"] is None
    # The three conditional puts of dedup-order in their 3! orders, as boto3's consumer.
    assert explore["exhaustive"] is True and explore["schedules_run"] == 6


def test_a_call_made_outside_the_delivery_thread_is_inconclusive_naming_it(
    backend_url: str,
) -> None:
    # The write runs in the event loop's executor: no point stops it, so explore says so.
    report = _explore(backend_url, CONSUMERS / "aio_executor_put")
    data = report.to_dict()
    explore = data["explore"]
    assert explore["counterexample"] is None
    assert explore["schedules_inconclusive"] >= 1 and explore["exhaustive"] is False
    assert report.exit_code not in (0, 1)
    reasons = json.dumps(data)
    assert "PutItem call(s) not understood: made outside the delivery's thread" in reasons
    assert "explore cannot schedule it" in reasons


@pytest.mark.slow
def test_calls_in_flight_together_take_turns_and_replay_exactly(backend_url: str) -> None:
    # asyncio.gather of two reads, then the put: the race is found, each read is one step
    # with its own answer, and the token replays the same steps every time.
    report = _explore(backend_url, CONSUMERS / "aio_gather_reads", copies=2)
    assert report.exit_code == 1
    explore = report.to_dict()["explore"]
    assert explore["exhaustive"] is True and explore["schedules_inconclusive"] == 0
    [bug] = explore["bugs"]
    assert bug["counts"]["duplicate_writes"] == 1
    reads = [(d, what, answer) for d, what, answer in _steps(explore) if "GetItem" in what]
    assert sorted(reads) == [
        (d, f"GetItem id={key}", "absent")
        for d in ("1", "2")
        for key in ("customer#default", "dedup-order")
    ]
    for _ in range(2):
        again = _explore(
            backend_url, CONSUMERS / "aio_gather_reads", copies=2, schedule=bug["schedule"]
        )
        assert again.exit_code == 1
        assert again.to_dict()["explore"]["counterexample"]["steps"] == bug["steps"]


@pytest.mark.slow
def test_a_guarded_put_and_an_audit_row_in_flight_together_pass(backend_url: str) -> None:
    # The two writes touch different items: one order of them covers both.
    report = _explore(backend_url, CONSUMERS / "aio_gather_guarded", copies=2)
    assert report.exit_code == 0
    explore = report.to_dict()["explore"]
    assert explore["exhaustive"] is True and explore["schedules_inconclusive"] == 0
    # The two conditional puts of dedup-order in their 2 orders.
    assert explore["schedules_run"] == 2


def test_two_writes_to_one_item_in_flight_together_are_inconclusive_naming_both(
    backend_url: str,
) -> None:
    # The put and the stamp of one order at once: DynamoDB may apply them in either order,
    # and the stamp first would refuse the put. Explore runs them in the order they were
    # made and says the other order is not covered.
    report = _explore(backend_url, CONSUMERS / "aio_gather_same_item", copies=1)
    assert report.exit_code == 4
    data = report.to_dict()
    explore = data["explore"]
    assert explore["exhaustive"] is False
    assert explore["bound"]["stopped_by"] == "unscheduled_call"
    assert (
        "1 UpdateItem call(s) not understood: made while PutItem id=dedup-order of the same "
        "invocation was in flight"
    ) in json.dumps(data)


@pytest.mark.slow
def test_writes_in_flight_together_each_get_their_own_answer(backend_url: str) -> None:
    # Two copies: the copy's stamp writes the order again (a duplicate), and each write's
    # step carries its own answer, the copy's put refused and its stamp accepted.
    report = _explore(backend_url, CONSUMERS / "aio_gather_same_item", copies=2)
    assert report.exit_code == 1
    explore = report.to_dict()["explore"]
    assert explore["counterexample"]["counts"]["duplicate_writes"] == 1
    assert _steps(explore) == [
        ("1", "invocation starts", None),
        ("1", "PutItem id=dedup-order", "accepted"),
        ("1", "UpdateItem id=dedup-order", "accepted"),
        ("1", "acknowledged", None),
        ("2", "invocation starts", None),
        ("2", "PutItem id=dedup-order", "rejected (ConditionalCheckFailedException)"),
        ("2", "UpdateItem id=dedup-order", "accepted"),
        ("2", "acknowledged", None),
    ]


@pytest.mark.slow
def test_an_asyncio_sleep_that_never_ends_names_the_event_loop(
    backend_url: str, tmp_path: Path
) -> None:
    # A throttled put retried after `await asyncio.sleep`: the loop's time is virtual and
    # its sleeps are no points, so the delivery waits for good; explore gives up on it
    # without a verdict and says where it waits. (In a process of its own, with a short
    # step limit: the stuck delivery's thread lives as long as its process.)
    program = (
        "import sys; import loadtest.emulation.explore.deliveries as d; d.STEP_LIMIT_S = 3; "
        "from loadtest.cli import app; sys.argv[0] = 'loadtest'; app()"
    )
    done = subprocess.run(
        [
            *(sys.executable, "-c", program, "explore", "seed-lab"),
            *("--handler", f"{CONSUMERS / 'aio_retry_sleep'}.py:handler", "--copies", "1"),
            *("--faults", "throttle", "--workers", "1", "--endpoint-url", backend_url),
            *("--json", str(tmp_path / "stuck.json"), "--quiet"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4, done.stderr
    assert "delivery 1 ran 3 s of real time without reaching a point" in done.stderr
    assert "it waits in asyncio's event loop: an `await asyncio.sleep`" in done.stderr

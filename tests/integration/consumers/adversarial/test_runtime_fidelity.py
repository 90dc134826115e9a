"""Consumers that Lambda's Python runtime treats differently from a plain function call.

Each runs through the engine on the embedded backend (seed-lab: dedup-order sent three
times and other-order once, batch size 1, one environment, maxReceiveCount 3; a 2 s
visibility timeout so retries come back quickly). The counts are exact: each message
is delivered until it is acknowledged or has been received three times.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from loadtest.engine import VariantRun
from loadtest.model.history.log import InvocationOutcome
from loadtest.model.scenario.loading import load_scenario
from tests.integration.helpers import run_variants

HERE = Path(__file__).parent
MESSAGES = 4
RECEIVES = 3


def _run(
    backend_url: str, consumer: str, scenario: str = "seed-lab", **overrides: Any
) -> VariantRun:
    loaded = load_scenario(scenario).with_overrides(visibility_timeout_s=2, **overrides)
    (run,) = run_variants(loaded, backend_url, f"{HERE / consumer}:handler").runs
    return run


def _assert_every_delivery_failed(run: VariantRun) -> None:
    """Nothing acknowledged: every message received three times, then dead-lettered."""
    c = run.check.counts
    assert run.check.verdict == "fail", (run.check.reasons, run.check.inconclusive)
    assert c.deliveries == MESSAGES * RECEIVES
    assert c.handler_errors == MESSAGES * RECEIVES
    assert c.acked == 0
    assert c.dead_lettered == c.unexpected_dead_letters == MESSAGES
    assert c.lost_outcomes == 0
    assert c.unsettled == 0


@pytest.fixture(scope="module", params=["returns_set", "returns_datetime", "returns_object"])
def unserialisable(request: pytest.FixtureRequest, backend_url: str) -> tuple[str, VariantRun]:
    return request.param, _run(backend_url, f"{request.param}.py")


def test_a_result_the_runtime_cannot_serialise_fails_every_invocation(
    unserialisable: tuple[str, VariantRun],
) -> None:
    name, run = unserialisable
    kind = {"returns_set": "set", "returns_datetime": "datetime", "returns_object": "Result"}[name]
    message = (
        f"Runtime.MarshalError: Unable to marshal response: Object of type {kind} is not JSON "
        "serializable"
    )
    _assert_every_delivery_failed(run)
    c = run.check.counts
    # The writes were made before the runtime refused the answer: the first of each id
    # is accepted, every later delivery rejected by the condition.
    assert (c.writes_accepted, c.writes_rejected) == (2, MESSAGES * RECEIVES - 2)
    assert {inv.error for inv in run.history.invocations} == {message}
    assert {inv.outcome for inv in run.history.invocations} == {InvocationOutcome.ERROR}
    assert (
        f"12 invocation(s) failed with Runtime.MarshalError: the handler returned a value "
        f"Lambda's Python runtime cannot serialise as JSON (Object of type {kind} is not JSON "
        "serializable); only JSON types, Decimal and bytes are answered"
    ) in run.check.reasons


@pytest.fixture(scope="module")
def async_handler(backend_url: str) -> VariantRun:
    return _run(backend_url, "async_handler.py")


def test_an_async_handler_is_never_awaited(async_handler: VariantRun) -> None:
    run = async_handler
    _assert_every_delivery_failed(run)
    assert run.check.counts.writes_attempted == 0  # its body never ran
    errors = {inv.error for inv in run.history.invocations}
    assert errors == {
        "Runtime.MarshalError: Unable to marshal response: Object of type coroutine is not "
        "JSON serializable"
    }
    assert (
        "12 invocation(s) failed with Runtime.MarshalError: the handler is `async def`; "
        "Lambda's Python runtime does not await it"
    ) in run.check.reasons
    # The un-awaited coroutine's RuntimeWarning is in the log, as on Lambda: once per
    # environment (Python's default warning filter shows a warning once per location).
    first, *later = sorted(run.history.invocations, key=lambda inv: inv.started_ns)
    assert "RuntimeWarning: coroutine 'handler' was never awaited" in first.log_tail
    assert not any("was never awaited" in inv.log_tail for inv in later)


@pytest.fixture(scope="module")
def returns_decimal(backend_url: str) -> VariantRun:
    return _run(backend_url, "returns_decimal.py")


def test_decimals_are_answered_as_numbers(returns_decimal: VariantRun) -> None:
    run = returns_decimal
    c = run.check.counts
    assert run.check.verdict == "pass", (run.check.reasons, run.check.inconclusive)
    assert (c.deliveries, c.acked, c.handler_errors) == (MESSAGES, MESSAGES, 0)
    assert (c.writes_accepted, c.writes_rejected) == (2, 2)
    assert {str(inv.result) for inv in run.history.invocations} == {"{'total': 12.5, 'count': 1}"}


@pytest.fixture(scope="module")
def sys_exit(backend_url: str) -> VariantRun:
    return _run(backend_url, "sys_exit.py")


def test_sys_exit_in_a_handler_is_a_runtime_exit(sys_exit: VariantRun) -> None:
    run = sys_exit
    _assert_every_delivery_failed(run)
    c = run.check.counts
    assert (c.writes_accepted, c.writes_rejected) == (2, MESSAGES * RECEIVES - 2)
    assert {inv.outcome for inv in run.history.invocations} == {InvocationOutcome.CRASH}
    for inv in run.history.invocations:
        assert inv.error == (
            f"Runtime.ExitError: RequestId: {inv.request_id} Error: Runtime exited without "
            "providing a reason"
        )
    # A crash is not a failure by itself (a consumer must survive one): the report notes
    # why every invocation failed; the dead letters fail the run.
    assert (
        "12 invocation(s) failed with Runtime.ExitError: the handler ended the runtime's "
        "process (sys.exit or os._exit): Lambda fails the invocation and starts a new "
        "execution environment"
    ) in run.check.notes
    assert not any("Runtime.ExitError" in r for r in run.check.reasons)


@pytest.fixture(scope="module")
def asdict_partial(backend_url: str) -> VariantRun:
    return _run(backend_url, "asdict_partial.py", report_batch_item_failures=True)


def test_an_object_with_asdict_is_a_partial_batch_response(asdict_partial: VariantRun) -> None:
    # The runtime's encoder answers any object with a callable _asdict as that dict, so the
    # mapping honours its batchItemFailures: the two later copies of dedup-order are named
    # as failed on each of their three deliveries and dead-lettered; the first copy of
    # each id is acknowledged.
    run = asdict_partial
    c = run.check.counts
    assert run.check.verdict == "fail"
    assert c.deliveries == 2 + 2 * RECEIVES
    assert c.handler_errors == 0
    assert (c.writes_accepted, c.writes_rejected) == (2, 2 * RECEIVES)
    assert c.acked == 2
    assert c.dead_lettered == c.unexpected_dead_letters == 2


@pytest.fixture(scope="module")
def fire_forget_later(backend_url: str) -> VariantRun:
    return _run(backend_url, "fire_forget_later.py", str(HERE / "five_orders.toml"))


def test_a_background_write_lands_only_in_the_next_invocation(
    fire_forget_later: VariantRun,
) -> None:
    # One environment, frozen between invocations. Each thread's 0.2 s delay ends while
    # the environment is frozen (the next message comes 0.5 s later), so it saves at the
    # start of the next invocation, within that invocation's 50 ms, which records the
    # write; the last invocation's thread never runs. (Unfrozen, every save would land
    # between invocations, seen by none.)
    run = fire_forget_later
    c = run.check.counts
    invocations = sorted(run.history.invocations, key=lambda inv: inv.started_ns)
    assert len(invocations) == 5
    assert (c.acked, c.handler_errors) == (5, 0)
    assert [len(inv.writes) for inv in invocations] == [0, 1, 1, 1, 1]
    # Each recorded write is of the previous invocation's order.
    for before, inv in itertools.pairwise(invocations):
        assert inv.writes[0].key["id"]["S"] == before.records[0].business_id
    assert c.writes_accepted == 4
    assert len(run.end_state.table_items) == 4
    assert c.lost_outcomes == 1
    assert run.check.verdict == "fail"
    assert not run.check.inconclusive

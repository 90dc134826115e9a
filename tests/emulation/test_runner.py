"""Event-source-mapping semantics and user handlers, on the real embedded backend."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from loadtest.emulation.environment.parent_environments import CUT_OFF_ERROR
from loadtest.emulation.mapping.runner import FIFO_REPEAT_S, Settlement
from loadtest.model.history.log import InvocationOutcome
from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.report import build_report
from tests.integration.helpers import loadtest_resources, run_variants

FILES = Path(__file__).parents[1] / "integration"
"""The scenario and handlers these runs use (tests/integration holds the shared ones)."""


def test_poison_message_is_retried_then_dead_lettered(backend_url: str) -> None:
    result = run_variants(load_scenario(str(FILES / "poison.toml")), backend_url)
    (run,) = build_report(result)["runs"]
    counts = run["counts"]
    assert counts["messages_sent"] == 2
    assert counts["acked"] == 1
    assert counts["dead_lettered"] == 1
    assert counts["handler_errors"] == 2  # max_receive_count deliveries of the bad one
    assert counts["redeliveries"] == 1
    assert counts["unsettled"] == 0
    assert run["verdict"] == "pass"
    (dead,) = run["dead_letters"]
    assert dead["business_id"] == "bad"
    assert dead["last_error"] == "ValueError: Quantity must be an integer from 1 to 10"
    assert run["queue_after"] == {"visible": 0, "in_flight": 0, "dlq": 1}
    assert loadtest_resources(backend_url) == ([], [])


def test_user_handler_keyed_by_message_id_double_writes(backend_url: str) -> None:
    # Keyed by messageId, every producer resend is a new item: the conditional
    # write cannot help. The items carry the business id and the details, so
    # they are copies of the outcome under a per-delivery key: duplicates.
    scenario = load_scenario("race-burst").with_overrides(distinct_ids=5, copies=3, concurrency=2)
    result = run_variants(scenario, backend_url, f"{FILES / 'my_handler.py'}:handler")
    (run,) = result.runs
    report = build_report(result)["runs"][0]
    assert report["variant"].endswith("my_handler.py:handler")
    assert report["counts"]["duplicate_writes"] == 10
    assert report["counts"]["side_writes"] == 0
    assert "a key that changes per delivery (id={messageId})" in report["outcome"]
    assert report["table_after"] == {"items": 15}
    assert all(inv.outcome is InvocationOutcome.SUCCESS for inv in run.history.invocations)
    # The handler got a Lambda-like context with a counting-down timeout.
    assert all(0 < inv.result["remaining_ms"] <= 30_000 for inv in run.history.invocations)
    # Resource-layer items (native values) are observed in DynamoDB's typed form.
    item = run.check.decisions[0].write.item_after
    assert item is not None and set(item) == {"id", "order_id", "quantity"}
    assert item["quantity"].keys() == {"N"}


def test_module_reference_handler(backend_url: str) -> None:
    scenario = load_scenario("seed-lab")
    result = run_variants(scenario, backend_url, "consumer.conditional:handler")
    assert result.runs[0].variant == "consumer.conditional:handler"
    assert result.runs[0].check.counts.writes_accepted == 2


def test_an_invocation_cut_off_by_the_deadline_is_a_delivery_with_its_writes(
    backend_url: str,
) -> None:
    scenario = load_scenario("seed-lab").with_overrides(
        deadline_s=4, function_timeout_s=120, visibility_timeout_s=720, concurrency=1
    )
    (run,) = run_variants(scenario, backend_url, f"{FILES / 'write_then_hang.py'}:handler").runs
    (cut,) = run.history.invocations
    assert cut.outcome is InvocationOutcome.CUT_OFF
    assert cut.error == CUT_OFF_ERROR  # names the deadline and an interrupt, not only one
    counts = run.check.counts
    assert counts.deliveries == 1
    assert counts.writes_accepted == 1  # made before the hang, kept although it never returned
    assert counts.unsettled == 4
    assert run.check.verdict == "fail"
    assert loadtest_resources(backend_url) == ([], [])


def test_settlement_keeps_an_event_only_for_an_awaited_business_id() -> None:
    async def main() -> list[str]:
        settlement = Settlement(first_copies=True)
        woke: list[str] = []
        for n in range(100):
            settlement.settle(f"m-{n}", f"id-{n}")
        # Settling, with nobody waiting, leaves nothing behind per business id.
        assert not settlement._waiting

        async def wait(business_id: str) -> None:
            await settlement.first_settled(business_id)
            woke.append(business_id)

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait, "id-7")  # settled before: returns at once
            tg.start_soon(wait, "later")
            await anyio.wait_all_tasks_blocked()
            assert woke == ["id-7"]
            assert set(settlement._waiting) == {"later"}
            settlement.settle("m-later", "later")
        assert not settlement._waiting
        settlement.expect({"m-1", "m-later"})
        assert settlement.done.is_set()
        return woke

    assert anyio.run(main, backend="asyncio") == ["id-7", "later"]


def test_settlement_holds_only_what_is_unsettled() -> None:
    settlement = Settlement()
    for n in range(1000):
        settlement.sent([f"m-{n}"])
        settlement.settle(f"m-{n}", f"id-{n}")
    settlement.sent(["m-late", "m-early"])
    settlement.settle("m-early", None)
    # Nothing per settled message is kept: only what is still out.
    assert (settlement._pending, settlement._early, settlement._recent) == ({"m-late"}, set(), {})
    settlement.expect()
    assert not settlement.done.is_set()  # m-late is sent and not settled
    settlement.settle("m-late", None)
    assert settlement.done.is_set()


def test_a_settlement_is_done_only_once_sending_ended() -> None:
    settlement = Settlement()
    settlement.sent(["m-1"])
    settlement.settle("m-1", "a")
    assert not settlement.done.is_set()  # more may be sent
    settlement.expect()
    assert settlement.done.is_set()


def test_a_message_settled_before_its_send_is_known_counts_as_settled() -> None:
    # A delivery can overtake the answer to its send; a producer process reports in batches.
    settlement = Settlement()
    settlement.settle("m-1", "a")
    settlement.settle("m-1", "a")  # acknowledged twice
    settlement.sent(["m-1", "m-2"])
    settlement.settle("m-2", "b")
    settlement.settle("m-2", "b")  # settled twice: no send will claim it
    settlement.expect()
    assert settlement.done.is_set()
    assert settlement._early is None


def test_a_settlement_waits_for_what_the_consumer_sent_to_its_own_queue() -> None:
    # The handler deferred m-1's work as m-9: the run is settled once m-9 is too.
    settlement = Settlement()
    settlement.sent(["m-1"])
    settlement.expect()
    settlement.resent(["m-9"])
    settlement.settle("m-1", "a")
    assert not settlement.done.is_set()
    settlement.settle("m-9", "a")
    assert settlement.done.is_set()


def test_a_message_sent_back_and_settled_before_its_sender_s_reply_counts_as_settled() -> None:
    # Without a delay another environment can deliver m-9 before m-1's invocation replies.
    settlement = Settlement()
    settlement.sent(["m-1", "m-2"])
    settlement.settle("m-8", "b")  # before every send is known
    settlement.expect()
    settlement.settle("m-9", "a")  # after
    settlement.resent(["m-8"])
    settlement.resent(["m-9"])
    settlement.settle("m-1", "a")
    settlement.settle("m-2", "b")
    assert settlement.done.is_set()


def test_a_fifo_resend_answered_with_a_settled_id_counts_as_settled() -> None:
    # Deduplicated by business id, the resend is answered with the first copy's id,
    # after that message was already acknowledged: it will never be delivered.
    now_ns = [0]
    settlement = Settlement(remember_s=FIFO_REPEAT_S, clock=lambda: now_ns[0])
    settlement.sent(["m-1"])
    settlement.settle("m-1", "a")
    now_ns[0] += 299 * 1_000_000_000
    settlement.sent(["m-1"])
    settlement.expect(["m-1"])
    assert settlement.done.is_set()


def test_a_fifo_settlement_forgets_ids_past_the_deduplication_interval() -> None:
    now_ns = [0]
    settlement = Settlement(remember_s=FIFO_REPEAT_S, clock=lambda: now_ns[0])
    for n in range(100):
        settlement.sent([f"m-{n}"])
        settlement.settle(f"m-{n}", None)
    now_ns[0] += int(FIFO_REPEAT_S * 1e9) + 1
    for n in range(100, 300):
        now_ns[0] += 1
        settlement.sent([f"m-{n}"])
        settlement.settle(f"m-{n}", None)
    assert set(settlement._recent) == {f"m-{n}" for n in range(100, 300)}


def test_first_settled_needs_a_settlement_that_keeps_first_copies() -> None:
    async def main() -> None:
        with pytest.raises(RuntimeError, match="first_copies"):
            await Settlement().first_settled("a")

    anyio.run(main, backend="asyncio")

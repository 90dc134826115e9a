"""Effects beyond the table, end to end: consumers that store an order and then publish,
send, write or start something, judged by what the sinks really received.

Each consumer of ``tests/integration/consumers/effects`` (written as teams write them,
the right verdict in its docstring) and each built-in publishing variant runs through
``loadtest.api.run`` on the embedded backend with a small scenario written for it, its
sinks named by placeholders (``{topic:NAME}``, ``{queue_url:NAME}``, ``{bus:NAME}``,
``{bucket:NAME}``, ``{state_machine:NAME}``). Batch size 1 and one execution environment
make most runs sequential, so their effect counts are exact; under the crash-mid-handler
fault the expected count is read from the run's own history (which deliveries died
after the write that stored their order). The last section calls the same handlers
directly, with sinks made by boto3, to show the handlers themselves work.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest

import loadtest
from loadtest.aws.clients import EMBEDDED_CREDENTIALS
from loadtest.engine import VariantRun
from loadtest.model.history.log import InvocationOutcome, WriteOutcome
from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.library import RunReport
from tests.integration.helpers import loadtest_resources, run_variants

CONSUMERS = Path(__file__).parent / "consumers" / "effects"
EFFECT_COUNTS = (
    "effects_sent",
    "effects_delivered",
    "duplicate_effects",
    "conflicting_effects",
    "lost_effects",
)
IDS = 4
COPIES = 3


def _user(name: str) -> str:
    return f"{CONSUMERS / name}:handler"


def _scenario(
    tmp_path: Path,
    environment: Mapping[str, str],
    *,
    extra: str = "",
    distinct_ids: int = IDS,
    copies: int = COPIES,
    concurrency: int = 1,
    visibility_timeout_s: int = 30,
    function_timeout_s: int = 10,
    max_receive_count: int = 3,
    overlap: bool = False,
) -> Path:
    """A small scenario: generated orders, batch size 1, the sinks the environment names."""
    env = ", ".join(f'{name} = "{value}"' for name, value in environment.items())
    path = tmp_path / f"effects-{uuid.uuid4().hex[:6]}.toml"
    path.write_text(
        f"""seed = 7

[expect]
overlap = {str(overlap).lower()}

[workload]
distinct_ids = {distinct_ids}
copies = {copies}

[consumer]
batch_size = 1
concurrency = {concurrency}
visibility_timeout_s = {visibility_timeout_s}
function_timeout_s = {function_timeout_s}
max_receive_count = {max_receive_count}
environment = {{ {env} }}

[run]
deadline_s = 90
{extra}""",
        encoding="utf-8",
    )
    return path


def _run(backend_url: str, scenario: Path | str, variant: str, **overrides: Any) -> RunReport:
    ref = {"variants": [variant]} if ":" not in variant else {"variants": [], "handler": variant}
    report = loadtest.run(scenario, endpoint_url=backend_url, **ref, **overrides)
    (run,) = report.runs
    counts = run.raw["counts"]
    assert counts["unsettled"] == 0
    assert counts["unobserved_calls"] == 0, run.inconclusive
    assert loadtest_resources(backend_url) == ([], [])
    return run


def _effects(run: RunReport) -> dict[str, int]:
    counts = run.raw["counts"]
    return {name: int(counts[name]) for name in EFFECT_COUNTS}


def _expect(
    sent: int, delivered: int, duplicate: int = 0, conflicting: int = 0, lost: int = 0
) -> dict[str, int]:
    return dict(zip(EFFECT_COUNTS, (sent, delivered, duplicate, conflicting, lost), strict=True))


TOPIC = {"ORDERS_TOPIC_ARN": "{topic:orders}"}
FIFO_TOPIC = {"ORDERS_TOPIC_ARN": "{topic:orders.fifo}"}


# --- announce, then check: every copy announced again ---------------------------------


@pytest.mark.parametrize(
    ("variant", "environment"),
    [(_user("publish_before_guard.py"), TOPIC), ("publish-before-guard", FIFO_TOPIC)],
    ids=["user-standard-topic", "builtin-fifo-topic"],
)
def test_publish_before_the_guard_announces_every_copy(
    backend_url: str, tmp_path: Path, variant: str, environment: dict[str, str]
) -> None:
    run = _run(backend_url, _scenario(tmp_path, environment), variant)
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    # The table is right: one accepted write per order, every copy a rejected duplicate.
    assert (counts["writes_accepted"], counts["writes_rejected"]) == (IDS, IDS * (COPIES - 1))
    assert counts["duplicate_writes"] == counts["lost_outcomes"] == 0
    # The topic is not: each of the 12 deliveries published, fresh deduplication ids on
    # the FIFO topic included, so each order reached it three times.
    sent = IDS * COPIES
    assert _effects(run) == _expect(sent, sent, duplicate=IDS * (COPIES - 1))


def test_sinks_named_by_their_names_are_the_runs_and_judged_each_on_its_own(
    backend_url: str, tmp_path: Path
) -> None:
    """A consumer that finds its topic with CreateTopic and its queue with GetQueueUrl, by the
    names ``{topic_name:NAME}`` and ``{queue_name:NAME}`` give it: it loads, and each sink is
    judged (the queue it sends to before its guard holds every copy, the topic one event)."""
    environment = {
        "ORDERS_TOPIC_NAME": "{topic_name:orders}",
        "AUDIT_QUEUE_NAME": "{queue_name:audit}",
    }
    run = _run(backend_url, _scenario(tmp_path, environment), _user("announce_by_names.py"))
    assert run.verdict == "fail"
    sinks = {sink["sink"]: sink for sink in run.raw["effects"]}
    assert {
        name: (s["kind"], s["sent"], s["delivered"], s["duplicate"]) for name, s in sinks.items()
    } == {
        "audit": ("queue", IDS * COPIES, IDS * COPIES, IDS * (COPIES - 1)),
        "orders": ("topic", IDS, IDS, 0),
    }


def test_a_send_to_a_stream_no_run_reads_back_leaves_the_run_inconclusive(
    backend_url: str, tmp_path: Path
) -> None:
    """The table is right; the Kinesis records are beyond what loadtest reads: the verdict
    says so instead of passing on the table alone."""
    scenario = _scenario(tmp_path, {"ORDERS_STREAM": "orders-stream"})
    report = loadtest.run(
        scenario, endpoint_url=backend_url, variants=[], handler=_user("stream_after_guard.py")
    )
    (run,) = report.runs
    counts = run.raw["counts"]
    assert run.verdict == "inconclusive"
    assert (counts["writes_accepted"], counts["duplicate_writes"]) == (IDS, 0)
    assert counts["unobserved_calls"] == IDS  # one record per order, after its guard
    (reason,) = run.inconclusive
    assert reason.startswith(f"{IDS} kinesis PutRecord call(s) not judged: it sends downstream")


def test_a_fifo_sink_deduplicating_by_content_is_made_so_when_declared(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"FULFILMENT_QUEUE_URL": "{queue_url:fulfilment.fifo}"}
    handler = _user("forward_by_content.py")
    # Undeclared, the run's FIFO queue deduplicates by id only, as AWS's does by default:
    # every send is refused, and the run says which declaration would make it the
    # consumer's queue instead of blaming the consumer for the dead letters.
    plain = _scenario(
        tmp_path, environment, max_receive_count=1, visibility_timeout_s=1, function_timeout_s=1
    )
    (refused,) = loadtest.run(plain, endpoint_url=backend_url, variants=[], handler=handler).runs
    assert refused.verdict == "inconclusive"
    assert any("`content_based_deduplication = true`" in r for r in refused.inconclusive)
    declared = _scenario(
        tmp_path,
        environment,
        extra='[[effects]]\nsink = "fulfilment.fifo"\ncontent_based_deduplication = true\n',
    )
    run = _run(backend_url, declared, handler)
    assert run.verdict == "pass", (run.raw["reasons"], run.inconclusive)
    sent = IDS * COPIES
    assert _effects(run) == _expect(sent, IDS)
    (sink,) = run.raw["effects"]
    assert sink["deduplicated"] == sent - IDS


# --- check, then announce: right for copies ... ---------------------------------------


@pytest.mark.parametrize(
    ("variant", "environment"),
    [
        (_user("publish_after_guard.py"), TOPIC),
        ("publish-after-guard", FIFO_TOPIC),
        ("outbox", FIFO_TOPIC),
        (_user("eventbridge_after_guard.py"), {"ORDER_EVENTS_BUS": "{bus:order-events}"}),
    ],
    ids=["user-sns", "builtin-after-guard", "builtin-outbox", "user-eventbridge"],
)
def test_announcing_after_the_guard_sends_each_order_once(
    backend_url: str, tmp_path: Path, variant: str, environment: dict[str, str]
) -> None:
    run = _run(backend_url, _scenario(tmp_path, environment), variant)
    assert run.verdict == "pass", run.reasons
    assert run.raw["counts"]["acked"] == IDS * COPIES
    assert _effects(run) == _expect(IDS, IDS)


# --- ... and loses the event when it dies between the two ----------------------------


CRASH_IDS = 6
CRASH_P = 0.3


def _crash_run(
    backend_url: str,
    tmp_path: Path,
    variant: str,
    environment: dict[str, str],
    required: str | None = None,
) -> VariantRun:
    """One copy per order; each write to the table kills the environment right after its
    answer with probability ``CRASH_P``, before the handler goes on to publish. ``required``
    declares that sink required (``[[effects]]``); without it the sink is learned."""
    declared = f'\n[[effects]]\nsink = "{required}"\nid = "id"\nrequired = true\n'
    path = _scenario(
        tmp_path,
        environment,
        distinct_ids=CRASH_IDS,
        copies=1,
        visibility_timeout_s=3,
        function_timeout_s=3,
        max_receive_count=10,
        extra=f"\n[faults]\ncrash_mid_handler = {CRASH_P}\n" + (declared if required else ""),
    )
    (run,) = run_variants(load_scenario(str(path)), backend_url, variant).runs
    assert run.check.counts.unsettled == run.check.counts.unobserved_calls == 0
    assert run.check.counts.dead_lettered == 0
    return run


def _died_after_storing(run: VariantRun) -> set[str]:
    """The orders whose accepted write (the one that stored the order) was made by an
    invocation that then crashed: read from the history, not from the effect counts."""
    died = set()
    for invocation in run.history.invocations:
        if invocation.outcome is not InvocationOutcome.CRASH:
            continue
        for write in invocation.writes:
            order_id = write.key.get("id", {}).get("S", "")
            if write.outcome is WriteOutcome.ACCEPTED and not order_id.startswith("outbox#"):
                died.add(order_id)
    return died


def _clean(run: VariantRun) -> set[str]:
    """The orders delivered once, by an invocation that succeeded: what a sink is learned from."""
    outcomes: dict[str, list[InvocationOutcome]] = {}
    for invocation in run.history.invocations:
        for record in invocation.records:
            outcomes.setdefault(record.business_id or "", []).append(invocation.outcome)
    return {b for b, seen in outcomes.items() if seen == [InvocationOutcome.SUCCESS]}


def _effect_counts(run: VariantRun) -> dict[str, int]:
    return {name: int(getattr(run.check.counts, name)) for name in EFFECT_COUNTS}


@pytest.mark.parametrize(
    ("variant", "environment", "required"),
    [
        (_user("publish_after_guard.py"), TOPIC, None),
        ("publish-after-guard", FIFO_TOPIC, "orders.fifo"),
        (_user("eventbridge_after_guard.py"), {"ORDER_EVENTS_BUS": "{bus:order-events}"}, None),
        (
            _user("eventbridge_after_guard.py"),
            {"ORDER_EVENTS_BUS": "{bus:order-events}"},
            "order-events",
        ),
    ],
    ids=[
        "user-sns-learned",
        "builtin-declared",
        "user-eventbridge-learned",
        "user-eventbridge-declared",
    ],
)
def test_a_crash_between_the_guard_and_the_publish_loses_the_event(
    backend_url: str,
    tmp_path: Path,
    variant: str,
    environment: dict[str, str],
    required: str | None,
) -> None:
    run = _crash_run(backend_url, tmp_path, variant, environment, required)
    lost = _died_after_storing(run)
    assert lost, "the seeded crashes never hit a delivery right after it stored its order"
    if required is None:
        # Learned: the orders that went through cleanly all reached the sink.
        assert _clean(run), "no order went through cleanly: nothing to learn the sink from"
    assert run.check.verdict == "fail"
    assert run.check.counts.acked == CRASH_IDS  # every message acknowledged ...
    assert run.check.counts.lost_outcomes == 0  # ... and every order stored ...
    # ... but the redelivery of an order whose storing delivery died found a completed
    # duplicate and never announced it.
    sent = CRASH_IDS - len(lost)
    assert _effect_counts(run) == _expect(sent, sent, lost=len(lost))


def test_the_outbox_relays_what_a_crash_left_pending(backend_url: str, tmp_path: Path) -> None:
    run = _crash_run(backend_url, tmp_path, "outbox", FIFO_TOPIC)
    assert _died_after_storing(run), "no delivery died right after its transaction"
    assert run.check.verdict == "pass", run.check.reasons
    effects = _effect_counts(run)
    # Every order reached the topic once; a row relayed twice was dropped by the topic.
    assert effects["effects_delivered"] == CRASH_IDS
    assert effects["duplicate_effects"] == effects["lost_effects"] == 0
    assert effects["effects_sent"] >= CRASH_IDS
    rows = {k: v for k, v in run.end_state.table_items.items() if k.startswith("outbox#")}
    assert len(rows) == CRASH_IDS
    assert {row["status"]["S"] for row in rows.values()} == {"sent"}


# --- two events per order on one topic -------------------------------------------------


def test_two_events_per_order_are_the_consumers_design_not_duplicates(
    backend_url: str, tmp_path: Path
) -> None:
    run = _run(backend_url, _scenario(tmp_path, TOPIC), _user("order_events.py"))
    assert run.verdict == "pass", run.reasons
    # Each order's storing delivery published OrderPlaced and StockReserved; its copies
    # were acknowledged without publishing.
    assert _effects(run) == _expect(2 * IDS, 2 * IDS)


def test_two_events_per_order_with_its_copy_in_the_same_batch_are_not_duplicates(
    backend_url: str, tmp_path: Path
) -> None:
    # Batches of ten within a second: each order arrives with its copy in one invocation;
    # the handler's loop stores and announces the first, and skips the copy.
    path = _scenario(tmp_path, TOPIC, copies=2)
    text = path.read_text(encoding="utf-8").replace(
        "batch_size = 1", "batch_size = 10\nbatching_window_s = 1"
    )
    path.write_text(text, encoding="utf-8")
    run = _run(backend_url, path, _user("order_events.py"))
    assert run.verdict == "pass", run.reasons
    assert _effects(run) == _expect(2 * IDS, 2 * IDS)


def test_a_batch_forwarded_after_the_loop_duplicates_each_copy(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"SHIPPING_QUEUE_URL": "{queue_url:shipping}"}
    path = _scenario(tmp_path, environment)
    text = path.read_text(encoding="utf-8").replace(
        "batch_size = 1", "batch_size = 10\nbatching_window_s = 1"
    )
    path.write_text(text, encoding="utf-8")
    run = _run(backend_url, path, _user("forward_batch_after_loop.py"))
    assert run.verdict == "fail"
    sent = IDS * COPIES
    assert _effects(run) == _expect(sent, sent, duplicate=IDS * (COPIES - 1))


def test_a_failure_between_two_events_loses_the_second(backend_url: str, tmp_path: Path) -> None:
    environment = {**TOPIC, "STOCK_TIMES_OUT": "1"}
    path = _scenario(tmp_path, environment, copies=1, visibility_timeout_s=1, function_timeout_s=1)
    (run,) = run_variants(load_scenario(str(path)), backend_url, _user("order_events.py")).runs
    ids = {m.business_id for m in run.history.sent}
    timed_out = {b for b in ids if b is not None and int(b[-1]) % 2 == 0}
    assert timed_out and timed_out != ids
    assert run.check.verdict == "fail"
    assert run.check.counts.lost_outcomes == 0
    sent = 2 * IDS - len(timed_out)
    assert _effect_counts(run) == _expect(sent, sent, lost=len(timed_out))
    (sink,) = run.check.effects
    assert {w.business_id for w in sink.witnesses if w.anomaly == "lost"} == timed_out


# --- the order id only in the message attributes -------------------------------------


def test_an_order_id_only_in_the_message_attributes_is_found_there(
    backend_url: str, tmp_path: Path
) -> None:
    run = _run(backend_url, _scenario(tmp_path, TOPIC), _user("announce_by_attribute.py"))
    assert run.verdict == "fail"
    assert run.raw["counts"]["duplicate_writes"] == 0
    sent = IDS * COPIES
    assert _effects(run) == _expect(sent, sent, duplicate=IDS * (COPIES - 1))
    (sink,) = run.raw["effects"]
    assert sink["unidentified"] == 0


def test_a_declared_id_attribute_judges_a_required_queue(backend_url: str, tmp_path: Path) -> None:
    # Ref holds "ORDER#<id>" and names the order as a token too: the declared attribute,
    # with its pattern, says which one is the id.
    extra = (
        '\n[[effects]]\nsink = "shipping"\nid_attribute = "Ref"\n'
        'id_pattern = "ORDER#(.+)"\nrequired = true\n'
    )
    environment = {"SHIPPING_QUEUE_URL": "{queue_url:shipping}"}
    path = _scenario(tmp_path, environment, extra=extra)
    run = _run(backend_url, path, _user("label_request_by_attribute.py"))
    assert run.verdict == "pass", run.reasons
    assert _effects(run) == _expect(IDS, IDS)
    (sink,) = run.raw["effects"]
    assert (sink["required"], sink["unidentified"]) == ("declared", 0)


# --- an entry the sink refused -----------------------------------------------------------


UNCHECKED = """
seed = 3

[expect]
overlap = false

[[workload.messages]]
body = { id = "n-1", quantity = 1, note = "fragile" }
copies = 2

[[workload.messages]]
body = { id = "n-2", quantity = 2, note = 'say "hi"' }
copies = 2

[[workload.messages]]
body = { id = "n-3", quantity = 3, note = "" }
copies = 2

[consumer]
batch_size = 1
concurrency = 1
environment = { ORDER_EVENTS_BUS = "{bus:order-events}" }

[run]
deadline_s = 60
"""


def test_an_entry_the_bus_refused_is_lost_though_the_handler_succeeded(
    backend_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "unchecked.toml"
    path.write_text(UNCHECKED, encoding="utf-8")
    run = _run(backend_url, path, _user("eventbridge_unchecked_entries.py"))
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    assert (counts["acked"], counts["handler_errors"], counts["lost_outcomes"]) == (6, 0, 0)
    # Two events per stored order, but n-2's shipment request was malformed and refused:
    # both its messages were acknowledged with one of the two events on the bus.
    assert _effects(run) == _expect(5, 5, lost=2)
    (sink,) = run.raw["effects"]
    (witness,) = sink["witnesses"]
    assert witness["business_id"] == "n-2"
    assert witness["text"].endswith("; the sink refused 1 of its entries (MalformedDetail)")


# --- sinks that deduplicate by themselves --------------------------------------------


def test_a_fifo_send_keyed_by_the_business_id_is_deduplicated_by_the_queue(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"SHIPPING_QUEUE_URL": "{queue_url:shipping.fifo}"}
    run = _run(backend_url, _scenario(tmp_path, environment), _user("fifo_republish.py"))
    assert run.verdict == "pass", run.reasons
    # Sent on every delivery; the queue kept the first of each order.
    assert _effects(run) == _expect(IDS * COPIES, IDS)


def test_a_queue_s_delayed_requests_are_read_once_they_show(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"SHIPPING_QUEUE_URL": "{queue_url:shipping}", "COOLING_OFF_S": "3"}
    run = _run(
        backend_url, _scenario(tmp_path, environment), _user("shipping_after_cooling_off.py")
    )
    assert run.verdict == "pass", (run.reasons, run.inconclusive)
    assert _effects(run) == _expect(IDS, IDS)
    (sink,) = run.raw["effects"]
    assert (sink["complete"], sink["required"]) == (True, "learned")


def test_a_queue_still_holding_delayed_requests_is_not_judged(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"SHIPPING_QUEUE_URL": "{queue_url:shipping}"}  # a five-minute delay
    path = _scenario(tmp_path, environment)
    report = loadtest.run(
        path,
        endpoint_url=backend_url,
        variants=[],
        handler=_user("shipping_after_cooling_off.py"),
        cleanup_timeout_s=4,  # what the end state may take: the read waits that long
    )
    (run,) = report.runs
    assert run.verdict == "inconclusive"
    assert _effects(run) == _expect(IDS, 0)
    assert any(f"({IDS} message(s) still held back" in r for r in run.inconclusive)


def test_a_receipt_keyed_by_the_order_id_is_one_object_per_order(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"RECEIPTS_BUCKET": "{bucket:receipts}"}
    extra = '\n[[effects]]\nsink = "receipts"\nid = "id"\nrequired = true\n'
    path = _scenario(tmp_path, environment, extra=extra)
    run = _run(backend_url, path, _user("receipt_by_order_id.py"))
    assert run.verdict == "pass", run.reasons
    assert _effects(run) == _expect(IDS * COPIES, IDS)


def test_a_receipt_keyed_by_the_message_id_is_one_object_per_copy(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"RECEIPTS_BUCKET": "{bucket:receipts}"}
    extra = '\n[[effects]]\nsink = "receipts"\nid = "id"\nrequired = true\n'
    path = _scenario(tmp_path, environment, extra=extra)
    run = _run(backend_url, path, _user("receipt_by_message_id.py"))
    assert run.verdict == "fail"
    assert run.raw["counts"]["duplicate_writes"] == 0
    sent = IDS * COPIES
    assert _effects(run) == _expect(sent, sent, duplicate=IDS * (COPIES - 1))


def test_a_receipt_stamped_on_each_write_is_one_object_and_no_conflict(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"RECEIPTS_BUCKET": "{bucket:receipts}"}
    run = _run(
        backend_url, _scenario(tmp_path, environment), _user("receipt_stamped_by_order_id.py")
    )
    assert run.verdict == "pass", run.reasons
    # Written on every delivery, each time with its own processed_at: one object per order.
    assert _effects(run) == _expect(IDS * COPIES, IDS)


def test_an_execution_started_under_a_fresh_name_starts_once_per_copy(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"FULFILMENT_STATE_MACHINE_ARN": "{state_machine:fulfilment}"}
    run = _run(backend_url, _scenario(tmp_path, environment), _user("fulfilment_random_name.py"))
    assert run.verdict == "fail"
    sent = IDS * COPIES
    assert _effects(run) == _expect(sent, sent, duplicate=IDS * (COPIES - 1))


def test_idempotency_around_the_whole_handler_publishes_once_per_order(
    backend_url: str, tmp_path: Path
) -> None:
    extra = '\n[[tables]]\nenv = "IDEMPOTENCY_TABLE"\n'
    path = _scenario(tmp_path, TOPIC, extra=extra)
    run = _run(backend_url, path, _user("powertools_whole_handler.py"))
    assert run.verdict == "pass", run.reasons
    counts = run.raw["counts"]
    assert (counts["writes_accepted"], counts["duplicate_writes"]) == (IDS, 0)
    assert _effects(run) == _expect(IDS, IDS)


def test_an_execution_named_by_the_order_id_starts_once_per_order(
    backend_url: str, tmp_path: Path
) -> None:
    environment = {"FULFILMENT_STATE_MACHINE_ARN": "{state_machine:fulfilment}"}
    run = _run(backend_url, _scenario(tmp_path, environment), _user("fulfilment_by_name.py"))
    assert run.verdict == "pass", run.reasons
    effects = _effects(run)
    # Started on every delivery: the embedded backend answers a start of a running
    # execution's name with the same input with that execution, so every call is
    # accepted and each order has one execution.
    assert effects == _expect(IDS * COPIES, IDS)


# --- the race, with an event behind it -----------------------------------------------


def test_check_then_act_duplicates_the_write_and_the_event(
    backend_url: str, tmp_path: Path
) -> None:
    path = _scenario(tmp_path, TOPIC, concurrency=3, overlap=True)
    run = _run(backend_url, path, _user("racy_then_event.py"), race_window_ms=300)
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    assert counts["duplicate_writes"] > 0
    # One event per accepted write: the duplicate writes and the duplicate events agree.
    assert counts["writes_accepted"] == IDS + counts["duplicate_writes"]
    sent = counts["writes_accepted"]
    assert _effects(run) == _expect(sent, sent, duplicate=counts["duplicate_writes"])


# --- a batch retried whole -----------------------------------------------------------


BATCH = """
name = "effects-batch-retried"
seed = 3

[expect]
overlap = false

[[workload.messages]]
body = { id = "b-1", quantity = 1 }

[[workload.messages]]
body = { id = "b-2", quantity = 2 }

[[workload.messages]]
body = { id = "b-3", quantity = 0 }
poison = true

[[workload.messages]]
body = { id = "b-4", quantity = 4 }

[[workload.messages]]
body = { id = "b-5", quantity = 5 }

[[workload.messages]]
body = { id = "b-6", quantity = 6 }

[consumer]
batch_size = 10
batching_window_s = 1
visibility_timeout_s = 2
concurrency = 1
max_receive_count = 2
function_timeout_s = 5
environment = { SHIPPING_QUEUE_URL = "{queue_url:shipping}" }

[run]
deadline_s = 60
"""


def test_a_batch_retried_whole_forwards_its_good_records_again(
    backend_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "batch.toml"
    path.write_text(BATCH, encoding="utf-8")
    run = _run(backend_url, path, _user("batch_republish.py"))
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    # One batch of six, received twice, then dead-lettered whole with its poison record.
    assert (counts["deliveries"], counts["dead_lettered"]) == (12, 6)
    assert counts["unexpected_dead_letters"] == 5
    assert counts["duplicate_writes"] == 0
    # Each good record forwarded at both receives.
    assert _effects(run) == _expect(10, 10, duplicate=5)


PARTIAL = """
seed = 10

[expect]
overlap = false

[[workload.messages]]
body = { id = "p-1", quantity = 1 }

[[workload.messages]]
body = { id = "p-2", quantity = 2 }

[[workload.messages]]
body = { id = "p-3", quantity = 3, flaky = true }

[[workload.messages]]
body = { id = "p-4", quantity = 4 }

[consumer]
batch_size = 10
batching_window_s = 1
report_batch_item_failures = true
visibility_timeout_s = 2
function_timeout_s = 2
max_receive_count = 5
concurrency = 1
environment = { ORDERS_TOPIC_ARN = "{topic:orders}" }

[run]
deadline_s = 60
"""


def test_a_batch_announced_whole_announces_a_failed_record_again(
    backend_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "partial.toml"
    path.write_text(PARTIAL, encoding="utf-8")
    run = _run(backend_url, path, _user("announce_whole_batch.py"))
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    # One batch of four; p-3 failed at its first receive, came back alone and was stored.
    assert (counts["deliveries"], counts["acked"], counts["lost_outcomes"]) == (5, 4, 0)
    assert _effects(run) == _expect(5, 5, duplicate=1)
    (sink,) = run.raw["effects"]
    assert [w["business_id"] for w in sink["witnesses"]] == ["p-3"]


# --- the built-in scenario -------------------------------------------------------------


@pytest.mark.slow
def test_the_effects_scenario_shows_each_pattern(backend_url: str) -> None:
    report = loadtest.run("effects", endpoint_url=backend_url)
    runs = {run.variant: run for run in report.runs}
    assert set(runs) == {"publish-before-guard", "publish-after-guard", "outbox"}
    for variant, run in runs.items():
        failed = [t["expr"] for t in run.raw["thresholds"] if not t["ok"]]
        assert run.verdict == "pass", (variant, run.reasons, failed)
        assert run.raw["counts"]["unsettled"] == run.raw["counts"]["duplicate_writes"] == 0
    assert report.passed
    before = runs["publish-before-guard"].raw["counts"]
    # Every delivery published before its put (a crashed one after publishing).
    assert before["effects_sent"] == before["deliveries"]
    assert before["duplicate_effects"] == before["deliveries"] - before["distinct_ids"]
    after = runs["publish-after-guard"].raw["counts"]
    assert after["lost_effects"] > 0
    assert after["duplicate_effects"] == 0
    assert after["effects_delivered"] == after["effects_sent"] < after["distinct_ids"]
    outbox = runs["outbox"].raw["counts"]
    assert outbox["duplicate_effects"] == outbox["lost_effects"] == 0
    assert outbox["effects_delivered"] == outbox["distinct_ids"]
    assert outbox["redeliveries"] > 0


# --- explored: the crash between the put and the publish, found on purpose ------------


EXPLORED = """
name = "effects-explored"

[[workload.messages]]
body = { id = "dedup-order", quantity = 4 }
copies = 2

[consumer]
batch_size = 1
concurrency = 2
visibility_timeout_s = 30
function_timeout_s = 10
max_receive_count = 3
environment = { ORDERS_TOPIC_ARN = "{topic:orders.fifo}" }

# One business id: no clean one to learn the sink from, so it is declared.
[[effects]]
sink = "orders.fifo"
id = "id"
required = true
"""


def _explore(backend_url: str, tmp_path: Path, variant: str, **options: Any) -> dict[str, Any]:
    path = tmp_path / "explored.toml"
    path.write_text(EXPLORED, encoding="utf-8")
    report = loadtest.explore(path, variant=variant, endpoint_url=backend_url, **options)
    data = report.to_dict()
    explore: dict[str, Any] = data["explore"]
    assert report.exit_code == (1 if explore["counterexample"] else 0)
    if explore["counterexample"]:
        # The shown run says why as the explore section does (message-N, the scenario's ids).
        assert data["runs"][0]["reasons"] == explore["counterexample"]["reasons"]
    return explore


def test_explore_finds_the_event_lost_between_the_guard_and_the_publish(
    backend_url: str, tmp_path: Path
) -> None:
    explore = _explore(backend_url, tmp_path, "publish-after-guard", copies=1, faults="crash")
    example = explore["counterexample"]
    # The smallest: the delivery dies after its put, its redelivery finds a completed
    # duplicate and is acknowledged without publishing.
    assert (example["deliveries"], example["faults"]) == (2, 1)
    assert example["counts"]["lost_effects"] == 1
    assert example["counts"]["duplicate_writes"] == example["counts"]["lost_outcomes"] == 0


def test_explore_finds_copies_announced_before_the_guard(backend_url: str, tmp_path: Path) -> None:
    explore = _explore(backend_url, tmp_path, "publish-before-guard", copies=2)
    example = explore["counterexample"]
    assert (example["deliveries"], example["faults"]) == (2, 0)
    assert example["counts"]["duplicate_effects"] == 1
    # The topic by the scenario's name for it (its resource, PREFIX-orders.fifo, holds the
    # table's name PREFIX-orders: a whole name is named, never a part of one).
    published = [s["what"] for s in example["steps"] if s["what"].startswith("publish")]
    assert published == ["publish to topic orders.fifo"] * 2


def test_explore_learns_from_the_schedules_that_passed_what_a_delivery_publishes(
    backend_url: str, tmp_path: Path
) -> None:
    # No [[effects]] entry: the schedules without a crash show that a delivery publishes
    # two events; a crash after the put loses both, a crash between them the second.
    path = tmp_path / "two-events.toml"
    path.write_text(
        EXPLORED.split("# One business id")[0].replace("{topic:orders.fifo}", "{topic:orders}"),
        encoding="utf-8",
    )
    report = loadtest.explore(
        path, handler=_user("order_events.py"), endpoint_url=backend_url, faults="crash"
    )
    bugs = report.to_dict()["explore"]["bugs"]
    reasons = sorted(reason for bug in bugs for reason in bug["reasons"])
    assert reasons == [
        "1 lost effect(s): dedup-order never published to orders (message message-1 acknowledged)",
        "1 lost effect(s): dedup-order published to orders 1 of the 2 entries one delivery "
        "sends (message message-1 acknowledged)",
    ]
    assert all(bug["counts"]["duplicate_effects"] == 0 for bug in bugs)


def test_explore_the_outbox_survives_every_crash(backend_url: str, tmp_path: Path) -> None:
    explore = _explore(backend_url, tmp_path, "outbox", copies=1, faults="crash")
    assert explore["exhaustive"] is True and explore["schedules_failed"] == 0
    # A crash at each of the delivery's points: after the transaction, the read of the
    # row, the publish and the mark, each schedule redelivered and judged.
    assert explore["schedules_run"] >= 4


def test_explore_an_execution_named_by_the_order_id_survives_every_crash(
    backend_url: str, tmp_path: Path
) -> None:
    # Each schedule's order id is fresh, and still a name Step Functions takes for an
    # execution: the consumer starts it on every delivery and treats
    # ExecutionAlreadyExists as done, so a crash anywhere is repaired by the redelivery.
    path = tmp_path / "named.toml"
    path.write_text(
        EXPLORED.split("# One business id")[0].replace(
            'ORDERS_TOPIC_ARN = "{topic:orders.fifo}"',
            'FULFILMENT_STATE_MACHINE_ARN = "{state_machine:fulfilment}"',
        )
        + '\n[[effects]]\nsink = "fulfilment"\nrequired = true\n',
        encoding="utf-8",
    )
    report = loadtest.explore(
        path,
        handler=_user("fulfilment_by_name.py"),
        endpoint_url=backend_url,
        copies=1,
        faults="crash",
    )
    explore = report.to_dict()["explore"]
    assert explore["exhaustive"] is True
    assert (explore["schedules_failed"], explore["counterexample"]) == (0, None)
    assert explore["schedules_run"] >= 4


# --- the handlers alone, with sinks made by boto3 --------------------------------------

REGION = "us-east-1"


@dataclass(frozen=True)
class Sinks:
    """A table and one of each sink, made with boto3; what each received, read back."""

    table: str
    clients: dict[str, Any]
    queues: dict[str, str]
    """Queue URLs: the captures of the topic and the bus, and the shipping queues."""
    environment: dict[str, str]

    def messages(self, queue: str) -> list[dict[str, Any]]:
        sqs, url = self.clients["sqs"], self.queues[queue]
        found: list[dict[str, Any]] = []
        while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for message in messages:
                found.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return found

    def objects(self) -> dict[str, dict[str, Any]]:
        s3, bucket = self.clients["s3"], self.environment["RECEIPTS_BUCKET"]
        listed = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
        return {
            o["Key"]: json.loads(s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read())
            for o in listed
        }

    def executions(self) -> list[str]:
        arn = self.environment["FULFILMENT_STATE_MACHINE_ARN"]
        listed = self.clients["stepfunctions"].list_executions(stateMachineArn=arn)
        return sorted(e["name"] for e in listed["executions"])

    def items(self) -> int:
        return int(self.clients["dynamodb"].scan(TableName=self.table, Select="COUNT")["Count"])


def _make_sinks(backend_url: str, stem: str) -> Sinks:
    creds = dict(EMBEDDED_CREDENTIALS)
    clients: dict[str, Any] = {
        name: boto3.client(
            name,
            endpoint_url=backend_url,
            region_name=REGION,
            aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"],
        )
        for name in ("dynamodb", "sns", "sqs", "s3", "events", "stepfunctions")
    }
    sqs = clients["sqs"]
    clients["dynamodb"].create_table(
        TableName=stem,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    queues = {
        "topic": sqs.create_queue(QueueName=f"{stem}-topic")["QueueUrl"],
        "bus": sqs.create_queue(QueueName=f"{stem}-bus")["QueueUrl"],
        "shipping": sqs.create_queue(QueueName=f"{stem}-shipping")["QueueUrl"],
        "shipping.fifo": sqs.create_queue(
            QueueName=f"{stem}-shipping.fifo", Attributes={"FifoQueue": "true"}
        )["QueueUrl"],
    }

    def arn_of(url: str) -> str:
        attributes = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return str(attributes["Attributes"]["QueueArn"])

    topic = clients["sns"].create_topic(Name=f"{stem}-orders")["TopicArn"]
    clients["sns"].subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=arn_of(queues["topic"]),
        Attributes={"RawMessageDelivery": "true"},
    )
    bus = f"{stem}-order-events"
    clients["events"].create_event_bus(Name=bus)
    clients["events"].put_rule(
        Name=f"{stem}-all", EventBusName=bus, EventPattern='{"source": ["orders"]}'
    )
    clients["events"].put_targets(
        Rule=f"{stem}-all",
        EventBusName=bus,
        Targets=[{"Id": "capture", "Arn": arn_of(queues["bus"])}],
    )
    bucket = f"{stem}-receipts"
    clients["s3"].create_bucket(Bucket=bucket)
    machine = clients["stepfunctions"].create_state_machine(
        name=f"{stem}-fulfilment",
        definition=json.dumps(
            {"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}}
        ),
        roleArn="arn:aws:iam::123456789012:role/fulfilment",
    )["stateMachineArn"]
    return Sinks(
        table=stem,
        clients=clients,
        queues=queues,
        environment={
            "TABLE_NAME": stem,
            "ORDERS_TOPIC_ARN": topic,
            "ORDER_EVENTS_BUS": bus,
            "RECEIPTS_BUCKET": bucket,
            "FULFILMENT_STATE_MACHINE_ARN": machine,
        },
    )


@pytest.fixture
def sinks(backend_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sinks]:
    made = _make_sinks(backend_url, f"handlers-{uuid.uuid4().hex[:8]}")
    for name, value in {
        **dict(EMBEDDED_CREDENTIALS),
        **made.environment,
        "AWS_ENDPOINT_URL": backend_url,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    yield made
    clients, env = made.clients, made.environment
    clients["dynamodb"].delete_table(TableName=made.table)
    for url in made.queues.values():
        clients["sqs"].delete_queue(QueueUrl=url)
    clients["sns"].delete_topic(TopicArn=env["ORDERS_TOPIC_ARN"])
    bus = env["ORDER_EVENTS_BUS"]
    clients["events"].remove_targets(Rule=f"{made.table}-all", EventBusName=bus, Ids=["capture"])
    clients["events"].delete_rule(Name=f"{made.table}-all", EventBusName=bus)
    clients["events"].delete_event_bus(Name=bus)
    for key in made.objects():
        clients["s3"].delete_object(Bucket=env["RECEIPTS_BUCKET"], Key=key)
    clients["s3"].delete_bucket(Bucket=env["RECEIPTS_BUCKET"])
    clients["stepfunctions"].delete_state_machine(
        stateMachineArn=env["FULFILMENT_STATE_MACHINE_ARN"]
    )


def _load(name: str) -> Any:
    """The consumer's handler, imported afresh (its clients read this test's environment)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"effects_{name}", CONSUMERS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.handler


def _event(*orders: tuple[str, int, str]) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": message_id,
                "receiptHandle": f"h-{message_id}",
                "body": json.dumps({"id": order_id, "quantity": quantity}),
                "attributes": {"ApproximateReceiveCount": "1"},
            }
            for order_id, quantity, message_id in orders
        ]
    }


def _order(order_id: str, quantity: int) -> dict[str, Any]:
    return {"id": order_id, "quantity": quantity, "total_cents": quantity * 250 + 100}


def _twice(name: str) -> None:
    """The same order delivered as two messages (a producer's resend)."""
    handler = _load(name)
    handler(_event(("o-1", 2, "m-1")), None)
    handler(_event(("o-1", 2, "m-2")), None)


def test_handler_publish_before_guard(sinks: Sinks) -> None:
    _twice("publish_before_guard")
    assert sinks.items() == 1
    assert sinks.messages("topic") == [{"type": "OrderPlaced", **_order("o-1", 2)}] * 2


@pytest.mark.parametrize("name", ["publish_after_guard", "racy_then_event"])
def test_handler_publishing_once_stored(sinks: Sinks, name: str) -> None:
    _twice(name)
    assert sinks.items() == 1
    assert sinks.messages("topic") == [{"type": "OrderPlaced", **_order("o-1", 2)}]


def test_handler_fifo_republish(sinks: Sinks, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHIPPING_QUEUE_URL", sinks.queues["shipping.fifo"])
    _twice("fifo_republish")
    assert sinks.messages("shipping.fifo") == [_order("o-1", 2)]


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("receipt_by_order_id", ["receipts/o-1.json"]),
        ("receipt_by_message_id", ["receipts/m-1.json", "receipts/m-2.json"]),
    ],
)
def test_handler_receipts(sinks: Sinks, name: str, keys: list[str]) -> None:
    _twice(name)
    assert sinks.objects() == dict.fromkeys(keys, _order("o-1", 2))


def test_handler_eventbridge_after_guard(sinks: Sinks) -> None:
    _twice("eventbridge_after_guard")
    delivered = sinks.messages("bus")
    assert [(e["source"], e["detail-type"], e["detail"]) for e in delivered] == [
        ("orders", "OrderPlaced", _order("o-1", 2))
    ]


def test_handler_fulfilment_by_name(sinks: Sinks) -> None:
    _twice("fulfilment_by_name")
    handler = _load("fulfilment_by_name")
    handler(_event(("o-2", 1, "m-3")), None)
    assert sinks.executions() == ["o-1", "o-2"]


def test_handler_batch_republish(sinks: Sinks, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHIPPING_QUEUE_URL", sinks.queues["shipping"])
    handler = _load("batch_republish")
    batch = _event(("b-1", 1, "m-1"), ("b-3", 0, "m-3"), ("b-4", 4, "m-4"))
    for _ in range(2):  # received again after the failure, as a batch without partial responses is
        with pytest.raises(RuntimeError, match="1 records failed"):
            handler(batch, None)
    forwarded = sorted(m["id"] for m in sinks.messages("shipping"))
    assert forwarded == ["b-1", "b-1", "b-4", "b-4"]
    assert sinks.items() == 2

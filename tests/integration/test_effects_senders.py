"""Effects beyond the table, sent the ways teams send them: boto3's resource API, aioboto3,
a FIFO topic's deduplication id, a batch whose answer is never read, an execution named by
the message, an audit line that names no order.

Each consumer of ``tests/integration/consumers/effects`` named here (the right verdict in
its docstring) runs through ``loadtest.api.run`` on the embedded backend with the small
scenarios of ``tests.integration.test_effects`` (batch size 1, one execution environment:
the effect counts are exact), or through ``loadtest.api.explore``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import loadtest
from tests.integration.test_effects import (
    COPIES,
    EXPLORED,
    FIFO_TOPIC,
    IDS,
    TOPIC,
    _effects,
    _expect,
    _run,
    _scenario,
    _user,
)

FIRST = {"PUBLISH_FIRST": "1"}
"""The consumers that take it publish before their guarded put, on every copy."""


def _explored(
    backend_url: str,
    tmp_path: Path,
    handler: str,
    environment: str,
    sink: str,
    id_path: str = "id",
    **options: Any,
) -> dict[str, Any]:
    """``EXPLORED`` (one order, declared required on ``sink``, its id at ``id_path``) with
    the consumer's ``environment`` (a TOML inline table's inside), explored; the report's
    ``explore``."""
    text = EXPLORED.replace('ORDERS_TOPIC_ARN = "{topic:orders.fifo}"', environment)
    text = text.replace('sink = "orders.fifo"\nid = "id"', f'sink = "{sink}"\nid = "{id_path}"')
    path = tmp_path / "explored.toml"
    path.write_text(text, encoding="utf-8")
    report = loadtest.explore(path, handler=_user(handler), endpoint_url=backend_url, **options)
    explore: dict[str, Any] = report.to_dict()["explore"]
    assert report.exit_code == (1 if explore["counterexample"] else 0)
    return explore


# --- boto3's resource API and aioboto3: observed as the client is ---------------------


RESOURCE_SINKS = {
    **TOPIC,
    "SHIPPING_QUEUE_URL": "{queue_url:shipping}",
    "RECEIPTS_BUCKET": "{bucket:receipts}",
}


def test_effects_sent_through_boto3_resources_are_each_sinks_once_per_order(
    backend_url: str, tmp_path: Path
) -> None:
    path = _scenario(tmp_path, RESOURCE_SINKS)
    run = _run(backend_url, path, _user("resource_style_after_guard.py"))
    assert run.verdict == "pass", run.reasons
    # Topic.publish, Queue.send_message and Object.put: one entry per order on each sink.
    assert _effects(run) == _expect(3 * IDS, 3 * IDS)
    assert {s["sink"]: (s["sent"], s["required"]) for s in run.raw["effects"]} == {
        "orders": (IDS, "learned"),
        "shipping": (IDS, "learned"),
        "receipts": (IDS, "learned"),
    }


def test_effects_sent_through_boto3_resources_before_the_guard_repeat_per_copy(
    backend_url: str, tmp_path: Path
) -> None:
    path = _scenario(tmp_path, {**RESOURCE_SINKS, **FIRST})
    run = _run(backend_url, path, _user("resource_style_after_guard.py"))
    assert run.verdict == "fail"
    sent = IDS * COPIES
    # Every copy published and sent again; the receipt's key is the order id, so the
    # bucket holds one object per order however often it was written.
    duplicates = {s["sink"]: (s["delivered"], s["duplicate"]) for s in run.raw["effects"]}
    assert duplicates == {
        "orders": (sent, IDS * (COPIES - 1)),
        "shipping": (sent, IDS * (COPIES - 1)),
        "receipts": (IDS, 0),
    }
    assert _effects(run) == _expect(3 * sent, 2 * sent + IDS, duplicate=2 * IDS * (COPIES - 1))


@pytest.mark.parametrize(
    ("environment", "verdict", "duplicate"),
    [(TOPIC, "pass", 0), ({**TOPIC, **FIRST}, "fail", IDS * (COPIES - 1))],
    ids=["after-guard", "before-guard"],
)
def test_an_aioboto3_publish_is_judged_as_a_boto3_one(
    backend_url: str,
    tmp_path: Path,
    environment: dict[str, str],
    verdict: str,
    duplicate: int,
) -> None:
    run = _run(backend_url, _scenario(tmp_path, environment), _user("aio_publish.py"))
    assert run.verdict == verdict, run.reasons
    sent = IDS + duplicate
    assert _effects(run) == _expect(sent, sent, duplicate=duplicate)


def test_explore_finds_the_event_an_aioboto3_consumer_loses_to_a_crash(
    backend_url: str, tmp_path: Path
) -> None:
    environment = 'ORDERS_TOPIC_ARN = "{topic:orders}"'
    explore = _explored(
        backend_url, tmp_path, "aio_publish.py", environment, "orders", copies=1, faults="crash"
    )
    assert explore["exhaustive"] is True
    (bug,) = explore["bugs"]
    assert (bug["deliveries"], bug["faults"], bug["schedule"]) == (2, 1, "1:3=1c")
    assert bug["reasons"] == [
        "1 lost effect(s): dedup-order never published to orders (message message-1 acknowledged)"
    ]


def test_explore_finds_each_copy_an_aioboto3_consumer_announces_before_its_guard(
    backend_url: str, tmp_path: Path
) -> None:
    environment = 'ORDERS_TOPIC_ARN = "{topic:orders}", PUBLISH_FIRST = "1"'
    explore = _explored(backend_url, tmp_path, "aio_publish.py", environment, "orders", copies=2)
    assert explore["exhaustive"] is True
    (bug,) = explore["bugs"]
    assert (bug["deliveries"], bug["faults"], bug["counts"]["duplicate_effects"]) == (2, 0, 1)


# --- an entry of a batch refused, and the answer never read --------------------------


HELD = """
seed = 3

[expect]
overlap = false

[[workload.messages]]
body = { id = "h-1", quantity = 1 }
copies = 2

[[workload.messages]]
body = { id = "h-2", quantity = 2, hold_s = 1800 }
copies = 2

[[workload.messages]]
body = { id = "h-3", quantity = 3, hold_s = 1 }
copies = 2

[consumer]
batch_size = 10
batching_window_s = 1
concurrency = 1
environment = { SHIPPING_QUEUE_URL = "{queue_url:shipping}" }

[run]
deadline_s = 60
"""


def test_an_entry_a_batch_send_refused_is_lost_for_its_own_order(
    backend_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "held.toml"
    path.write_text(HELD, encoding="utf-8")
    run = _run(backend_url, path, _user("shipping_batch_unchecked.py"))
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    assert (counts["acked"], counts["handler_errors"], counts["lost_outcomes"]) == (6, 0, 0)
    # The requests go out in one SendMessageBatch after the loop; h-2's asks for a delay
    # SQS does not take and is refused alone. h-1 and h-3 went through cleanly and reached
    # the queue, so it is required: both of h-2's acknowledged messages lost their request.
    assert _effects(run) == _expect(2, 2, lost=2)
    (sink,) = run.raw["effects"]
    assert sink["required"] == "learned"
    (witness,) = sink["witnesses"]
    assert witness["business_id"] == "h-2"
    assert witness["text"].endswith("; the sink refused 1 of its entries (InvalidParameterValue)")


# --- what a sink deduplicates by: the business id, or the message's id ----------------


@pytest.mark.parametrize(
    ("dedup_by", "verdict", "delivered"),
    [("message", "fail", IDS * COPIES), ("order", "pass", IDS)],
)
def test_a_fifo_topic_drops_copies_only_when_deduplicated_by_the_order_id(
    backend_url: str, tmp_path: Path, dedup_by: str, verdict: str, delivered: int
) -> None:
    path = _scenario(tmp_path, {**FIFO_TOPIC, "DEDUP_BY": dedup_by})
    run = _run(backend_url, path, _user("fifo_topic_dedup.py"))
    assert run.verdict == verdict, run.reasons
    # Every copy published before the put; each copy is a resend with its own messageId.
    assert _effects(run) == _expect(IDS * COPIES, delivered, duplicate=delivered - IDS)
    (sink,) = run.raw["effects"]
    assert sink["deduplicated"] == IDS * COPIES - delivered


def test_explore_a_fifo_publish_keyed_by_the_message_id_survives_its_redeliveries(
    backend_url: str, tmp_path: Path
) -> None:
    # A redelivery (a crash, a second receive, a lost acknowledgement) is the same message:
    # its publish carries the same deduplication id and the topic drops it.
    environment = 'ORDERS_TOPIC_ARN = "{topic:orders.fifo}"'
    explore = _explored(
        backend_url,
        tmp_path,
        "fifo_topic_dedup.py",
        environment,
        "orders.fifo",
        copies=1,
        faults="crash,redeliver,ack-lost",
    )
    assert explore["exhaustive"] is True
    assert (explore["schedules_failed"], explore["counterexample"]) == (0, None)
    # A resend is another message: announced twice.
    explore = _explored(
        backend_url, tmp_path, "fifo_topic_dedup.py", environment, "orders.fifo", copies=2
    )
    (bug,) = explore["bugs"]
    assert bug["counts"]["duplicate_effects"] == 1


FULFILMENT = {"FULFILMENT_STATE_MACHINE_ARN": "{state_machine:fulfilment}"}


def test_an_execution_named_by_the_message_id_starts_once_per_copy(
    backend_url: str, tmp_path: Path
) -> None:
    run = _run(backend_url, _scenario(tmp_path, FULFILMENT), _user("fulfilment_by_message_id.py"))
    assert run.verdict == "fail"
    sent = IDS * COPIES
    assert _effects(run) == _expect(sent, sent, duplicate=IDS * (COPIES - 1))


def test_explore_an_execution_named_by_the_message_id_survives_its_redeliveries(
    backend_url: str, tmp_path: Path
) -> None:
    environment = 'FULFILMENT_STATE_MACHINE_ARN = "{state_machine:fulfilment}"'
    explore = _explored(
        backend_url,
        tmp_path,
        "fulfilment_by_message_id.py",
        environment,
        "fulfilment",
        "orderId",
        copies=1,
        faults="crash,redeliver",
    )
    assert explore["exhaustive"] is True
    assert (explore["schedules_failed"], explore["counterexample"]) == (0, None)


# --- whose effect it is ------------------------------------------------------------------


def test_an_effect_that_names_no_order_leaves_the_run_inconclusive(
    backend_url: str, tmp_path: Path
) -> None:
    path = _scenario(tmp_path, {"AUDIT_QUEUE_URL": "{queue_url:audit}"})
    report = loadtest.run(
        path, endpoint_url=backend_url, variants=[], handler=_user("audit_without_order.py")
    )
    assert report.exit_code == 4
    (run,) = report.runs
    assert run.verdict == "inconclusive"
    assert run.raw["counts"]["duplicate_writes"] == run.raw["counts"]["lost_outcomes"] == 0
    # One audit line per delivery, none naming an order: nothing is judged there.
    assert _effects(run) == _expect(IDS * COPIES, IDS * COPIES)
    assert list(run.inconclusive) == [
        f"{IDS * COPIES} entr(ies) on sink 'audit' (queue) name no business id that was sent: "
        "whose effects they are is not known, so nothing is counted lost there; declare where "
        'the id is: [[effects]] sink = "audit", id = "PATH" (a dotted path into the payload), '
        'or id_attribute = "NAME" (a message attribute)'
    ]


AUDIT_COUNTED = """
[[effects]]
sink = "audit"
delivery = "any"   # an audit log: no order's outcome
"""


def test_an_audit_sink_declared_any_is_counted_and_the_run_judged(
    backend_url: str, tmp_path: Path
) -> None:
    path = _scenario(tmp_path, {"AUDIT_QUEUE_URL": "{queue_url:audit}"}, extra=AUDIT_COUNTED)
    report = loadtest.run(
        path, endpoint_url=backend_url, variants=[], handler=_user("audit_without_order.py")
    )
    (run,) = report.runs
    assert (report.exit_code, run.verdict) == (0, "pass"), run.inconclusive
    assert _effects(run) == _expect(IDS * COPIES, IDS * COPIES)
    (audit,) = run.raw["effects"]
    assert audit["delivery"] == "any" and audit["unidentified"] == 0


SUBJECT_DECLARED = r"""
[[effects]]
sink = "ops"
id_pattern = "Order (\\S+) placed"   # over the Message's text, then over the Subject
required = true
"""


@pytest.mark.parametrize(
    ("extra", "required"),
    [("", "learned"), (SUBJECT_DECLARED, "declared")],
    ids=["found", "declared"],
)
def test_an_order_id_only_in_the_sns_subject_is_found_there(
    backend_url: str, tmp_path: Path, extra: str, required: str
) -> None:
    path = _scenario(tmp_path, {"OPS_TOPIC_ARN": "{topic:ops}"}, extra=extra)
    run = _run(backend_url, path, _user("notify_by_subject.py"))
    assert run.verdict == "fail"
    assert run.raw["counts"]["duplicate_writes"] == 0
    # Every copy notified again, the same Message each time: the Subject says whose it is.
    sent = IDS * COPIES
    assert _effects(run) == _expect(sent, sent, duplicate=IDS * (COPIES - 1))
    (sink,) = run.raw["effects"]
    assert (sink["unidentified"], sink["required"]) == (0, required)


def test_a_resend_announced_with_its_own_details_conflicts(
    backend_url: str, tmp_path: Path
) -> None:
    path = _scenario(tmp_path, TOPIC, copies=2)
    run = _run(backend_url, path, _user("announce_resend_details.py"), conflict_fraction=1)
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    # Each order's resend carries another quantity: acknowledged, its details never stored,
    # and announced again with them.
    assert (counts["acked"], counts["lost_outcomes"], counts["conflicting_writes"]) == (
        2 * IDS,
        IDS,
        0,
    )
    assert _effects(run) == _expect(2 * IDS, 2 * IDS, duplicate=IDS, conflicting=IDS)


def test_identical_copies_of_a_consumer_that_announces_resends_are_announced_once(
    backend_url: str, tmp_path: Path
) -> None:
    run = _run(backend_url, _scenario(tmp_path, TOPIC), _user("announce_resend_details.py"))
    assert run.verdict == "pass", run.reasons
    assert _effects(run) == _expect(IDS, IDS)


@pytest.mark.parametrize(
    ("environment", "verdict", "duplicate"),
    [(TOPIC, "pass", 0), ({**TOPIC, **FIRST}, "fail", IDS * (COPIES - 1))],
    ids=["after-guard", "before-guard"],
)
def test_a_message_per_protocol_is_judged_by_what_a_queue_subscriber_receives(
    backend_url: str,
    tmp_path: Path,
    environment: dict[str, str],
    verdict: str,
    duplicate: int,
) -> None:
    run = _run(backend_url, _scenario(tmp_path, environment), _user("announce_per_protocol.py"))
    assert run.verdict == verdict, run.reasons
    sent = IDS + duplicate
    assert _effects(run) == _expect(sent, sent, duplicate=duplicate)


# --- a batch, record by record ---------------------------------------------------------


PER_RECORD = """
seed = 10

[expect]
overlap = false

[[workload.messages]]
body = { id = "p-1", quantity = 1 }
copies = 2

[[workload.messages]]
body = { id = "p-2", quantity = 2, flaky = true }

[[workload.messages]]
body = { id = "p-3", quantity = 3 }
copies = 2

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


@pytest.mark.parametrize(
    ("first", "verdict", "duplicate"), [("", "pass", 0), ("1", "fail", 3)], ids=["after", "before"]
)
def test_a_batch_processor_publishing_per_record_is_judged_per_record(
    backend_url: str, tmp_path: Path, first: str, verdict: str, duplicate: int
) -> None:
    path = tmp_path / "per-record.toml"
    environment = f'{{ ORDERS_TOPIC_ARN = "{{topic:orders}}", PUBLISH_FIRST = "{first}" }}'
    path.write_text(
        PER_RECORD.replace('{ ORDERS_TOPIC_ARN = "{topic:orders}" }', environment),
        encoding="utf-8",
    )
    run = _run(backend_url, path, _user("per_record_batch.py"))
    counts = run.raw["counts"]
    assert run.verdict == verdict, run.reasons
    # One batch of five; p-2's record failed after its put and came back alone.
    assert (counts["deliveries"], counts["acked"], counts["redeliveries"]) == (6, 5, 1)
    # Before the guard: p-1's and p-3's copies, and p-2's second receive, published again.
    assert _effects(run) == _expect(3 + duplicate, 3 + duplicate, duplicate=duplicate)


# --- a function invoked asynchronously --------------------------------------------------


def test_an_asynchronous_invoke_after_the_guard_is_sent_once_per_order(
    backend_url: str, tmp_path: Path
) -> None:
    path = _scenario(tmp_path, {"LOYALTY_FUNCTION": "{function:loyalty}"})
    run = _run(backend_url, path, _user("loyalty_invoke_after_guard.py"))
    assert run.verdict == "pass", run.reasons
    assert _effects(run) == _expect(IDS, IDS)


def test_explore_finds_the_invoke_a_crash_after_the_guard_loses(
    backend_url: str, tmp_path: Path
) -> None:
    environment = 'LOYALTY_FUNCTION = "{function:loyalty}"'
    explore = _explored(
        backend_url,
        tmp_path,
        "loyalty_invoke_after_guard.py",
        environment,
        "loyalty",
        "orderId",
        copies=1,
        faults="crash",
    )
    assert explore["exhaustive"] is True
    assert explore["schedules_run"] - explore["schedules_failed"] >= 1
    (bug,) = explore["bugs"]
    assert bug["reasons"] == [
        "1 lost effect(s): dedup-order never sent to loyalty (message message-1 acknowledged)"
    ]


# --- a bucket written through a staging key ----------------------------------------------


RECEIPTS = {"RECEIPTS_BUCKET": "{bucket:receipts}"}


def test_a_receipt_staged_copied_and_unstaged_is_one_object_per_order(
    backend_url: str, tmp_path: Path
) -> None:
    run = _run(backend_url, _scenario(tmp_path, RECEIPTS), _user("receipt_staged_then_copied.py"))
    assert run.verdict == "pass", run.reasons
    # Each delivery put its staging object and copied it: two writes accepted each. The
    # staging objects were deleted by their writer; the copies left one receipt per order.
    deliveries = IDS * COPIES
    assert _effects(run) == _expect(2 * deliveries, IDS)
    (sink,) = run.raw["effects"]
    assert (sink["required"], sink["unstaged"], sink["deduplicated"]) == (
        "learned",
        deliveries,
        deliveries - IDS,
    )


def test_explore_a_receipt_staged_copied_and_unstaged_survives_every_crash(
    backend_url: str, tmp_path: Path
) -> None:
    environment = 'RECEIPTS_BUCKET = "{bucket:receipts}"'
    explore = _explored(
        backend_url,
        tmp_path,
        "receipt_staged_then_copied.py",
        environment,
        "receipts",
        copies=1,
        faults="crash",
    )
    assert explore["exhaustive"] is True
    assert (explore["schedules_failed"], explore["counterexample"]) == (0, None)


REMOVED = """
seed = 3

[expect]
overlap = false

[[workload.messages]]
body = { id = "r-1", quantity = 1 }
copies = 2

[[workload.messages]]
body = { id = "r-2", quantity = 2 }

[[workload.messages]]
body = { id = "r-3", quantity = 3 }
copies = 2

[consumer]
batch_size = 1
concurrency = 1
environment = { RECEIPTS_BUCKET = "{bucket:receipts}" }

[run]
deadline_s = 60
"""


def test_a_receipt_its_copy_deletes_is_lost_for_both_messages(
    backend_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "removed.toml"
    path.write_text(REMOVED, encoding="utf-8")
    run = _run(backend_url, path, _user("receipt_draft_removed_on_duplicate.py"))
    counts = run.raw["counts"]
    assert run.verdict == "fail"
    assert (counts["acked"], counts["lost_outcomes"], counts["duplicate_writes"]) == (5, 0, 0)
    # Every delivery wrote the receipt; each copy deleted it after its put was refused:
    # r-1 and r-3 end with none, and all four of their messages were acknowledged.
    assert _effects(run) == _expect(5, 1, lost=4)
    (sink,) = run.raw["effects"]
    assert (sink["required"], sink["unstaged"]) == ("learned", 2)
    assert [w["business_id"] for w in sink["witnesses"]] == ["r-1", "r-3"]
    assert all("but no longer there when read" in w["text"] for w in sink["witnesses"])


# --- boto3's managed transfer: the object put from s3transfer's threads -------------------


def test_a_receipt_uploaded_by_a_managed_transfer_is_one_object_per_order(
    backend_url: str, tmp_path: Path
) -> None:
    path = _scenario(tmp_path, RECEIPTS)
    run = _run(backend_url, path, _user("receipt_uploaded_after_guard.py"))
    assert run.verdict == "pass", run.reasons
    assert _effects(run) == _expect(IDS, IDS)


def test_explore_finds_the_receipt_a_managed_transfer_loses_to_a_crash(
    backend_url: str, tmp_path: Path
) -> None:
    # upload_fileobj puts the object from a worker thread; explore runs the transfer on
    # the delivery's thread, so its PutObject is a point like any other call.
    environment = 'RECEIPTS_BUCKET = "{bucket:receipts}"'
    explore = _explored(
        backend_url,
        tmp_path,
        "receipt_uploaded_after_guard.py",
        environment,
        "receipts",
        copies=1,
        faults="crash",
    )
    assert explore["exhaustive"] is True
    (bug,) = explore["bugs"]
    assert bug["reasons"] == [
        "1 lost effect(s): dedup-order never written to receipts (message message-1 acknowledged)"
    ]
    # A crash at the invocation's start, at the put's call and answer, and at the upload's.
    assert explore["schedules_run"] == 5


# --- work the handler leaves running when it returns ---------------------------------


ORDERS_REQUIRED = """
[[effects]]
sink = "orders"
id = "id"
required = true
"""

ON_A_TIMER = {**TOPIC, "ANNOUNCE_AFTER_S": "30"}
"""Each order's announcement waits on a timer far longer than the run."""


LEFT_RUNNING = [
    "announce_on_timer.py",
    "aio_announce_unawaited.py",
    "announce_on_thread_pool_unwaited.py",
    "aio_announce_under_asyncio_run.py",
]
"""A consumer that leaves its announcement to a timer thread, one that leaves it to an
asyncio task on the loop it keeps, one that hands it to a ThreadPool it never waits for,
and one whose unawaited task asyncio.run cancels as it closes its loop."""


@pytest.mark.parametrize("consumer", LEFT_RUNNING)
def test_an_announcement_left_running_never_passes(
    backend_url: str, tmp_path: Path, consumer: str
) -> None:
    report = loadtest.run(
        _scenario(tmp_path, ON_A_TIMER),
        endpoint_url=backend_url,
        variants=[],
        handler=_user(consumer),
    )
    (run,) = report.runs
    assert (report.exit_code, run.verdict) == (4, "inconclusive"), run.reasons
    assert _effects(run) == _expect(0, 0)
    (why,) = run.inconclusive
    assert "sink 'orders' (topic) is not known to be required" in why
    assert f"{IDS} piece(s) of work (threads, pool calls, asyncio tasks) the handler" in why
    named = ("thread 'Thread-", "asyncio task 'Task-", "announce handed to a thread pool")
    assert any(what in why for what in named) and "required = true" in why
    assert any(f"{IDS} of the {IDS} piece(s) of work" in note for note in run.raw["notes"])


@pytest.mark.parametrize("consumer", LEFT_RUNNING)
def test_an_announcement_left_running_is_lost_for_a_required_topic(
    backend_url: str, tmp_path: Path, consumer: str
) -> None:
    report = loadtest.run(
        _scenario(tmp_path, ON_A_TIMER, extra=ORDERS_REQUIRED),
        endpoint_url=backend_url,
        variants=[],
        handler=_user(consumer),
    )
    (run,) = report.runs
    assert (report.exit_code, run.verdict) == (1, "fail"), run.inconclusive
    assert _effects(run) == _expect(0, 0, lost=IDS * COPIES)


def test_announcements_a_handler_waits_for_on_its_pool_pass_each_tied_to_its_record(
    backend_url: str, tmp_path: Path
) -> None:
    run = _run(backend_url, _scenario(tmp_path, TOPIC), _user("announce_through_pool.py"))
    assert run.verdict == "pass", (run.reasons, run.inconclusive)
    assert _effects(run) == _expect(IDS, IDS)
    assert not any("left running" in note for note in run.raw["notes"])

"""The data-plane checks' judges on synthetic histories: each pass, and each way a mapping
can differ from Lambda's, with the consequence in words."""

from __future__ import annotations

import json

from loadtest.doctor.mapping import (
    CONCURRENCY,
    MAPPING_CHECK_NAMES,
    judge_concurrency,
    judge_fifo_order,
    judge_partial_batch,
    judge_visibility,
    max_overlap,
    probes,
)
from loadtest.model.history.log import History, Invocation, InvocationOutcome, Record, SentMessage

S = 1_000_000_000


def _invocation(n: int, start_s: float, end_s: float, *records: tuple[str, int]) -> Invocation:
    return Invocation(
        request_id=f"r{n}",
        environment=n,
        records=tuple(Record(m, count, m) for m, count in records),
        received_ns=int(start_s * S),
        started_ns=int(start_s * S),
        ended_ns=int(end_s * S),
        outcome=InvocationOutcome.SUCCESS,
        error=None,
        writes=(),
    )


def _sent(*ids: str, failing: str = "") -> list[SentMessage]:
    return [
        SentMessage(
            index=i,
            business_id=m,
            body=json.dumps({"id": m, "quantity": 1, "probe": {"fail_first": m == failing}}),
            intended_ns=0,
            sent_ns=0,
            message_id=m,
        )
        for i, m in enumerate(ids)
    ]


def test_the_probes_run_in_the_documented_order_with_their_settings() -> None:
    found = probes()
    assert tuple(p.name for p in found) == MAPPING_CHECK_NAMES
    by_name = {p.name: p.scenario for p in found}
    assert by_name[CONCURRENCY].consumer.batch_size == 1
    assert by_name["partial-batch-response"].consumer.report_batch_item_failures
    assert by_name["fifo-mapping-order"].consumer.fifo


def test_overlap_counts_an_end_before_a_start_at_the_same_moment() -> None:
    chain = [_invocation(n, n, n + 1) for n in range(4)]
    assert max_overlap(chain) == 1
    assert max_overlap([*chain, _invocation(9, 0.5, 2.5)]) == 2


def test_a_serial_mapping_fails_and_says_a_race_cannot_show() -> None:
    serial = History(
        invocations=[_invocation(n, 1.5 * n, 1.5 * n + 1.5, (f"m{n}", 1)) for n in range(8)]
    )
    result = judge_concurrency(serial)
    assert not result.ok
    assert result.details["max_concurrent"] == 1
    assert "one batch at a time" in result.summary
    assert "a race between deliveries cannot happen here" in result.summary
    parallel = History(invocations=[_invocation(n, 0, 1.5, (f"m{n}", 1)) for n in range(8)])
    assert judge_concurrency(parallel).ok
    assert judge_concurrency(parallel).details["max_concurrent"] == 8


def test_a_redelivery_only_after_the_first_delivery_ended_fails() -> None:
    late = History(invocations=[_invocation(0, 0, 6, ("m", 1)), _invocation(1, 6.5, 6.6, ("m", 2))])
    result = judge_visibility(late)
    assert not result.ok and "cannot happen here" in result.summary
    early = History(
        invocations=[_invocation(0, 0, 6, ("m", 1)), _invocation(1, 2.1, 2.2, ("m", 2))]
    )
    result = judge_visibility(early)
    assert result.ok and result.details["redelivered_after_s"] == 2.1


def test_partial_batch_responses_ignored_or_whole_batch_retried_fail() -> None:
    sent = _sent("a", "b", "c", failing="b")
    one_batch = _invocation(0, 0, 1, ("a", 1), ("b", 1), ("c", 1))
    honoured = History(sent=sent, invocations=[one_batch, _invocation(1, 3, 4, ("b", 2))])
    assert judge_partial_batch(honoured).ok
    ignored = History(sent=sent, invocations=[one_batch])
    result = judge_partial_batch(ignored)
    assert not result.ok and "deleted anyway" in result.summary
    whole = History(
        sent=sent, invocations=[one_batch, _invocation(1, 3, 4, ("a", 2), ("b", 2), ("c", 2))]
    )
    result = judge_partial_batch(whole)
    assert not result.ok and "the whole batch is retried" in result.summary
    assert result.details["others_redelivered"] == 2


def test_records_whose_batch_outlasted_the_visibility_timeout_are_not_judged() -> None:
    # A busy endpoint: the batch holding a and b ran 6 s, past the queue's 5 s visibility
    # timeout, so both came back whatever the response said, as on SQS.
    sent = _sent("a", "b", "c", failing="b")
    slow = _invocation(0, 0, 6, ("a", 1), ("b", 1))
    quick = _invocation(1, 0, 1, ("c", 1))
    again = _invocation(2, 6, 7, ("a", 2), ("b", 2))
    result = judge_partial_batch(History(sent=sent, invocations=[slow, quick, again]))
    assert result.ok, result.summary
    assert result.details["others_not_judged"] == 1 and result.details["other_records"] == 1
    assert "1 other(s) not judged" in result.summary
    # With every other record's batch too slow, nothing was seen either way: it fails so.
    alone = _sent("a", "b", failing="b")
    result = judge_partial_batch(History(sent=alone, invocations=[slow, again]))
    assert not result.ok and "the endpoint was too slow for this check" in result.summary


def test_a_fifo_group_out_of_order_or_overlapping_fails() -> None:
    sent = _sent("f0", "f1", "f2")
    in_order = [_invocation(n, n, n + 1, (f"f{n}", 1)) for n in range(3)]
    assert judge_fifo_order(History(sent=sent, invocations=in_order)).ok
    swapped = [_invocation(0, 0, 1, ("f1", 1)), _invocation(1, 1, 2, ("f0", 1)), in_order[2]]
    result = judge_fifo_order(History(sent=sent, invocations=swapped))
    assert not result.ok and "NOT in send order" in result.summary
    overlapping = [_invocation(n, n * 0.5, n * 0.5 + 1, (f"f{n}", 1)) for n in range(3)]
    result = judge_fifo_order(History(sent=sent, invocations=overlapping))
    assert not result.ok and result.details["max_concurrent_in_group"] == 2


def test_the_data_plane_checks_never_deploy_to_aws() -> None:
    from loadtest.api import doctor_data_plane
    from loadtest.aws.clients import BackendKind

    results, skipped = doctor_data_plane(BackendKind.AWS, None)
    assert results == []
    assert skipped is not None and "--endpoint-url" in skipped

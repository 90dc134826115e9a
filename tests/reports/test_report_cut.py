"""Reports stay bounded whatever the message count: lists are cut, counts are not."""

from __future__ import annotations

import json

from loadtest.aws.clients import BackendKind, Target
from loadtest.engine import RunResult
from loadtest.model.checker.evidence import EVIDENCE_LIMIT
from loadtest.model.history.log import Ack, History
from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.html.page import render_html
from loadtest.reports.report import (
    SERIES_POINTS_LIMIT,
    WRITE_DECISIONS_LIMIT,
    build_report,
)
from tests.model.builders import end_state, invocation, order_item, record, sent, write
from tests.reports.test_report import variant_run

MESSAGES = 1_200
HOURS_2_NS = 7_200 * 1_000_000_000


def long_run() -> RunResult:
    history = History(started_ns=0, ended_ns=HOURS_2_NS)
    items = [order_item(f"order-{i}", 1) for i in range(MESSAGES)]
    step_ns = HOURS_2_NS // MESSAGES
    history.sent = [sent(i, f"order-{i}", f"m-{i}") for i in range(MESSAGES)]
    history.invocations = [
        invocation(
            f"r-{i}",
            [record(f"m-{i}", f"order-{i}")],
            [write(items[i], started_ns=i * step_ns)],
            started_ns=i * step_ns,
        )
        for i in range(MESSAGES)
    ]
    history.acks = [
        Ack(message_id=f"m-{i}", acked_ns=i * step_ns + 3_000_000) for i in range(MESSAGES)
    ]
    return RunResult(
        scenario=load_scenario("seed-lab"),
        target=Target(BackendKind.EMBEDDED, "http://127.0.0.1:5000", "us-east-1"),
        runs=[variant_run(history, end_state(items))],
    )


def test_lists_are_cut_and_the_cut_is_stated_counts_are_over_everything() -> None:
    report = build_report(long_run())
    run = report["runs"][0]

    assert run["counts"]["messages_sent"] == MESSAGES
    assert run["counts"]["writes_accepted"] == MESSAGES
    assert len(run["write_decisions"]) == WRITE_DECISIONS_LIMIT
    assert len(run["table_items"]) == WRITE_DECISIONS_LIMIT
    assert run["cut"]["write_decisions"] == {
        "listed": WRITE_DECISIONS_LIMIT,
        "total": MESSAGES,
        "cut": True,
    }
    assert run["cut"]["table_items"] == {
        "listed": WRITE_DECISIONS_LIMIT,
        "total": MESSAGES,
        "cut": True,
    }
    assert run["cut"]["findings"] == {"listed": 0, "total": 0, "cut": False}


def test_the_findings_cut_counts_every_duplicated_outcome() -> None:
    duplicated = EVIDENCE_LIMIT + 10
    history = History(started_ns=0, ended_ns=1_000_000_000)
    items = [order_item(f"order-{i}", 1) for i in range(duplicated)]
    history.sent = [
        sent(2 * i + copy, f"order-{i}", f"m-{i}-{copy}")
        for i in range(duplicated)
        for copy in (0, 1)
    ]
    # Read-then-write: both copies of each order write it, the second over the first.
    history.invocations = [
        invocation(
            f"r-{i}-{copy}",
            [record(f"m-{i}-{copy}", f"order-{i}")],
            [
                write(
                    items[i],
                    condition=None,
                    before=items[i] if copy else None,
                    before_known=True,
                    started_ns=copy,
                )
            ],
        )
        for i in range(duplicated)
        for copy in (0, 1)
    ]
    history.acks = [
        Ack(message_id=f"m-{i}-{copy}", acked_ns=10) for i in range(duplicated) for copy in (0, 1)
    ]
    result = RunResult(
        scenario=load_scenario("seed-lab"),
        target=Target(BackendKind.EMBEDDED, "http://127.0.0.1:5000", "us-east-1"),
        runs=[variant_run(history, end_state(items))],
    )
    run = build_report(result)["runs"][0]

    assert run["counts"]["duplicate_writes"] == duplicated
    assert len(run["findings"]) == EVIDENCE_LIMIT
    assert run["cut"]["findings"] == {"listed": EVIDENCE_LIMIT, "total": duplicated, "cut": True}


def test_a_long_run_gets_wider_series_intervals_not_more_points() -> None:
    run = build_report(long_run())["runs"][0]

    assert run["series"]["interval_s"] == 13.0  # 7,200 s in at most 600 points
    assert run["cut"]["series_interval_s"] == 13.0
    assert all(len(run["series"][name]) <= SERIES_POINTS_LIMIT for name in ("sent", "acked"))
    assert sum(run["series"]["sent"]) == MESSAGES
    assert sum(run["series"]["acked"]) == MESSAGES


def test_the_html_page_says_what_was_cut() -> None:
    report = build_report(long_run())
    page = render_html(report)

    assert f"table_items listed for {WRITE_DECISIONS_LIMIT} of {MESSAGES}" in page
    # Stated apart from the warnings, which are about the consumer, not the report's size.
    cuts = page.split('id="cuts"', 1)[1]
    assert "table_items listed for" in cuts.split("</div>", 1)[0]
    assert "listed for" not in page.split('id="warnings"', 1)[-1].split("</div>", 1)[0]
    assert len(json.dumps(report)) < 5 * 1024 * 1024


def test_dead_letters_are_listed_first_with_their_error_and_counted_all() -> None:
    from loadtest.model.history.log import DeadLetter, InvocationOutcome

    dead = WRITE_DECISIONS_LIMIT + 100
    history = History(started_ns=0, ended_ns=1_000_000_000)
    history.sent = [sent(i, f"order-{i}", f"m-{i}") for i in range(dead)]
    history.invocations = [
        invocation(
            f"r-{i}",
            [record(f"m-{i}", f"order-{i}")],
            [],
            outcome=InvocationOutcome.ERROR,
            error=f"ValueError: order-{i} refused",
        )
        for i in range(dead)
    ]
    history.dead_letters = [DeadLetter(f"m-{i}", 3, 10_000 + i) for i in range(dead)]
    result = RunResult(
        scenario=load_scenario("seed-lab"),
        target=Target(BackendKind.EMBEDDED, "http://127.0.0.1:5000", "us-east-1"),
        runs=[variant_run(history, end_state([]))],
    )
    run = build_report(result)["runs"][0]
    assert run["cut"]["dead_letters"] == {
        "listed": WRITE_DECISIONS_LIMIT,
        "total": dead,
        "cut": True,
    }
    assert run["counts"]["dead_lettered"] == dead
    assert [d["message_id"] for d in run["dead_letters"]] == [
        f"m-{i}" for i in range(WRITE_DECISIONS_LIMIT)
    ]
    last = run["dead_letters"][-1]
    assert last["business_id"] == f"order-{WRITE_DECISIONS_LIMIT - 1}"
    assert last["last_error"] == f"ValueError: order-{WRITE_DECISIONS_LIMIT - 1} refused"
    assert json.loads(last["body"])["id"] == last["business_id"]

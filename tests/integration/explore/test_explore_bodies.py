"""explore on messages as producers send them: an SNS envelope with a body template."""

from __future__ import annotations

import json
from pathlib import Path

import loadtest
from loadtest.engine.explore_session import fresh_messages
from loadtest.model.history.log import SentMessage
from loadtest.model.scenario.body import body_shape
from loadtest.model.scenario.loading import Scenario, parse_scenario
from loadtest.model.workload.schedule import plan

HERE = Path(__file__).parent
SNS = parse_scenario(
    {
        "workload": {
            "distinct_ids": 1,
            "copies": 2,
            "body": {"orderId": "{id}", "ref": "ORDER#{id}", "quantity": "{quantity}"},
            "envelope": "sns",
        },
        "outcome": {"key": {"orderId": "{id}"}},
    },
    source="sns.toml",
)


def test_each_schedule_sends_a_fresh_business_id_where_the_template_put_it() -> None:
    shape = body_shape(SNS.workload)
    sent = [SentMessage(m.index, m.business_id, m.body, 0, 0, None) for m in plan(SNS.workload, 1)]
    for m in fresh_messages(sent, 3, shape):
        assert m.business_id == "order-00001_s3"
        assert shape.business_id(m.body) == "order-00001_s3"
        order = json.loads(json.loads(m.body)["Message"])
        assert order["ref"] == "ORDER#order-00001_s3"


def _explore(scenario: Scenario, consumer: str, backend_url: str) -> loadtest.Report:
    return loadtest.explore(
        scenario, handler=f"{HERE / 'consumers' / consumer}:handler", endpoint_url=backend_url
    )


def test_the_guarded_sns_consumer_holds_in_every_schedule(backend_url: str) -> None:
    report = _explore(SNS, "sns_guarded.py", backend_url)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0, explore
    # Every schedule after the first sends a fresh id: none finds an earlier schedule's order.
    assert explore["schedules_failed"] == 0 and explore["schedules_inconclusive"] == 0
    assert explore["schedules_run"] > 1


def test_the_unguarded_sns_consumer_writes_an_order_twice(backend_url: str) -> None:
    report = _explore(SNS, "../../sns_orders.py", backend_url)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1
    assert explore["counterexample"]["counts"]["duplicate_writes"] == 1

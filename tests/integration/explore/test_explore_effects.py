"""explore on a consumer with an effect beyond its table: the publish after the guarded put
is a point like a table call, named in the steps, recorded in each invocation, and a crash
between the put's answer and the publish is a schedule the search reaches."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import loadtest
from loadtest.engine.explore_session import Judged, Session
from loadtest.model.history.log import EffectKind
from tests.backend.aws_clients import sns

CONSUMER = Path(__file__).parent / "consumers" / "put_then_publish.py"
PUBLISH = "publish to topic effects-explore-orders"
PUT = "PutItem id=dedup-order"

Line = tuple[str, str, str | None]


def _schedules(backend_url: str, monkeypatch: pytest.MonkeyPatch, faults: str) -> list[Judged]:
    """Every schedule explore runs (the search's, and the shrinker's if any), as judged."""
    judged: list[Judged] = []
    judge = Session.judge

    def recording(self: Session, *args: Any, **kwargs: Any) -> Judged:
        result = judge(self, *args, **kwargs)
        judged.append(result)
        return result

    monkeypatch.setattr(Session, "judge", recording)
    try:
        loadtest.explore(
            "seed-lab",
            handler=f"{CONSUMER}:handler",
            copies=1,
            faults=faults,
            endpoint_url=backend_url,
        )
    finally:
        delete_consumer_topic(backend_url)
    return judged


def delete_consumer_topic(url: str) -> None:
    """The topic the consumer made for itself, gone (the backend is shared)."""
    client = sns(url)
    for topic in client.list_topics()["Topics"]:
        if topic["TopicArn"].endswith(":effects-explore-orders"):
            client.delete_topic(TopicArn=topic["TopicArn"])


def _lines(judged: Judged) -> list[Line]:
    """The steps, each schedule's fresh business id (``dedup-order_sN``) shown as the scenario's."""
    return [(s.delivery, re.sub(r"_s\d+", "", s.what), s.answer) for s in judged.execution.steps]


def _published(judged: Judged) -> list[tuple[str, bool, str | None]]:
    return [
        (e.request_id.rsplit("-", 1)[-1], e.accepted, e.error_code)
        for invocation in judged.execution.invocations
        for e in invocation.effects
    ]


def test_the_publish_is_a_step_and_a_crash_before_it_is_reached(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedules = _schedules(backend_url, monkeypatch, "crash")
    lines = [_lines(j) for j in schedules]
    assert [
        ("1", "invocation starts", None),
        ("1", PUT, "accepted"),
        ("1", PUBLISH, "accepted"),
        ("1", "acknowledged", None),
    ] in lines
    # The crash after the put's answer, before the publish: the redelivery's put is
    # refused and nothing is ever published.
    lost = [
        j
        for j in schedules
        if _lines(j)[:3]
        == [
            ("1", "invocation starts", None),
            ("1", PUT, "accepted"),
            ("1", "the environment crashes", None),
        ]
    ]
    assert lost, lines
    assert _lines(lost[0])[3:] == [
        ("1.2", "invocation starts (receive 2)", None),
        ("1.2", PUT, "rejected (ConditionalCheckFailedException)"),
        ("1.2", "acknowledged", None),
    ]
    assert _published(lost[0]) == []
    # The crash after the publish's answer: the publish is recorded for the invocation
    # that crashed, as it was sent.
    after = [j for j in schedules if ("1", "the environment crashes", None) in _lines(j)[3:4]]
    assert after, lines
    assert _lines(after[0])[:3] == [
        ("1", "invocation starts", None),
        ("1", PUT, "accepted"),
        ("1", PUBLISH, "accepted"),
    ]
    assert _published(after[0]) == [("1", True, None)]
    [effect] = [e for i in after[0].execution.invocations for e in i.effects]
    assert (effect.operation, effect.kind) == ("SNS.Publish", EffectKind.TOPIC)
    assert effect.sink.endswith(":effects-explore-orders")


def test_a_throttled_publish_is_answered_with_snss_own_error(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    schedules = _schedules(backend_url, monkeypatch, "throttle")
    throttled = [j for j in schedules if ("1", PUBLISH, "throttled (Throttled)") in _lines(j)]
    assert throttled, [_lines(j) for j in schedules]
    assert ("1", False, "Throttled") in _published(throttled[0])

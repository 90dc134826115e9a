"""A deployed run's sinks on MiniStack: made before the function (which is told them), read
back after the run into its end state, tagged with the run, and deleted with the rest; a
function sink's own code run there, capturing what it is invoked with."""

from __future__ import annotations

import textwrap
import time
import uuid
from pathlib import Path

import pytest

from loadtest.aws import clients as aws
from loadtest.deploy.deploy_plan import RUN_TAG
from loadtest.deploy.lambda_cleanup import find_tagged, make_clients
from loadtest.deploy.remote_run import run_deployed
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.loading import parse_scenario
from loadtest.model.scenario.placeholders import Sink
from tests.integration.test_sinks import HANDLER

pytestmark = pytest.mark.slow


def test_a_deployed_consumer_publishes_to_the_runs_topic_and_the_run_reads_it_back(
    ministack: str, tmp_path: Path
) -> None:
    (tmp_path / "publisher.py").write_text(textwrap.dedent(HANDLER))
    scenario = parse_scenario(
        {
            "seed": 5,
            "workload": {"distinct_ids": 4, "copies": 2},
            "consumer": {"environment": {"ORDERS_TOPIC_ARN": "{topic:orders}"}},
        },
        source="sinks.toml",
    )
    clients, _ = make_clients(ministack)
    target = aws.Target.resolve(aws.BackendKind.ENDPOINT, ministack)
    assert clients.sinks is not None
    seen: list[str] = []

    def tagged(run: object) -> None:
        topics = clients.sinks.sns.list_topics()["Topics"]  # type: ignore[union-attr]
        arns = [t["TopicArn"] for t in topics if "loadtest-snk1-" in t["TopicArn"]]
        for arn in arns:
            tags = clients.sinks.sns.list_tags_for_resource(ResourceArn=arn)["Tags"]  # type: ignore[union-attr]
            seen.extend(f"{t['Key']}={t['Value']}" for t in tags)

    [variant] = run_deployed(
        scenario,
        [parse_ref(f"{tmp_path / 'publisher.py'}:handler")],
        clients,
        target,
        run_id="snk1",
        on_variant=tagged,
    )
    assert variant.cleanup_problems == []
    [sink] = variant.end_state.sinks
    assert (sink.name, sink.kind, sink.complete) == ("orders", EffectKind.TOPIC, True)
    assert sink.address.endswith(":loadtest-snk1-0-orders")
    ids = sorted(m.payload for m in sink.messages)
    assert len(ids) == 4 and len(set(ids)) == 4
    assert f"{RUN_TAG}=snk1" in seen and "created-by=loadtest" in seen
    topics = [t["TopicArn"] for t in clients.sinks.sns.list_topics()["Topics"]]
    assert [t for t in topics if "loadtest-snk1-" in t] == []
    assert find_tagged(clients, "snk1") == []


def test_a_function_sink_on_an_endpoint_runs_its_code_and_captures_each_event(
    ministack: str,
) -> None:
    target = aws.Target.resolve(aws.BackendKind.ENDPOINT, ministack)
    clients = aws.sink_clients(target)
    prefix = f"loadtest-{uuid.uuid4().hex[:8]}-0"
    made: list[aws.MadeSink] = []
    try:
        aws.create_sinks(
            clients, [Sink(EffectKind.FUNCTION, "notify")], prefix, into=made, target=target
        )
        [function] = made
        for order in ("o-1", "o-2", "o-1"):
            clients.lambda_.invoke(
                FunctionName=function.address,
                InvocationType="Event",
                Payload=f'{{"id": "{order}"}}'.encode(),
            )
        held: list[str] = []
        deadline = time.monotonic() + 60
        while len(held) < 3 and time.monotonic() < deadline:
            [contents] = aws.read_sinks(clients, made, target)
            held += [m.payload for m in contents.messages]
        # The function's own code ran and sent each event, as JSON, to its capture queue.
        assert sorted(held) == ['{"id":"o-1"}', '{"id":"o-1"}', '{"id":"o-2"}']
    finally:
        assert aws.delete_sinks(clients, made) == []
    functions = [f["FunctionName"] for f in clients.lambda_.list_functions()["Functions"]]
    queues = clients.sqs.list_queues().get("QueueUrls", [])
    assert [n for n in functions + queues if prefix in n] == []
    clients.close()

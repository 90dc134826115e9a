"""Messages as real producers send them (body templates, envelopes, attributes), run
end to end on the embedded backend against consumers that read them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loadtest.cli import app

HERE = Path(__file__).parent
SNS_CONSUMER = f"{HERE / 'sns_orders.py'}:handler"
runner = CliRunner()


@pytest.mark.parametrize(("batch_size", "window_s"), [("10", "1"), ("1", "0")])
def test_an_sns_envelope_consumer_with_an_unconditional_put_fails_with_one_duplicate_per_order(
    backend_url: str, tmp_path: Path, batch_size: str, window_s: str
) -> None:
    # 20 orders x 2 copies, each order a JSON string inside the SNS notification's Message:
    # every resend is a second accepted put of its order, at Lambda's default batch size
    # with a batching window (several copies of an order may share an invocation) as at 1.
    out = tmp_path / "sns.json"
    result = runner.invoke(
        app,
        [
            "run",
            str(HERE / "sns_orders.toml"),
            "--handler",
            SNS_CONSUMER,
            "--batch-size",
            batch_size,
            "--batching-window",
            window_s,
            "--endpoint-url",
            backend_url,
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 1, result.output
    (run,) = json.loads(out.read_text())["runs"]
    counts = run["counts"]
    assert counts["messages_sent"] == 40
    assert counts["distinct_ids"] == 20
    assert counts["acked"] == 40
    assert counts["writes_accepted"] == 40
    assert counts["duplicate_writes"] == 20
    assert counts["lost_outcomes"] == 0
    assert counts["side_writes"] == 0
    assert run["settings"]["batch_size"] == int(batch_size)
    assert run["table_after"] == {"items": 20}
    assert run["verdict"] == "fail"


SNS_SAMPLE = {
    "Type": "Notification",
    "MessageId": "63a3f6b6-d533-4a47-aef9-fcf5cf758c76",
    "TopicArn": "arn:aws:sns:us-east-1:123456789012:orders",
    "Message": json.dumps({"orderId": "o-1", "quantity": 2}),
    "Timestamp": "2024-05-01T10:00:00.000Z",
    "SignatureVersion": "1",
    "Signature": "EXAMPLE",
    "SigningCertURL": "https://sns.us-east-1.amazonaws.com/x.pem",
    "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
}


@pytest.mark.slow
def test_new_writes_a_scenario_that_runs_the_handler_unedited(
    backend_url: str, tmp_path: Path
) -> None:
    sample = tmp_path / "sample.json"
    sample.write_text(json.dumps(SNS_SAMPLE))
    written = tmp_path / "sns.toml"
    new = [
        "new",
        "--handler",
        SNS_CONSUMER,
        "--sample-message",
        str(sample),
        "--id-field",
        "orderId",
    ]
    shown = runner.invoke(app, new)
    assert shown.exit_code == 0, shown.output
    assert 'envelope = { type = "sns"' in shown.stdout and 'orderId = "{id}"' in shown.stdout
    assert runner.invoke(app, [*new, "--out", str(written)]).exit_code == 0
    assert written.read_text() == shown.stdout
    again = runner.invoke(app, [*new, "--out", str(written)])
    assert again.exit_code == 2 and "exists; loadtest new never overwrites" in again.output

    out = tmp_path / "report.json"
    result = runner.invoke(
        app, ["run", str(written), "--endpoint-url", backend_url, "--json", str(out)]
    )
    assert result.exit_code == 1, result.output
    (run,) = json.loads(out.read_text())["runs"]
    # 20 ids x 2 copies at batch size 10, every resend a second put of its order.
    assert run["counts"]["messages_sent"] == 40
    assert run["counts"]["duplicate_writes"] == 20
    assert run["counts"]["lost_outcomes"] == 0


SLOW_FIRST_WRITE = """\
import json, os, time
import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        time.sleep(1.5)  # a call before the write, longer than the dry run's visibility
        table.put_item(Item={"pk": f"ORDER#{order['id']}", "quantity": order["quantity"]})
"""


def test_new_keys_the_table_by_a_first_write_made_after_the_dry_runs_visibility(
    tmp_path: Path,
) -> None:
    # The dry run's message becomes visible again a second after it is received; with one
    # execution environment it is not received again while the invocation runs, so a
    # handler slower than that still shows the key of its first write.
    handler = tmp_path / "slow_first.py"
    handler.write_text(SLOW_FIRST_WRITE)
    sample = tmp_path / "sample.json"
    sample.write_text(json.dumps({"id": "order-1", "quantity": 3}))
    shown = runner.invoke(
        app, ["new", "--handler", f"{handler}:handler", "--sample-message", str(sample)]
    )
    assert shown.exit_code == 0, shown.output
    assert 'key = { pk = "S" }' in shown.stdout, shown.stdout


PUBLIC = HERE / "consumers" / "public"


@pytest.mark.slow
def test_new_runs_a_public_consumer_with_no_code_edit(backend_url: str, tmp_path: Path) -> None:
    # aws-samples/serverless-patterns apigw-sqs-lambda-ddb-cdk: reads its table from
    # dynamo_db_name, puts each body unconditionally into a table keyed on eventId, deployed
    # at the default batch size. The scenario `new` writes from the README's sample message
    # runs it as it is: each event's resend is written again.
    written = tmp_path / "events.toml"
    new = runner.invoke(
        app,
        [
            "new",
            "--handler",
            f"{PUBLIC / 'serverless_patterns_sqs_handler.py'}:lambda_handler",
            "--sample-message",
            str(PUBLIC / "serverless_patterns_sample.json"),
            "--id-field",
            "eventId",
            "--out",
            str(written),
        ],
    )
    assert new.exit_code == 0, new.output
    text = written.read_text()
    assert 'dynamo_db_name = "{table}"' in text and 'eventId = "{id}"' in text
    out = tmp_path / "report.json"
    result = runner.invoke(
        app, ["run", str(written), "--endpoint-url", backend_url, "--json", str(out)]
    )
    assert result.exit_code == 1, result.output
    (run,) = json.loads(out.read_text())["runs"]
    counts = run["counts"]
    assert (counts["messages_sent"], counts["writes_accepted"]) == (40, 40)
    assert counts["duplicate_writes"] == 20
    assert counts["lost_outcomes"] == 0 and counts["handler_errors"] == 0
    assert run["settings"]["batch_size"] == 10
    assert run["table_after"]["items"] == 20


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--id-field", "orderId"], "--id-field names a field of the sample message"),
        (["--sample-message", "missing.json"], "sample message 'missing.json' could not be read"),
        (["--handler", "nowhere.py:handler"], "does not exist"),
    ],
)
def test_new_refuses_bad_input_with_exit_two(args: list[str], expected: str) -> None:
    handler = [] if "--handler" in args else ["--handler", SNS_CONSUMER]
    result = runner.invoke(app, ["new", *handler, *args])
    assert result.exit_code == 2
    assert expected in result.output


def test_message_attributes_reach_the_handler_as_lambda_builds_them(backend_url: str) -> None:
    from loadtest.model.scenario.loading import parse_scenario
    from tests.integration.helpers import run_variants

    scenario = parse_scenario(
        {
            "workload": {
                "distinct_ids": 3,
                "copies": 1,
                "attributes": {
                    "origin": "web",
                    "priority": 5,
                    "key": "K-{id}",
                    "blob": {"type": "Binary", "value": "AAEC"},
                },
            },
            "run": {"deadline_s": 60},
        },
        source="attributes.toml",
    )
    result = run_variants(scenario, backend_url, f"{HERE / 'attributes_handler.py'}:handler")
    (run,) = result.runs
    counts = run.check.counts
    assert (counts.acked, counts.handler_errors, counts.writes_accepted) == (3, 0, 3)
    items = run.end_state.table_items
    assert len(items) == 3
    for item in items.values():
        assert item["origin"] == {"S": "web"}
        assert item["priority"] == {"S": "5"} and item["priority_type"] == {"S": "Number"}
        assert item["key"] == {"S": f"K-{item['id']['S']}"}
        assert item["blob"] == {"S": "000102"}


def test_new_for_an_idempotent_consumer_gives_a_scenario_it_passes(
    backend_url: str, tmp_path: Path
) -> None:
    # The copies `new` sends are shuffled into different batches, so they race: a consumer
    # that is idempotent passes instead of being inconclusive for copies that never met.
    written = tmp_path / "conditional.toml"
    assert (
        runner.invoke(app, ["new", "--handler", "conditional", "--out", str(written)]).exit_code
        == 0
    )
    out = tmp_path / "report.json"
    result = runner.invoke(
        app, ["run", str(written), "--endpoint-url", backend_url, "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    (run,) = json.loads(out.read_text())["runs"]
    assert run["counts"]["writes_accepted"] == 20
    assert run["counts"]["writes_rejected"] == 20
    assert run["counts"]["duplicate_writes"] == 0


def test_a_handler_keying_its_items_otherwise_than_the_scenario_is_told_so(
    backend_url: str, tmp_path: Path
) -> None:
    # The scenario says outcome items are keyed id, the table is created so, and the
    # handler writes items keyed orderId: the table refuses every write. The run made that
    # table, so the run is inconclusive, naming the refusals and the setting to declare,
    # never a failure of the consumer.
    scenario = tmp_path / "wrong_key.toml"
    scenario.write_text(
        (HERE / "sns_orders.toml")
        .read_text()
        .replace('key = { orderId = "{id}" }', 'key = { id = "{id}" }')
        .replace("distinct_ids = 20", "distinct_ids = 2")
        .replace("copies = 2", "copies = 1")
        + "max_receive_count = 1\nvisibility_timeout_s = 3\n"
    )
    out = tmp_path / "wrong_key.json"
    result = runner.invoke(
        app,
        [
            *("run", str(scenario), "--handler", SNS_CONSUMER, "--endpoint-url", backend_url),
            *("--batch-size", "1", "--batching-window", "0", "--json", str(out)),
        ],
    )
    assert result.exit_code == 4, result.output
    (run,) = json.loads(out.read_text())["runs"]
    assert run["verdict"] == "inconclusive"
    assert run["counts"]["writes_accepted"] == 0
    assert run["counts"]["side_writes"] == 2
    assert run["counts"]["dead_lettered"] == 2
    assert run["reasons"] == []
    (gap,) = [r for r in run["inconclusive"] if "named a key that table " in r]
    assert "or the item misses the table's key" in gap and "`[table] key`" in gap
    (reason,) = [r for r in run["inconclusive"] if r.startswith("nothing was stored")]
    assert (
        "; the table refused 2 other write(s) (ValidationException x2): check that "
        "[outcome] key names the attributes the handler keys its items by, but the run did "
        "not provide what the handler expects: not judged"
    ) in reason

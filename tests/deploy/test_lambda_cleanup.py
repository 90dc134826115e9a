"""``loadtest cleanup`` on moto: tagged resources go, untagged ones always stay."""

from __future__ import annotations

import io
import json
import zipfile

from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.deploy.deploy_plan import Kind, plan_deploy
from loadtest.deploy.lambda_attach import FunctionSnapshot, observed
from loadtest.deploy.lambda_cleanup import ATTACHED, delete_found, find_tagged
from loadtest.deploy.lambda_deploy import Clients, Deployed, deploy, function_zip
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.model.scenario.loading import load_scenario
from tests.conftest import REGION

runner = CliRunner()


def _deploy(aws: Clients, run_id: str) -> Deployed:
    plan = plan_deploy(
        load_scenario("race-burst"), [parse_ref("conditional")], run_id=run_id, region=REGION
    )
    code = {f.name: function_zip(parse_ref("conditional")) for f in plan.of_kind(Kind.FUNCTION)}
    made = Deployed()
    deploy(plan, aws, code, into=made, sleep=lambda s: None)
    return made


def _untagged(aws: Clients) -> None:
    """A user's own function, queue and table: no loadtest:run tag (other tags, though)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(e, c):\n    return None\n")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    role = aws.iam.create_role(
        RoleName="user-role",
        AssumeRolePolicyDocument=json.dumps(trust),
        Tags=[{"Key": "loadtest", "Value": "no"}],
    )["Role"]["Arn"]
    aws.lambda_.create_function(
        FunctionName="user-fn",
        Runtime="python3.12",
        Handler="app.handler",
        Role=role,
        Code={"ZipFile": buffer.getvalue()},
        Tags={"created-by": "loadtest"},
    )
    aws.sqs.create_queue(QueueName="user-queue", tags={"loadtest:runner": "x"})
    aws.dynamodb.create_table(
        TableName="user-table",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )


def _left(aws: Clients) -> dict[str, list[str]]:
    return {
        "functions": sorted(f["FunctionName"] for f in aws.lambda_.list_functions()["Functions"]),
        "queues": sorted(u.rsplit("/", 1)[-1] for u in aws.sqs.list_queues().get("QueueUrls", [])),
        "tables": sorted(aws.dynamodb.list_tables()["TableNames"]),
        "roles": sorted(r["RoleName"] for r in aws.iam.list_roles()["Roles"]),
        "layers": sorted(layer["LayerName"] for layer in aws.lambda_.list_layers()["Layers"]),
        "mappings": sorted(
            m["UUID"] for m in aws.lambda_.list_event_source_mappings()["EventSourceMappings"]
        ),
    }


USER_ONLY = {
    "functions": ["user-fn"],
    "queues": ["user-queue"],
    "tables": ["user-table"],
    "roles": ["user-role"],
    "layers": [],
    "mappings": [],
}


def test_cleanup_of_one_run_leaves_the_other_run_and_everything_untagged(aws: Clients) -> None:
    _untagged(aws)
    one = _deploy(aws, "one")
    two = _deploy(aws, "two")

    found = find_tagged(aws, "one")
    assert sorted((f.kind, f.name) for f in found) == sorted((c.kind, c.name) for c in one.created)
    assert [f.kind for f in found][:2] == [Kind.MAPPING, Kind.FUNCTION]  # mappings go first
    assert delete_found(aws, found) == []

    assert find_tagged(aws, "one") == []
    assert len(find_tagged(aws)) == len(two.created)
    assert delete_found(aws, find_tagged(aws)) == []
    assert _left(aws) == USER_ONLY


def test_cleanup_restores_a_function_a_killed_attach_run_left(aws: Clients) -> None:
    _untagged(aws)
    before = FunctionSnapshot.of(aws.lambda_, "user-fn")
    wanted = observed(
        before,
        layer_arn=aws.lambda_.publish_layer_version(
            LayerName="loadtest-k-observer",
            Description="loadtest write observer; loadtest:run=k",
            Content={"ZipFile": function_zip(parse_ref("conditional"))},
        )["LayerVersionArn"],
        watch_table="user-table",
        key_names=("id",),
        observation_queue="obs",
        run_id="k",
    )
    aws.lambda_.update_function_configuration(**wanted.update())
    found = find_tagged(aws, "k")
    assert [(f.kind, f.action) for f in found] == [(ATTACHED, "restore"), (Kind.LAYER, "delete")]
    assert delete_found(aws, found, restore=lambda lam, name: _restore(lam, name)) == []
    assert FunctionSnapshot.of(aws.lambda_, "user-fn") == before
    assert _left(aws) == USER_ONLY


def _restore(lam: object, name: str) -> None:
    from loadtest.deploy.lambda_attach import restore_leftover

    restore_leftover(lam, name, sleep=lambda s: None)  # type: ignore[arg-type]


def test_cli_cleanup_asks_first_and_deletes_only_tagged(aws: Clients) -> None:
    _untagged(aws)
    _deploy(aws, "c1")
    refused = runner.invoke(app, ["cleanup"], input="n\n")
    assert refused.exit_code == 0, refused.output
    assert "loadtest-c1-0-fn" in refused.output and "user-fn" not in refused.output
    assert "Nothing deleted" in refused.output
    assert len(find_tagged(aws)) > 0

    done = runner.invoke(app, ["cleanup", "--run", "c1", "--yes"])
    assert done.exit_code == 0, done.output
    assert "Deleted 8 resources" in done.output
    assert _left(aws) == USER_ONLY

    again = runner.invoke(app, ["cleanup", "--yes"])
    assert again.exit_code == 0 and "Nothing tagged" in again.output


def test_refused_credentials_name_profile_and_region() -> None:
    import botocore.exceptions

    from loadtest.deploy.lambda_cleanup import translate_call_error
    from loadtest.errors import CredentialsError

    refused = botocore.exceptions.ClientError(
        {"Error": {"Code": "InvalidClientTokenId", "Message": "bad token"}}, "ListFunctions"
    )
    error = translate_call_error(refused, "list", "profile ci, region eu-west-1")
    assert isinstance(error, CredentialsError)
    assert "profile ci, region eu-west-1" in str(error)
    denied = botocore.exceptions.ClientError(
        {"Error": {"Code": "AccessDeniedException", "Message": "no"}}, "ListFunctions"
    )
    assert "ListFunctions" in str(translate_call_error(denied, "list", "profile p, region r"))


def test_cli_cleanup_unreachable_endpoint_exits_three() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = runner.invoke(app, ["cleanup", "--yes", "--endpoint-url", f"http://127.0.0.1:{port}"])
    assert result.exit_code == 3, result.output
    assert "region" in result.output


def test_cleanup_finds_and_deletes_a_runs_sinks_by_their_tag_and_nothing_else(
    aws: Clients,
) -> None:
    import dataclasses

    import boto3

    from loadtest.aws import clients as adapter
    from loadtest.deploy.deploy_plan import RUN_TAG
    from loadtest.model.history.records import EffectKind
    from loadtest.model.scenario.placeholders import Sink

    shared = {"sqs": aws.sqs, "lambda": aws.lambda_, "iam": aws.iam}
    sinks = adapter.SinkClients(
        lambda service: shared.get(service) or boto3.client(service, region_name=REGION)  # type: ignore[call-overload]
    )
    clients = dataclasses.replace(aws, sinks=sinks)
    target = adapter.Target(adapter.BackendKind.EMBEDDED, None, REGION)
    kinds = [EffectKind.TOPIC, EffectKind.BUS, EffectKind.BUCKET, EffectKind.STATE_MACHINE]
    for run in ("r9", "r8"):
        adapter.create_sinks(
            sinks,
            [Sink(kind, "orders") for kind in kinds],
            f"loadtest-{run}-0",
            into=[],
            target=target,
            tags={RUN_TAG: run},
        )
    # Named like a run's, but untagged: never listed, never deleted.
    foreign = sinks.sns.create_topic(Name="loadtest-foreign")["TopicArn"]

    found = find_tagged(clients, "r9")
    # The state machine's role and the capture queues are a role and queues of the run,
    # deleted before the sinks they serve.
    assert [(str(f.kind), f.name) for f in found] == [
        ("iam-role", "loadtest-r9-0-orders"),
        ("sqs-queue", "loadtest-r9-0-t-orders"),
        ("sqs-queue", "loadtest-r9-0-e-orders"),
        ("sink", "topic loadtest-r9-0-orders"),
        ("sink", "bus loadtest-r9-0-orders"),
        ("sink", "bucket loadtest-r9-0-orders"),
        ("sink", "state_machine loadtest-r9-0-orders"),
    ]
    assert delete_found(clients, found) == []
    assert find_tagged(clients, "r9") == []
    assert len([f for f in find_tagged(clients, "r8") if f.kind is Kind.SINK]) == 4
    assert foreign in [t["TopicArn"] for t in sinks.sns.list_topics()["Topics"]]

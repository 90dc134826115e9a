"""Deploying a plan on moto: what is created is what the plan says, resource by resource."""

from __future__ import annotations

import json
import zipfile
from io import BytesIO
from typing import Any

import pytest

from loadtest.deploy import lambda_deploy
from loadtest.deploy.deploy_plan import RUN_TAG, Kind, Plan, plan_deploy
from loadtest.deploy.lambda_deploy import (
    Clients,
    Deployed,
    deploy,
    function_zip,
    layer_zip,
    teardown,
    wait_mapping_enabled,
)
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.errors import BackendError, TableExistsError
from loadtest.model.scenario.loading import Scenario, load_scenario, parse_scenario
from tests.conftest import REGION


def _plan(variants: list[str], **overrides: Any) -> Plan:
    scenario = load_scenario("race-burst").with_overrides(**overrides)
    return plan_deploy(scenario, [parse_ref(v) for v in variants], run_id="t1", region=REGION)


def _deployed(plan: Plan, aws: Clients) -> Deployed:
    made = Deployed()
    code = {f.name: function_zip(parse_ref("conditional")) for f in plan.of_kind(Kind.FUNCTION)}
    deploy(plan, aws, code, into=made, sleep=lambda s: None)
    return made


def test_deploy_creates_exactly_the_plan(aws: Clients) -> None:
    plan = _plan(
        ["conditional", "powertools"], report_batch_item_failures=True, batching_window_s=1
    )
    made = _deployed(plan, aws)
    assert [(c.kind, c.name) for c in made.created] == [(r.kind, r.name) for r in plan.resources]

    for resource in plan.resources:
        created = made.get(resource.name)
        s = resource.settings
        if resource.kind is Kind.ROLE:
            role = aws.iam.get_role(RoleName=resource.name)["Role"]
            assert {t["Key"]: t["Value"] for t in role.get("Tags", [])} == {RUN_TAG: "t1"}
            policy = aws.iam.get_role_policy(RoleName=resource.name, PolicyName="loadtest-run")
            document: Any = policy["PolicyDocument"]  # typed str; boto3 decodes the JSON
            granted = [a for st in document["Statement"] for a in st["Action"]]
            assert sorted(granted) == sorted(s["InlinePolicyActions"])
        elif resource.kind is Kind.LAYER:
            name, version = created.ident.split(":")[-2:]
            layer = aws.lambda_.get_layer_version(LayerName=name, VersionNumber=int(version))
            assert layer["Description"] == s["Description"]
            assert layer["CompatibleRuntimes"] == s["CompatibleRuntimes"]
        elif resource.kind is Kind.TABLE:
            table = aws.dynamodb.describe_table(TableName=resource.name)["Table"]
            assert table["KeySchema"] == s["KeySchema"]
            assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
            listed = aws.dynamodb.list_tags_of_resource(ResourceArn=table["TableArn"])["Tags"]
            assert {t["Key"]: t["Value"] for t in listed} == {RUN_TAG: "t1"}
        elif resource.kind is Kind.QUEUE:
            attrs = aws.sqs.get_queue_attributes(QueueUrl=created.ident, AttributeNames=["All"])[
                "Attributes"
            ]
            for key, value in s["Attributes"].items():
                assert attrs[key] == value
            if "RedrivePolicy" in s:
                redrive = json.loads(attrs["RedrivePolicy"])
                assert (
                    redrive["deadLetterTargetArn"]
                    == made.get(s["RedrivePolicy"]["deadLetterTargetArn"]).arn
                )
                assert int(redrive["maxReceiveCount"]) == s["RedrivePolicy"]["maxReceiveCount"]
            assert aws.sqs.list_queue_tags(QueueUrl=created.ident)["Tags"] == {RUN_TAG: "t1"}
        elif resource.kind is Kind.FUNCTION:
            config = aws.lambda_.get_function_configuration(FunctionName=resource.name)
            assert config["Runtime"] == s["Runtime"] and config["Handler"] == s["Handler"]
            assert config["MemorySize"] == s["MemorySize"] and config["Timeout"] == s["Timeout"]
            assert config["Role"] == made.get(s["Role"]).arn
            assert [layer["Arn"] for layer in config["Layers"]] == [
                made.get(n).arn for n in s["Layers"]
            ]
            # As planned, with the queues it names filled in ({queue_url}, ...).
            variables = config["Environment"]["Variables"]
            assert variables == lambda_deploy._filled(s, made)
            queue = made.get(s["EnvironmentRefs"]["url"])
            assert variables["LOADTEST_SOURCE_QUEUES"] == f"{queue.ident},{queue.arn}"
            assert aws.lambda_.list_tags(Resource=config["FunctionArn"])["Tags"] == {RUN_TAG: "t1"}
        elif resource.kind is Kind.MAPPING:
            mapping = aws.lambda_.get_event_source_mapping(UUID=created.ident)
            assert mapping["State"] == "Enabled"
            assert mapping["BatchSize"] == s["BatchSize"]
            assert mapping["EventSourceArn"] == made.get(s["EventSourceArn"]).arn
            assert mapping["FunctionArn"] == made.get(s["FunctionName"]).arn
            assert mapping["MaximumBatchingWindowInSeconds"] == 1
            assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
            assert mapping["ScalingConfig"] == s["ScalingConfig"]
            arn = mapping["EventSourceMappingArn"]
            assert aws.lambda_.list_tags(Resource=arn)["Tags"] == {RUN_TAG: "t1"}

    assert teardown(aws, made) == []
    assert made.created == []
    assert aws.lambda_.list_functions()["Functions"] == []
    assert aws.lambda_.list_event_source_mappings()["EventSourceMappings"] == []
    assert aws.lambda_.list_layers()["Layers"] == []
    assert aws.sqs.list_queues().get("QueueUrls", []) == []
    assert aws.dynamodb.list_tables()["TableNames"] == []
    assert [r["RoleName"] for r in aws.iam.list_roles()["Roles"]] == []


def test_reserved_concurrency_when_concurrency_is_one(aws: Clients) -> None:
    plan = _plan(["conditional"], concurrency=1)
    made = _deployed(plan, aws)
    fn = plan.of_kind(Kind.FUNCTION)[0].name
    assert (
        aws.lambda_.get_function_concurrency(FunctionName=fn)["ReservedConcurrentExecutions"] == 1
    )
    assert "ScalingConfig" not in aws.lambda_.get_event_source_mapping(
        UUID=made.of_kind(Kind.MAPPING)[0].ident
    )
    assert teardown(aws, made) == []


def test_a_failed_deploy_keeps_what_it_made_for_teardown(aws: Clients) -> None:
    plan = _plan(["conditional"])
    made = Deployed()
    with pytest.raises(KeyError):
        deploy(plan, aws, {}, into=made, sleep=lambda s: None)  # no code for the function
    assert [c.kind for c in made.created] == [Kind.ROLE, Kind.LAYER, Kind.TABLE] + [Kind.QUEUE] * 3
    assert teardown(aws, made) == [] and made.created == []
    assert aws.sqs.list_queues().get("QueueUrls", []) == []


def test_wait_refuses_a_disabled_mapping(aws: Clients) -> None:
    plan = _plan(["conditional"])
    made = _deployed(plan, aws)
    uuid = made.of_kind(Kind.MAPPING)[0].ident
    aws.lambda_.update_event_source_mapping(UUID=uuid, Enabled=False)
    with pytest.raises(BackendError, match="Disabled"):
        wait_mapping_enabled(aws.lambda_, uuid, sleep=lambda s: None)
    teardown(aws, made)


def test_layer_holds_the_observer_and_is_reproducible() -> None:
    data = layer_zip()
    assert data == layer_zip()
    names = zipfile.ZipFile(BytesIO(data)).namelist()
    assert "python/loadtest/observer/lambda_entry.py" in names
    assert (
        "python/loadtest/observer/write_observer.py" in names
        and "python/loadtest/model/dynamodb/updates.py" in names
    )
    assert not any(n.startswith("python/loadtest/cli") for n in names)


def test_function_zip_of_a_builtin_holds_its_package() -> None:
    names = zipfile.ZipFile(BytesIO(function_zip(parse_ref("conditional")))).namelist()
    assert "consumer/conditional.py" in names and "consumer/_orders.py" in names
    assert not any("__pycache__" in n for n in names)


def test_function_creation_waits_for_the_new_role_to_propagate() -> None:
    import botocore.exceptions

    from loadtest.deploy.lambda_ready import create_function_once_role_is_usable

    calls: list[dict[str, Any]] = []
    slept: list[float] = []

    class Lambda:
        def create_function(self, **kwargs: Any) -> dict[str, Any]:
            calls.append(kwargs)
            if len(calls) < 3:
                raise botocore.exceptions.ClientError(
                    {
                        "Error": {
                            "Code": "InvalidParameterValueException",
                            "Message": "The role defined for the function cannot be assumed by Lambda.",
                        }
                    },
                    "CreateFunction",
                )
            return {"FunctionArn": "arn:fn"}

    made = create_function_once_role_is_usable(
        Lambda(),  # type: ignore[arg-type]
        {"FunctionName": "f"},
        timeout_s=60,
        sleep=slept.append,
    )
    assert made == {"FunctionArn": "arn:fn"} and len(calls) == 3 and len(slept) == 2


class _Waiter:
    def __init__(self, failure: BaseException | None = None) -> None:
        self.calls: list[dict[str, Any]] = []
        self.failure = failure

    def wait(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)
        if self.failure is not None:
            raise self.failure


class _DynamoDB:
    def __init__(self, waiter: _Waiter) -> None:
        self.waiter = waiter
        self.names: list[str] = []

    def get_waiter(self, name: str) -> _Waiter:
        self.names.append(name)
        return self.waiter


def test_tables_are_awaited_with_the_boto3_waiter() -> None:
    from loadtest.deploy.lambda_deploy import wait_table_active

    dynamodb = _DynamoDB(_Waiter())
    wait_table_active(dynamodb, "orders", timeout_s=30)  # type: ignore[arg-type]
    assert dynamodb.names == ["table_exists"]
    assert dynamodb.waiter.calls == [
        {"TableName": "orders", "WaiterConfig": {"Delay": 1, "MaxAttempts": 30}}
    ]


def test_a_table_never_active_is_named_with_the_timeout() -> None:
    import botocore.exceptions

    from loadtest.deploy.lambda_deploy import wait_table_active

    slow = botocore.exceptions.WaiterError(
        name="TableExists", reason="Max attempts exceeded", last_response={}
    )
    with pytest.raises(BackendError, match="table orders was not ready within 5 s"):
        wait_table_active(_DynamoDB(_Waiter(slow)), "orders", timeout_s=5)  # type: ignore[arg-type]


def _scenario(raw: dict[str, Any]) -> Scenario:
    return parse_scenario({"workload": {"distinct_ids": 1}, **raw}, source="c.toml")


def test_deploy_fills_the_queues_into_the_functions_variables(aws: Clients) -> None:
    scenario = _scenario(
        {
            "consumer": {"environment": {"JOBS": "{queue_url}|{queue_arn}|{dlq_url}"}},
            "tables": [{"env": "IDEM", "key": {"id": "S"}}],
        }
    )
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="t2", region=REGION)
    made = _deployed(plan, aws)
    config = aws.lambda_.get_function_configuration(FunctionName="loadtest-t2-0-fn")
    env = config["Environment"]["Variables"]
    queue, dlq = made.get("loadtest-t2-0-jobs"), made.get("loadtest-t2-0-dlq")
    assert env["JOBS"] == f"{queue.ident}|{queue.arn}|{dlq.ident}"
    assert env["IDEM"] == "loadtest-t2-0-idem"
    assert aws.dynamodb.describe_table(TableName="loadtest-t2-0-idem")["Table"]["KeySchema"] == [
        {"AttributeName": "id", "KeyType": "HASH"}
    ]


def test_deploy_refuses_a_named_table_that_already_exists(aws: Clients) -> None:
    aws.dynamodb.create_table(
        TableName="Orders",
        KeySchema=[{"AttributeName": "orderId", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "orderId", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    aws.dynamodb.put_item(TableName="Orders", Item={"orderId": {"S": "theirs"}})
    scenario = _scenario({"table": {"name": "Orders", "key": {"orderId": "S"}}})
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="t3", region=REGION)
    made = Deployed()
    code = {f.name: function_zip(parse_ref("conditional")) for f in plan.of_kind(Kind.FUNCTION)}
    with pytest.raises(TableExistsError) as info:
        deploy(plan, aws, code, into=made, sleep=lambda s: None)
    assert str(info.value).startswith(
        f"table 'Orders' already exists in {REGION}; the run creates and deletes its own tables "
        "and never touches one it did not make"
    )
    # Never made, so never torn down: the existing table and its item stay.
    assert "Orders" not in [c.name for c in made.created]
    teardown(aws, made)
    assert aws.dynamodb.scan(TableName="Orders")["Count"] == 1

"""Attach mode on moto: the user's function is observed for the run and restored exactly."""

from __future__ import annotations

import io
import json
import zipfile
from contextlib import AbstractContextManager

import pytest

from loadtest.deploy.deploy_plan import RUN_TAG, WRAPPER_HANDLER
from loadtest.deploy.lambda_attach import (
    ATTACHED_ENV,
    FunctionSnapshot,
    attached,
    observed,
    restore_leftover,
)
from loadtest.deploy.lambda_deploy import Clients
from loadtest.errors import InputError


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", "def handler(event, context):\n    return None\n")
    return buffer.getvalue()


def _role(aws: Clients) -> str:
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    return aws.iam.create_role(RoleName="user-role", AssumeRolePolicyDocument=json.dumps(policy))[
        "Role"
    ]["Arn"]


def _layer(aws: Clients, name: str) -> str:
    return aws.lambda_.publish_layer_version(LayerName=name, Content={"ZipFile": _zip()})[
        "LayerVersionArn"
    ]


def _function(aws: Clients, *, env: dict[str, str] | None, layers: list[str]) -> FunctionSnapshot:
    kwargs = {"Environment": {"Variables": env}} if env is not None else {}
    aws.lambda_.create_function(
        FunctionName="user-fn",
        Runtime="python3.12",
        Handler="app.handler",
        Role=_role(aws),
        Code={"ZipFile": _zip()},
        Layers=layers,
        Tags={"team": "orders"},
        **kwargs,  # type: ignore[arg-type]
    )
    return FunctionSnapshot.of(aws.lambda_, "user-fn")


def _attach(aws: Clients, layer: str) -> AbstractContextManager[FunctionSnapshot]:
    return attached(
        aws.lambda_,
        "user-fn",
        layer_arn=layer,
        watch_table="orders",
        key_names=("id",),
        observation_queue="obs",
        run_id="r7",
        sleep=lambda s: None,
    )


def test_attach_changes_handler_layers_and_env_then_restores_exactly(aws: Clients) -> None:
    existing = _layer(aws, "user-deps")
    before = _function(aws, env={"TABLE_NAME": "orders", "MODE": "prod"}, layers=[existing])
    observer_layer = _layer(aws, "loadtest-r7-observer")
    with _attach(aws, observer_layer) as snapshot:
        assert snapshot == before
        config = aws.lambda_.get_function_configuration(FunctionName="user-fn")
        assert config["Handler"] == WRAPPER_HANDLER
        assert [layer["Arn"] for layer in config["Layers"]] == [existing, observer_layer]
        env = config["Environment"]["Variables"]
        assert env["LOADTEST_ORIGINAL_HANDLER"] == "app.handler"
        assert env["MODE"] == "prod" and env["LOADTEST_WATCH_TABLE"] == "orders"
        assert json.loads(env[ATTACHED_ENV])["run"] == "r7"
    assert FunctionSnapshot.of(aws.lambda_, "user-fn") == before
    tags = aws.lambda_.list_tags(
        Resource=aws.lambda_.get_function(FunctionName="user-fn")["Configuration"]["FunctionArn"]
    )["Tags"]
    assert tags == {"team": "orders"} and RUN_TAG not in tags  # never ours to delete


@pytest.mark.parametrize("failure", [RuntimeError("run failed"), KeyboardInterrupt()])
def test_restore_also_on_failure_and_ctrl_c(aws: Clients, failure: BaseException) -> None:
    before = _function(aws, env=None, layers=[])  # nothing to keep but the absence
    with pytest.raises(type(failure)), _attach(aws, _layer(aws, "obs-layer")):
        raise failure
    assert FunctionSnapshot.of(aws.lambda_, "user-fn") == before
    assert before.variables == () and before.layers == ()


def test_a_run_killed_before_restoring_is_undone_from_the_note(aws: Clients) -> None:
    before = _function(aws, env={"A": "1"}, layers=[])
    wanted = observed(
        before,
        layer_arn=_layer(aws, "obs-layer"),
        watch_table="orders",
        key_names=("id",),
        observation_queue="obs",
        run_id="dead",
    )
    aws.lambda_.update_function_configuration(**wanted.update())  # and then loadtest was killed
    assert restore_leftover(aws.lambda_, "user-fn", sleep=lambda s: None) == "dead"
    assert FunctionSnapshot.of(aws.lambda_, "user-fn") == before
    assert restore_leftover(aws.lambda_, "user-fn", sleep=lambda s: None) is None


def test_attach_refuses_what_it_could_not_undo(aws: Clients) -> None:
    before = _function(aws, env={"LOADTEST_WATCH_TABLE": "x"}, layers=[])
    with pytest.raises(InputError, match="already sets LOADTEST_WATCH_TABLE"):
        observed(
            before,
            layer_arn="arn:l",
            watch_table="t",
            key_names=("id",),
            observation_queue="q",
            run_id="r",
        )
    twice = FunctionSnapshot("f", WRAPPER_HANDLER, (), ())
    with pytest.raises(InputError, match="already attached"):
        observed(
            twice,
            layer_arn="l",
            watch_table="t",
            key_names=("id",),
            observation_queue="q",
            run_id="r",
        )
    full = FunctionSnapshot("f", "app.handler", tuple(f"l{i}" for i in range(5)), ())
    with pytest.raises(InputError, match="no room"):
        observed(
            full,
            layer_arn="l",
            watch_table="t",
            key_names=("id",),
            observation_queue="q",
            run_id="r",
        )
    assert FunctionSnapshot.of(aws.lambda_, "user-fn") == before


def test_observation_queue_lets_the_functions_own_role_send(aws: Clients) -> None:
    from loadtest.deploy.lambda_attach import observation_queue

    role = _role(aws)
    url = observation_queue(aws.sqs, "loadtest-a-observations", role_arn=role, run_id="a")
    attrs = aws.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Policy"])["Attributes"]
    [statement] = json.loads(attrs["Policy"])["Statement"]
    assert statement["Principal"] == {"AWS": role}
    assert "sqs:SendMessage" in statement["Action"]
    assert aws.sqs.list_queue_tags(QueueUrl=url)["Tags"] == {RUN_TAG: "a"}
    assert aws.iam.list_role_policies(RoleName="user-role")["PolicyNames"] == []


def test_attach_sets_the_scenarios_faults_as_a_deploy_does_and_removes_them(
    aws: Clients,
) -> None:
    from loadtest.model.scenario.loading import load_scenario
    from loadtest.observer.fault_env import deployed_fault_environment

    faults = deployed_fault_environment(
        load_scenario("seed-lab").with_overrides(crash_mid_handler=0.25, race_window_ms=7).faults
    )
    before = _function(aws, env={"MODE": "prod"}, layers=[])
    with attached(
        aws.lambda_,
        "user-fn",
        layer_arn=_layer(aws, "loadtest-r7-observer"),
        watch_table="orders",
        key_names=("id",),
        observation_queue="obs",
        run_id="r7",
        faults=faults,
        sleep=lambda s: None,
    ):
        env = aws.lambda_.get_function_configuration(FunctionName="user-fn")["Environment"][
            "Variables"
        ]
        assert env["LOADTEST_CRASH_MID_HANDLER"] == "0.25"
        assert env["LOADTEST_RACE_WINDOW_MS"] == "7"
    assert FunctionSnapshot.of(aws.lambda_, "user-fn") == before


def test_attach_tells_the_function_its_queues_dead_letter_queue_and_removes_it(
    aws: Clients,
) -> None:
    # A record the attached function parks there is dead-lettered, not an effect.
    before = _function(aws, env={"MODE": "prod"}, layers=[])
    dlq = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
    with attached(
        aws.lambda_,
        "user-fn",
        layer_arn=_layer(aws, "loadtest-r8-observer"),
        watch_table="orders",
        key_names=("id",),
        observation_queue="obs",
        run_id="r8",
        dead_letter_queue=dlq,
        sleep=lambda s: None,
    ):
        env = aws.lambda_.get_function_configuration(FunctionName="user-fn")["Environment"][
            "Variables"
        ]
        assert env["LOADTEST_DEAD_LETTER_QUEUES"] == dlq
    assert FunctionSnapshot.of(aws.lambda_, "user-fn") == before

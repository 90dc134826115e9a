"""State machine and function sinks on an AWS target (moto in-process): each made with a
role of its own, tagged, waited for while IAM has not propagated the role, deleted
wholly afterwards; found and deleted by the run's tag after a killed run, touching nothing
untagged."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError

from loadtest.aws import clients as lt
from loadtest.aws.role_ready import ROLE_RETRY_S, once_role_is_usable
from loadtest.deploy.deploy_plan import RUN_TAG, Kind
from loadtest.deploy.lambda_cleanup import delete_found, find_tagged
from loadtest.deploy.lambda_deploy import Clients
from loadtest.errors import BackendError
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.placeholders import Sink
from tests.conftest import REGION

PREFIX = "loadtest-r1-0"
MACHINE = Sink(EffectKind.STATE_MACHINE, "ship")
FUNCTION = Sink(EffectKind.FUNCTION, "notify")
ON_AWS = lt.Target(lt.BackendKind.AWS, None, REGION)

LAMBDA_NOT_YET = (
    "InvalidParameterValueException",
    "The role defined for the function cannot be assumed by Lambda.",
)
SFN_NOT_YET = (
    "AccessDeniedException",
    "Neither the global service principal states.amazonaws.com, nor the regional one is "
    "authorized to assume the provided role.",
)
"""What Lambda and Step Functions answer while IAM has not propagated a new role."""


@pytest.fixture
def sinks(aws: Clients) -> Iterator[lt.SinkClients]:
    clients = lt.sink_clients(ON_AWS)
    yield clients
    clients.close()


def _everything(clients: lt.SinkClients) -> dict[str, set[str]]:
    return {
        "roles": {r["RoleName"] for r in clients.iam.list_roles()["Roles"]},
        "functions": {f["FunctionName"] for f in clients.lambda_.list_functions()["Functions"]},
        "machines": {
            m["name"] for m in clients.stepfunctions.list_state_machines()["stateMachines"]
        },
        "queues": set(clients.sqs.list_queues().get("QueueUrls", [])),
    }


def _untagged(clients: lt.SinkClients) -> None:
    """A role, function and state machine loadtest did not make (named as if it had)."""
    arn = clients.iam.create_role(
        RoleName="loadtest-keep",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    clients.lambda_.create_function(
        FunctionName="loadtest-keep",
        Runtime="python3.12",
        Role=arn,
        Handler="index.handler",
        Code={"ZipFile": lt.capture_zip()},
    )
    clients.stepfunctions.create_state_machine(
        name="loadtest-keep", definition='{"StartAt":"A","States":{}}', roleArn=arn
    )


def test_on_aws_a_state_machine_and_a_function_sink_are_made_with_roles_tagged_and_wholly_deleted(
    sinks: lt.SinkClients,
) -> None:
    _untagged(sinks)
    before = _everything(sinks)
    made: list[lt.MadeSink] = []
    lt.create_sinks(
        sinks, [MACHINE, FUNCTION], PREFIX, into=made, target=ON_AWS, tags={RUN_TAG: "r1"}
    )
    machine, function = made
    assert (machine.role, function.role) == ("loadtest-r1-0-ship", "loadtest-r1-0-notify")
    for one, service in ((machine, "states.amazonaws.com"), (function, "lambda.amazonaws.com")):
        role = sinks.iam.get_role(RoleName=one.role)["Role"]
        document: Any = role["AssumeRolePolicyDocument"]
        trust = json.loads(document) if isinstance(document, str) else document
        assert [s["Principal"] for s in trust["Statement"]] == [{"Service": service}]
        tags = {t["Key"]: t["Value"] for t in sinks.iam.list_role_tags(RoleName=one.role)["Tags"]}
        assert tags == {"created-by": "loadtest", RUN_TAG: "r1"}
    described = sinks.stepfunctions.describe_state_machine(stateMachineArn=machine.address)
    assert described["roleArn"] == sinks.iam.get_role(RoleName=machine.role)["Role"]["Arn"]
    assert sinks.iam.list_role_policies(RoleName=machine.role)["PolicyNames"] == []
    assert sinks.iam.list_role_policies(RoleName=function.role)["PolicyNames"] == [
        "loadtest-capture"
    ]
    machine_tags = sinks.stepfunctions.list_tags_for_resource(resourceArn=machine.address)
    assert {"key": RUN_TAG, "value": "r1"} in machine_tags["tags"]
    assert sinks.lambda_.list_tags(Resource=function.address)["Tags"] == {
        "created-by": "loadtest",
        RUN_TAG: "r1",
    }
    during = _everything(sinks)
    assert during["roles"] - before["roles"] == {machine.role, function.role}
    assert during["machines"] - before["machines"] == {machine.name}
    assert during["functions"] - before["functions"] == {function.name}
    assert during["queues"] - before["queues"] == {function.capture_url}

    assert lt.delete_sinks(sinks, made) == []
    assert made == []
    assert _everything(sinks) == before


class _NotYetAssumable:
    """A client whose ``operation`` fails ``times`` times as it does while IAM has not
    propagated a new role (everything else is the real client's)."""

    def __init__(self, real: Any, operation: str, error: tuple[str, str], times: int) -> None:
        self.real, self.operation, self.error, self.left = real, operation, error, times
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.real, name)
        if name != self.operation:
            return attribute

        def call(**kwargs: Any) -> Any:
            self.calls += 1
            if self.left:
                self.left -= 1
                code, message = self.error
                raise ClientError({"Error": {"Code": code, "Message": message}}, name)
            return attribute(**kwargs)

        return call


def test_a_new_role_not_yet_assumable_is_waited_for(sinks: lt.SinkClients) -> None:
    machines = _NotYetAssumable(sinks.stepfunctions, "create_state_machine", SFN_NOT_YET, 3)
    functions = _NotYetAssumable(sinks.lambda_, "create_function", LAMBDA_NOT_YET, 2)
    slow = sinks.replace(stepfunctions=machines, lambda_=functions)
    slept: list[float] = []
    made: list[lt.MadeSink] = []
    lt.create_sinks(slow, [MACHINE, FUNCTION], PREFIX, into=made, target=ON_AWS, sleep=slept.append)
    assert (machines.calls, functions.calls) == (4, 3)
    assert slept == [ROLE_RETRY_S] * 5
    assert all(m.address for m in made)
    assert lt.delete_sinks(sinks, made) == []


def test_an_interrupt_while_waiting_for_the_role_still_deletes_it(sinks: lt.SinkClients) -> None:
    before = _everything(sinks)
    never = _NotYetAssumable(sinks.stepfunctions, "create_state_machine", SFN_NOT_YET, 10**6)
    slow = sinks.replace(stepfunctions=never)
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 2:
            raise KeyboardInterrupt

    made: list[lt.MadeSink] = []
    with pytest.raises(KeyboardInterrupt):
        lt.create_sinks(slow, [MACHINE], PREFIX, into=made, target=ON_AWS, sleep=sleep)
    [half] = made
    assert half.role == "loadtest-r1-0-ship" and not half.address
    assert "loadtest-r1-0-ship" in _everything(sinks)["roles"]
    assert lt.delete_sinks(sinks, made) == []
    assert _everything(sinks) == before


def test_on_aws_a_function_sink_is_waited_for_until_it_is_active(sinks: lt.SinkClients) -> None:
    states = ["Pending", "Pending"]
    asked: list[str] = []

    def get_function(**_: Any) -> Any:
        # Lambda answers a function just made as Pending for a while (botocore's
        # function_active_v2 waiter reads GetFunction's Configuration.State).
        state = states.pop(0) if states else "Active"
        asked.append(state)
        return SimpleNamespace(status_code=200), {"Configuration": {"State": state}}

    sinks.lambda_.meta.events.register("before-call.lambda.GetFunction", get_function)
    made: list[lt.MadeSink] = []
    lt.create_sinks(sinks, [FUNCTION], PREFIX, into=made, target=ON_AWS)
    assert asked == ["Pending", "Pending", "Active"]
    assert lt.delete_sinks(sinks, made) == []


def test_a_role_never_assumable_ends_the_wait_naming_it() -> None:
    now = [0.0]
    calls: list[int] = []

    def create() -> str:
        calls.append(1)
        code, message = SFN_NOT_YET
        raise ClientError({"Error": {"Code": code, "Message": message}}, "CreateStateMachine")

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with pytest.raises(BackendError) as ran_out:
        once_role_is_usable(
            create, "loadtest-r1-0-ship", timeout_s=10, sleep=sleep, clock=lambda: now[0]
        )
    assert str(ran_out.value) == (
        "role loadtest-r1-0-ship could still not be assumed 10 s after it was made (IAM had "
        f"not propagated it yet): {SFN_NOT_YET[1]}"
    )
    assert len(calls) == 6  # at 0, 2, 4, 6, 8 and 10 s


def test_any_other_refusal_is_not_waited_for() -> None:
    def create() -> str:
        raise ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "not authorized to perform"}},
            "CreateStateMachine",
        )

    slept: list[float] = []
    with pytest.raises(ClientError):
        once_role_is_usable(create, "r", sleep=slept.append)
    assert slept == []


def test_cleanup_by_tag_deletes_what_a_killed_run_left_of_its_sinks_and_nothing_else(
    aws: Clients, sinks: lt.SinkClients
) -> None:
    _untagged(sinks)
    before = _everything(sinks)
    left: list[lt.MadeSink] = []
    # The run is killed after making its sinks: nothing deletes them but the cleanup.
    lt.create_sinks(
        sinks, [MACHINE, FUNCTION], PREFIX, into=left, target=ON_AWS, tags={RUN_TAG: "r1"}
    )
    machine, function = left
    clients = dataclasses.replace(aws, sinks=sinks)
    found = find_tagged(clients, "r1")
    assert sorted((str(f.kind), f.name) for f in found) == sorted(
        [
            (str(Kind.FUNCTION), function.name),
            (str(Kind.ROLE), function.role),
            (str(Kind.ROLE), machine.role),
            (str(Kind.QUEUE), function.capture_url.rsplit("/", 1)[-1]),
            (str(Kind.SINK), f"state_machine {machine.name}"),
        ]
    )
    assert find_tagged(clients, "r2") == []
    assert delete_found(clients, found) == []
    assert _everything(sinks) == before
    assert find_tagged(clients) == []

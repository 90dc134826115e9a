"""Step Functions on the embedded backend: an execution name already used is refused with
ExecutionAlreadyExists when the input differs; the same name and input of a running
execution answer that execution again, and a closed execution's name is refused whatever the
input, as AWS does for a standard state machine."""

from __future__ import annotations

import json

import pytest
from botocore.exceptions import ClientError

from tests.backend.aws_clients import stepfunctions, unique

_DEFINITION = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Pass", "End": True}}})


def test_an_execution_name_already_used_is_refused_when_the_input_differs(
    backend_url: str,
) -> None:
    client = stepfunctions(backend_url)
    machine = client.create_state_machine(
        name=unique("backend-test"),
        definition=_DEFINITION,
        roleArn="arn:aws:iam::123456789012:role/backend-test",
    )["stateMachineArn"]
    first = client.start_execution(stateMachineArn=machine, name="order-o-1", input='{"n": 1}')

    again = client.start_execution(stateMachineArn=machine, name="order-o-1", input='{"n": 1}')
    assert again["executionArn"] == first["executionArn"]

    with pytest.raises(ClientError) as refused:
        client.start_execution(stateMachineArn=machine, name="order-o-1", input='{"n": 2}')
    assert refused.value.response["Error"]["Code"] == "ExecutionAlreadyExists"

    # moto does not run the machine: its executions stay RUNNING until stopped. Once
    # closed, even the same input is refused, as AWS refuses it.
    assert client.describe_execution(executionArn=first["executionArn"])["status"] == "RUNNING"
    client.stop_execution(executionArn=first["executionArn"])
    with pytest.raises(ClientError) as closed:
        client.start_execution(stateMachineArn=machine, name="order-o-1", input='{"n": 1}')
    assert closed.value.response["Error"]["Code"] == "ExecutionAlreadyExists"

    executions = client.list_executions(stateMachineArn=machine)["executions"]
    assert [execution["name"] for execution in executions] == ["order-o-1"]
    client.delete_state_machine(stateMachineArn=machine)

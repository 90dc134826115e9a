"""Waiting until a deployed run's resources are ready: tables, functions, mappings, the role.

Owns polling with a deadline (``poll``), a table ACTIVE (``wait_table_active``, boto3's
waiter), a function Active with no update in progress (``function_active``) and a mapping
Enabled (``wait_mapping_enabled``); creating a function once IAM has propagated its new
role (``create_function_once_role_is_usable``) follows ``loadtest.aws.role_ready``'s rule.
Synchronous boto3 clients the caller passes in; a wait that runs out raises
``BackendError``; what a call refuses is left to the caller's translation
(``loadtest.aws.clients.translated``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import botocore.exceptions

from loadtest.aws.role_ready import ROLE_RETRY_S as ROLE_RETRY_S
from loadtest.aws.role_ready import once_role_is_usable
from loadtest.errors import BackendError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient
    from mypy_boto3_lambda.client import LambdaClient


def poll(
    what: str,
    ready: Callable[[], bool],
    *,
    timeout_s: float,
    interval_s: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    deadline = clock() + timeout_s
    while not ready():
        if clock() >= deadline:
            raise BackendError(f"{what} was not ready within {timeout_s:g} s")
        sleep(interval_s)


TABLE_POLL_S = 1
"""Seconds between the ``table_exists`` waiter's DescribeTable calls."""


def wait_table_active(dynamodb: DynamoDBClient, name: str, *, timeout_s: float = 300) -> None:
    """Wait until the table is ACTIVE, with boto3's ``table_exists`` waiter.

    The waiter sleeps by itself (``time.sleep``): a table on moto or MiniStack is
    ACTIVE at once, so tests that stub ``sleep`` do not wait here either.
    """
    attempts = max(1, math.ceil(timeout_s / TABLE_POLL_S))
    try:
        dynamodb.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": TABLE_POLL_S, "MaxAttempts": attempts}
        )
    except botocore.exceptions.WaiterError as exc:
        if exc.kwargs.get("reason") != "Max attempts exceeded":
            raise  # a refusal, not slowness: the adapter translates it with the rest
        raise BackendError(f"table {name} was not ready within {timeout_s:g} s") from exc


def wait_mapping_enabled(
    lambda_: LambdaClient,
    uuid: str,
    *,
    timeout_s: float = 300,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Wait until the mapping is Enabled (it goes Creating -> Enabled); a Disabled one is refused."""

    def enabled() -> bool:
        state = lambda_.get_event_source_mapping(UUID=uuid).get("State", "")
        if state in ("Disabled", "Disabling"):
            raise BackendError(f"event source mapping {uuid} is {state}, not Enabled")
        return state == "Enabled"

    poll(f"event source mapping {uuid}", enabled, timeout_s=timeout_s, sleep=sleep)


def function_active(lambda_: LambdaClient, name: str) -> bool:
    config = lambda_.get_function_configuration(FunctionName=name)
    state = config.get("State", "Active")
    if state == "Failed":
        raise BackendError(f"function {name} failed to deploy: {config.get('StateReason', '')}")
    return state == "Active" and config.get("LastUpdateStatus", "Successful") != "InProgress"


def create_function_once_role_is_usable(
    lambda_: LambdaClient,
    kwargs: dict[str, Any],
    *,
    timeout_s: float,
    sleep: Callable[[float], None],
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """``create_function``, retried while IAM has not yet propagated the new role
    (``loadtest.aws.role_ready``, whose ``BackendError`` names the role when it runs out)."""
    return once_role_is_usable(
        lambda: dict(lambda_.create_function(**kwargs)),
        str(kwargs.get("Role", "")),
        timeout_s=timeout_s,
        sleep=sleep,
        clock=clock,
    )

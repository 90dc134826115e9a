"""Attach mode: observe a deployed function for one run, then put it back exactly as it was.

What loadtest changes on the user's function, and only for the run: the
handler becomes the observer layer's (``loadtest.observer.lambda_entry.handler``),
the observer layer is appended to its layers, and the environment gains the
observer's variables plus ``LOADTEST_ATTACHED``, a note of what to undo. The
function keeps its code, role, memory, timeout and tags; it is never tagged
``loadtest:run`` (cleanup deletes tagged functions, and this one is not ours).

``attached`` restores the snapshot taken before the change when the run
ends, fails or is interrupted (Ctrl-C included), and checks the restore took.
If loadtest itself is killed first, ``restore_leftover`` (run by
``loadtest cleanup``) undoes the change from the note the function carries.
Synchronous boto3; the client is passed in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from loadtest.deploy.deploy_plan import (
    KEY_NAMES_ENV,
    OBSERVATION_QUEUE_ENV,
    ORIGINAL_HANDLER_ENV,
    RUN_TAG,
    WATCH_TABLE_ENV,
    WRAPPER_HANDLER,
)
from loadtest.deploy.lambda_ready import function_active, poll
from loadtest.errors import BackendError, InputError
from loadtest.observer.layer_environment import ATTACHED_ENV as ATTACHED_ENV
from loadtest.observer.layer_environment import DEAD_LETTER_QUEUES_ENV

if TYPE_CHECKING:
    from mypy_boto3_lambda.client import LambdaClient
    from mypy_boto3_sqs.client import SQSClient

MAX_LAYERS = 5
"""Lambda's limit on layers per function."""


@dataclass(frozen=True)
class FunctionSnapshot:
    """The parts of a function's configuration attach mode changes, as they were."""

    name: str
    handler: str
    layers: tuple[str, ...]
    """Layer version ARNs, in order (order decides which layer's files win)."""
    variables: tuple[tuple[str, str], ...]
    """Environment variables, sorted by name."""

    @staticmethod
    def of(lambda_: LambdaClient, name: str) -> FunctionSnapshot:
        config = lambda_.get_function_configuration(FunctionName=name)
        if config.get("PackageType", "Zip") != "Zip" or not config.get("Handler"):
            raise InputError(
                f"function {name} is a container image: attach mode needs a zip function "
                "(its handler is redirected to the observer layer)"
            )
        variables = config.get("Environment", {}).get("Variables", {})
        return FunctionSnapshot(
            name=name,
            handler=config["Handler"],
            layers=tuple(layer["Arn"] for layer in config.get("Layers", [])),
            variables=tuple(sorted(variables.items())),
        )

    def update(self) -> dict[str, Any]:
        """``update_function_configuration`` arguments that set exactly this."""
        return {
            "FunctionName": self.name,
            "Handler": self.handler,
            "Layers": list(self.layers),
            "Environment": {"Variables": dict(self.variables)},
        }


def observed(
    before: FunctionSnapshot,
    *,
    layer_arn: str,
    watch_table: str,
    key_names: tuple[str, ...],
    observation_queue: str,
    run_id: str,
    faults: Mapping[str, str] = MappingProxyType({}),
    dead_letter_queue: str = "",
) -> FunctionSnapshot:
    """The function as it runs observed: handler redirected, layer appended, variables added
    (``faults``: the scenario's injected faults as the layer reads them, as a deploy sets them;
    ``dead_letter_queue``: its queue's, where a record it parks is dead-lettered, not an
    effect)."""
    current = dict(before.variables)
    if before.handler == WRAPPER_HANDLER or ATTACHED_ENV in current:
        raise InputError(
            f"function {before.name} is already attached to a loadtest run "
            f"({current.get(ATTACHED_ENV, 'handler redirected')}); run `loadtest cleanup` to "
            "restore it first"
        )
    if len(before.layers) >= MAX_LAYERS:
        raise InputError(
            f"function {before.name} has {len(before.layers)} layers, Lambda's maximum: "
            "no room for the observer layer"
        )
    added = {
        ORIGINAL_HANDLER_ENV: before.handler,
        WATCH_TABLE_ENV: watch_table,
        KEY_NAMES_ENV: ",".join(key_names),
        OBSERVATION_QUEUE_ENV: observation_queue,
        **({DEAD_LETTER_QUEUES_ENV: dead_letter_queue} if dead_letter_queue else {}),
        **faults,
    }
    clash = sorted(set(added) & set(current))
    if clash:
        raise InputError(
            f"function {before.name} already sets {', '.join(clash)}; attach mode would overwrite it"
        )
    note = {
        "run": run_id,
        "handler": before.handler,
        "layers": list(before.layers),
        "added": sorted([*added, ATTACHED_ENV]),
    }
    added[ATTACHED_ENV] = json.dumps(note, separators=(",", ":"))
    return FunctionSnapshot(
        name=before.name,
        handler=WRAPPER_HANDLER,
        layers=(*before.layers, layer_arn),
        variables=tuple(sorted({**current, **added}.items())),
    )


def _apply(
    lambda_: LambdaClient,
    wanted: FunctionSnapshot,
    *,
    timeout_s: float,
    sleep: Callable[[float], None],
) -> None:
    def ready() -> bool:
        return function_active(lambda_, wanted.name)

    poll(f"function {wanted.name}", ready, timeout_s=timeout_s, sleep=sleep)
    lambda_.update_function_configuration(**wanted.update())
    poll(f"function {wanted.name}", ready, timeout_s=timeout_s, sleep=sleep)


def restore(
    lambda_: LambdaClient,
    before: FunctionSnapshot,
    *,
    timeout_s: float = 120,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Set the snapshot back and check it took; raise ``BackendError`` naming what differs."""
    _apply(lambda_, before, timeout_s=timeout_s, sleep=sleep)
    now = FunctionSnapshot.of(lambda_, before.name)
    if now != before:
        raise BackendError(
            f"function {before.name} was not restored exactly: expected {before}, found {now}"
        )


@contextmanager
def attached(
    lambda_: LambdaClient,
    name: str,
    *,
    layer_arn: str,
    watch_table: str,
    key_names: tuple[str, ...],
    observation_queue: str,
    run_id: str,
    faults: Mapping[str, str] = MappingProxyType({}),
    dead_letter_queue: str = "",
    timeout_s: float = 120,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[FunctionSnapshot]:
    """Observe ``name`` for the block; restore it exactly on the way out, whatever happens.

    Yields the snapshot taken before the change. A Ctrl-C during the restore
    does not stop it: the restore is retried once before the interrupt goes on.
    """
    before = FunctionSnapshot.of(lambda_, name)
    wanted = observed(
        before,
        layer_arn=layer_arn,
        watch_table=watch_table,
        key_names=key_names,
        observation_queue=observation_queue,
        run_id=run_id,
        faults=faults,
        dead_letter_queue=dead_letter_queue,
    )
    try:
        _apply(lambda_, wanted, timeout_s=timeout_s, sleep=sleep)
        yield before
    finally:
        try:
            restore(lambda_, before, timeout_s=timeout_s, sleep=sleep)
        except KeyboardInterrupt:
            restore(lambda_, before, timeout_s=timeout_s, sleep=sleep)
            raise


def restore_leftover(
    lambda_: LambdaClient,
    name: str,
    *,
    timeout_s: float = 120,
    sleep: Callable[[float], None] = time.sleep,
) -> str | None:
    """Undo an attach whose run died before restoring; the run id, or None if not attached."""
    config = lambda_.get_function_configuration(FunctionName=name)
    variables = dict(config.get("Environment", {}).get("Variables", {}))
    raw = variables.get(ATTACHED_ENV)
    if raw is None:
        return None
    note = json.loads(raw)
    for key in note["added"]:
        variables.pop(key, None)
    original = FunctionSnapshot(
        name=name,
        handler=str(note["handler"]),
        layers=tuple(note["layers"]),
        variables=tuple(sorted(variables.items())),
    )
    restore(lambda_, original, timeout_s=timeout_s, sleep=sleep)
    return str(note["run"])


def observation_queue(sqs: SQSClient, name: str, *, role_arn: str, run_id: str) -> str:
    """Create attach mode's observation queue, tagged with the run, whose resource policy lets
    the function's own role send to it (so the user's role is never changed); its URL."""
    url = sqs.create_queue(
        QueueName=name,
        Attributes={"MessageRetentionPeriod": "86400"},
        tags={RUN_TAG: run_id},
    )["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "loadtest-observer",
                "Effect": "Allow",
                "Principal": {"AWS": role_arn},
                "Action": ["sqs:SendMessage", "sqs:GetQueueUrl"],
                "Resource": arn,
            }
        ],
    }
    sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps(policy)})
    return url

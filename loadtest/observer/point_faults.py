"""A load run's point faults, drawn at random inside a local execution environment.

The faults ``explore`` injects at points it chooses (``loadtest.model.explore.points``), here
drawn with a probability each (``[faults] point``, ``--point-fault NAME:P``) so a burst
can include them. Their probabilities arrive in ``LOADTEST_POINT_FAULTS``
(``loadtest.observer.fault_env`` writes it); the draws come from the environment's
seeded fault sequence, so a run is reproduced by its seed. At each call the handler
makes to the watched table (reads too), through the observer's hooks:

- ``throttle``, before the call is sent: it is answered with DynamoDB's throttling error
  (``ProvisionedThroughputExceededException``, as after the SDK's retries) and not run;
- once the call is answered, before the handler sees the answer: ``crash`` kills the
  environment (as the crash-mid-handler fault does, through the entry point's exit), ``timeout`` cuts the invocation off as
  its function timeout does (the environment is replaced), ``redeliver`` makes the
  invocation's messages visible again at once (``ChangeMessageVisibility`` to 0, as an
  expired visibility timeout does) so another environment receives them while this one
  still works;
- ``ack-lost``, once per invocation that succeeded: the parent deletes nothing (the
  acknowledgement is lost), the messages come back after the visibility timeout.

Imports only the standard library and botocore: the observer layer carries it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from loadtest.observer.layer_environment import POINT_FAULTS_ENV

POINT_CRASH_EXIT = 88
"""The exit status of an environment the ``crash`` point fault killed."""
POINT_TIMEOUT_EXIT = 87
"""The exit status of an environment whose invocation the ``timeout`` point fault cut off
(the parent reports a timeout and replaces it, as Lambda does)."""
POINT_TIMEOUT_MESSAGE = (
    "Task timed out: the invocation was cut off right after a call was answered "
    "(injected point fault: timeout)"
)
POINT_CRASH_MESSAGE = (
    "Runtime exited right after a call was answered, before the handler saw the answer "
    "(injected point fault: crash)"
)
ACK_LOST_MESSAGE = (
    "the handler succeeded; its acknowledgement was lost (injected point fault: ack-lost)"
)
THROTTLE_CODE = "ProvisionedThroughputExceededException"

Exit = Callable[[str, int], NoReturn]
"""Ends the environment at once with a message and an exit status."""


def parse(environ: Mapping[str, str]) -> dict[str, float]:
    """The probabilities by fault from ``LOADTEST_POINT_FAULTS`` (``name=p,...``)."""
    text = environ.get(POINT_FAULTS_ENV, "")
    out: dict[str, float] = {}
    for pair in filter(None, text.split(",")):
        name, _, value = pair.partition("=")
        out[name.strip()] = float(value)
    return out


class PointFaults:
    """One environment's point faults: the observer's hooks and the end-of-invocation draw."""

    def __init__(
        self,
        probabilities: Mapping[str, float],
        rng: random.Random,
        exit: Exit,
        sqs: Callable[[], Any] | None = None,
    ) -> None:
        self.probabilities = dict(probabilities)
        self.rng = rng
        self.exit = exit
        self._sqs_factory = sqs
        self._sqs: Any = None
        self._records: list[tuple[str, str]] = []
        """The invocation's (queue ARN, receipt handle) pairs, for ``redeliver``."""
        self._redelivered = False

    def _draw(self, name: str) -> bool:
        probability = self.probabilities.get(name, 0.0)
        return probability > 0 and self.rng.random() < probability

    def begin(self, event: Any) -> None:
        """An invocation starts with ``event``: its messages are the ones ``redeliver`` acts on."""
        records = event.get("Records", []) if isinstance(event, dict) else []
        self._records = [
            (str(r.get("eventSourceARN", "")), str(r.get("receiptHandle", "")))
            for r in records
            if isinstance(r, dict) and r.get("receiptHandle")
        ]
        self._redelivered = False

    def before_call(self, operation: str) -> tuple[Any, Any] | None:
        if not self._draw("throttle"):
            return None
        return _throttled(operation)

    def after_call(self, operation: str) -> None:
        if self._draw("crash"):
            self.exit(f"{POINT_CRASH_MESSAGE} ({operation})", POINT_CRASH_EXIT)
        if self._draw("timeout"):
            self.exit(f"{POINT_TIMEOUT_MESSAGE} ({operation})", POINT_TIMEOUT_EXIT)
        if self._draw("redeliver") and not self._redelivered:
            self._redelivered = True
            self._redeliver()

    def ack_lost(self) -> bool:
        """Drawn once an invocation succeeded: whether its acknowledgement is lost."""
        return self._draw("ack-lost")

    def _redeliver(self) -> None:
        if self._sqs is None:
            if self._sqs_factory is not None:
                self._sqs = self._sqs_factory()
            else:
                import boto3

                self._sqs = boto3.client("sqs")
        urls: dict[str, str] = {}
        for arn, handle in self._records:
            if arn not in urls:
                urls[arn] = self._sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[-1])["QueueUrl"]
            self._sqs.change_message_visibility(
                QueueUrl=urls[arn], ReceiptHandle=handle, VisibilityTimeout=0
            )


def _throttled(operation: str) -> tuple[Any, dict[str, Any]]:
    """DynamoDB's throttling answer to ``operation``, as botocore parses it (status 400)."""
    from botocore.awsrequest import AWSResponse
    from botocore.compat import HTTPHeaders

    message = (
        f"{operation} throttled: the request rate is too high (injected point fault: throttle)"
    )
    http = AWSResponse("", 400, HTTPHeaders(), None)
    parsed = {
        "Error": {"Code": THROTTLE_CODE, "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": 400, "HTTPHeaders": {}, "RetryAttempts": 0},
        "message": message,
    }
    return http, parsed

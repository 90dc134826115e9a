"""What the doctor's checks share: their names, their result, and how a backend's answer fails a check.

A check whose request the backend answered with an error fails (the doctor
goes on); an unreachable backend or refused credentials raise ``BackendError``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import botocore.exceptions

from loadtest.aws import clients as aws
from loadtest.errors import BackendError, CredentialsError

if TYPE_CHECKING:
    pass

RESOURCE_PREFIX = "loadtest-doctor-"
"""Every table and queue the doctor creates is named ``loadtest-doctor-<hex>-<purpose>``."""

ATOMIC = "conditional-put-atomic"
ALL_OLD = "all-old-on-condition-failure"
PARTIQL = "partiql-insert-refuses-duplicate"
VISIBILITY = "visibility-hides-message"
REDELIVERY = "redelivery-increments-receive-count"
REDRIVE = "redrive-to-dlq"
FIFO_DEDUP = "fifo-deduplication-window"
FIFO_ORDER = "fifo-group-order"
TOPIC_DELIVERS = "topic-delivers-each-publish"
FIFO_TOPIC_DEDUP = "fifo-topic-deduplication"
BUS_DELIVERS = "bus-rule-delivers-detail"
BUCKET_KEY = "bucket-one-object-per-key"
EXECUTION_NAME = "execution-name-unique"
SINK_CHECK_NAMES = (TOPIC_DELIVERS, FIFO_TOPIC_DEDUP, BUS_DELIVERS, BUCKET_KEY, EXECUTION_NAME)
"""The sink checks (``loadtest.doctor.sinks``), in the order they run."""
CHECK_NAMES = (
    ATOMIC,
    ALL_OLD,
    PARTIQL,
    VISIBILITY,
    REDELIVERY,
    REDRIVE,
    FIFO_DEDUP,
    FIFO_ORDER,
    *SINK_CHECK_NAMES,
)
"""The checks ``run_doctor`` reports, in this order."""

CLEANUP = "cleanup"
"""Reported (failed) only when a created table or queue could not be deleted."""

MIN_POOL_CONNECTIONS = 128
"""HTTP connections for the doctor's clients: enough for ``writers`` puts on many keys at once."""
POLL_WAIT_S = 1
"""Long-poll wait (in seconds) per ReceiveMessage."""


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one conformance check."""

    name: str
    """One of ``CHECK_NAMES`` (or ``"cleanup"`` when something could not be deleted)."""
    ok: bool
    """True when the backend behaved as loadtest assumes."""
    summary: str
    """One line with the figures, e.g. ``"1600 conditional puts on 200 keys (...): 200 keys
    with exactly one winner, 0 with more than one ..."``."""
    details: dict[str, int | float | str] = field(default_factory=dict)
    """The figures by name; durations carry their unit (``_s``)."""


def exit_ok(results: Sequence[CheckResult]) -> bool:
    """True when there is at least one result and every one passed."""
    return bool(results) and all(result.ok for result in results)


# --- error handling -----------------------------------------------------------------------


class BackendAnswered(Exception):
    """The backend answered a check's request with an error: that check fails, the run goes on."""


@contextmanager
def backend_calls(action: str, target: aws.Target) -> Iterator[None]:
    """Unreachable or refused credentials raise ``BackendError``; other answers fail the check."""
    try:
        with aws.translated(action, target):
            yield
    except BackendError as exc:
        answered = isinstance(exc.__cause__, botocore.exceptions.ClientError)
        if isinstance(exc, CredentialsError) or not answered:
            raise
        raise BackendAnswered(str(exc)) from exc.__cause__

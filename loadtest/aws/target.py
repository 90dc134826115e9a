"""Where a run's queues and table live (``Target``) and the sessions that reach it.

Owns the region rule (``region_from_environment``, ``DEFAULT_REGION``), the kinds of
backend (``BackendKind``), the credentials an embedded or local endpoint is given
(``EMBEDDED_CREDENTIALS``) and one cached session per fixed credentials. Makes no call to
AWS; ``loadtest.aws.clients`` opens the clients and ``loadtest.aws.errors`` names a
``Target`` in its messages.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import aioboto3


DEFAULT_REGION = "us-east-1"
"""The region when neither the caller nor the environment names one (boto3 would have none)."""


def region_from_environment(given: str | None = None) -> str:
    """``given``, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION``, else ``DEFAULT_REGION``."""
    return (
        given
        or os.environ.get("AWS_REGION")
        or os.environ.get("AWS_DEFAULT_REGION")
        or DEFAULT_REGION
    )


EMBEDDED_CREDENTIALS = (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing"))
"""Fixed credentials for an embedded or local endpoint, which accepts any."""


class BackendKind(StrEnum):
    EMBEDDED = "embedded"
    ENDPOINT = "endpoint"
    AWS = "aws"


@dataclass(frozen=True)
class Target:
    """Where the run's queues and table live."""

    kind: BackendKind
    endpoint_url: str | None
    region: str
    credentials_env: tuple[tuple[str, str], ...] = ()
    """Credentials to use and to hand the consumer; empty means boto3's normal chain."""

    @staticmethod
    def resolve(kind: BackendKind, endpoint_url: str | None) -> Target:
        region = region_from_environment()
        if kind is BackendKind.AWS:
            return Target(kind, None, region)
        creds: tuple[tuple[str, str], ...] = ()
        if kind is BackendKind.EMBEDDED or not _has_credentials():
            # Local emulators accept any key; fixed ones avoid NoCredentialsError.
            creds = EMBEDDED_CREDENTIALS
        return Target(kind, endpoint_url, region, creds)

    @staticmethod
    def control_plane(where: str) -> Target:
        """Real AWS as the deploy, cleanup and lint calls reach it (synchronous boto3), named in
        messages as ``AWS (where)``: a region, or "profile P, region R[, endpoint E]"."""
        return Target(BackendKind.AWS, None, where)

    def session(self) -> aioboto3.Session:
        if self.credentials_env:
            return _fixed_credentials_session(self.credentials_env, self.region)
        import aioboto3  # where a session is made: the CLI's other commands need none

        return aioboto3.Session(region_name=self.region)


@functools.cache
def _fixed_credentials_session(
    credentials_env: tuple[tuple[str, str], ...], region: str
) -> aioboto3.Session:
    """One session per fixed credentials and region for the whole process.

    A session loads the service models and endpoint rules its clients are built from
    and keeps them: a new session cost some 35 ms of CPU for an SQS and a DynamoDB
    client, a shared one 3 ms, and a run opens clients several times (reachability,
    each variant). Fixed credentials hold no refresh state, so the session is no
    event loop's. Credentials from boto3's chain get a new session each time, as they
    may change between runs of a long-lived process.
    """
    import aioboto3

    kwargs = dict(credentials_env)
    return aioboto3.Session(
        aws_access_key_id=kwargs.get("AWS_ACCESS_KEY_ID"),
        aws_secret_access_key=kwargs.get("AWS_SECRET_ACCESS_KEY"),
        region_name=region,
    )


def _has_credentials() -> bool:
    import boto3

    return boto3.Session().get_credentials() is not None


STATS_PATH = "/_loadtest/stats"
"""Where loadtest's embedded backend reports the requests it served, by service."""


@functools.lru_cache(maxsize=16)
def is_loadtest_backend(endpoint_url: str) -> bool:
    """Whether ``endpoint_url`` is loadtest's own backend (``loadtest serve``): it answers
    ``STATS_PATH`` with its counts. Asked once per endpoint in a process."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{endpoint_url}{STATS_PATH}", timeout=5) as response:
            stats = json.load(response)
    except (OSError, ValueError):
        return False
    return isinstance(stats, dict) and isinstance(stats.get("sqs"), int)

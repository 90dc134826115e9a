"""Error translation at the AWS boundary: botocore's exceptions become loadtest's.

Owns the one mapping from a failed call (a ``ClientError`` code, a credentials
or connection failure, alone or inside a task group's exception group) to
``BackendError`` / ``CredentialsError`` with what loadtest was trying to do:
``translated`` around calls, ``translate`` for one exception. Every module that
calls AWS, the deploy path's synchronous clients included, goes through these;
re-exported by ``loadtest.aws.clients``. Must not make calls itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import botocore.exceptions

from loadtest.errors import BackendError, CredentialsError, find_error

if TYPE_CHECKING:
    from loadtest.aws.target import Target

_CREDENTIAL_CODES = frozenset(
    {
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidSignatureException",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "ExpiredTokenException",
        "AccessDenied",
        "AccessDeniedException",
        "MissingAuthenticationToken",
    }
)
_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
"""Refusals of one action: the message names the operation whose permission is missing."""


ERRORS = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, OSError)
"""What a call to the backend raises when it fails (translated by ``translate``)."""


@contextmanager
def translated(action: str, target: Target) -> Iterator[None]:
    """Around calls to the backend: a botocore or connection failure, alone or inside a
    task group's exception group, is raised as the ``BackendError`` or
    ``CredentialsError`` that says what loadtest was trying to do (``action``).

    Cancellation and loadtest's own errors pass through unchanged; so does a
    deadline's ``TimeoutError`` when the deadline is entered outside this block.
    """
    try:
        yield
    except BaseException as exc:
        failure = find_error(exc, ERRORS)
        if failure is None:
            raise
        raise translate(failure, action, target) from failure


def translate(exc: BaseException, action: str, target: Target) -> BaseException:
    """Map a botocore/aiohttp failure to a loadtest error (raise it ``from exc``)."""
    where = target.endpoint_url or f"AWS ({target.region})"
    if isinstance(
        exc, botocore.exceptions.NoCredentialsError | botocore.exceptions.PartialCredentialsError
    ):
        return CredentialsError(
            f"no AWS credentials found while trying to {action}; configure them as for the "
            "AWS CLI (environment, ~/.aws, SSO or an instance role), or use --endpoint-url"
        )
    if isinstance(exc, botocore.exceptions.ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        message = exc.response.get("Error", {}).get("Message", "")
        hint = (
            f" (the missing permission is likely for {exc.operation_name})"
            if code in _DENIED_CODES
            else ""
        )
        if code in _CREDENTIAL_CODES:
            return CredentialsError(
                f"{where} refused the credentials while trying to {action}: {code}: {message}"
                + hint
            )
        return BackendError(f"{where} failed to {action}: {code}: {message}{hint}")
    if isinstance(
        exc,
        botocore.exceptions.EndpointConnectionError
        | botocore.exceptions.ConnectTimeoutError
        | botocore.exceptions.ReadTimeoutError
        | botocore.exceptions.HTTPClientError
        | OSError,
    ):
        return BackendError(f"could not reach {where} to {action}: {exc}")
    if isinstance(exc, botocore.exceptions.BotoCoreError):
        return BackendError(f"{where}: failed to {action}: {exc}")
    return exc

"""Calling a service with an IAM role made seconds ago: retried while IAM has not yet
propagated the role to the service.

IAM is eventually consistent: for some seconds after ``CreateRole`` returns, a service
asked to use the role answers as if it could not assume it. Lambda's CreateFunction
answers InvalidParameterValueException "The role defined for the function cannot be
assumed by Lambda."; Step Functions' CreateStateMachine answers AccessDeniedException
"Neither the global service principal states.amazonaws.com, nor the regional one is
authorized to assume the provided role." Owns that rule (``not_yet_assumable``) and the
bounded wait (``once_role_is_usable``); the deploy's functions and the run's function and
state machine sinks both go through it. Synchronous; the call is the caller's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import botocore.exceptions

from loadtest.errors import BackendError

T = TypeVar("T")

ROLE_RETRY_S = 2.0
"""Seconds between tries while a new role is not yet usable."""
ROLE_WAIT_S = 120.0
"""How long a new role is waited for before the run gives up on it."""

_NOT_YET_ASSUMABLE = (
    ("InvalidParameterValueException", "cannot be assumed"),
    ("AccessDeniedException", "is authorized to assume the provided role"),
)
"""(error code, part of its message) of each service's answer to a role IAM has not yet
propagated to it: Lambda's, then Step Functions'."""


def not_yet_assumable(exc: BaseException) -> bool:
    """Whether ``exc`` is a service's answer to a role it cannot assume yet."""
    if not isinstance(exc, botocore.exceptions.ClientError):
        return False
    error = exc.response.get("Error", {})
    code, message = error.get("Code", ""), error.get("Message", "")
    return any(code == c and part in message for c, part in _NOT_YET_ASSUMABLE)


def once_role_is_usable(
    call: Callable[[], T],
    role: str,
    *,
    timeout_s: float = ROLE_WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> T:
    """``call()``, tried again every ``ROLE_RETRY_S`` while it fails because ``role`` is not
    yet assumable, for at most ``timeout_s``; then a ``BackendError`` naming the role. Any
    other failure is raised at once (the caller translates it)."""
    deadline = clock() + timeout_s
    while True:
        try:
            return call()
        except botocore.exceptions.ClientError as exc:
            if not not_yet_assumable(exc):
                raise
            if clock() >= deadline:
                message = exc.response.get("Error", {}).get("Message", "")
                raise BackendError(
                    f"role {role} could still not be assumed {timeout_s:g} s after it was "
                    f"made (IAM had not propagated it yet): {message}"
                ) from exc
        sleep(ROLE_RETRY_S)

"""The exception tree. Every error loadtest raises on purpose is a LoadtestError.

    LoadtestError
    ├── InputError (ValueError)              bad input: exit code 2
    │   ├── ScenarioError                    scenario file or override
    │   ├── HandlerRefError                  --handler / variant reference
    │   ├── ThresholdError                   threshold expression
    │   ├── PricesError                      price table (--prices FILE)
    │   └── TableExistsError                 a table the scenario names exists on AWS
    ├── BackendError (RuntimeError)          backend unreachable / refused: exit code 3
    │   └── CredentialsError                 no credentials, or refused
    ├── ZygoteError (RuntimeError)           the environments' zygote failed: exit code 4 (no verdict)
    └── ExploreError (RuntimeError)          a delivery under explore never reached a point: exit code 4

Subclasses also inherit the standard exception a caller would catch. Errors
from botocore are translated in one place (``loadtest.aws.clients.translate``) and
re-raised ``from`` the original.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T", bound=BaseException)


class LoadtestError(Exception):
    """Root of every error loadtest raises deliberately."""


class InputError(LoadtestError, ValueError):
    """The user's input is wrong; nothing was created."""


class ScenarioError(InputError):
    """A scenario file, name or override is invalid."""


class HandlerRefError(InputError):
    """A handler reference does not import or is not callable."""


class ThresholdError(InputError):
    """A threshold expression is malformed or names an unknown metric."""


class PricesError(InputError):
    """A price table (``--prices FILE``) is unreadable or lacks a price."""


class TableExistsError(InputError):
    """A table the scenario names (``[table] name``, ``[[tables]] name``) already exists on AWS;
    the run refuses to write into, and delete, a table it did not make."""


class BackendError(LoadtestError, RuntimeError):
    """The backend could not be started, reached, or refused a request."""


class CredentialsError(BackendError):
    """No credentials were found, or the backend refused them."""


class ZygoteError(LoadtestError, RuntimeError):
    """The zygote that forks execution environments did not start, or died during the run."""


class ExploreError(LoadtestError, RuntimeError):
    """``explore`` cannot give a verdict: a delivery ran past its real-time bound without
    reaching a point (it blocked on something the scheduler does not own), or a worker
    process searching the schedules ended without an answer."""


def find_error(exc: BaseException, kind: type[T] | tuple[type[T], ...]) -> T | None:
    """The first ``kind`` in ``exc``, looking inside exception groups (task groups raise them).

    ``kind`` may be a tuple of exception types, as for ``isinstance``.
    """
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = find_error(inner, kind)
            if found is not None:
                return found
    return None

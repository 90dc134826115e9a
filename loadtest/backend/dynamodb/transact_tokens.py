"""The transactions' ClientRequestToken, honoured as DynamoDB honours it.

Owns the replacements of moto's ``DynamoHandler.transact_write_items`` and
``DynamoHandler.execute_transaction`` that ``loadtest.backend.patches`` installs.
moto 5.2 ignores the token of both and applies every call. DynamoDB answers a call that
repeats a completed one's token and request within 10 minutes as it answered the first,
and writes nothing; the same token with another request is an
``IdempotentParameterMismatchException``. (A call still running with the same token cannot
happen here: the embedded backend runs one DynamoDB request at a time.) ExecuteTransaction's
token is the same kind of token (botocore's model marks both ``idempotencyToken``, and both
calls list ``IdempotentParameterMismatchException`` and ``TransactionInProgressException``),
though its API reference documents it only by a line copied from another call. Each call
keeps its own tokens. A consumer that relies on the token for its idempotency is then
judged as it would be on DynamoDB.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from moto.dynamodb.exceptions import ERROR_TYPE_PREFIX, DynamodbException

from loadtest.model.history.log import IDEMPOTENCY_WINDOW_NS

WINDOW_S = IDEMPOTENCY_WINDOW_NS / 1e9


class IdempotentParameterMismatch(DynamodbException):
    error_type = ERROR_TYPE_PREFIX + "IdempotentParameterMismatchException"

    def __init__(self) -> None:
        super().__init__(
            IdempotentParameterMismatch.error_type,
            message="DynamoDB rejected the request because you retried a request with a "
            "different payload but with an idempotent token that was already used.",
        )


def idempotent_transactions(transact: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``transact`` (moto's handler method for one of the transaction calls) with its calls
    kept by token for ``WINDOW_S``."""
    completed: dict[tuple[str, str, str], tuple[str, float, Any]] = {}
    """(account, region, token) -> (the request's digest, when it completed, the answer),
    oldest first."""
    lock = threading.Lock()

    def with_token(self: Any) -> Any:
        token = self.body.get("ClientRequestToken")
        if not token:
            return transact(self)
        key = (str(self.current_account), str(self.region), str(token))
        digest = hashlib.sha256(json.dumps(self.body, sort_keys=True).encode()).hexdigest()
        with lock:
            now = time.monotonic()
            while completed:
                oldest = next(iter(completed))
                if now - completed[oldest][1] <= WINDOW_S:
                    break
                del completed[oldest]
            seen = completed.get(key)
        if seen is not None:
            if seen[0] != digest:
                raise IdempotentParameterMismatch()
            return seen[2]
        answer = transact(self)
        with lock:
            completed[key] = (digest, time.monotonic(), answer)
        return answer

    return with_token

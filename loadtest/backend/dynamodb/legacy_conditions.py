"""The legacy ``ConditionalOperator``, honoured as DynamoDB honours it.

Owns the replacements of moto's ``get_expected`` (where ``moto.dynamodb.models`` and
``moto.dynamodb.models.table`` use it) and of ``DynamoHandler.put_item`` and
``DynamoHandler.update_item``, which ``loadtest.backend.patches`` installs. moto
5.2 joins the conditions of a legacy ``Expected`` with AND whatever the request's
``ConditionalOperator`` says. With ``OR``, DynamoDB writes when any holds: a put
"absent, or the same quantity stored" (``Expected={"id": {"Exists": False}, "quantity":
{...EQ...}}, ConditionalOperator="OR"``) was refused even on an absent item, and every
message dead-lettered. The request's operator is kept for the request's own thread (the
embedded backend runs one DynamoDB request at a time). Not covered: moto ignores
``Expected`` on DeleteItem altogether.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from moto.dynamodb.comparisons import OpOr

_request = threading.local()


def _operator() -> str:
    return str(getattr(_request, "operator", "AND"))


def with_operator(handle: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``handle`` (moto's handler method) with its request's ConditionalOperator kept."""

    def handle_with_operator(self: Any) -> Any:
        _request.operator = self.body.get("ConditionalOperator") or "AND"
        try:
            return handle(self)
        finally:
            _request.operator = "AND"

    return handle_with_operator


def honouring_operator(get_expected: Callable[[dict[str, Any]], Any]) -> Callable[..., Any]:
    """``get_expected`` joining the conditions with OR when the request says so."""

    def get_expected_with_operator(expected: dict[str, Any]) -> Any:
        if _operator() != "OR" or len(expected) < 2:
            return get_expected(expected)
        joined = None
        for name, condition in expected.items():
            one = get_expected({name: condition})
            joined = one if joined is None else OpOr(joined, one)
        return joined

    return get_expected_with_operator

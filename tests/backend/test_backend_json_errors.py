"""A JSON-protocol error built without its XML body is the error moto builds."""

from __future__ import annotations

from typing import Any

import pytest
from moto.core.exceptions import JsonRESTError
from moto.dynamodb.exceptions import (
    ConditionalCheckFailed,
    MockValidationException,
    ResourceNotFoundException,
    TransactionCanceledException,
)

from loadtest.backend import patches


def _errors() -> list[Any]:
    return [
        JsonRESTError("SomeError", "went wrong", "template", extra=1),
        ConditionalCheckFailed(item={"id": {"S": "a"}}),
        ConditionalCheckFailed(),
        MockValidationException("bad input"),
        ResourceNotFoundException(),
        TransactionCanceledException([("ConditionalCheckFailed", "failed", None)]),
    ]


def _state(error: Any) -> dict[str, Any]:
    return {**vars(error), "body": error.get_body(), "headers": error.get_headers()}


def test_errors_carry_what_moto_s_carry(monkeypatch: pytest.MonkeyPatch) -> None:
    patches.apply()
    fast = [_state(error) for error in _errors()]
    moto_init = JsonRESTError.__init__.__wrapped__  # type: ignore[attr-defined]
    monkeypatch.setattr(JsonRESTError, "__init__", moto_init)
    assert fast == [_state(error) for error in _errors()]

"""PartiQL INSERT / UPDATE / DELETE for moto's DynamoDB, run through moto's own item writes.

Owns the three replacement entry points (``execute_statement``, ``batch_execute_statement``,
``execute_transaction``) that ``loadtest.backend.patches`` installs, and
``DuplicateItemException``; statements are read by ``loadtest.model.dynamodb.partiql.statements``. The why is
in ``patches``' docstring. Must not touch SELECT (moto's own) or SQS.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.dynamodb.comparisons import get_filter_expression
from moto.dynamodb.exceptions import (
    ERROR_TYPE_PREFIX,
    ConditionalCheckFailed,
    DynamodbException,
    MockValidationException,
    MultipleTransactionsException,
    TooManyTransactionsException,
    TransactionCanceledException,
)
from moto.dynamodb.models import DynamoDBBackend

from loadtest.model.dynamodb.partiql import statements as partiql


class DuplicateItemException(DynamodbException):
    """DynamoDB's answer to a PartiQL INSERT whose primary key is already stored."""

    error_type = ERROR_TYPE_PREFIX + "DuplicateItemException"
    message_text = "Duplicate primary key exists in table"

    def __init__(self) -> None:
        super().__init__(self.error_type, self.message_text)


_CONDITION_FAILED = ("ConditionalCheckFailed", "The conditional request failed")
# Error codes of a BatchExecuteStatement entry (BatchStatementErrorCodeEnum), by exception.
_BATCH_ERROR_CODES = {
    "DuplicateItemException": "DuplicateItem",
    "ConditionalCheckFailedException": "ConditionalCheckFailed",
    "ResourceNotFoundException": "ResourceNotFound",
    "ValidationException": "ValidationError",
}
_MAX_TRANSACTION_STATEMENTS = 100


@dataclass(frozen=True)
class _PartiqlWrite:
    """One INSERT, UPDATE or DELETE statement, interpreted against its table's key schema."""

    table_name: str
    dml: partiql.Dml
    condition: partiql.Condition | None


def _is_select(statement: str) -> bool:
    return statement.lstrip().lstrip("(").lstrip()[:6].upper() == "SELECT"


def _compile(backend: DynamoDBBackend, statement: str, parameters: Any) -> _PartiqlWrite:
    """The write a statement makes; ValidationException for what it cannot be."""
    try:
        name = partiql.table_name(statement)
    except partiql.StatementNotUnderstood as exc:
        raise MockValidationException(
            f"Statement wasn't well formed, can't be processed: {exc}"
        ) from exc
    table = backend.get_table(name)  # ResourceNotFoundException
    key_names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
    try:
        dml, condition = partiql.parse_with_condition(statement, parameters or [], key_names)
    except partiql.StatementNotUnderstood as exc:
        raise MockValidationException(
            f"Statement wasn't well formed, can't be processed: {exc}"
        ) from exc
    return _PartiqlWrite(table.name, dml, condition)


def _refusal(write: _PartiqlWrite, current: Any) -> tuple[str, str] | None:
    """(code, message) if DynamoDB refuses ``write`` given the stored ``current`` item."""
    kind = write.dml.kind
    if kind == "INSERT":
        return ("DuplicateItem", DuplicateItemException.message_text) if current else None
    if current is None:
        # UPDATE never creates an item; DELETE of a missing key succeeds, deleting nothing.
        return _CONDITION_FAILED if kind == "UPDATE" else None
    if write.condition is not None:
        condition = get_filter_expression(
            write.condition.expression, write.condition.names, write.condition.values
        )
        if not condition.expr(current):
            return _CONDITION_FAILED
    return None


def _attributes(item: Any) -> dict[str, Any] | None:
    return None if item is None else copy.deepcopy(item.to_json()["Attributes"])


def _returned(returning: str | None, old: dict[str, Any], new: dict[str, Any]) -> list[Any]:
    """An UPDATE's ``Items`` for its RETURNING clause (moto's UPDATED_* rule: changed keys)."""
    if returning is None:
        return []
    if returning == "ALL OLD *":
        return [old]
    if returning == "ALL NEW *":
        return [new]
    changed = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
    image = old if returning == "MODIFIED OLD *" else new
    modified = {k: v for k, v in image.items() if k in changed}
    return [modified] if modified else []


def _apply(backend: DynamoDBBackend, write: _PartiqlWrite) -> list[Any]:
    """Run one write as DynamoDB does; its ``Items``. Atomic under ``SerialisedDynamoDB``."""
    dml = write.dml
    current = backend.get_item(write.table_name, dml.key)
    refusal = _refusal(write, current)
    if refusal is not None:
        raise (
            DuplicateItemException() if refusal[0] == "DuplicateItem" else ConditionalCheckFailed()
        )
    old = _attributes(current)
    if dml.kind == "INSERT":
        assert dml.item is not None
        backend.put_item(write.table_name, dml.item)
        return []
    if old is None:  # DELETE of a missing key
        return []
    if dml.kind == "DELETE":
        backend.delete_item(write.table_name, dml.key)
        return [old] if dml.returning else []
    assert dml.update_expression is not None
    updated = backend.update_item(
        write.table_name, dml.key, dml.update_expression, dml.names, dml.values
    )
    return _returned(dml.returning, old, _attributes(updated) or {})


def _restore(backend: DynamoDBBackend, write: _PartiqlWrite, old: dict[str, Any] | None) -> None:
    table = backend.get_table(write.table_name)
    if old is not None:
        table.put_item(old)
        return
    hash_value, range_value = backend.get_keys_value(table, write.dml.key)
    if table.get_item(hash_value, range_value) is not None:
        table.delete_item(hash_value, range_value)


def _make_execute_statement(
    moto_execute_statement: Callable[..., list[Any]],
) -> Callable[..., list[Any]]:
    def execute_statement(
        backend: DynamoDBBackend, statement: str, parameters: list[dict[str, Any]]
    ) -> list[Any]:
        if _is_select(statement):
            return moto_execute_statement(backend, statement, parameters)
        return _apply(backend, _compile(backend, statement, parameters))

    execute_statement.__wrapped__ = moto_execute_statement  # type: ignore[attr-defined]
    return execute_statement


def _batch_entry(backend: DynamoDBBackend, statement: dict[str, Any]) -> dict[str, Any]:
    table_name: str | None = None
    try:
        write = _compile(backend, statement["Statement"], statement.get("Parameters"))
        table_name = write.table_name
        _apply(backend, write)
    except JsonRESTError as exc:
        relative = exc.error_type.rpartition("#")[2]
        code = _BATCH_ERROR_CODES.get(relative, relative.removesuffix("Exception"))
        entry: dict[str, Any] = {"Error": {"Code": code, "Message": exc.message}}
        if table_name is not None:
            entry["TableName"] = table_name
        return entry
    return {"TableName": write.table_name}


def _make_batch_execute_statement(
    moto_batch_execute_statement: Callable[..., list[dict[str, Any]]],
) -> Callable[..., list[dict[str, Any]]]:
    def batch_execute_statement(
        backend: DynamoDBBackend, statements: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        responses: list[dict[str, Any]] = []
        for statement in statements:
            if _is_select(statement["Statement"]):
                responses.extend(moto_batch_execute_statement(backend, [statement]))
            else:
                responses.append(_batch_entry(backend, statement))
        return responses

    batch_execute_statement.__wrapped__ = moto_batch_execute_statement  # type: ignore[attr-defined]
    return batch_execute_statement


def _make_execute_transaction(
    moto_execute_transaction: Callable[..., list[dict[str, Any]]],
) -> Callable[..., list[dict[str, Any]]]:
    def execute_transaction(
        backend: DynamoDBBackend, statements: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        selects = [_is_select(statement["Statement"]) for statement in statements]
        if all(selects):
            return moto_execute_transaction(backend, statements)
        if any(selects):
            raise MockValidationException("A transaction cannot mix reads (SELECT) and writes")
        if len(statements) > _MAX_TRANSACTION_STATEMENTS:
            raise TooManyTransactionsException()
        writes = [
            _compile(backend, statement["Statement"], statement.get("Parameters"))
            for statement in statements
        ]
        targets = {(w.table_name, repr(sorted(w.dml.key.items()))) for w in writes}
        if len(targets) != len(writes):
            raise MultipleTransactionsException()
        # All or nothing: every statement is checked against the stored items first,
        # then all are applied (no other request runs in between: SerialisedDynamoDB).
        currents = [backend.get_item(w.table_name, w.dml.key) for w in writes]
        refusals = [_refusal(w, current) for w, current in zip(writes, currents, strict=True)]
        if any(refusals):
            raise TransactionCanceledException(
                [(r[0], r[1], None) if r else (None, None, None) for r in refusals]
            )
        olds = [_attributes(current) for current in currents]
        done = 0
        try:
            for write in writes:
                _apply(backend, write)
                done += 1
        except Exception:
            for write, old in zip(writes[: done + 1], olds, strict=False):
                _restore(backend, write, old)
            raise
        return []

    execute_transaction.__wrapped__ = moto_execute_transaction  # type: ignore[attr-defined]
    return execute_transaction

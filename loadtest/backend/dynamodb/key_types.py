"""A key attribute of the wrong type, refused at once as DynamoDB refuses it.

Owns the replacements of moto's ``DynamoDBBackend.get_keys_value`` and
``DynamoHandler.put_item`` that ``loadtest.backend.patches`` installs. moto 5.2
looks a key up in its item index before checking its type: a key value of another type
than the table's (a map where the key is a string: what a resource's client sends when
handed an item already in the typed form) cannot be hashed, and the server answers 500,
which botocore retries for about 25 s. It happens to every GetItem, UpdateItem and
DeleteItem with such a key, and to a PutItem that asks for ``ReturnValues=ALL_OLD`` -
which the write observer adds to every put, so the consumer saw something it would not
have seen without it. DynamoDB answers ``ValidationException`` at once: "The provided key
element does not match the schema" for a key, "Type mismatch for key ..." for a put's item
(moto's own message for a put it checks). A put whose item lacks a key attribute is refused
the same way before the lookup ("Missing the key id in the item", DynamoDB's words and
moto's own for a put without ``ReturnValues``): moto's lookup for ``ALL_OLD`` answered a
bare "Validation Exception" first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.dynamodb.exceptions import (
    InvalidAttributeTypeError,
    MockValidationException,
    ProvidedKeyDoesNotExist,
)


def _mismatch(table: Any, attributes: dict[str, Any]) -> tuple[str, str, str] | None:
    """The first key attribute whose type is not the table's: (name, expected, actual)."""
    for name, expected in (
        (table.hash_key_attr, table.hash_key_type),
        (table.range_key_attr, table.range_key_type),
    ):
        value = attributes.get(name) if name else None
        if isinstance(value, dict) and len(value) == 1:
            actual = next(iter(value))
            if actual != expected:
                return str(name), str(expected), str(actual)
    return None


def checked_keys(get_keys_value: Callable[..., Any]) -> Callable[..., Any]:
    """``get_keys_value`` (moto's backend method) refusing a key of the wrong type."""

    def checked_get_keys_value(self: Any, table: Any, keys: dict[str, Any]) -> Any:
        if _mismatch(table, keys) is not None:
            raise ProvidedKeyDoesNotExist()
        return get_keys_value(self, table, keys)

    return checked_get_keys_value


def checked_put(put_item: Callable[..., Any]) -> Callable[..., Any]:
    """``put_item`` (moto's handler method) refusing an item without the table's key, or
    whose key is of the wrong type, before anything looks it up."""

    def checked_put_item(self: Any) -> Any:
        item = self.body.get("Item")
        if isinstance(item, dict):
            table = self.dynamodb_backend.get_table(self.body["TableName"])
            for name in (table.hash_key_attr, table.range_key_attr):
                if name and name not in item:
                    raise MockValidationException(
                        f"One or more parameter values were invalid: Missing the key {name} "
                        "in the item"
                    )
            mismatch = _mismatch(table, item)
            if mismatch is not None:
                name, expected, actual = mismatch
                raise InvalidAttributeTypeError(name, expected_type=expected, actual_type=actual)
        return put_item(self)

    return checked_put_item

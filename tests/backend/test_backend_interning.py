"""Stored DynamoDB items share their attribute names and keep everything else as moto does."""

from __future__ import annotations

from moto.dynamodb.models.dynamo_type import DynamoType, Item

from loadtest.backend import patches


def _attrs(key: str) -> dict[str, dict[str, str]]:
    # names built at run time, as a decoded request's are: equal strings, separate objects
    return {"".join(["i", "d"]): {"S": key}, "".join(["sta", "tus"]): {"S": "done"}}


def test_stored_items_share_their_attribute_names() -> None:
    patches.apply()
    first = Item(DynamoType({"S": "a"}), None, _attrs("a"))
    second = Item(DynamoType({"S": "b"}), None, _attrs("b"))
    assert list(first.attrs) == ["id", "status"]  # same names, same order
    assert first.attrs["id"] == DynamoType({"S": "a"})
    assert second.attrs["status"] == DynamoType({"S": "done"})
    for first_name, second_name in zip(first.attrs, second.attrs, strict=True):
        assert first_name is second_name

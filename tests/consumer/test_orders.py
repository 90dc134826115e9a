"""consumer._orders: the lab's job validation and item shape."""

from __future__ import annotations

import json
from typing import Any

import pytest

from consumer._orders import order_item, parse_single_job


def event_of(*bodies: Any) -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": f"m-{n}",
                "receiptHandle": f"h-{n}",
                "body": b if isinstance(b, str) else json.dumps(b),
            }
            for n, b in enumerate(bodies)
        ]
    }


def test_lab_job_is_accepted() -> None:
    assert parse_single_job(event_of({"id": "dedup-order", "quantity": 4})) == ("dedup-order", 4)


@pytest.mark.parametrize("quantity", [1, 10])
def test_quantity_bounds(quantity: int) -> None:
    assert parse_single_job(event_of({"id": "x", "quantity": quantity})) == ("x", quantity)


@pytest.mark.parametrize(
    "event",
    [
        event_of({"id": "a", "quantity": 1}, {"id": "b", "quantity": 1}),
        {"Records": []},
        {**event_of({"id": "a", "quantity": 1}), "extra": 1},
    ],
)
def test_not_exactly_one_record_is_refused(event: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"^Expected one SQS record$"):
        parse_single_job(event)


@pytest.mark.parametrize(
    "body",
    [
        {"id": "a"},
        {"quantity": 1},
        {"id": "a", "quantity": 1, "note": "x"},
        {"id": 7, "quantity": 1},
        {"id": None, "quantity": 1},
        ["a", 1],
        "a",
    ],
)
def test_wrong_keys_or_id_are_refused(body: Any) -> None:
    with pytest.raises(ValueError, match=r"^Use an id and quantity$"):
        parse_single_job(event_of(json.dumps(body)))


@pytest.mark.parametrize("quantity", [0, 11, -1, True, False, "4", 4.0, None])
def test_bad_quantity_is_refused(quantity: Any) -> None:
    with pytest.raises(ValueError, match=r"^Quantity must be an integer from 1 to 10$"):
        parse_single_job(event_of({"id": "a", "quantity": quantity}))


def test_body_that_is_not_json_raises_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_single_job(event_of("not json"))


@pytest.mark.parametrize(
    ("order_id", "quantity", "total_cents"),
    [("dedup-order", 4, "1100"), ("other-order", 1, "350"), ("max", 10, "2600")],
)
def test_order_item(order_id: str, quantity: int, total_cents: str) -> None:
    assert order_item(order_id, quantity) == {
        "id": {"S": order_id},
        "quantity": {"N": str(quantity)},
        "total_cents": {"N": total_cents},
    }

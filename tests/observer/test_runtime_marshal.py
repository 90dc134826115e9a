"""The response Lambda's Python runtime gives for a handler's return value, value by value.

Each row's expected outcome is read from the runtime's code, not from running it:
awslambdaric/lambda_runtime_marshaller.py (aws/aws-lambda-python-runtime-interface-client):
``Encoder(use_decimal=False, allow_nan=True)`` on simplejson, ``default`` answering a Decimal
as ``RawJSON(str(d))`` (a NaN Decimal as ``math.nan``), bytes returned as they are, and
``FaultException(MARSHAL_ERROR, "Unable to marshal response: {e}")`` on any encoder error;
the encoder's order and messages from simplejson/encoder.py (``_make_iterencode``,
``_stringify_key``, ``call_method``, ``JSONEncoder.default``).
"""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import math
import random
from collections import OrderedDict, namedtuple
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pytest

from loadtest.observer import lambda_entry, left_work
from loadtest.observer.runtime_marshal import (
    BYTES_CONTENT_TYPE,
    MarshalError,
    marshal_response,
    response_value,
)

Point = namedtuple("Point", "x y")


class Colour(enum.IntEnum):
    RED = 1


class Name(enum.StrEnum):
    ADA = "ada"


class HasAsDict:
    """Not a tuple, yet simplejson encodes any object with a callable ``_asdict``."""

    def _asdict(self) -> dict[str, int]:
        return {"a": 1}


class AsDictNeedsArgument:
    """``call_method`` swallows the TypeError of a call that needs arguments."""

    def _asdict(self, required: int) -> dict[str, int]:
        return {"a": required}


class AsDictList:
    def _asdict(self) -> list[int]:
        return [1]


@dataclass
class Order:
    id: str


def _circular() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


_REFUSED = "Unable to marshal response: "

# (value, the JSON text it is answered as, or the MarshalError message)
ANSWERED: list[tuple[Any, str]] = [
    ({"batchItemFailures": []}, '{"batchItemFailures": []}'),
    (None, "null"),
    (True, "true"),
    (7, "7"),
    (1.5, "1.5"),
    (math.nan, "NaN"),  # allow_nan=True
    (-math.inf, "-Infinity"),
    ("héllo", '"héllo"'),  # ensure_ascii=False on the Python 3.12+ runtimes
    (decimal.Decimal("12.50"), "12.50"),  # RawJSON(str(d)): as written, a number
    (decimal.Decimal("1E+2"), "1E+2"),
    (decimal.Decimal("NaN"), "NaN"),
    ({"n": decimal.Decimal("-0")}, '{"n": -0}'),
    ((1, 2), "[1, 2]"),  # tuple_as_array
    (Point(1, 2), '{"x": 1, "y": 2}'),  # namedtuple_as_object
    (HasAsDict(), '{"a": 1}'),
    ([b"raw"], '["raw"]'),  # nested bytes decoded as UTF-8
    (
        {b"k": 1, 2: "two", 1.5: None, None: 0, False: 1},
        '{"k": 1, "2": "two", "1.5": null, "null": 0, "false": 1}',
    ),
    (Colour.RED, "1"),  # int subclasses by value
    (Name.ADA, '"ada"'),
    (OrderedDict(a=1), '{"a": 1}'),
]

REFUSED: list[tuple[Any, str]] = [
    ({"ids": {"a"}}, "Object of type set is not JSON serializable"),
    (frozenset(), "Object of type frozenset is not JSON serializable"),
    (datetime.datetime(2026, 1, 1), "Object of type datetime is not JSON serializable"),
    (datetime.date(2026, 1, 1), "Object of type date is not JSON serializable"),
    (Order("o-1"), "Object of type Order is not JSON serializable"),
    (AsDictNeedsArgument(), "Object of type AsDictNeedsArgument is not JSON serializable"),
    (AsDictList(), "_asdict() must return a dict, not list"),
    (bytearray(b"x"), "Object of type bytearray is not JSON serializable"),
    ((i for i in range(2)), "Object of type generator is not JSON serializable"),
    ([b"\xff"], "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
    ({(1, 2): "tuple key"}, "keys must be str, int, float, bool or None, not tuple"),
    ({decimal.Decimal(1): "x"}, "keys must be str, int, float, bool or None, not Decimal"),
    (_circular(), "Circular reference detected"),
]


@pytest.mark.parametrize(("value", "text"), ANSWERED)
def test_values_the_runtime_answers(value: Any, text: str) -> None:
    response = marshal_response(value)
    assert response.body == text
    assert response.content_type == "application/json"


@pytest.mark.parametrize(("value", "message"), REFUSED)
def test_values_the_runtime_refuses(value: Any, message: str) -> None:
    with pytest.raises(MarshalError) as refused:
        marshal_response(value)
    assert str(refused.value) == _REFUSED + message
    assert refused.value.error_type == "Runtime.MarshalError"


def test_a_coroutine_is_refused_and_never_awaited() -> None:
    async def handler() -> dict[str, bool]:
        return {"ok": True}

    coroutine = handler()
    try:
        with pytest.raises(MarshalError, match="Object of type coroutine is not JSON serializable"):
            marshal_response(coroutine)
    finally:
        coroutine.close()  # the runtime leaves it to the garbage collector's warning


def test_bytes_are_sent_as_they_are() -> None:
    response = marshal_response(b"\xff not json")
    assert (response.body, response.content_type) == (b"\xff not json", BYTES_CONTENT_TYPE)
    assert response_value(response)[0] is False
    assert response_value(marshal_response(b'{"batchItemFailures": []}')) == (
        True,
        {"batchItemFailures": []},
    )


def test_what_a_mapping_reads_is_strict_json() -> None:
    assert response_value(marshal_response(Point(1, 2))) == (True, {"x": 1, "y": 2})
    ok, description = response_value(marshal_response({"n": math.nan}))
    assert not ok and "not JSON" in description


def test_answers_parse_back_to_what_the_handler_meant() -> None:
    for value, text in ANSWERED:
        if "NaN" not in text and "Infinity" not in text:
            assert json.loads(marshal_response(value).body) == json.loads(text)


# --- The observer layer's wrapper: it returns the value unchanged, and says what the runtime
# and the mapping will make of it.

_EVENT = {"Records": [{"messageId": "m-1", "body": "{}", "attributes": {}}]}


def test_the_wrapper_reports_a_value_the_runtime_will_refuse() -> None:
    assert lambda_entry._answer({"done": {"m-1"}}, _EVENT) == {
        "outcome": "exception",
        "error": "Runtime.MarshalError: Unable to marshal response: Object of type set is not "
        "JSON serializable",
        "failed": [],
    }


def test_the_wrapper_reads_a_partial_batch_response_as_the_runtime_sends_it() -> None:
    Response = namedtuple("Response", "batchItemFailures")
    answer = lambda_entry._answer(Response([{"itemIdentifier": "m-1"}]), _EVENT)
    assert answer == {"outcome": "batchItemFailures", "failed": ["m-1"]}
    assert lambda_entry._answer({"batchItemFailures": None}, _EVENT) == {
        "outcome": "ok",
        "failed": [],
    }
    # An entry Lambda cannot read fails the whole batch: no message has its id.
    assert lambda_entry._answer({"batchItemFailures": [{"itemIdentifier": 7}]}, _EVENT) == {
        "outcome": "batchItemFailures",
        "failed": [lambda_entry.INVALID_ID],
    }
    # A body that is not JSON fails the whole batch.
    assert lambda_entry._answer(b"\xff", _EVENT) == {
        "outcome": "batchItemFailures",
        "failed": ["m-1"],
    }


class _Observer:
    """Stands for the write observer: the wrapper only arms and disarms it, and tells it
    the event's source queues and receipt handles."""

    request_id = ""

    def add_source_queues(self, addresses: Iterable[str]) -> None:
        pass

    def set_receipts(self, receipts: dict[str, str]) -> None:
        pass

    def arm(self, duration_s: float) -> None:
        pass

    def disarm(self) -> None:
        pass

    def take_missing(self) -> list[str]:
        return []


def test_the_wrapper_returns_the_handlers_value_unchanged() -> None:
    returned = {"at": datetime.datetime(2026, 1, 1)}
    sent: list[str] = []
    state = lambda_entry._State(
        observer=_Observer(),  # type: ignore[arg-type]
        original=lambda event, context: returned,
        duration_ms=0,
        jitter_ms=0,
        rng=random.Random(0),
        sink=lambda_entry._CountingSink(sent.append),
        environment="env",
        clock=lambda: 0,
        invocation_lines=True,
        work=left_work.LeftWork("env"),
    )
    context = type("Context", (), {"aws_request_id": "r-1"})()
    assert lambda_entry.invoke(state, _EVENT, context) is returned
    end = json.loads(sent[-1])
    assert (end["outcome"], end["error"]) == (
        "exception",
        "Runtime.MarshalError: Unable to marshal response: Object of type datetime is not "
        "JSON serializable",
    )

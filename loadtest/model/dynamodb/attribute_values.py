"""DynamoDB's typed attribute values: validation, numbers, set elements and item equality.

Owns the rules for values in the wire form (``{"N": "4"}``, ``{"SS": [...]}``)
that both applying an update and comparing items need: a value's type tag,
a request value DynamoDB would refuse (``check_value``), numbers read and
written as DynamoDB does (exact arithmetic, at most 38 digits, no exponent),
what identifies a set element, ``same_item``, equality as DynamoDB sees
it (numbers by value, sets unordered), ``item_digest``, a short digest that is equal
for items ``same_item`` finds equal, and ``numeric_moves``, what a write did to an item's
numbers (clock readings left out). It knows no expression syntax. Pure;
it runs inside the observer's Lambda layer too.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from loadtest.model.dynamodb.update_expressions import UpdateNotUnderstood

TypedItem = dict[str, Any]
"""An item in DynamoDB's typed wire form: attribute name -> ``{"S": "x"}``, ``{"N": "4"}``, ..."""

# --- typed values ------------------------------------------------------------------------------

SCALARS = frozenset({"S", "N", "B", "BOOL", "NULL"})
SETS = frozenset({"SS", "NS", "BS"})
MAX_DIGITS = 38
# Exact for any two DynamoDB numbers (magnitudes 1E-130 .. 1E+126): 38 digits are then checked.
EXACT = Context(prec=400, Emax=999_999, Emin=-999_999)


def tag_of(value: Any, where: str) -> str:
    if not isinstance(value, dict) or len(value) != 1:
        raise UpdateNotUnderstood(f"{where} is not a typed DynamoDB value: {value!r}")
    tag = next(iter(value))
    if tag not in SCALARS | SETS | {"M", "L"}:
        raise UpdateNotUnderstood(f"{where} has an unknown type {tag!r}")
    return str(tag)


def number_of(text: Any, where: str) -> Decimal:
    try:
        number = Decimal(text) if isinstance(text, str) else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        raise UpdateNotUnderstood(f"{where} is not a number: {text!r}")
    return number


def format_number(number: Decimal, where: str) -> str:
    """A number as DynamoDB returns it: no exponent, no trailing zeros, at most 38 digits."""
    if number.is_zero():
        return "0"
    normal = number.normalize(EXACT)
    if len(normal.as_tuple().digits) > MAX_DIGITS:
        raise UpdateNotUnderstood(f"{where} needs more than {MAX_DIGITS} significant digits")
    if normal.adjusted() > 125 or normal.adjusted() < -130:
        raise UpdateNotUnderstood(f"{where} is out of DynamoDB's number range")
    return format(normal, "f")


def check_value(value: Any, where: str) -> None:
    """Refuse a request value DynamoDB would refuse (unknown type, bad number, empty set)."""
    tag = tag_of(value, where)
    inner = value[tag]
    if tag == "N":
        number_of(inner, where)
    elif tag in SETS:
        if not isinstance(inner, list) or not inner:
            raise UpdateNotUnderstood(f"{where} is an empty or malformed set")
        keys = [set_key(tag, element, where) for element in inner]
        if len(set(keys)) != len(keys):
            raise UpdateNotUnderstood(f"{where} is a set with duplicates")
    elif tag == "M":
        if not isinstance(inner, dict):
            raise UpdateNotUnderstood(f"{where} is a malformed map")
        for key, element in inner.items():
            check_value(element, f"{where}.{key}")
    elif tag == "L":
        if not isinstance(inner, list):
            raise UpdateNotUnderstood(f"{where} is a malformed list")
        for i, element in enumerate(inner):
            check_value(element, f"{where}[{i}]")


def set_key(tag: str, element: Any, where: str) -> Any:
    """What identifies a set element: a number by value, a string or binary as is."""
    if tag == "NS":
        return number_of(element, where)
    if isinstance(element, bytearray):
        return bytes(element)
    try:
        hash(element)
    except TypeError:
        raise UpdateNotUnderstood(f"{where} has an unhashable set element {element!r}") from None
    return element


def same_item(a: TypedItem | None, b: TypedItem | None) -> bool:
    """Equality as DynamoDB sees it: numbers compared by value (N "4" == N "4.0"), sets unordered,
    maps/lists recursively; None == None."""
    if a is None or b is None:
        return a is None and b is None
    return _same({"M": a}, {"M": b})


def _same(a: Any, b: Any) -> bool:
    if not (isinstance(a, dict) and isinstance(b, dict) and len(a) == 1 and len(b) == 1):
        return bool(a == b)
    tag = next(iter(a))
    if tag not in b:
        return False
    x, y = a[tag], b[tag]
    if tag == "N":
        return _same_number(x, y)
    if tag == "M":
        return (
            isinstance(x, dict)
            and isinstance(y, dict)
            and x.keys() == y.keys()
            and all(_same(x[k], y[k]) for k in x)
        )
    if tag == "L":
        return (
            isinstance(x, list)
            and isinstance(y, list)
            and len(x) == len(y)
            and all(_same(i, j) for i, j in zip(x, y, strict=True))
        )
    if tag in SETS and isinstance(x, list) and isinstance(y, list):
        try:
            return {set_key(tag, e, tag) for e in x} == {set_key(tag, e, tag) for e in y}
        except UpdateNotUnderstood:
            return bool(x == y)
    return bool(x == y)


ABSENT = "-"
"""``item_digest`` of no item."""


def item_digest(item: TypedItem | None) -> str:
    """A short digest of ``item`` (``ABSENT`` for None), equal for items ``same_item`` finds
    equal: numbers by value, sets unordered."""
    if item is None:
        return ABSENT
    text = json.dumps(_canonical({"M": item}), sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _canonical(value: Any) -> Any:
    if not (isinstance(value, dict) and len(value) == 1):
        return value
    tag, inner = next(iter(value.items()))
    if tag == "N":
        try:
            return {"N": str(number_of(inner, "N").normalize(EXACT))}
        except (UpdateNotUnderstood, InvalidOperation):
            return value
    if tag == "M" and isinstance(inner, dict):
        return {"M": {k: _canonical(v) for k, v in inner.items()}}
    if tag == "L" and isinstance(inner, list):
        return {"L": [_canonical(v) for v in inner]}
    if tag in SETS and isinstance(inner, list):
        try:
            return {tag: sorted({str(set_key(tag, e, tag)) for e in inner})}
        except UpdateNotUnderstood:
            return value
    return value


def _same_number(x: Any, y: Any) -> bool:
    try:
        return number_of(x, "N") == number_of(y, "N")
    except UpdateNotUnderstood:
        return bool(x == y)


CLOCK_RANGES: tuple[tuple[int, int], ...] = tuple(
    (10**9 * 10**k, 41 * 10**8 * 10**k) for k in (0, 3, 6, 9)
)
"""Numbers that read as a time: 2001-09 to 2099-12 since the epoch in seconds, milliseconds,
microseconds or nanoseconds (a stamp, a lease's end, a TTL), not a quantity."""


def reads_as_clock(number: Decimal) -> bool:
    """Whether ``number`` lies in one of ``CLOCK_RANGES``: a clock reading, whose change is
    time gone by, not an amount."""
    return any(low <= number < high for low, high in CLOCK_RANGES)


CREATED = "new"
"""``numeric_moves``' word for a number the write made (the item or the attribute was not
there before): no amount it moved by."""


def numeric_moves(before: TypedItem | None, after: TypedItem | None) -> dict[str, str]:
    """What a write did to the numbers of an item: for each number attribute (in maps too,
    by dotted path) that both images hold and that changed, ``after - before`` as DynamoDB
    writes a number; for one the item after holds and the item before did not (``before``
    None: the write made the item), ``CREATED``. A number that reads as a clock time
    (``reads_as_clock``) in either image is left out: its change is time gone by. Empty for
    a delete (``after`` None)."""
    moves: dict[str, str] = {}
    if after is not None:
        _moves(before or {}, after, "", moves)
    return moves


def _moves(before: TypedItem, after: TypedItem, prefix: str, out: dict[str, str]) -> None:
    for name, new in after.items():
        if not (isinstance(new, dict) and len(new) == 1):
            continue
        old = before.get(name)
        if not (isinstance(old, dict) and len(old) == 1):
            old = None
        if "M" in new and isinstance(new["M"], dict):
            inner = old.get("M") if old is not None else None
            _moves(inner if isinstance(inner, dict) else {}, new["M"], f"{prefix}{name}.", out)
        elif "N" in new:
            try:
                y = number_of(new["N"], "N")
                if reads_as_clock(y):
                    continue
                if old is None or "N" not in old:
                    out[f"{prefix}{name}"] = CREATED
                    continue
                x = number_of(old["N"], "N")
                if x != y and not reads_as_clock(x):
                    out[f"{prefix}{name}"] = format_number(y - x, "N")
            except UpdateNotUnderstood:
                continue

"""A pure evaluator of DynamoDB UpdateExpressions: the item after an UpdateItem.

The write observer knows the item before an UpdateItem (its atomic
``ReturnValues=ALL_OLD``) and the request; this module computes the item the
request stores, ``apply_update(before, key, expression, names, values)``, so
no second read has to race the writes being observed. It also answers whether
an update is a no-op by construction on an existing item
(:func:`noop_when_present`) and compares items as DynamoDB does
(:func:`same_item`).

It owns the UpdateExpression grammar (SET, REMOVE, ADD, DELETE; document paths
with ``#name`` placeholders, ``a.b`` and ``a[0]``; ``if_not_exists``,
``list_append``, ``+`` and ``-``) and DynamoDB's rules for it: every action
reads the item as it was *before* the update, target paths may not overlap,
key attributes may not change, SET beyond a list's end appends (in index
order), REMOVE of list elements shifts the rest, an emptied set disappears.
Anything it cannot apply, or DynamoDB would refuse, raises
:class:`UpdateNotUnderstood` naming the part; nothing else escapes.

It must stay pure: no boto3, no I/O, no clocks (it also runs inside a Lambda
layer). Items are in the typed wire form (``{"n": {"N": "4"}}``); numbers it
computes are written the way DynamoDB returns them ("5", "2.5", no exponent).
Not checked here, because they concern the whole request: unused names or
values (a ConditionExpression shares them), reserved words used as plain
names, and item size.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Context, Decimal, InvalidOperation, localcontext
from enum import StrEnum
from typing import Any, TypeAlias

TypedItem = dict[str, Any]
"""An item in DynamoDB's typed wire form: attribute name -> ``{"S": "x"}``, ``{"N": "4"}``, ..."""

PathPart: TypeAlias = str | int
"""A map key (str) or a list index (int) in a document path."""


class UpdateNotUnderstood(ValueError):
    """An update expression this evaluator cannot apply (the message names the part)."""


class Clause(StrEnum):
    SET = "SET"
    REMOVE = "REMOVE"
    ADD = "ADD"
    DELETE = "DELETE"


# --- expression tree ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Path:
    parts: tuple[PathPart, ...]
    """Resolved: placeholders replaced by the names they stand for."""
    text: str
    """As written in the expression, for messages."""


@dataclass(frozen=True)
class Placeholder:
    name: str
    """``:value`` as written."""


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Operand, ...]


@dataclass(frozen=True)
class Arithmetic:
    operator: str
    """``+`` or ``-``."""
    left: Operand
    right: Operand


Operand: TypeAlias = Path | Placeholder | Call
Value: TypeAlias = Operand | Arithmetic


@dataclass(frozen=True)
class Action:
    clause: Clause
    path: Path
    value: Value | None
    """The SET value, the ADD/DELETE placeholder; None for REMOVE."""


# --- tokenizer and parser ----------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<name>#[A-Za-z0-9_]+)|(?P<value>:[A-Za-z0-9_]+)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<index>\[\s*\d+\s*\])|(?P<punct>[.,()=+\-]))"
)
_FUNCTIONS = {"if_not_exists": 2, "list_append": 2}


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    at: int


def _tokenize(expression: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(expression):
        if expression[pos:].isspace():
            break
        match = _TOKEN.match(expression, pos)
        if match is None or match.lastgroup is None:
            bad = expression[pos:].strip()[:20]
            raise UpdateNotUnderstood(f"syntax error at {bad!r} in {expression!r}")
        tokens.append(_Token(match.lastgroup, match.group(match.lastgroup), match.start()))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, expression: str, names: Mapping[str, str] | None) -> None:
        self.expression = expression
        self.names = names or {}
        self.tokens = _tokenize(expression)
        self.pos = 0

    def _peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _next(self, what: str) -> _Token:
        token = self._peek()
        if token is None:
            raise UpdateNotUnderstood(f"{what} expected at the end of {self.expression!r}")
        self.pos += 1
        return token

    def _expect(self, text: str) -> None:
        token = self._next(repr(text))
        if token.text != text:
            raise UpdateNotUnderstood(
                f"{text!r} expected, got {token.text!r} in {self.expression!r}"
            )

    def _at_punct(self, text: str) -> bool:
        token = self._peek()
        return token is not None and token.kind == "punct" and token.text == text

    def parse(self) -> list[Action]:
        actions: list[Action] = []
        seen: set[Clause] = set()
        if not self.tokens:
            raise UpdateNotUnderstood("the update expression is empty")
        while self._peek() is not None:
            token = self._next("a clause")
            try:
                clause = Clause(token.text.upper()) if token.kind == "ident" else None
            except ValueError:
                clause = None
            if clause is None:
                raise UpdateNotUnderstood(
                    f"SET, REMOVE, ADD or DELETE expected, got {token.text!r} in {self.expression!r}"
                )
            if clause in seen:
                raise UpdateNotUnderstood(
                    f"the {clause} clause appears twice in {self.expression!r}"
                )
            seen.add(clause)
            actions.append(self._action(clause))
            while self._at_punct(","):
                self.pos += 1
                actions.append(self._action(clause))
        return actions

    def _action(self, clause: Clause) -> Action:
        path = self._path()
        if clause is Clause.SET:
            self._expect("=")
            return Action(clause, path, self._value())
        if clause is Clause.REMOVE:
            return Action(clause, path, None)
        token = self._next(f"a value after {clause} {path.text}")
        if token.kind != "value":
            raise UpdateNotUnderstood(
                f"{clause} {path.text} takes a :value, got {token.text!r} in {self.expression!r}"
            )
        return Action(clause, path, Placeholder(token.text))

    def _path(self) -> Path:
        first = self._next("a document path")
        parts: list[PathPart] = [self._name(first)]
        text = first.text
        while True:
            token = self._peek()
            if token is None:
                break
            if token.kind == "index":
                self.pos += 1
                parts.append(int(token.text[1:-1]))
                text += f"[{parts[-1]}]"
            elif token.kind == "punct" and token.text == ".":
                self.pos += 1
                name = self._next("a name after '.'")
                parts.append(self._name(name))
                text += f".{name.text}"
            else:
                break
        return Path(tuple(parts), text)

    def _name(self, token: _Token) -> str:
        if token.kind == "ident":
            return token.text
        if token.kind == "name":
            if token.text not in self.names:
                raise UpdateNotUnderstood(
                    f"the attribute name placeholder {token.text} is not defined in ExpressionAttributeNames"
                )
            return self.names[token.text]
        raise UpdateNotUnderstood(
            f"an attribute name expected, got {token.text!r} in {self.expression!r}"
        )

    def _value(self) -> Value:
        left = self._operand()
        token = self._peek()
        if token is not None and token.kind == "punct" and token.text in "+-":
            self.pos += 1
            return Arithmetic(token.text, left, self._operand())
        return left

    def _operand(self) -> Operand:
        token = self._peek()
        if token is None:
            raise UpdateNotUnderstood(f"an operand expected at the end of {self.expression!r}")
        if token.kind == "value":
            self.pos += 1
            return Placeholder(token.text)
        if (
            token.kind == "ident"
            and self.pos + 1 < len(self.tokens)
            and self.tokens[self.pos + 1].text == "("
        ):
            self.pos += 2
            return self._call(token.text)
        if token.kind in ("ident", "name"):
            return self._path()
        raise UpdateNotUnderstood(f"an operand expected, got {token.text!r} in {self.expression!r}")

    def _call(self, function: str) -> Call:
        # Function names are case-sensitive in DynamoDB.
        if function not in _FUNCTIONS:
            raise UpdateNotUnderstood(f"unknown function {function}() in {self.expression!r}")
        args = [self._operand()]
        while self._at_punct(","):
            self.pos += 1
            args.append(self._operand())
        self._expect(")")
        if len(args) != _FUNCTIONS[function]:
            raise UpdateNotUnderstood(
                f"{function}() takes {_FUNCTIONS[function]} operands, got {len(args)}"
            )
        if function == "if_not_exists" and not isinstance(args[0], Path):
            raise UpdateNotUnderstood(
                "the first operand of if_not_exists() must be a document path"
            )
        return Call(function, tuple(args))


def _parse(expression: str, names: Mapping[str, str] | None) -> list[Action]:
    if not isinstance(expression, str):
        raise UpdateNotUnderstood(f"the update expression is not a string: {expression!r}")
    actions = _Parser(expression, names).parse()
    _check_paths(actions)
    return actions


def _check_paths(actions: list[Action]) -> None:
    """Target paths may neither overlap (one a prefix of the other) nor conflict (map vs list)."""
    for i, a in enumerate(actions):
        for b in actions[i + 1 :]:
            common = 0
            for x, y in zip(a.path.parts, b.path.parts, strict=False):
                if x != y:
                    break
                common += 1
            shorter = min(len(a.path.parts), len(b.path.parts))
            if common == shorter:
                raise UpdateNotUnderstood(
                    f"two document paths overlap: {a.path.text} and {b.path.text}"
                )
            if isinstance(a.path.parts[common], int) != isinstance(b.path.parts[common], int):
                raise UpdateNotUnderstood(
                    f"two document paths conflict: {a.path.text} and {b.path.text}"
                )


# --- typed values ------------------------------------------------------------------------------

_SCALARS = frozenset({"S", "N", "B", "BOOL", "NULL"})
_SETS = frozenset({"SS", "NS", "BS"})
_MAX_DIGITS = 38
# Exact for any two DynamoDB numbers (magnitudes 1E-130 .. 1E+126): 38 digits are then checked.
_EXACT = Context(prec=400, Emax=999_999, Emin=-999_999)


def _tag(value: Any, where: str) -> str:
    if not isinstance(value, dict) or len(value) != 1:
        raise UpdateNotUnderstood(f"{where} is not a typed DynamoDB value: {value!r}")
    tag = next(iter(value))
    if tag not in _SCALARS | _SETS | {"M", "L"}:
        raise UpdateNotUnderstood(f"{where} has an unknown type {tag!r}")
    return str(tag)


def _number(text: Any, where: str) -> Decimal:
    try:
        number = Decimal(text) if isinstance(text, str) else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        raise UpdateNotUnderstood(f"{where} is not a number: {text!r}")
    return number


def _format_number(number: Decimal, where: str) -> str:
    """A number as DynamoDB returns it: no exponent, no trailing zeros, at most 38 digits."""
    if number.is_zero():
        return "0"
    normal = number.normalize(_EXACT)
    if len(normal.as_tuple().digits) > _MAX_DIGITS:
        raise UpdateNotUnderstood(f"{where} needs more than {_MAX_DIGITS} significant digits")
    if normal.adjusted() > 125 or normal.adjusted() < -130:
        raise UpdateNotUnderstood(f"{where} is out of DynamoDB's number range")
    return format(normal, "f")


def _check_value(value: Any, where: str) -> None:
    """Refuse a request value DynamoDB would refuse (unknown type, bad number, empty set)."""
    tag = _tag(value, where)
    inner = value[tag]
    if tag == "N":
        _number(inner, where)
    elif tag in _SETS:
        if not isinstance(inner, list) or not inner:
            raise UpdateNotUnderstood(f"{where} is an empty or malformed set")
        keys = [_set_key(tag, element, where) for element in inner]
        if len(set(keys)) != len(keys):
            raise UpdateNotUnderstood(f"{where} is a set with duplicates")
    elif tag == "M":
        if not isinstance(inner, dict):
            raise UpdateNotUnderstood(f"{where} is a malformed map")
        for key, element in inner.items():
            _check_value(element, f"{where}.{key}")
    elif tag == "L":
        if not isinstance(inner, list):
            raise UpdateNotUnderstood(f"{where} is a malformed list")
        for i, element in enumerate(inner):
            _check_value(element, f"{where}[{i}]")


def _set_key(tag: str, element: Any, where: str) -> Any:
    """What identifies a set element: a number by value, a string or binary as is."""
    if tag == "NS":
        return _number(element, where)
    if isinstance(element, bytearray):
        return bytes(element)
    try:
        hash(element)
    except TypeError:
        raise UpdateNotUnderstood(f"{where} has an unhashable set element {element!r}") from None
    return element


# --- evaluation --------------------------------------------------------------------------------

_MISSING = object()


def _get(item: Mapping[str, Any], parts: tuple[PathPart, ...]) -> Any:
    """The typed value at a path, or _MISSING (also when a parent has the wrong type)."""
    current: Any = {"M": item}
    for part in parts:
        if isinstance(part, str):
            inner = current.get("M") if isinstance(current, dict) else None
            if not isinstance(inner, dict) or part not in inner:
                return _MISSING
            current = inner[part]
        else:
            inner = current.get("L") if isinstance(current, dict) else None
            if not isinstance(inner, list) or part >= len(inner):
                return _MISSING
            current = inner[part]
    return current


def _container(item: TypedItem, path: Path) -> dict[str, Any] | list[Any]:
    """The map or list that holds the path's last part; it must exist with the right type."""
    parent = _get(item, path.parts[:-1]) if len(path.parts) > 1 else {"M": item}
    want = "L" if isinstance(path.parts[-1], int) else "M"
    if not isinstance(parent, dict) or want not in parent:
        raise UpdateNotUnderstood(f"the document path {path.text} is invalid for update")
    inner = parent[want]
    if not isinstance(inner, dict | list):
        raise UpdateNotUnderstood(f"the document path {path.text} is invalid for update")
    return inner


class _Evaluator:
    def __init__(self, item: TypedItem, values: Mapping[str, Any] | None, expression: str) -> None:
        self.item = item
        self.values = values or {}
        self.expression = expression

    def placeholder(self, ref: Placeholder) -> Any:
        if ref.name not in self.values:
            raise UpdateNotUnderstood(
                f"the value placeholder {ref.name} is not defined in ExpressionAttributeValues"
            )
        value = self.values[ref.name]
        _check_value(value, ref.name)
        return value

    def value(self, node: Value) -> Any:
        if isinstance(node, Placeholder):
            return self.placeholder(node)
        if isinstance(node, Path):
            found = _get(self.item, node.parts)
            if found is _MISSING:
                raise UpdateNotUnderstood(
                    f"{node.text} refers to an attribute that does not exist in the item"
                )
            return found
        if isinstance(node, Call):
            return self.call(node)
        left = self.number(node.left)
        right = self.number(node.right)
        with localcontext(_EXACT):
            result = left + right if node.operator == "+" else left - right
        return {"N": _format_number(result, f"the result of {node.operator}")}

    def number(self, node: Operand) -> Decimal:
        value = self.value(node)
        if _tag(value, "an operand") != "N":
            raise UpdateNotUnderstood(
                f"an operand of + or - is not a number: {_describe(node)} is {next(iter(value))}"
            )
        return _number(value["N"], _describe(node))

    def call(self, node: Call) -> Any:
        if node.function == "if_not_exists":
            target = node.args[0]
            assert isinstance(target, Path)
            found = _get(self.item, target.parts)
            return self.value(node.args[1]) if found is _MISSING else found
        lists = []
        for arg in node.args:
            value = self.value(arg)
            if _tag(value, "an operand") != "L":
                raise UpdateNotUnderstood(
                    f"list_append() operand {_describe(arg)} is {next(iter(value))}, not a list"
                )
            lists.append(value["L"])
        return {"L": [*lists[0], *lists[1]]}

    def add(self, action: Action) -> Any:
        assert isinstance(action.value, Placeholder)
        operand = self.placeholder(action.value)
        tag = _tag(operand, action.value.name)
        current = _get(self.item, action.path.parts)
        if tag == "N":
            if current is _MISSING:
                base = Decimal(0)
            elif _tag(current, action.path.text) == "N":
                base = _number(current["N"], action.path.text)
            else:
                raise UpdateNotUnderstood(f"ADD {action.path.text}: the attribute is not a number")
            with localcontext(_EXACT):
                total = base + _number(operand["N"], action.value.name)
            return {"N": _format_number(total, f"ADD {action.path.text}")}
        if tag not in _SETS:
            raise UpdateNotUnderstood(
                f"ADD {action.path.text}: {action.value.name} is {tag}; ADD takes a number or a set"
            )
        if current is _MISSING:
            return copy.deepcopy(operand)
        if _tag(current, action.path.text) != tag:
            raise UpdateNotUnderstood(f"ADD {action.path.text}: the attribute is not a {tag}")
        keys = {_set_key(tag, e, action.path.text) for e in current[tag]}
        added = [e for e in operand[tag] if _set_key(tag, e, action.value.name) not in keys]
        return {tag: [*current[tag], *copy.deepcopy(added)]}

    def delete(self, action: Action) -> Any:
        """The set left after DELETE, None when it is emptied, _MISSING when there was none."""
        assert isinstance(action.value, Placeholder)
        operand = self.placeholder(action.value)
        tag = _tag(operand, action.value.name)
        if tag not in _SETS:
            raise UpdateNotUnderstood(
                f"DELETE {action.path.text}: {action.value.name} is {tag}; DELETE takes a set"
            )
        current = _get(self.item, action.path.parts)
        if current is _MISSING:
            _container(self.item, action.path)  # a missing parent is still an invalid path
            return _MISSING
        if _tag(current, action.path.text) != tag:
            raise UpdateNotUnderstood(f"DELETE {action.path.text}: the attribute is not a {tag}")
        gone = {_set_key(tag, e, action.value.name) for e in operand[tag]}
        left = [e for e in current[tag] if _set_key(tag, e, action.path.text) not in gone]
        return {tag: left} if left else None


def _describe(node: Value) -> str:
    if isinstance(node, Path):
        return node.text
    if isinstance(node, Placeholder):
        return node.name
    if isinstance(node, Call):
        return f"{node.function}(...)"
    return f"{_describe(node.left)} {node.operator} {_describe(node.right)}"


def _order(parts: tuple[PathPart, ...]) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in parts)


def apply_update(
    before: TypedItem | None,
    key: TypedItem,
    expression: str,
    names: Mapping[str, str] | None = None,
    values: Mapping[str, Any] | None = None,
) -> TypedItem:
    """The item DynamoDB stores after this UpdateItem: ``before`` (None = absent, then the
    item starts as ``key``, as UpdateItem upserts) with the expression's actions applied."""
    try:
        return _apply(before, key, expression, names, values)
    except UpdateNotUnderstood:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # Malformed input that slipped past the checks above: still one exception type.
        raise UpdateNotUnderstood(f"cannot apply {expression!r}: {exc}") from exc


def _apply(
    before: TypedItem | None,
    key: TypedItem,
    expression: str,
    names: Mapping[str, str] | None,
    values: Mapping[str, Any] | None,
) -> TypedItem:
    actions = _parse(expression, names)
    original: TypedItem = copy.deepcopy(dict(before)) if before is not None else {}
    for name, value in key.items():
        original.setdefault(name, copy.deepcopy(value))
    for action in actions:
        if action.path.parts[0] in key:
            raise UpdateNotUnderstood(
                f"cannot update attribute {action.path.parts[0]}: it is part of the key"
            )

    # Every action reads the item as it was before the update (DynamoDB's rule).
    evaluator = _Evaluator(original, values, expression)
    writes: list[tuple[Path, Any]] = []
    removals: list[Path] = []
    for action in actions:
        if action.clause is Clause.SET:
            assert action.value is not None
            writes.append((action.path, copy.deepcopy(evaluator.value(action.value))))
        elif action.clause is Clause.ADD:
            writes.append((action.path, evaluator.add(action)))
        elif action.clause is Clause.DELETE:
            left = evaluator.delete(action)
            if left is None:
                removals.append(action.path)
            elif left is not _MISSING:
                writes.append((action.path, left))
        else:
            removals.append(action.path)

    after = copy.deepcopy(original)
    # Writes in path order, so several elements set beyond a list's end are appended by
    # index; appends only extend lists, so the original indexes still hold for removals.
    for path, value in sorted(writes, key=lambda w: _order(w[0].parts)):
        holder = _container(after, path)
        last = path.parts[-1]
        if isinstance(holder, list):
            assert isinstance(last, int)
            if last < len(holder):
                holder[last] = value
            else:
                holder.append(value)
        else:
            holder[str(last)] = value
    # Removals last, highest index first, so each one still addresses its original element.
    for path in sorted(removals, key=lambda p: _order(p.parts), reverse=True):
        _container(original, path)  # the parent must exist, as for SET
        if _get(original, path.parts) is _MISSING:
            continue  # nothing there before; an element appended by this update stays
        holder = _container(after, path)
        last = path.parts[-1]
        if isinstance(holder, list):
            assert isinstance(last, int)
            if last < len(holder):
                del holder[last]
        else:
            holder.pop(str(last), None)
    return after


def noop_when_present(expression: str, names: Mapping[str, str] | None = None) -> bool:
    """True when every action is ``SET p = if_not_exists(p, v)`` on the same path p (no REMOVE/ADD/DELETE):
    applied to an item that already has every such path, the update changes nothing."""
    try:
        actions = _parse(expression, names)
    except UpdateNotUnderstood:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        raise UpdateNotUnderstood(f"cannot read {expression!r}: {exc}") from exc
    return all(
        action.clause is Clause.SET
        and isinstance(action.value, Call)
        and action.value.function == "if_not_exists"
        and isinstance(action.value.args[0], Path)
        and action.value.args[0].parts == action.path.parts
        for action in actions
    )


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
    if tag in _SETS and isinstance(x, list) and isinstance(y, list):
        try:
            return {_set_key(tag, e, tag) for e in x} == {_set_key(tag, e, tag) for e in y}
        except UpdateNotUnderstood:
            return bool(x == y)
    return bool(x == y)


def _same_number(x: Any, y: Any) -> bool:
    try:
        return _number(x, "N") == _number(y, "N")
    except UpdateNotUnderstood:
        return bool(x == y)

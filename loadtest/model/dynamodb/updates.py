"""A pure evaluator of DynamoDB UpdateExpressions: the item after an UpdateItem.

The write observer knows the item before an UpdateItem (its atomic
``ReturnValues=ALL_OLD``) and the request; this module computes the item the
request stores, ``apply_update(before, key, expression, names, values)``, so
no second read has to race the writes being observed. It also answers whether
an update is a no-op by construction on an existing item
(:func:`noop_when_present`), whether it replaces what it changes rather than adding to
it (:func:`replaces_what_it_sets`), and compares items as DynamoDB does
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
Its parts: ``update_expressions`` owns the grammar (parsing, path rules) and
``attribute_values`` the typed values and ``same_item``; this module applies
parsed actions to an item. Every public name stays importable from here.
Not checked here, because they concern the whole request: unused names or
values (a ConditionExpression shares them), reserved words used as plain
names, and item size.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from decimal import Decimal, localcontext
from typing import Any

from loadtest.model.dynamodb.attribute_values import (
    EXACT,
    SETS,
    TypedItem,
    check_value,
    format_number,
    number_of,
    same_item,
    set_key,
    tag_of,
)
from loadtest.model.dynamodb.update_expressions import (
    Action,
    Arithmetic,
    Call,
    Clause,
    Operand,
    Path,
    PathPart,
    Placeholder,
    UpdateNotUnderstood,
    Value,
    parse_update_expression,
)

__all__ = [
    "TypedItem",
    "UpdateNotUnderstood",
    "apply_update",
    "noop_when_present",
    "replaces_what_it_sets",
    "same_item",
]

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


def _indexes_a_non_list(item: Mapping[str, Any], parts: tuple[PathPart, ...]) -> bool:
    """Whether the path takes an index ``[n]`` of a value that exists and is not a list."""
    current: Any = {"M": item}
    for part in parts:
        if isinstance(part, str):
            inner = current.get("M") if isinstance(current, dict) else None
            if not isinstance(inner, dict) or part not in inner:
                return False
            current = inner[part]
        else:
            items = current.get("L") if isinstance(current, dict) else None
            if not isinstance(items, list):
                return True
            if part >= len(items):
                return False
            current = items[part]
    return False


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
        check_value(value, ref.name)
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
        with localcontext(EXACT):
            result = left + right if node.operator == "+" else left - right
        return {"N": format_number(result, f"the result of {node.operator}")}

    def number(self, node: Operand) -> Decimal:
        value = self.value(node)
        if tag_of(value, "an operand") != "N":
            raise UpdateNotUnderstood(
                f"an operand of + or - is not a number: {_describe(node)} is {next(iter(value))}"
            )
        return number_of(value["N"], _describe(node))

    def call(self, node: Call) -> Any:
        if node.function == "if_not_exists":
            target = node.args[0]
            assert isinstance(target, Path)
            found = _get(self.item, target.parts)
            if found is _MISSING and _indexes_a_non_list(self.item, target.parts):
                # The backend refuses an index into an attribute of another type here,
                # though a missing attribute or element takes the default.
                raise UpdateNotUnderstood(f"the document path {target.text} is invalid for update")
            return self.value(node.args[1]) if found is _MISSING else found
        lists = []
        for arg in node.args:
            value = self.value(arg)
            if tag_of(value, "an operand") != "L":
                raise UpdateNotUnderstood(
                    f"list_append() operand {_describe(arg)} is {next(iter(value))}, not a list"
                )
            lists.append(value["L"])
        return {"L": [*lists[0], *lists[1]]}

    def add(self, action: Action) -> Any:
        assert isinstance(action.value, Placeholder)
        operand = self.placeholder(action.value)
        tag = tag_of(operand, action.value.name)
        current = _get(self.item, action.path.parts)
        if tag == "N":
            if current is _MISSING:
                base = Decimal(0)
            elif tag_of(current, action.path.text) == "N":
                base = number_of(current["N"], action.path.text)
            else:
                raise UpdateNotUnderstood(f"ADD {action.path.text}: the attribute is not a number")
            with localcontext(EXACT):
                total = base + number_of(operand["N"], action.value.name)
            return {"N": format_number(total, f"ADD {action.path.text}")}
        if tag not in SETS:
            raise UpdateNotUnderstood(
                f"ADD {action.path.text}: {action.value.name} is {tag}; ADD takes a number or a set"
            )
        if current is _MISSING:
            return copy.deepcopy(operand)
        if tag_of(current, action.path.text) != tag:
            raise UpdateNotUnderstood(f"ADD {action.path.text}: the attribute is not a {tag}")
        keys = {set_key(tag, e, action.path.text) for e in current[tag]}
        added = [e for e in operand[tag] if set_key(tag, e, action.value.name) not in keys]
        return {tag: [*current[tag], *copy.deepcopy(added)]}

    def delete(self, action: Action) -> Any:
        """The set left after DELETE, None when it is emptied, _MISSING when there was none."""
        assert isinstance(action.value, Placeholder)
        operand = self.placeholder(action.value)
        tag = tag_of(operand, action.value.name)
        if tag not in SETS:
            raise UpdateNotUnderstood(
                f"DELETE {action.path.text}: {action.value.name} is {tag}; DELETE takes a set"
            )
        current = _get(self.item, action.path.parts)
        if current is _MISSING:
            _container(self.item, action.path)  # a missing parent is still an invalid path
            return _MISSING
        if tag_of(current, action.path.text) != tag:
            raise UpdateNotUnderstood(f"DELETE {action.path.text}: the attribute is not a {tag}")
        gone = {set_key(tag, e, action.value.name) for e in operand[tag]}
        left = [e for e in current[tag] if set_key(tag, e, action.path.text) not in gone]
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
    actions = parse_update_expression(expression, names)
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
        actions = parse_update_expression(expression, names)
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


def replaces_what_it_sets(expression: str, names: Mapping[str, str] | None = None) -> bool:
    """True when every action is ``SET p = v`` with ``v`` made of the request's values alone
    (no path of the item: not ``p + :q``, ``if_not_exists`` or ``list_append(p, ...)``) or
    ``REMOVE p``: what the item held at each path it changes is replaced, whoever wrote it,
    never added to. False for anything else, or an expression that does not parse."""
    try:
        actions = parse_update_expression(expression, names)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError):
        return False
    return all(
        action.clause is Clause.REMOVE
        or (action.clause is Clause.SET and not _reads_the_item(action.value))
        for action in actions
    )


def _reads_the_item(value: Value | None) -> bool:
    if isinstance(value, Path):
        return True
    if isinstance(value, Call):
        return any(_reads_the_item(arg) for arg in value.args)
    if isinstance(value, Arithmetic):
        return _reads_the_item(value.left) or _reads_the_item(value.right)
    return False

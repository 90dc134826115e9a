"""Memoised stand-ins for moto functions that recompute the same answer on every request.

Owns the replacements ``loadtest.backend.patches`` installs for:

* ``moto.core.responses.method_names_from_class``: every request lists its response
  class's methods with ``inspect.getmembers`` (~6% of the backend's CPU in the benchmark);
  a class's methods do not change once the patches are applied, so the list is kept per
  class.
* ``camelcase_to_underscores`` as ``moto.core.responses`` and ``moto.sqs.models`` call it:
  the action name (``PutItem`` -> ``put_item``), rebuilt character by character per
  request, and the 14 attribute names ``Queue.attributes`` converts on every
  ``SendMessage`` (~0.37 ms, timeit: about a quarter of an in-process send); a pure
  function of a short string, kept for the few dozen names a run uses.
* ``get_filter_expression`` as DynamoDB's ``put_item``, ``update_item``, ``delete_item``,
  transactions and the PartiQL writes call it: a condition expression is tokenised and
  parsed on every request (~9% of the backend's CPU for a conditional ``PutItem``). The
  parsed tree is reused for the same expression text, names and values: its ``expr(item)``
  only reads the tree, and the values it holds are a private copy, so no request can
  change what a later one evaluates. An expression that fails to parse is not cached and
  fails again the same way.
* ``create_condition_expression_parser`` as DynamoDB's response handlers call it: before
  the write, ``PutItem``, ``DeleteItem``, ``UpdateItem``, ``Scan``/``Query`` filters and
  ``TransactWriteItems`` parse the same expression once more only to learn which
  ``#names`` and ``:values`` it uses (~6-10% of the backend's CPU for a conditional
  ``PutItem``). The parser handed back answers ``parse()`` from a cache of those lists (and
  the tree) per expression text, names and values; it raises, when the expression does
  not parse, from ``parse()`` as moto's does, and each gets lists of its own (callers
  extend them).

* ``XFormedAttributePicker.get_possible_keys`` as moto's response serializer calls it for
  every member of every structure it writes (SQS's answers, DynamoDB's through
  ``DynamoResult``): six alias providers are built and asked about the member per call,
  about a third of the serializer's time (~4% of the backend's CPU over a run's
  per-message calls). The
  keys they give depend only on the member's name, its shape (its serialisation name, its
  parent's name and members) and the class of the object read (its ``Meta`` aliases and
  its name), so they are kept per (class, shape, parent shape, name) for an object whose
  attributes come from its class (no ``__getattr__``, no ``Meta`` of its own) and moto's
  own providers; any other is asked as moto asks it.

Must not touch what any of them answers: same values, same exceptions. Installs nothing
itself.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

CONDITIONS_KEPT = 1024
"""Parsed condition expressions kept; when full the cache starts over (a run uses a few)."""

POSSIBLE_KEYS_KEPT = 4096
"""Members' possible keys kept; when full the cache starts over (a run uses a few hundred)."""

_V = TypeVar("_V")


def memo_method_names(
    method_names_from_class: Callable[[object], list[str]],
) -> Callable[[object], list[str]]:
    """``method_names_from_class``, computed once per class."""
    names_by_class: dict[object, list[str]] = {}

    def cached(clazz: object) -> list[str]:
        names = names_by_class.get(clazz)
        if names is None:
            names = method_names_from_class(clazz)
            names_by_class[clazz] = names
        return list(names)  # a copy: callers get a list of their own, as before

    cached.__wrapped__ = method_names_from_class  # type: ignore[attr-defined]
    return cached


def memo_camelcase(camelcase_to_underscores: Callable[[str], str]) -> Callable[[str], str]:
    """``camelcase_to_underscores`` with its recent answers kept."""
    return functools.lru_cache(maxsize=256)(camelcase_to_underscores)


_FilterExpression = Callable[[Any, Any, Any], Any]
_ConditionKey = tuple[object, str, str]


def _condition_key(expr: Any, names: Any, values: Any) -> _ConditionKey | None:
    """The cache key of a condition's arguments; None if they are not plain JSON (never
    from a request), which is then parsed as moto does."""
    try:
        key = (expr, json.dumps(names, sort_keys=True), json.dumps(values, sort_keys=True))
        hash(key)
    except TypeError:
        return None
    return key


def _kept(parsed: dict[_ConditionKey, _V], key: _ConditionKey, parse: Callable[[], _V]) -> _V:
    """``parsed[key]``, parsed on first use; the cache starts afresh at ``CONDITIONS_KEPT``."""
    found = parsed.get(key)
    if found is None:
        found = parse()
        if len(parsed) >= CONDITIONS_KEPT:
            parsed.clear()
        parsed[key] = found
    return found


def memo_filter_expression(get_filter_expression: _FilterExpression) -> _FilterExpression:
    """``get_filter_expression(expr, names, values)``, parsed once per distinct argument."""
    parsed: dict[_ConditionKey, Any] = {}

    def cached(expr: Any, names: Any, values: Any) -> Any:
        key = _condition_key(expr, names, values)
        if key is None:
            return get_filter_expression(expr, names, values)
        return _kept(
            parsed,
            key,
            lambda: get_filter_expression(expr, copy.deepcopy(names), copy.deepcopy(values)),
        )

    cached.__wrapped__ = get_filter_expression  # type: ignore[attr-defined]
    return cached


class _Parsed:
    """What a parse leaves behind that a response handler reads."""

    __slots__ = ("names_found", "op", "values_found")

    def __init__(self, op: Any, names_found: list[str], values_found: list[str]) -> None:
        self.op = op
        self.names_found = tuple(names_found)
        self.values_found = tuple(values_found)


class _MemoParser:
    """Stands in for a ``ConditionExpressionParser`` whose ``parse()`` is looked up."""

    def __init__(self, parse: Callable[[], _Parsed]) -> None:
        self._parse = parse
        self.expr_attr_names_found: list[str] = []
        self.expr_attr_values_found: list[str] = []

    def parse(self) -> Any:
        parsed = self._parse()
        self.expr_attr_names_found.extend(parsed.names_found)
        self.expr_attr_values_found.extend(parsed.values_found)
        return parsed.op


def memo_condition_parser(create_parser: _FilterExpression) -> _FilterExpression:
    """``create_condition_expression_parser(expr, names, values)`` whose ``parse()`` runs
    once per distinct argument."""
    parsed: dict[_ConditionKey, _Parsed] = {}

    def parse_uncached(expr: Any, names: Any, values: Any) -> _Parsed:
        parser = create_parser(expr, names, values)
        op = parser.parse()
        return _Parsed(op, parser.expr_attr_names_found, parser.expr_attr_values_found)

    def create(expr: Any, names: Any, values: Any) -> Any:
        key = _condition_key(expr, names, values)
        if key is None:
            return create_parser(expr, names, values)

        def parse() -> _Parsed:
            return _kept(
                parsed,
                key,
                lambda: parse_uncached(expr, copy.deepcopy(names), copy.deepcopy(values)),
            )

        return _MemoParser(parse)

    create.__wrapped__ = create_parser  # type: ignore[attr-defined]
    return create


_PossibleKeys = Callable[[Any, Any], Iterable[str]]


def memo_possible_keys(
    get_possible_keys: _PossibleKeys, default_providers: Sequence[object]
) -> _PossibleKeys:
    """``XFormedAttributePicker.get_possible_keys(picker, context)``, worked out once per
    (class of the object, shape, parent shape, member name) for pickers with moto's
    ``default_providers``. A kept entry holds its shapes, so their ids are not reused."""
    kept: dict[tuple[object, int, int, str], tuple[object, object, tuple[str, ...]]] = {}

    def cached(picker: Any, context: Any) -> Iterable[str]:
        obj, shape = context.obj, context.shape
        cls = obj.__class__
        if (
            picker.alias_providers is not default_providers
            or getattr(cls, "__getattr__", None) is not None
            or (
                cls.__getattribute__ is not object.__getattribute__
                and cls.__getattribute__ is not dict.__getattribute__
            )
            or "Meta" in getattr(obj, "__dict__", ())
        ):
            return get_possible_keys(picker, context)
        parent = getattr(shape, "parent", None)
        key = (cls, id(shape), id(parent), context.key)
        entry = kept.get(key)
        if entry is None or entry[0] is not shape or entry[1] is not parent:
            entry = (shape, parent, tuple(get_possible_keys(picker, context)))
            if len(kept) >= POSSIBLE_KEYS_KEPT:
                kept.clear()
            kept[key] = entry
        return entry[2]

    cached.__wrapped__ = get_possible_keys  # type: ignore[attr-defined]
    return cached

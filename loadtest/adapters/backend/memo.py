"""Memoised stand-ins for moto functions that recompute the same answer on every request.

Owns the replacements ``loadtest.adapters.backend.patches`` installs for:

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

Must not touch what any of them answers: same values, same exceptions. Installs nothing
itself.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from typing import Any

CONDITIONS_KEPT = 1024
"""Parsed condition expressions kept; when full the cache starts over (a run uses a few)."""


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


def memo_filter_expression(get_filter_expression: _FilterExpression) -> _FilterExpression:
    """``get_filter_expression(expr, names, values)``, parsed once per distinct argument."""
    parsed: dict[tuple[object, str, str], Any] = {}

    def cached(expr: Any, names: Any, values: Any) -> Any:
        try:
            key = (
                expr,
                json.dumps(names, sort_keys=True),
                json.dumps(values, sort_keys=True),
            )
            hash(key)
        except TypeError:  # not plain JSON (never from a request): parse it as moto does
            return get_filter_expression(expr, names, values)
        op = parsed.get(key)
        if op is None:
            op = get_filter_expression(expr, copy.deepcopy(names), copy.deepcopy(values))
            if len(parsed) >= CONDITIONS_KEPT:
                parsed.clear()
            parsed[key] = op
        return op

    cached.__wrapped__ = get_filter_expression  # type: ignore[attr-defined]
    return cached

"""One shared copy of each DynamoDB attribute name across the items moto stores.

Owns the replacement ``loadtest.backend.patches`` installs for moto's
``Item.__init__``: the same ``__init__`` given the item's attributes under interned names.

Why: every stored item keeps the attribute names of the request that wrote it, each a
string of its own freshly decoded from that request's JSON (``"status"``, ``"attempt"``,
...: about 55 bytes each). The names repeat across every item of a table; the values do
not. Measured with tracemalloc in process, a conditional ``PutItem`` of four attributes
stored 1,182 bytes per item, 968 with the names interned (0.82x).

Must not touch the values, the order of the attributes, nor anything ``Item`` does with
them (size limit, types): the attributes are handed over as they came, only their name
strings are swapped for an equal, shared one. Installs nothing itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

_ItemInit = Callable[[Any, Any, Any, dict[str, Any]], None]


def interned_attribute_names(item_init: _ItemInit) -> _ItemInit:
    """moto's ``Item.__init__(self, hash_key, range_key, attrs)`` with ``attrs``' names
    interned."""

    def init(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
        item_init(
            self, hash_key, range_key, {sys.intern(name): value for name, value in attrs.items()}
        )

    init.__wrapped__ = item_init  # type: ignore[attr-defined]
    return init

"""Item keys as text: a stored item's key as one string, and the template of an outcome's key.

Owns ``key_string`` (how the report, the end state and the checker name an
item) and ``OutcomeKey`` (where a message's outcome item lives, from the
scenario's ``[outcome] key``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from loadtest.model.history.records import TypedItem


def key_string(key: TypedItem) -> str:
    """A stored item's key as one string: the value of a one-attribute key
    (the lab's ``id``), or the values joined by ``|`` in attribute order."""
    parts = []
    for value in key.values():
        if isinstance(value, dict) and len(value) == 1:
            parts.append(str(next(iter(value.values()))))
        else:
            parts.append(str(value))
    return "|".join(parts)


@dataclass(frozen=True)
class OutcomeKey:
    """Where a message's outcome lives: the key of its outcome item, one template per key attribute.

    The lab's default is the item keyed ``id = "{id}"``; a scenario may declare
    ``pk = "ORDER#{id}"`` (and a range key such as ``sk = "ORDER"``).
    ``{id}`` stands for the message's business id.
    """

    templates: tuple[tuple[str, str], ...] = (("id", "{id}"),)
    declared: bool = field(default=False, compare=False)
    """The scenario said where outcomes live (``[outcome] key``), even if it said the
    default: the checker takes its word instead of looking for outcomes elsewhere."""
    fields: tuple[str, ...] = ()
    """What a complete outcome holds (``[outcome] fields``): the names every finished
    outcome item stores a value under (an attribute, or a name inside one of its maps or
    JSON strings). An outcome item without one of them is not an outcome yet."""
    shared: bool = False
    """Outcomes are aggregates (``[outcome] shared = true``): items the handler changes on
    behalf of several messages (a running total per customer, stock per SKU), judged per
    business id and item instead of under a per-message key."""

    @functools.cached_property
    def key_names(self) -> tuple[str, ...]:
        # Cached: ``canonical`` reads it for every write a run judges.
        return tuple(name for name, _ in self.templates)

    def key_for(self, business_id: str) -> TypedItem:
        return {
            name: {"S": template.replace("{id}", business_id)} for name, template in self.templates
        }

    def describe(self) -> str:
        return ", ".join(f"{name} = {template!r}" for name, template in self.templates)

    def canonical(self, key: TypedItem) -> str:
        """``key_string`` of the key's attributes in this key's order (callers may order them
        otherwise); a key of other attributes (a table keyed otherwise, ``[table] key``) as it is."""
        names = self.key_names
        if not all(name in key for name in names):
            return key_string(key)
        return key_string({name: key[name] for name in names})

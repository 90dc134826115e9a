"""Whether a stored outcome is complete, and when the table cannot tell.

Owns the rule for an outcome item that exists but may be half-written: it is
complete when it holds every field the scenario declares (``[outcome]
fields``); with none declared, the messages' details it carries are the only
evidence (``check`` counts a message whose details were never stored as lost).

With none declared, what a complete outcome holds is also learned (``Complete``) from
every stored outcome of a business id where nothing failed (each of its deliveries
succeeded at its first receive), in the run itself or in the runs judged before it with
the same model (``loadtest explore``'s schedules that did not fail):

- the names it stores values under, besides its key: its attributes and what its maps,
  lists and JSON strings hold (``details.stored_names``), so a completion that fills in a
  nested map is seen as a completion that adds an attribute is;
- whether each carried its own message's details;
- each name whose value every one ended with alike (``status = DONE``), with the values
  such an outcome held there on the way: between two writes of one delivery (a claim
  ``PENDING``, then its completion). An outcome still holding one of those is one a
  delivery left half-way. A value that no outcome held on the way (a receive count, a
  version a takeover bumped, a total a duplicate increment doubled) judges nothing.

And, beside the outcome, the items every such business id's deliveries changed (a
running total per customer, an outbox entry, an audit row), by the shape of their keys: a
message acknowledged where something failed whose deliveries changed none of one was
acknowledged without part of what a complete delivery does (``missing_beside``).

What was learned is ``verdict.Complete``; the values on the way and the items changed
beside the outcome are gathered by ``passes.Judging`` (``OnTheWay``, ``Beside``).

An outcome of a business id where something failed that lacks one of the names, lacks
its message's details where every such outcome carried them, or holds a value outcomes
only passed through, is incomplete. Nothing is learned where nothing passed. When no
stored outcome carries any message's details, no fields are declared and no such outcome
was judged by what was learned, an item holding only its key would look finished: the
run cannot be judged by presence, and the reason names the fix.

The same rule says whether one stored item is unfinished (``lacks_complete``): it lacks
a declared field, else what was learned, else (nothing declared or learned) it carries
none of the messages' details. ``roles`` asks it of the item a delivery wrote over, to
tell a takeover of a failed delivery's half-written outcome from a duplicate write.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from loadtest.model.checker.details import carries, stored_leaves, stored_names
from loadtest.model.checker.verdict import Complete
from loadtest.model.history.log import OutcomeKey, TypedItem

MOST_VALUES_ON_THE_WAY = 8
"""Values one name may take in the writes of outcomes where nothing failed and still be a
state those outcomes pass through (PENDING, then DONE); a name that took more (an amount,
a timestamp) is no state, and judges nothing."""


def incomplete(final: Mapping[str, Sequence[TypedItem]], outcome_key: OutcomeKey) -> set[str]:
    """The business ids whose stored outcome items all lack a declared field."""
    fields = set(outcome_key.fields)
    if not fields:
        return set()
    return {
        business_id
        for business_id, items in final.items()
        if not any(fields <= stored_names(item) for item in items)
    }


_NONE: Any = object()
"""No single state value (absent, several, or a map, list or set)."""


def _state(values: Sequence[Any]) -> Any:
    """The one value stored under a name if it is a string, number, bool or null (a state,
    a count), else ``_NONE``."""
    if len(values) != 1:
        return _NONE
    value = values[0]
    return value if value is None or isinstance(value, str | Decimal | bool) else _NONE


def state_value(item: TypedItem, name: str) -> Any:
    """The one state value ``item`` stores under ``name`` (``_state``), else ``_NONE``."""
    return _state(stored_leaves(item).get(name, ()))


class Beside:
    """Which items beside its outcome each business id's deliveries changed: by the shape of
    their keys (``details.key_template``, with the message's details named too:
    ``id=customer#{customer}``), as bits of ``templates``. ``Judging`` adds each accepted
    side write that changed its item."""

    def __init__(self) -> None:
        self.templates: list[str] = []
        self._index: dict[str, int] = {}
        self._changed: dict[str, int] = {}

    def add(self, business_id: str, template: str) -> None:
        bit = self._index.get(template)
        if bit is None:
            bit = self._index[template] = len(self.templates)
            self.templates.append(template)
        self._changed[business_id] = self._changed.get(business_id, 0) | 1 << bit

    def of(self, business_id: str) -> frozenset[str]:
        """The templates of the items ``business_id``'s deliveries changed."""
        bits = self._changed.get(business_id, 0)
        return frozenset(t for i, t in enumerate(self.templates) if bits >> i & 1)


class OnTheWay:
    """The values each name took in the items outcomes where nothing failed held between
    two writes of one delivery (``Judging`` adds each), at most ``MOST_VALUES_ON_THE_WAY``."""

    def __init__(self) -> None:
        self._values: dict[str, set[Any] | None] = {}

    def add(self, item: TypedItem) -> None:
        for name, values in stored_leaves(item).items():
            value = _state(values)
            if value is _NONE:
                continue
            seen = self._values.setdefault(name, set())
            if seen is None or value in seen:
                continue
            if len(seen) >= MOST_VALUES_ON_THE_WAY:
                self._values[name] = None
            else:
                seen.add(value)

    def values(self, name: str) -> frozenset[Any]:
        """The values ``name`` took (empty: none, or too many to be a state)."""
        return frozenset(self._values.get(name) or ())


def learned(
    final: Mapping[str, Sequence[TypedItem]],
    clean: Iterable[str],
    key_names: Iterable[str],
    details_for: Callable[[str], Sequence[Mapping[str, Any]]],
    on_the_way: OnTheWay | None = None,
    beside: Beside | None = None,
) -> Complete | None:
    """What every stored outcome item of the ``clean`` business ids (nothing failed for
    them) holds (``on_the_way``: the values their writes left on the way), and which items
    beside it every one's deliveries changed (``beside``); None when none is stored."""
    names: set[str] | None = None
    carried = True
    ends: dict[str, Any] | None = None
    besides: frozenset[str] | None = None
    for business_id in clean:
        if business_id in final and beside is not None:
            changed = beside.of(business_id)
            besides = changed if besides is None else besides & changed
        details = details_for(business_id)
        for item in final.get(business_id, ()):
            leaves = stored_leaves(item)
            stored = set(leaves)
            names = stored if names is None else names & stored
            carried = carried and bool(details) and any(carries(item, d) for d in details)
            values = {n: _state(v) for n, v in leaves.items()}
            if ends is None:
                ends = {n: v for n, v in values.items() if v is not _NONE}
            else:
                ends = {n: v for n, v in ends.items() if n in values and values[n] == v}
    if names is None or ends is None:
        return None
    key = set(key_names)
    way = on_the_way or OnTheWay()
    return Complete(
        frozenset(names - key),
        carried,
        {n: (v, way.values(n) - {v}) for n, v in ends.items() if n not in key},
        besides or frozenset(),
    )


def lacks(complete: Complete, item: TypedItem, details: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``item`` is unfinished by what was learned: it lacks a name, it carries
    none of ``details`` where every complete one carried its own, or it holds a value
    complete ones only passed through."""
    if not complete.names <= stored_names(item):
        return True
    if complete.details and details and not any(carries(item, d) for d in details):
        return True
    for name, (end, way) in complete.ends.items():
        value = state_value(item, name)
        if value is not _NONE and value != end and value in way:
            return True
    return False


def complete_with(own: Complete | None, before: Complete | None) -> Complete | None:
    """What a complete outcome holds, from the run's own outcomes where nothing failed and
    from the runs judged before it (``before``): what both learned; None when neither
    learned anything (nothing is guessed)."""
    known = [c for c in (own, before) if c is not None]
    if not known:
        return None
    complete = known[0] if len(known) == 1 else known[0].merged(known[1])
    return complete if complete.says_anything else None


def lacking(
    final: Mapping[str, Sequence[TypedItem]],
    complete: Complete,
    clean: set[str],
    details_for: Callable[[str], Sequence[Mapping[str, Any]]],
) -> set[str]:
    """The business ids where something failed whose stored outcome items are all
    unfinished by what was learned: half-written outcomes."""
    return {
        business_id
        for business_id, items in final.items()
        if business_id not in clean
        and all(lacks(complete, item, details_for(business_id)) for item in items)
    }


def missing_beside(
    complete: Complete | None, clean: set[str], business_id: str, beside: Beside
) -> frozenset[str]:
    """The items beside its outcome that every complete delivery changed and no delivery
    of ``business_id`` (something failed for it) did: what it was acknowledged without."""
    if complete is None or not complete.beside or business_id in clean:
        return frozenset()
    return complete.beside - beside.of(business_id)


def lacks_complete(
    item: TypedItem,
    outcome_key: OutcomeKey,
    complete: Complete | None,
    details: Sequence[Mapping[str, Any]],
) -> bool:
    """Whether a stored outcome item is unfinished: it lacks a field the scenario declares,
    else it is unfinished by what was learned (``complete_with``), else, with nothing
    declared or learned, it carries none of the messages' ``details`` (a claim)."""
    if outcome_key.fields:
        return not set(outcome_key.fields) <= stored_names(item)
    if complete is not None:
        return lacks(complete, item, details)
    return not any(carries(item, d) for d in details)


def judged_without_details(
    outcome_key: OutcomeKey, complete: Complete | None = None
) -> tuple[str | None, str | None]:
    """For stored outcomes that carry none of the messages' details: a note when the
    declared fields, or what was learned from the outcomes where nothing failed
    (``complete``), judge them, else the reason the run is inconclusive (note, reason)."""
    if complete is not None:
        return (
            "the stored outcomes carry none of the messages' details: an outcome is "
            "judged complete by what every outcome where nothing failed holds "
            f"({complete.describe()})",
            None,
        )
    if outcome_key.fields:
        return (
            "the stored outcomes carry none of the messages' details: an outcome is "
            f"judged complete by the fields the scenario declares ({', '.join(outcome_key.fields)})",
            None,
        )
    return (
        None,
        "the stored outcomes carry none of the messages' details (not under the body's "
        "field names, nor as their values, nor inside maps or JSON strings), so whether "
        "each outcome is complete cannot be told from the table. Declare what a complete "
        'outcome holds in the scenario: [outcome] fields = ["status", ...] (the attributes '
        "every finished outcome item has)",
    )

"""Whether a stored outcome is complete, and when the table cannot tell.

Owns the rule for an outcome item that exists but may be half-written: it is
complete when it holds every field the scenario declares (``[outcome]
fields``); with none declared, the messages' details it carries are the only
evidence (``check`` counts a message whose details were never stored as lost).

With none declared, what a complete outcome holds is also learned: the attribute
names (besides its key) that every stored outcome of a business id where nothing
failed holds (each of its deliveries succeeded at its first receive), in the run
itself or in the runs judged before it with the same model (``loadtest explore``'s
schedules that did not fail). An outcome of a business id where something failed
that lacks one of them is incomplete. Nothing is learned where nothing passed.
When no stored outcome carries any message's details, no fields are declared and
no such outcome was judged by learned names, an item holding only its key would
look finished: the run cannot be judged by presence, and the reason names the fix.

The same rule says whether one stored item is unfinished (``lacks_complete``): it lacks
a declared field, else a learned name, else (nothing declared or learned) it carries
none of the messages' details. ``roles`` asks it of the item a delivery wrote over, to
tell a takeover of a failed delivery's half-written outcome from a duplicate write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loadtest.model.checker.details import carries, stored_names
from loadtest.model.history.log import OutcomeKey, TypedItem


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


def learned(
    final: Mapping[str, Sequence[TypedItem]], clean: Iterable[str], key_names: Iterable[str]
) -> frozenset[str] | None:
    """The attribute names, besides the key's, that every stored outcome item of the
    ``clean`` business ids (nothing failed for them) holds; None when none is stored."""
    names: set[str] | None = None
    for business_id in clean:
        for item in final.get(business_id, ()):
            names = set(item) if names is None else names & set(item)
    return None if names is None else frozenset(names.difference(key_names))


def complete_names(
    own: frozenset[str] | None, before: frozenset[str] | None
) -> frozenset[str] | None:
    """What a complete outcome holds, from the run's own outcomes where nothing failed and
    from the runs judged before it (``before``): the names both hold; None when neither
    learned any name besides the key's (nothing is guessed)."""
    known = [names for names in (own, before) if names is not None]
    if not known:
        return None
    names = frozenset.intersection(*known)
    return names or None


def lacking(
    final: Mapping[str, Sequence[TypedItem]], names: frozenset[str], clean: set[str]
) -> set[str]:
    """The business ids where something failed whose stored outcome items all lack one of
    the learned ``names``: half-written outcomes."""
    return {
        business_id
        for business_id, items in final.items()
        if business_id not in clean and not any(names <= item.keys() for item in items)
    }


def lacks_complete(
    item: TypedItem,
    outcome_key: OutcomeKey,
    names: frozenset[str] | None,
    details: Sequence[Mapping[str, Any]],
) -> bool:
    """Whether a stored outcome item is unfinished: it lacks a field the scenario declares,
    else one of the learned ``names`` (``complete_names``), else, with nothing declared or
    learned, it carries none of the messages' ``details`` (a claim)."""
    if outcome_key.fields:
        return not set(outcome_key.fields) <= stored_names(item)
    if names:
        return not names <= item.keys()
    return not any(carries(item, d) for d in details)


def judged_without_details(
    outcome_key: OutcomeKey, names: frozenset[str] | None = None
) -> tuple[str | None, str | None]:
    """For stored outcomes that carry none of the messages' details: a note when the
    declared fields, or the ``names`` learned from the outcomes where nothing failed,
    judge them, else the reason the run is inconclusive (note, reason)."""
    if names:
        return (
            "the stored outcomes carry none of the messages' details: an outcome is "
            "judged complete by the attributes every outcome where nothing failed holds "
            f"({', '.join(sorted(names))})",
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

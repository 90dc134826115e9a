"""Whether a stored outcome is complete, and when the table cannot tell.

Owns the rule for an outcome item that exists but may be half-written: it is
complete when it holds every field the scenario declares (``[outcome]
fields``); with none declared, the messages' details it carries are the only
evidence (``check`` counts a message whose details were never stored as lost).
When no stored outcome carries any message's details and no fields are
declared, an item holding only its key would look finished: the run cannot be
judged by presence, and the reason names the fix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from loadtest.model.checker.details import stored_names
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


def judged_without_details(outcome_key: OutcomeKey) -> tuple[str | None, str | None]:
    """For stored outcomes that carry none of the messages' details: a note when the
    declared fields judge them, else the reason the run is inconclusive (note, reason)."""
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

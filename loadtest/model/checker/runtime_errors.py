"""Plain words for the invocation errors Lambda's runtime raises itself, keyed by error type.

A handler's own exception is the consumer's business (a poison message may be meant to
fail); an error the *runtime* reports (``Runtime.MarshalError``, ``Runtime.ExitError``)
means the handler does something Lambda does not run as the author expects. The checker
names each such type with its count and why (``explain``): a failing reason for an answer
the runtime refuses, a note for a process that ended (a crash the consumer must survive).
The dead letters or redeliveries they cause are then explained in the report instead of
looking like data loss. Each type's explanation and effect is a row of
``harness.REASONS``, the one table of how an error becomes a reason; this module reads it.
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from loadtest.model.checker.harness import REASONS, Effect

_EXPLAINED = tuple(r for r in REASONS if r.effect is not Effect.INCONCLUSIVE)
"""The runtime's error types in ``harness.REASONS``: each fails the run or only explains it."""


def explain(error: str | None) -> tuple[str, str, bool] | None:
    """(error type, explanation, fails) for an invocation error of a runtime error type in
    ``harness.REASONS``."""
    if not error:
        return None
    for reason in _EXPLAINED:
        for found in reason.rule(error):
            return reason.kind, found.sentence, reason.effect is Effect.FAILS
    return None


def sentences(counts: Mapping[tuple[str, str, bool], int], *, failing: bool) -> list[str]:
    """One sentence per (error type, explanation) that fails the run (``failing``) or only
    explains it, most frequent first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        f"{n} invocation(s) failed with {kind}: {explanation}"
        for (kind, explanation, fails), n in ordered
        if fails == failing
    ]

"""Plain words for the invocation errors Lambda's runtime raises itself, keyed by error type.

A handler's own exception is the consumer's business (a poison message may be meant to
fail); an error the *runtime* reports (``Runtime.MarshalError``, ``Runtime.ExitError``)
means the handler does something Lambda does not run as the author expects. The checker
names each such type with its count and why (``explain``): a failing reason for an answer
the runtime refuses, a note for a process that ended (a crash the consumer must survive).
The dead letters or redeliveries they cause are then explained in the report instead of
looking like data loss. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

_COROUTINE = "Object of type coroutine is not JSON serializable"


def _marshal(message: str) -> str:
    if _COROUTINE in message:
        return "the handler is `async def`; Lambda's Python runtime does not await it"
    return (
        "the handler returned a value Lambda's Python runtime cannot serialise as JSON "
        f"({message.removeprefix('Unable to marshal response: ')}); only JSON types, "
        "Decimal and bytes are answered"
    )


def _exit(message: str) -> str:
    if "signal: " in message:
        return (
            "the runtime's process was killed by a signal (a crash in native code, or a "
            "kill): Lambda fails the invocation and starts a new execution environment"
        )
    return (
        "the handler ended the runtime's process (sys.exit or os._exit): Lambda fails "
        "the invocation and starts a new execution environment"
    )


EXPLANATIONS: dict[str, tuple[Callable[[str], str], bool]] = {
    "Runtime.MarshalError": (_marshal, True),
    "Runtime.ExitError": (_exit, False),
}
"""Error type -> the explanation of an error of that type (from its message), and whether
it fails the run by itself. A refused answer does: the runtime never accepts it. An ended
process does not: a consumer must survive a crash (what it causes is judged as usual)."""


def explain(error: str | None) -> tuple[str, str, bool] | None:
    """(error type, explanation, fails) for an invocation error of a type in ``EXPLANATIONS``."""
    if not error:
        return None
    kind, _, message = error.partition(": ")
    known = EXPLANATIONS.get(kind)
    if known is None:
        return None
    explanation, fails = known
    return kind, explanation(message), fails


def sentences(counts: Mapping[tuple[str, str, bool], int], *, failing: bool) -> list[str]:
    """One sentence per (error type, explanation) that fails the run (``failing``) or only
    explains it, most frequent first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        f"{n} invocation(s) failed with {kind}: {explanation}"
        for (kind, explanation, fails), n in ordered
        if fails == failing
    ]

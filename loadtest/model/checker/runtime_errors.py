"""Plain words for the invocation errors Lambda's runtime raises itself, keyed by error type.

A handler's own exception is the consumer's business (a poison message may be meant to
fail); an error the *runtime* reports (``Runtime.MarshalError``, ``Runtime.ExitError``)
means the handler does something Lambda does not run as the author expects, on every
invocation that reaches it. The checker names each such type with its count and why
(``explain``), as a failing reason: the dead letters or redeliveries it causes are then
explained in the report instead of looking like data loss. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable

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
    return (
        "the handler ended the runtime's process (sys.exit or os._exit): Lambda fails "
        "the invocation and starts a new execution environment"
    )


EXPLANATIONS: dict[str, Callable[[str], str]] = {
    "Runtime.MarshalError": _marshal,
    "Runtime.ExitError": _exit,
}
"""Error type -> the explanation of an error of that type (from its message)."""


def explain(error: str | None) -> tuple[str, str] | None:
    """(error type, explanation) for an invocation error of a type in ``EXPLANATIONS``."""
    if not error:
        return None
    kind, _, message = error.partition(": ")
    explanation = EXPLANATIONS.get(kind)
    if explanation is None:
        return None
    return kind, explanation(message)


def reasons(counts: dict[tuple[str, str], int]) -> list[str]:
    """One failing reason per (error type, explanation), most frequent first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [
        f"{n} invocation(s) failed with {kind}: {explanation}" for (kind, explanation), n in ordered
    ]

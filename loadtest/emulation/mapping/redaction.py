"""Receipt handles cut out of whatever a run reports: they are credentials.

Owns ``redact`` and the fragment matching behind it; the runner applies it to each
invocation's error, result and log tail before they enter the history.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from typing import Any

REDACTED = "<receipt-handle>"
HANDLE_FRAGMENT_CHARS = 16
"""A run of this many characters of a receipt handle, anywhere in a text, is redacted."""
_TOKEN = re.compile(r"[A-Za-z0-9+/=_%.~-]{" + str(HANDLE_FRAGMENT_CHARS) + ",}")


def redact(value: Any, handles: set[str]) -> Any:
    """``value`` with every receipt handle replaced: they are credentials, never reported.

    A handler may echo its event in its result, error or log; the report keeps
    those, so the handles of the batch are cut out of them here: whole, and
    any token holding a fragment of one (truncated, URL-quoted or embedded in a
    longer string) of ``HANDLE_FRAGMENT_CHARS`` characters or more.
    """
    return _redact(value, handles, _lazy_fragments(handles))


def _lazy_fragments(handles: set[str]) -> Callable[[], frozenset[str]]:
    """The fragments of ``handles``, computed on first use: most results and logs hold
    no token long enough to need them, and building them costs more than the rest."""
    cache: list[frozenset[str]] = []

    def fragments() -> frozenset[str]:
        if not cache:
            cache.append(_fragments(handles))
        return cache[0]

    return fragments


def _fragments(handles: set[str]) -> frozenset[str]:
    n = HANDLE_FRAGMENT_CHARS
    return frozenset(h[i : i + n] for h in handles for i in range(max(0, len(h) - n) + 1))


def _leaks(token: str, fragments: frozenset[str]) -> bool:
    n = HANDLE_FRAGMENT_CHARS
    for text in {token, urllib.parse.unquote(token)}:
        if any(text[i : i + n] in fragments for i in range(len(text) - n + 1)):
            return True
    return False


def _redact(value: Any, handles: set[str], fragments: Callable[[], frozenset[str]]) -> Any:
    if isinstance(value, str):
        text = str(value)
        for handle in handles:
            if handle in text:
                text = text.replace(handle, REDACTED)
        if handles and _TOKEN.search(text):
            known = fragments()
            text = _TOKEN.sub(lambda m: REDACTED if _leaks(m.group(0), known) else m.group(0), text)
        return value if text == value else text  # a StrEnum stays itself
    # A container is copied only when something in it changed: an unchanged
    # value stays the one object the environments' shared table handed out.
    if isinstance(value, dict):
        redacted = {k: _redact(v, handles, fragments) for k, v in value.items()}
        unchanged = all(redacted[k] is v for k, v in value.items())
        return value if unchanged else redacted
    if isinstance(value, list):
        items = [_redact(v, handles, fragments) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value

"""TOML text for the scenarios loadtest writes (``loadtest new``, ``loadtest shrink``).

Owns turning plain values into TOML: a key bare where TOML allows it, else quoted;
booleans, numbers, strings, arrays and inline tables on one line. Pure; the standard
library reads TOML (``tomllib``) but does not write it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(name: str) -> str:
    """``name`` as a TOML key: bare when TOML allows it, else a quoted string."""
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name, ensure_ascii=False)


def toml_value(value: Any, *, skip_none: bool = False) -> str:
    """A JSON-like value as a TOML value (inline tables and arrays, on one line).

    TOML has no null: with ``skip_none`` a table's None entries are left out, otherwise a
    None (like any value TOML cannot hold) raises ``ValueError``.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        # A JSON string's escapes are all TOML basic-string escapes.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v, skip_none=skip_none) for v in value) + "]"
    if isinstance(value, Mapping):
        inner = ", ".join(
            f"{toml_key(k)} = {toml_value(v, skip_none=skip_none)}"
            for k, v in value.items()
            if not (skip_none and v is None)
        )
        return "{ " + inner + " }" if inner else "{}"
    raise ValueError(f"cannot write {value!r} as TOML")

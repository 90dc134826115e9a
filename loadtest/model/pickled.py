"""Pickling frozen, slotted dataclasses by a state read with field names found once.

Owns ``field_state``. ``dataclasses`` gives a class made with ``slots=True`` a
``__getstate__`` and ``__setstate__`` that look its fields up on every call; an explored
schedule a worker process sends back holds some fifty such records (its decisions'
options, its invocations and writes), and those lookups were most of what pickling and
unpickling it cost. The state is the same (the fields' values in their order), so what
is pickled elsewhere reads back the same.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def field_state(cls: T) -> T:
    """``cls`` (a frozen dataclass with ``slots=True``) pickled as the tuple of its fields'
    values, its field names found here once."""
    names = tuple(f.name for f in dataclasses.fields(cls))

    def __getstate__(self: Any) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in names])

    def __setstate__(self: Any, state: Any) -> None:
        for name, value in zip(names, state, strict=False):  # as dataclasses reads it
            object.__setattr__(self, name, value)

    setattr(cls, "__getstate__", __getstate__)  # noqa: B010 - mypy refuses a method assigned
    setattr(cls, "__setstate__", __setstate__)  # noqa: B010
    return cls

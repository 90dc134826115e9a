"""Each execution environment of an explored schedule with its own copy of the handler's code.

On Lambda every execution environment is a process of its own: it imports the handler
(its cold start) and keeps what the handler's modules hold (an event loop, a client, a
set of order ids it has seen) for the invocations it runs, and for no other environment.
The explorer runs every delivery as a thread of one process, so each environment is
given its own copy of the consumer's own modules instead: those the handler's file sits
beside (a file reference: its folder, as in a deployment zip) or its top-level package (a
module reference) holds. Libraries (boto3, Powertools) and loadtest are shared, as they
hold no consumer state.

Environment 1 is the handler as the session first imported it; any other is imported
again, once per session, the first time a delivery runs in it, and kept for the
environments of that number in later schedules (warm, as Lambda keeps an environment
between invocations). The copy is made with the consumer's modules taken out of
``sys.modules`` and put back after, so each copy's modules see each other, and
``sys.modules`` holds environment 1's.

Before a schedule that must run as its token replays it (a bug's, shown), ``settle``
imports afresh every environment whose modules changed since their import.

Owns the copies and ending them with the session (``close``: environment 1's modules
leave ``sys.modules`` too); when one is imported
(outside the schedule's points) is ``loadtest.emulation.explore.deliveries``'.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from loadtest.emulation.environment.child_host import load_handler

Handler = Callable[[Any, Any], Any]


class EnvironmentHandlers:
    """The handler of each execution environment, by its number (1, 2, ...)."""

    def __init__(self, ref: str, module: str | None, path: str | None) -> None:
        self._ref = ref
        self._home = _home(module, path)
        self._own: list[str] = []
        """The consumer's modules environment 1's import made (libraries and modules
        imported before it are shared)."""
        self._by_number: dict[int, Handler] = {}
        self._modules_of: dict[int, list[ModuleType]] = {}
        self._marks: dict[int, _Mark] = {}
        """What each environment's modules held when it was imported."""
        self._modules: list[ModuleType] = []
        """Every environment's modules of the consumer ever imported (``close`` ends them)."""
        self.first: Handler = self._import_first()
        """Environment 1's handler: the import the session checked."""

    def __call__(self, environment: int) -> Handler:
        handler = self._by_number.get(environment)
        if handler is None:
            handler, modules = self._copy()
            self._keep(environment, handler, modules)
        return handler

    def settle(self) -> None:
        """Cold environments for the next schedule: one whose modules no longer hold
        what they held when imported (a global bound since, a set or a dict that grew, a
        client kept from an event loop that has ended) is imported afresh (environment 1
        at once, any other when next used), so the schedule runs as it does first in a
        process of its own, the one a replay of its token starts."""
        for number in list(self._by_number):
            if _mark(self._modules_of[number], self._own) == self._marks[number]:
                continue
            if number == 1:
                self.first = self._import_first()
            else:
                del self._by_number[number]

    def _keep(self, number: int, handler: Handler, modules: list[ModuleType]) -> None:
        self._by_number[number] = handler
        self._modules_of[number] = modules
        self._marks[number] = _mark(modules, self._own)
        self._modules.extend(modules)

    def _import_first(self) -> Handler:
        self._forget_first()
        before = dict(sys.modules)
        handler = load_handler(self._ref)
        self._own = [
            name
            for name, found in list(sys.modules.items())
            if before.get(name) is not found and self._holds(found)
        ]
        self._keep(1, handler, [sys.modules[name] for name in self._own])
        return handler

    def _forget_first(self) -> None:
        """Take environment 1's modules out of ``sys.modules`` (those still its own)."""
        for name, module in zip(self._own, self._modules_of.get(1, []), strict=False):
            if sys.modules.get(name) is module:
                del sys.modules[name]

    def _holds(self, module: ModuleType | None) -> bool:
        if module is None or module.__name__.split(".")[0] == "loadtest":
            return False
        where = getattr(module, "__file__", None)
        return bool(where) and _within(str(where), self._home)

    def _copy(self) -> tuple[Handler, list[ModuleType]]:
        kept = {name: sys.modules.pop(name) for name in self._own if name in sys.modules}
        copied: list[ModuleType] = []
        try:
            return load_handler(self._ref), copied
        finally:
            for name in self._own:
                module = sys.modules.pop(name, None)
                if module is not None:
                    copied.append(module)
            sys.modules.update(kept)
            _rebind(kept)

    def close(self) -> None:
        """End the environments as their processes end: an event loop a module kept
        (``loop = asyncio.new_event_loop()``) is closed, not left to warn when collected,
        and environment 1's modules leave ``sys.modules``, so that a later exploration in
        this process imports the consumer afresh (its cold start, under its own variables)
        instead of finding a sibling module bound to this one's table."""
        self._forget_first()
        for module in self._modules:
            for value in list(vars(module).values()):
                if (
                    isinstance(value, asyncio.AbstractEventLoop)
                    and not value.is_running()
                    and not value.is_closed()
                ):
                    value.close()
        self._modules.clear()


_Mark = tuple[tuple[str, str, int, object], ...]


def _mark(modules: list[ModuleType], own: list[str]) -> _Mark:
    """What ``modules`` hold, cheaply: each global's identity, the size and members of a
    set, list or dict it names, and the attributes of an object of a class the consumer
    defines. (Deeper changes, an object inside a list changed in place, escape it; the
    search still notes a schedule that ran differently when replayed.)"""
    return tuple(
        (module.__name__, name, id(value), _shape(value, own))
        for module in modules
        for name, value in list(vars(module).items())
        if not (name.startswith("__") and name.endswith("__"))
    )


def _shape(value: object, own: list[str]) -> object:
    if isinstance(value, dict):
        return tuple((id(k), id(v)) for k, v in list(value.items()))
    if isinstance(value, (list, set)):
        return tuple(id(v) for v in list(value))
    if type(value).__module__ in own:
        attributes = getattr(value, "__dict__", None)
        if isinstance(attributes, dict):
            return tuple((k, id(v)) for k, v in list(attributes.items()))
    return None


def _rebind(modules: dict[str, ModuleType]) -> None:
    """Point each package's attribute back at environment 1's submodule: importing a copy
    sets ``package.submodule`` to the copy on a package shared with it, so that
    ``import package.submodule`` and ``sys.modules`` would otherwise name two modules."""
    for name, module in modules.items():
        parent, _, child = name.rpartition(".")
        package = sys.modules.get(parent) if parent else None
        if package is not None:
            setattr(package, child, module)


def _home(module: str | None, path: str | None) -> str:
    """The folder the consumer's own modules live in."""
    if path is not None:
        return os.path.dirname(os.path.abspath(path))
    top = str(module).split(".")[0]
    found = sys.modules.get(top)
    where = getattr(found, "__file__", None) if found is not None else None
    if where is None:
        import importlib.util

        spec = importlib.util.find_spec(top)
        where = spec.origin if spec is not None else None
    if where is None:
        return os.path.abspath(top)
    # A package's folder, or a lone module's own file.
    return os.path.dirname(where) if os.path.basename(where) == "__init__.py" else where


def _within(where: str, home: str) -> bool:
    where = os.path.abspath(where)
    return where == home or where.startswith(home.rstrip(os.sep) + os.sep)

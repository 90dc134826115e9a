"""The write observer's hooks into botocore: two private client methods, wrapped.

``BaseClient._emit_api_params`` (the request's parameters, in DynamoDB's wire form) and
``BaseClient._make_request`` (the request sent and its answer parsed) are wrapped for a
whole process (``wrap_sync``), and aiobotocore's coroutine versions on ``AioBaseClient``
the same way (``wrap_async``), once a consumer imports ``aiobotocore.client``
(``AfterImport``, an import hook, so an environment whose consumer never uses it does not
import it). A planned call travels from the one method to the other in the request's
context (``pending``).

Owns the wrappers and putting the originals back (``restore``); what is planned, sent and
recorded around a call is the observer's (``loadtest.observer.write_observer``, which
these wrappers call through ``Observing``). Ships in the observer layer.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Awaitable, Callable, Sequence
from types import ModuleType
from typing import Any, Protocol

from botocore.client import BaseClient

from loadtest.observer.calls import Call

PENDING = "loadtest_observation"
"""The request context's key under which a planned call waits for its request."""
AIO_CLIENT = "aiobotocore.client"
"""The module whose ``AioBaseClient`` aioboto3's clients derive from."""

Methods = tuple[Callable[..., Any], Callable[..., Any]]
"""A client class's ``_emit_api_params`` and ``_make_request``."""


class Observing(Protocol):
    """What the wrappers call on the observer."""

    def _planned(
        self, client: BaseClient, params: dict[str, Any], operation_model: Any, context: Any
    ) -> dict[str, Any]: ...

    def _send_other(self, request_context: Any, send: Callable[[], Any]) -> Any: ...

    def _send(self, call: Call, send: Callable[[], Any]) -> Any: ...

    async def _send_async(self, call: Call, send: Callable[[], Awaitable[Any]]) -> Any: ...

    async def _send_other_async(
        self, request_context: Any, send: Callable[[], Awaitable[Any]]
    ) -> Any: ...

    def _after(self, operation_model: Any, result: Any, context: Any) -> None: ...


def restore(client_class: type, methods: Methods) -> None:
    """Set ``client_class``'s two methods to ``methods`` (the originals, or wrappers)."""
    emit, request = methods
    setattr(client_class, "_emit_api_params", emit)  # noqa: B010
    setattr(client_class, "_make_request", request)  # noqa: B010


def wrap_sync(observer: Observing) -> Methods:
    """Wrap botocore's ``BaseClient``; return its original methods (``restore`` puts them back)."""
    # Private botocore methods, absent from the type stubs: hence getattr.
    original_emit: Callable[..., dict[str, Any]] = getattr(BaseClient, "_emit_api_params")  # noqa: B009
    original_request: Callable[..., Any] = getattr(BaseClient, "_make_request")  # noqa: B009

    def emit_api_params(
        client: BaseClient, api_params: dict[str, Any], operation_model: Any, context: Any
    ) -> dict[str, Any]:
        params = original_emit(client, api_params, operation_model, context)
        return observer._planned(client, params, operation_model, context)

    def make_request(
        client: BaseClient, operation_model: Any, request_dict: Any, request_context: Any
    ) -> Any:
        call = pending(request_context)
        if call is None:
            result = observer._send_other(
                request_context,
                lambda: original_request(client, operation_model, request_dict, request_context),
            )
        else:
            result = observer._send(
                call,
                lambda: original_request(client, operation_model, request_dict, request_context),
            )
        observer._after(operation_model, result, request_context)
        return result

    restore(BaseClient, (emit_api_params, make_request))
    return original_emit, original_request


def wrap_async(observer: Observing, aio_class: type) -> Methods:
    """The same two wrappers, as coroutines, on aiobotocore's client class; return its originals."""
    original_emit: Callable[..., Awaitable[dict[str, Any]]] = getattr(  # noqa: B009
        aio_class, "_emit_api_params"
    )
    original_request: Callable[..., Awaitable[Any]] = getattr(aio_class, "_make_request")  # noqa: B009

    async def emit_api_params(
        client: BaseClient, api_params: dict[str, Any], operation_model: Any, context: Any
    ) -> dict[str, Any]:
        params = await original_emit(client, api_params, operation_model, context)
        return observer._planned(client, params, operation_model, context)

    async def make_request(
        client: BaseClient, operation_model: Any, request_dict: Any, request_context: Any
    ) -> Any:
        call = pending(request_context)
        if call is None:
            result = await observer._send_other_async(
                request_context,
                lambda: original_request(client, operation_model, request_dict, request_context),
            )
        else:
            result = await observer._send_async(
                call,
                lambda: original_request(client, operation_model, request_dict, request_context),
            )
        observer._after(operation_model, result, request_context)
        return result

    restore(aio_class, (emit_api_params, make_request))
    return original_emit, original_request


def pending(request_context: Any) -> Call | None:
    """The call planned for this request, taken out of its context (a retry of the
    whole call is observed afresh); None when the request is not observed."""
    call = request_context.get(PENDING) if isinstance(request_context, dict) else None
    if not isinstance(call, Call):
        return None
    del request_context[PENDING]
    return call


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls ``then(module)`` once the module ``name`` has been imported (executed)."""

    def __init__(self, name: str, then: Callable[[ModuleType], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = ThenLoader(spec.loader, self.then)
                return spec
        return None


class ThenLoader(importlib.abc.Loader):
    """A module's own loader, then a callback on the executed module; anything else
    (``get_source``, ``is_package``, ...) is the own loader's."""

    def __init__(self, inner: importlib.abc.Loader, then: Callable[[ModuleType], None]) -> None:
        self.inner = inner
        self.then = then

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        self.then(module)

"""What Lambda's Python runtime sends back for a handler's return value, exactly.

The runtime (aws/aws-lambda-python-runtime-interface-client,
``awslambdaric/lambda_runtime_marshaller.py``) answers with
``simplejson.JSONEncoder(use_decimal=False, allow_nan=True).encode(value)``
whose ``default`` turns a ``Decimal`` into its ``str`` as a raw JSON number (a
NaN ``Decimal`` into ``NaN``); a ``bytes`` value is sent as it is
(``application/unknown``). Whatever the encoder refuses fails the invocation
(``awslambdaric/bootstrap.py``, ``handle_event_request``) with
``Runtime.MarshalError`` and the message ``Unable to marshal response: <the
encoder's message>``, after the handler ran and wrote what it wrote.

The encoder's rules, in its order (``simplejson/encoder.py``,
``_make_iterencode``): ``str``; ``bytes`` decoded as UTF-8; ``None``,
``True``, ``False``; ``int`` (subclasses by value); ``float`` (``NaN``,
``Infinity``); any object with a callable ``_asdict`` (a namedtuple, but not
only) as the object ``_asdict()`` returns; ``list`` and ``tuple`` as arrays;
``dict`` as an object, its keys ``str``, ``bytes``, ``float``, ``bool``,
``None`` or ``int``; then ``default``: a ``Decimal``, else ``TypeError``. A
container met again inside itself is a circular reference. No ``set``, no
``datetime``, no coroutine: those fail, as on Lambda.

Both the local execution environment (``loadtest.emulation.environment.child_host``) and the
observer layer's wrapper (``loadtest.observer.lambda_entry``) use this module,
so neither answers what the runtime would not. Imports only the standard library
(it ships in the observer layer).
"""

from __future__ import annotations

import decimal
import json
import math
from dataclasses import dataclass
from typing import Any

MARSHAL_ERROR = "Runtime.MarshalError"
JSON_CONTENT_TYPE = "application/json"
BYTES_CONTENT_TYPE = "application/unknown"

_encode_string = json.encoder.encode_basestring
"""Python 3.12+ runtimes encode with ``ensure_ascii=False``: strings as they are."""


class MarshalError(Exception):
    """The runtime could not marshal the handler's return value; ``str`` is its message."""

    error_type = MARSHAL_ERROR


@dataclass(frozen=True)
class Marshalled:
    """The runtime's response: its body and content type."""

    body: str | bytes
    content_type: str


def marshal_response(value: Any) -> Marshalled:
    """The response Lambda's Python runtime sends for ``value``; raises ``MarshalError``."""
    if isinstance(value, bytes):
        return Marshalled(value, BYTES_CONTENT_TYPE)
    try:
        chunks: list[str] = []
        _encode(value, chunks, {})
        return Marshalled("".join(chunks), JSON_CONTENT_TYPE)
    except Exception as exc:  # the runtime catches Exception around its encoder, too
        message = f"Unable to marshal response: {exc}"
    raise MarshalError(message)


def error_line(error: MarshalError) -> str:
    """The invocation's error as loadtest records one (``type: message``)."""
    return f"{MARSHAL_ERROR}: {error}"


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == math.inf:
        return "Infinity"
    if value == -math.inf:
        return "-Infinity"
    return repr(float(value))


def _as_dict(value: Any) -> tuple[Any] | None:
    """simplejson's ``call_method(value, '_asdict')``: the result in a 1-tuple, or None."""
    method = getattr(value, "_asdict", None)
    if callable(method):
        try:
            return (method(),)
        except TypeError:
            pass
    return None


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        return str(key, "utf-8")
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return str(int(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def _enter(container: Any, markers: dict[int, Any]) -> int:
    marker = id(container)
    if marker in markers:
        raise ValueError("Circular reference detected")
    markers[marker] = container
    return marker


def _encode(value: Any, out: list[str], markers: dict[int, Any]) -> None:
    if isinstance(value, str):
        out.append(_encode_string(value))
    elif isinstance(value, bytes):
        out.append(_encode_string(str(value, "utf-8")))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float):
        out.append(_float(value))
    else:
        as_dict = _as_dict(value)
        if as_dict is not None:
            mapping = as_dict[0]
            if not isinstance(mapping, dict):
                raise TypeError(f"_asdict() must return a dict, not {type(mapping).__name__}")
            _encode_dict(mapping, out, markers)
        elif isinstance(value, (list, tuple)):
            _encode_list(value, out, markers)
        elif isinstance(value, dict):
            _encode_dict(value, out, markers)
        else:
            marker = _enter(value, markers)
            _encode_default(value, out)
            del markers[marker]


def _encode_default(value: Any, out: list[str]) -> None:
    """The runtime's ``Encoder.default``: a Decimal as a raw number, else the base refusal."""
    if isinstance(value, decimal.Decimal):
        out.append("NaN" if value.is_nan() else str(value))
        return
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _encode_list(
    values: list[Any] | tuple[Any, ...], out: list[str], markers: dict[int, Any]
) -> None:
    if not values:
        out.append("[]")
        return
    marker = _enter(values, markers)
    out.append("[")
    for i, item in enumerate(values):
        if i:
            out.append(", ")
        _encode(item, out, markers)
    out.append("]")
    del markers[marker]


def _encode_dict(mapping: dict[Any, Any], out: list[str], markers: dict[int, Any]) -> None:
    if not mapping:
        out.append("{}")
        return
    marker = _enter(mapping, markers)
    out.append("{")
    for i, (key, item) in enumerate(mapping.items()):
        if i:
            out.append(", ")
        out.append(_encode_string(_key(key)))
        out.append(": ")
        _encode(item, out, markers)
    out.append("}")
    del markers[marker]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def response_value(response: Marshalled) -> tuple[bool, Any]:
    """What an event source mapping reads in ``response``: (True, the JSON value), or (False,
    a description) when the body is not strict JSON (``NaN``, ``Infinity``, or bytes that are
    not JSON), which a partial batch response treats as an invalid response."""
    body = response.body
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
        return True, json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        size = len(body)
        return False, f"<{response.content_type} response of {size} bytes, not JSON: {exc}>"

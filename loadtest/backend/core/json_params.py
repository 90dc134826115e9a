"""moto's parse of a JSON-protocol request body, with each shape's walk planned once.

Owns the replacement ``loadtest.backend.patches`` installs for
``BaseResponse.parse_parameters``: for a request moto reads with its ``JSONParser``
(DynamoDB's and SQS's JSON calls), the same parameters built by a plan made once per
operation from the same shapes; any other protocol is parsed by moto's own method.

Why: moto walks the decoded body against the operation's input shape on every request,
and at every node looks its handler up by name (``getattr(self, f"_parse_{type_name}")``),
reads the member's serialised name and builds a new parser (and the ``request.values`` it
never reads for JSON): a third of moto's per-request setup in a py-spy profile of a
conditional ``PutItem``. What each node does depends only on its shape, so the walk is
worked out once per operation: a structure's members with their serialised names and
plans, a list's member, a map's key and value, the scalars' conversions (with the server's
cheaper ``Transfer-Encoding`` check, 0.92x of the instructions callgrind counts per
conditional ``PutItem``, docs/benchmarks.md).

Why it answers the same: a plan runs, in the same order, the same steps as moto's
``JSONParser`` (``BaseJSONParser._parse_structure``, ``RequestParser._parse_list`` and
``_parse_map``, ``_default_handle``, and the blob, timestamp, float and integer
conversions) with the same map type, so the same values, the same key order and the same
exceptions on a body the shape does not fit. A shape whose handler is anything else is
handed to the parser's own method. ``MIRRORED_SOURCES`` pins the moto source the plans
mirror; ``patches`` installs the replacement only while the installed moto's source is
that one.

Must not touch anything else ``setup_class`` does, nor any other protocol's parse.
Installs nothing itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from moto.core.parse import PROTOCOL_PARSERS, UNDEFINED, BaseJSONParser, JSONParser, RequestParser
from moto.core.request import determine_request_protocol
from moto.core.responses import BaseResponse
from moto.core.utils import get_service_model

from loadtest.backend.core.mirrors import mirrors

_MIRRORED: dict[str, Callable[..., Any]] = {
    "BaseResponse.parse_parameters": BaseResponse.parse_parameters,
    "RequestParser.parse": RequestParser.parse,
    "RequestParser._parse_shape": RequestParser._parse_shape,
    "RequestParser._parse_list": RequestParser._parse_list,
    "RequestParser._parse_map": RequestParser._parse_map,
    "RequestParser._default_handle": RequestParser._default_handle,
    "BaseJSONParser._parse_structure": BaseJSONParser._parse_structure,
    "BaseJSONParser._parse_blob": BaseJSONParser._parse_blob,
    "BaseJSONParser._parse_timestamp": BaseJSONParser._parse_timestamp,
    "BaseJSONParser._parse_float": BaseJSONParser._parse_float,
    "BaseJSONParser._parse_integer": BaseJSONParser._parse_integer,
    "BaseJSONParser._parse_body_as_json": BaseJSONParser._parse_body_as_json,
    "JSONParser._do_parse": JSONParser._do_parse,
    "JSONParser._parse_json_body": JSONParser._parse_json_body,
}
"""The moto functions the plans mirror, by name."""

MIRRORED_SOURCES = {
    "BaseResponse.parse_parameters": (
        "fd3d04c9194814f4f8dd755aa8eedae7155fbef66a1421cb934be8ce8f2c7b59"
    ),
    "RequestParser.parse": "1ea0fc054b3c13b6b60b08a29f82df172c1cae3bb278f62cb2a2e64db63c75f8",
    "RequestParser._parse_shape": (
        "86db10854efaf7e3818a4c4caa5d950837a5321e7f8e36ee2c7f3c5a47e0f9c0"
    ),
    "RequestParser._parse_list": (
        "e2539182995b831ea551f1eb3d92f5b7eb0d85b9c4a33e9f81a5407b34fd4a80"
    ),
    "RequestParser._parse_map": "a9e8feb4d5519e24837f20fb213aab9716be576a5980ab2bfdf7becc2adab17b",
    "RequestParser._default_handle": (
        "88c1ab7f9c988be8985903bd33db39d5e97423180beab34ee9cae7a61ef9b7f9"
    ),
    "BaseJSONParser._parse_structure": (
        "2de165721ba4b69e183647dca9c845d553a6f077c004007ad676cec8f2b581dd"
    ),
    "BaseJSONParser._parse_blob": (
        "4d0f79b18cc3bcc3f925200a74821e5610680a30d169f274f565029050741668"
    ),
    "BaseJSONParser._parse_timestamp": (
        "667f2dc6de8df76f69d7cf7f9db0322d415d4df6f864bab40af525b037c94efe"
    ),
    "BaseJSONParser._parse_float": (
        "573db54a0a95cd4ea2f0110a7900361c92a0c52810b2d6747397a2e59d43b4b0"
    ),
    "BaseJSONParser._parse_integer": (
        "0116a93d91e98b69fff32d3197a5fc81d0bbf856ca7088d55ca58d3fb4f329cc"
    ),
    "BaseJSONParser._parse_body_as_json": (
        "41aa5265807a2654101b0a3b1af65d636b700a02a80a6fd42e82150a6110875b"
    ),
    "JSONParser._do_parse": "77abadf4c188a20c0f3e8cf337cb249d98be8867066c0f260b2693b88465851c",
    "JSONParser._parse_json_body": (
        "aafb837c5ffe3839cac10d9354546d44b097389d3f206b4232a9d6c3b5e8423d"
    ),
}
"""SHA-256 of the source (moto 5.2.5) of each function of ``_MIRRORED``."""

PLANS_KEPT = 512
"""Operations' plans kept; when full the memory starts over (a run uses a handful)."""

_Plan = Callable[[Any], Any]


def mirrors_installed_moto() -> bool:
    """Whether the installed moto's parser and ``parse_parameters`` (behind any
    replacement installed, which names moto's as ``__wrapped__``) are the ones mirrored."""
    return all(mirrors(function, MIRRORED_SOURCES[name]) for name, function in _MIRRORED.items())


def _identity(value: Any) -> Any:
    return value


def _to_float(value: Any) -> Any:
    if value is UNDEFINED:
        return value
    return float(value)


def _to_int(value: Any) -> Any:
    if value is UNDEFINED:
        return value
    return int(value)


_SCALARS: dict[Callable[..., Any], _Plan] = {
    RequestParser._default_handle: _identity,
    BaseJSONParser._parse_float: _to_float,
    BaseJSONParser._parse_integer: _to_int,
}
"""Handlers whose step is a fixed function of the value."""


class _Planner:
    """The plans of one parser's shapes, by shape name (recursive shapes included)."""

    def __init__(self, parser: JSONParser) -> None:
        self.parser = parser
        self.map_type: Callable[[], Any] = parser.MAP_TYPE
        self.plans: dict[str, _Plan] = {}

    def plan(self, shape: Any) -> _Plan:
        name = shape.name
        plan = self.plans.get(name)
        if plan is not None:
            return plan
        # A recursive shape (DynamoDB's AttributeValue holds maps and lists of itself)
        # meets its own name while its members are planned: those reach the plan made
        # below through this cell.
        cell: list[_Plan] = []

        def forward(value: Any) -> Any:
            return cell[0](value)

        self.plans[name] = forward
        plan = self._make(shape)
        cell.append(plan)
        self.plans[name] = plan
        return plan

    def _make(self, shape: Any) -> _Plan:
        parser = self.parser
        handler = getattr(type(parser), f"_parse_{shape.type_name}", None)
        if handler is None:
            return _identity  # moto's _default_handle
        scalar = _SCALARS.get(handler)
        if scalar is not None:
            return scalar
        if handler is BaseJSONParser._parse_blob:
            return parser._blob_parser  # type: ignore[no-any-return]
        if handler is BaseJSONParser._parse_timestamp:
            return parser._timestamp_parser  # type: ignore[no-any-return]
        if handler is BaseJSONParser._parse_structure:
            return self._structure(shape)
        if handler is RequestParser._parse_list:
            return self._list(shape)
        if handler is RequestParser._parse_map:
            return self._map(shape)
        bound = getattr(parser, f"_parse_{shape.type_name}")
        return lambda value: bound(shape, value)

    def _structure(self, shape: Any) -> _Plan:
        if shape.is_document_type:
            return _identity
        member_shapes = shape.members
        members = [
            (
                member_name,
                member_shapes[member_name].serialization.get("name", member_name),
                self.plan(member_shapes[member_name]),
            )
            for member_name in member_shapes
        ]
        map_type = self.map_type

        def structure(value: Any) -> Any:
            if value is None:
                return None
            parsed = map_type()
            for member_name, json_name, plan in members:
                raw_value = value.get(json_name)
                if raw_value is not None:
                    parsed[member_name] = plan(raw_value)
            return parsed

        return structure

    def _list(self, shape: Any) -> _Plan:
        plan = self.plan(shape.member)
        if plan is _identity:
            # moto iterates the node (a dict gives its keys, as moto's list would)
            return lambda node: [item for item in node]
        return lambda node: [plan(item) for item in node]

    def _map(self, shape: Any) -> _Plan:
        key_plan, value_plan = self.plan(shape.key), self.plan(shape.value)
        map_type = self.map_type

        def mapping(value: Any) -> Any:
            parsed = map_type()
            for key, val in value.items():
                actual_key = key_plan(key)
                parsed[actual_key] = value_plan(val)
            return parsed

        return mapping


class _OperationPlan:
    """What ``JSONParser(operation_model, map_type=...).parse`` does for one operation."""

    def __init__(self, operation_model: Any, map_type: Any) -> None:
        parser = JSONParser(operation_model, map_type=map_type)
        self.parser = parser
        input_shape = operation_model.input_shape
        self.body_plan: _Plan | None = (
            None if input_shape is None else _Planner(parser).plan(input_shape)
        )

    def parse(self, body: Any) -> Any:
        if self.body_plan is None:
            return {}  # RequestParser.parse with no input shape
        return self.body_plan(self.parser._parse_body_as_json(body))  # type: ignore[no-untyped-call]


_plans: dict[tuple[str, str, int], _OperationPlan] = {}
_plans_lock = threading.Lock()


def planned_parse_parameters(
    parse_parameters: Callable[[Any, Any], None],
) -> Callable[[Any, Any], None]:
    """moto's ``BaseResponse.parse_parameters``, walking a JSON body by its plan."""

    def planned(self: Any, request: Any) -> None:
        service_model = get_service_model(self.boto3_service_name)
        operation_model = service_model.operation_model(self._get_action())
        protocol = determine_request_protocol(service_model, request.content_type)
        if PROTOCOL_PARSERS[protocol] is not JSONParser:
            parse_parameters(self, request)
            return
        map_type = self.PROTOCOL_PARSER_MAP_TYPE
        key = (service_model.service_name, operation_model.name, id(map_type))
        plan = _plans.get(key)
        if plan is None or plan.parser.operation_model is not operation_model:
            plan = _OperationPlan(operation_model, map_type)
            with _plans_lock:
                if len(_plans) >= PLANS_KEPT:
                    _plans.clear()
                _plans[key] = plan
        self.params = plan.parse(request.data)

    planned.__wrapped__ = parse_parameters  # type: ignore[attr-defined]
    return planned

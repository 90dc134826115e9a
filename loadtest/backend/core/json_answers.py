"""moto's serialization of a JSON-protocol answer, with each output shape's walk planned once.

Owns the replacement ``loadtest.backend.patches`` installs for
``ActionResult.execute_result``: an answer moto writes with its ``JSONSerializer``
(DynamoDB's and SQS's JSON calls) whose result is plain data (a ``dict`` at every
structure) is built by a plan made once per operation from the same shapes; any other
answer (an error, another protocol, an object moto reads through its attribute picker, a
response class with transformers, pretty-printed answers) is moto's own.

Why: moto walks the result against the operation's output shape on every answer, and for
every member of every structure builds an ``AttributePickerContext`` (with the member's
dotted path joined afresh), asks the alias providers which keys to try, looks the member's
handler up by name and keeps a path stack: about half of the work of an SQS
``ReceiveMessage`` of 10 (ten messages, each with its attributes map). What each node does
depends only on its shape, so the walk is worked out once per operation: a structure's
members with the keys the picker tries for a ``dict`` and their plans, a list's member, a
map's value, the scalars' conversions (0.54x of the instructions callgrind counts per
``ReceiveMessage`` of 10, 0.57x per ``SendMessageBatch`` of 10, docs/benchmarks.md).

Why it answers the same: a plan runs, in the same order, the same steps as moto's
serializer (``ResponseSerializer._serialize`` and its ``_serialize_type_*`` handlers as
``BaseJSONSerializer`` resolves them, ``_default_serialize`` under the shape's serialized
name, ``AttributePicker.__call__`` over the keys ``get_possible_keys`` gives for a
``dict``) into the same ``dict`` type, then encodes it with the same ``json.dumps`` call,
with the same status and headers: the same bytes (the backend's tests compare both over
varied messages, attributes and items). A structure whose value is not exactly a ``dict``,
or any exception on the way, hands the whole answer to moto's serializer, which then does
what it always did. ``MIRRORED_SOURCES`` pins the moto source the plans mirror;
``patches`` installs the replacement only while the installed moto's source is that one.

Must not touch errors, event streams, other protocols' answers, nor what moto's models
return. Installs nothing itself.
"""

from __future__ import annotations

import base64
import contextlib
import json
import threading
from collections.abc import Callable
from enum import Enum
from typing import Any

import moto.core.utils
from moto import settings
from moto.core.model import StructureShape
from moto.core.responses import ActionResult
from moto.core.serialize import (
    AttributePicker,
    AttributePickerContext,
    BaseJSONSerializer,
    JSONSerializer,
    ResponseSerializer,
    TimestampSerializer,
    XFormedAttributePicker,
)

from loadtest.backend.core.mirrors import mirrors

_MIRRORED: dict[str, Callable[..., Any]] = {
    "ActionResult.execute_result": ActionResult.execute_result,
    "ResponseSerializer.__init__": ResponseSerializer.__init__,
    "ResponseSerializer._create_default_response": ResponseSerializer._create_default_response,
    "ResponseSerializer.serialize": ResponseSerializer.serialize,
    "ResponseSerializer._serialize_result": ResponseSerializer._serialize_result,
    "ResponseSerializer._base64": ResponseSerializer._base64,
    "ResponseSerializer.get_value": ResponseSerializer.get_value,
    "ResponseSerializer._serialize": ResponseSerializer._serialize,
    "ResponseSerializer._default_serialize": ResponseSerializer._default_serialize,
    "ResponseSerializer._serialize_type_structure": ResponseSerializer._serialize_type_structure,
    "ResponseSerializer._serialize_structure_member": (
        ResponseSerializer._serialize_structure_member
    ),
    "ResponseSerializer._serialize_type_timestamp": ResponseSerializer._serialize_type_timestamp,
    "ResponseSerializer._serialize_type_blob": ResponseSerializer._serialize_type_blob,
    "ResponseSerializer._serialize_type_integer": ResponseSerializer._serialize_type_integer,
    "ResponseSerializer._serialize_type_float": ResponseSerializer._serialize_type_float,
    "ResponseSerializer.get_serialized_name": ResponseSerializer.get_serialized_name,
    "BaseJSONSerializer._serialized_result_to_response": (
        BaseJSONSerializer._serialized_result_to_response
    ),
    "BaseJSONSerializer._serialize_body": BaseJSONSerializer._serialize_body,
    "BaseJSONSerializer._serialize_type_map": BaseJSONSerializer._serialize_type_map,
    "BaseJSONSerializer._serialize_type_list": BaseJSONSerializer._serialize_type_list,
    "BaseJSONSerializer._serialize_type_structure": BaseJSONSerializer._serialize_type_structure,
    "BaseJSONSerializer._serialize_type_string": BaseJSONSerializer._serialize_type_string,
    "AttributePicker.__init__": AttributePicker.__init__,
    "AttributePicker.__call__": AttributePicker.__call__,
    "get_value": moto.core.utils.get_value,
    "_get_value_for_key": moto.core.utils._get_value_for_key,
}
"""The moto functions the plans mirror, by name."""

MIRRORED_SOURCES = {
    "ActionResult.execute_result": (
        "6333faa349b58671258985778d2aaf02d31e0617aae380442e4c683c36ab248d"
    ),
    "ResponseSerializer.__init__": (
        "21dda4322d76b7c54f2581ff6ca0c7825cb42e03aab0731ebf06dcb5ce25ab77"
    ),
    "ResponseSerializer._create_default_response": (
        "68090927c5065341fc2c4f72479ff8caa0fc8011b850e5da7a8b030a0e1ecd13"
    ),
    "ResponseSerializer.serialize": (
        "a559a5e148b262c7da85713bf57caf31e1480a39e639306c3c7f6e394cb3c9a6"
    ),
    "ResponseSerializer._serialize_result": (
        "279351f4cb0eb3000cd13bfd67dfee759ecc89efe35ac22062e381a17fdbfef3"
    ),
    "ResponseSerializer._base64": (
        "5a3642d8c2a14b24a90a2719ba8cc148cff6400b69faea1943c32d782df5a2fb"
    ),
    "ResponseSerializer.get_value": (
        "5ac16904b91c293555159f2e4726b73cc5d7fb9c1c414a6d912d9e2f45da539e"
    ),
    "ResponseSerializer._serialize": (
        "4eccca5bf02593efd2e425f7e1659871406ee6734ec1084ccd452885b7e89052"
    ),
    "ResponseSerializer._default_serialize": (
        "25ce8ddbb1a991c029a745f87eeaa360b697b69ba7295fb74143859a5233afb7"
    ),
    "ResponseSerializer._serialize_type_structure": (
        "f9b47068f40ce489e55e7a0bf78accec38597d27168dc3d095ac2fc18312d4a8"
    ),
    "ResponseSerializer._serialize_structure_member": (
        "437fdce43aa5ac844fb5fe22865b90d228b875b6b1787dc6bfdccad91968b3c0"
    ),
    "ResponseSerializer._serialize_type_timestamp": (
        "d7a3cfcabffc13b11ce31b5d9774faad8a56abf30aed316a6303c7d51b470aea"
    ),
    "ResponseSerializer._serialize_type_blob": (
        "acd7e746cf06090e20c6501be7d45563fdece62bc55ba2a12f840d2b3bc89ade"
    ),
    "ResponseSerializer._serialize_type_integer": (
        "57e0b6b7148e79ebc81347ab31758c2d346d553e116b408e98b0d3820e810232"
    ),
    "ResponseSerializer._serialize_type_float": (
        "24c40ea849f6e0dcf1fc1a38820446fd66945811db3c2a4d2dcb10893e3785ac"
    ),
    "ResponseSerializer.get_serialized_name": (
        "2c23dcac85ccc3966b11d9d96e676eccd5c0d61818ca68b93b0f019839fb2767"
    ),
    "BaseJSONSerializer._serialized_result_to_response": (
        "99acea02e74ab1c42a28c2477aa02c42bd99ef4724dd0f19e80b44ec3f2cccce"
    ),
    "BaseJSONSerializer._serialize_body": (
        "7bdc6c30f511245297a79213c363a3804c33036d59f8d08406f7d8032eb8ca3c"
    ),
    "BaseJSONSerializer._serialize_type_map": (
        "faa32d1fa9a8bfc9db0984b7973a5cc3297d35a2df33124748949b0908f6b6a9"
    ),
    "BaseJSONSerializer._serialize_type_list": (
        "f87b14fe9166e099846349860a5e3c9d9984939d82ed0f67de07ad12e790cd26"
    ),
    "BaseJSONSerializer._serialize_type_structure": (
        "36873909cd0aeb4defa91cc9912c6e90a62d7d92ced6150ac7de92fd10a81967"
    ),
    "BaseJSONSerializer._serialize_type_string": (
        "44954e02145012baee50de6592411c1376aad480ea3440a3b3ab6ce932bbf78d"
    ),
    "AttributePicker.__init__": "286224c33565e18cdb8f7c59703e61b629cd494f32952e22175d434dd704716c",
    "AttributePicker.__call__": "c15da8ec29c1afa44772407fe6280d59a519fcbf52216dc90eb31fb6fbb136ce",
    "get_value": "9b06b87ce416131ecb2924b3d067f2f4950e8ca3a06e5ce3a03d17ca2f0bd3dc",
    "_get_value_for_key": "563aa7bc75bd5bb00e8ec1a83d50632f117017699b52161e0467c029b50c10f8",
}
"""SHA-256 of the source (moto 5.2.5) of each function of ``_MIRRORED``."""

PLANS_KEPT = 512
"""Operations' plans kept; when full the memory starts over (a run uses a handful)."""

_Node = Callable[[dict[str, Any], Any, str], None]
"""A shape's step: ``(serialized, value, key)``, as moto's ``_serialize`` takes them."""


class _Unplanned(Exception):
    """A value or shape the plans do not cover: the answer is moto's own."""


def mirrors_installed_moto() -> bool:
    """Whether the installed moto's serializer and ``execute_result`` (behind any
    replacement installed, which names moto's as ``__wrapped__``) are the ones mirrored."""
    return all(mirrors(function, MIRRORED_SOURCES[name]) for name, function in _MIRRORED.items())


def _base64(value: Any) -> str:
    """moto's ``ResponseSerializer._base64`` (``DEFAULT_ENCODING`` is utf-8)."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    return base64.b64encode(value).strip().decode("utf-8")


class _Planner:
    """The nodes of one operation's output shapes, by shape name and serialization
    (recursive shapes included)."""

    def __init__(self, operation_model: Any) -> None:
        self.operation_model = operation_model
        self.picker = XFormedAttributePicker(response_transformers=None)
        self.timestamps = TimestampSerializer(JSONSerializer.DEFAULT_TIMESTAMP_FORMAT)
        self.nodes: dict[tuple[str, str], _Node] = {}

    def plan(self, shape: Any) -> _Node:
        # A member's own traits (its serialized name) come with its shape: the same shape
        # name under another serialization is another node.
        key = (shape.name, repr(sorted(shape.serialization.items())))
        node = self.nodes.get(key)
        if node is not None:
            return node
        # A recursive shape (DynamoDB's AttributeValue holds maps and lists of itself)
        # meets its own name while its members are planned: those reach the node made
        # below through this cell.
        cell: list[_Node] = []

        def forward(serialized: dict[str, Any], value: Any, key: str) -> None:
            cell[0](serialized, value, key)

        self.nodes[key] = forward
        node = self._make(shape)
        cell.append(node)
        self.nodes[key] = node
        return node

    def _make(self, shape: Any) -> _Node:
        handler = getattr(JSONSerializer, f"_serialize_type_{shape.type_name}", None)
        name: str | None = shape.serialization.get("name")
        if handler is None:  # moto's _default_serialize
            return _default(name)
        if handler is BaseJSONSerializer._serialize_type_string:
            return _string(name)
        if handler is ResponseSerializer._serialize_type_integer:
            return _converted(name, int)
        if handler is ResponseSerializer._serialize_type_float:
            return _converted(name, float)
        if handler is ResponseSerializer._serialize_type_blob:
            return _converted(name, _base64)
        if handler is ResponseSerializer._serialize_type_timestamp:
            return self._timestamp(shape, name)
        if handler is BaseJSONSerializer._serialize_type_structure:
            return self._structure(shape, name)
        if handler is BaseJSONSerializer._serialize_type_list:
            return self._list(shape, name)
        if handler is BaseJSONSerializer._serialize_type_map:
            return self._map(shape, name)
        raise _Unplanned(shape.type_name)

    def _timestamp(self, shape: Any, name: str | None) -> _Node:
        write = self.timestamps.serialize

        def timestamp(serialized: dict[str, Any], value: Any, key: str) -> None:
            wrapper: dict[str, Any] = {}
            write(wrapper, value, shape, "timestamp")
            serialized[key if name is None else name] = wrapper["timestamp"]

        return timestamp

    def _member_keys(self, shape: Any, member_key: str, member_shape: Any) -> tuple[str, ...]:
        """The keys moto's picker tries, in order, for this member of a ``dict``."""
        context = AttributePickerContext(
            obj={},
            key=member_key,
            shape=member_shape,
            operation_model=self.operation_model,
            service_model=self.operation_model.service_model,
        )
        keys = tuple(self.picker.get_possible_keys(context))
        if any(not isinstance(k, str) or "." in k for k in keys):
            raise _Unplanned(member_key)  # moto's get_value would follow a dotted path
        return keys

    def _structure(self, shape: Any, name: str | None) -> _Node:
        if shape.is_document_type:

            def document(serialized: dict[str, Any], value: Any, key: str) -> None:
                serialized[key] = value

            return document
        members: list[tuple[str, tuple[str, ...], _Node]] = []
        for member_key, member_shape in shape.members.items():
            member_shape.parent = shape  # as moto sets it before asking the picker
            keys = self._member_keys(shape, member_key, member_shape)
            members.append((member_key, keys, self.plan(member_shape)))
        missing = _MISSING

        def structure(serialized: dict[str, Any], value: Any, key: str) -> None:
            if value is None:
                return
            if type(value) is not dict:
                raise _Unplanned(key)
            wrapper: dict[str, Any] = {} if key else serialized
            for member_key, keys, node in members:
                for possible_key in keys:
                    member_value = value.get(possible_key, missing)
                    if member_value is not missing:
                        break
                else:
                    member_value = None
                if member_value is not None:
                    node(wrapper, member_value, member_key)
            if key:
                serialized[key if name is None else name] = wrapper

        return structure

    def _list(self, shape: Any, name: str | None) -> _Node:
        item_key: str = shape.member.name
        node = self.plan(shape.member)

        def listing(serialized: dict[str, Any], value: Any, key: str) -> None:
            list_obj = []
            for list_item in value:
                wrapper: dict[str, Any] = {}
                node(wrapper, list_item, item_key)
                list_obj.append(wrapper.get(item_key, list_item))
            serialized[key if name is None else name] = list_obj

        return listing

    def _map(self, shape: Any, name: str | None) -> _Node:
        node = self.plan(shape.value)

        def mapping(serialized: dict[str, Any], value: Any, key: str) -> None:
            map_obj: dict[str, Any] = {}
            serialized[key if name is None else name] = map_obj
            for sub_key, sub_value in value.items():
                node(map_obj, sub_value, sub_key)

        return mapping


_MISSING = object()


def _default(name: str | None) -> _Node:
    def default(serialized: dict[str, Any], value: Any, key: str) -> None:
        serialized[key if name is None else name] = value

    return default


def _string(name: str | None) -> _Node:
    def string(serialized: dict[str, Any], value: Any, key: str) -> None:
        if type(value) is not str:  # a str is its own str(); anything else as moto does
            if isinstance(value, Enum):
                value = value.value
            value = str(value) if value not in [None, {}, []] else value
        serialized[key if name is None else name] = value

    return string


def _converted(name: str | None, convert: Callable[[Any], Any]) -> _Node:
    def converted(serialized: dict[str, Any], value: Any, key: str) -> None:
        serialized[key if name is None else name] = convert(value)

    return converted


class _OperationPlan:
    """What ``JSONSerializer(operation_model).serialize(result)`` does for one operation
    and a result that is plain data."""

    def __init__(self, operation_model: Any) -> None:
        self.operation_model = operation_model
        serializer = JSONSerializer(operation_model=operation_model)
        default = serializer._create_default_response()
        self.status_code = default["status_code"]
        self.content_type = serializer._get_protocol_specific_content_type()
        output_shape = operation_model.output_shape
        self.node: _Node | None = None
        if output_shape is not None:
            if not isinstance(output_shape, StructureShape):
                raise _Unplanned(output_shape.name)
            self.node = _Planner(operation_model).plan(output_shape)

    def answer(self, result: Any) -> tuple[Any, dict[str, str], str]:
        serialized: dict[str, Any] = {}
        if self.node is not None:
            self.node(serialized, result, "")
        return self.status_code, {"Content-Type": self.content_type}, json.dumps(serialized)


_plans: dict[int, tuple[Any, _OperationPlan | None]] = {}
_plans_lock = threading.Lock()


def _plan_for(operation_model: Any) -> _OperationPlan | None:
    """The operation's plan (None if its shapes are not planned), made on first use."""
    kept = _plans.get(id(operation_model))
    if kept is not None and kept[0] is operation_model:
        return kept[1]
    plan: _OperationPlan | None
    if JSONSerializer.MAP_TYPE is not dict or operation_model.has_event_stream_output:
        plan = None
    else:
        try:
            plan = _OperationPlan(operation_model)
        except _Unplanned:
            plan = None
    with _plans_lock:
        if len(_plans) >= PLANS_KEPT:
            _plans.clear()
        _plans[id(operation_model)] = (operation_model, plan)  # held: its id is not reused
    return plan


def planned_execute_result(
    execute_result: Callable[[Any, Any], Any],
) -> Callable[[Any, Any], Any]:
    """moto's ``ActionResult.execute_result``, writing a JSON answer by its plan."""

    def planned(self: Any, context: Any) -> Any:
        if (
            context.serializer_class is JSONSerializer
            and not settings.PRETTIFY_RESPONSES
            and not getattr(context.response, "RESPONSE_KEY_PATH_TO_TRANSFORMER", None)
        ):
            result = self.result
            if not isinstance(result, Exception):
                plan = _plan_for(context.operation_model)
                if plan is not None:
                    # A value the plan does not cover, or one that fails: moto's
                    # serializer answers it, as before.
                    with contextlib.suppress(Exception):
                        return plan.answer(result)
        return execute_result(self, context)

    planned.__wrapped__ = execute_result  # type: ignore[attr-defined]
    return planned

"""An update's operands as copies, so that ``SET a = b`` stores b's value from before the update.

Owns the replacement of moto's ``ExpressionAttributeResolvingProcessor.resolve_expression_path``
that ``loadtest.backend.patches`` installs. moto resolves an operand path (the ``b``
of ``SET a = b``, ``if_not_exists(b, :v)``) to the item's own value object, and its DELETE
and ADD of a set change that object in place: ``SET a = b DELETE b :x`` left ``a`` without
``:x`` too. DynamoDB evaluates every operand against the item as it was before the update,
so the operand is a copy.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from moto.dynamodb.parsing import ast_nodes


def copied_operands(resolve: Callable[..., Any]) -> Callable[..., Any]:
    """``resolve`` whose resolved value is a deep copy of the item's."""

    # moto's ast_nodes module is excluded from type checking (a type: ignore at its top).
    typed_value: Any = getattr(ast_nodes, "DDBTypedValue")  # noqa: B009

    def resolve_expression_path(self: Any, node: Any) -> Any:
        resolved = resolve(self, node)
        # Only an operand is copied: a SET's target path is resolved too, to check it.
        if self.resolving and isinstance(resolved, typed_value):
            return typed_value(copy.deepcopy(resolved.get_value()))
        return resolved

    return resolve_expression_path

"""The legacy ``AttributeUpdates`` of an UpdateItem, its actions checked as DynamoDB checks them.

Owns the replacement of moto's ``DynamoHandler.update_item`` entry check that
``loadtest.backend.patches`` installs. moto 5.2 applies an ``AttributeUpdates`` entry whose
``Action`` is not ``PUT``, ``ADD`` or ``DELETE`` by failing inside its item code: the server
answers 500, which botocore retries for about 25 s. DynamoDB refuses the request at once with
a ``ValidationException`` naming the value and the allowed set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.dynamodb.exceptions import MockValidationException

ACTIONS = ("ADD", "PUT", "DELETE")
"""The actions DynamoDB accepts in ``AttributeUpdates``."""


def checked_actions(update_item: Callable[..., Any]) -> Callable[..., Any]:
    """``update_item`` (moto's handler method) refusing an unknown legacy action first."""

    def checked_update_item(self: Any) -> Any:
        updates = self.body.get("AttributeUpdates")
        if isinstance(updates, dict):
            for name, update in updates.items():
                action = update.get("Action", "PUT") if isinstance(update, dict) else "PUT"
                if action not in ACTIONS:
                    raise MockValidationException(
                        f"1 validation error detected: Value '{action}' at "
                        f"'attributeUpdates.{name}.member.action' failed to satisfy constraint: "
                        f"Member must satisfy enum value set: [{', '.join(ACTIONS)}]"
                    )
        return update_item(self)

    return checked_update_item

"""Stops moto from keeping every SQS, DynamoDB and Lambda model object it ever made.

moto's ``BaseModel.__new__`` appends every instance to its class's
``instances_tracked`` list, only so that the moto dashboard (``/moto-api/data.json``)
can list them. Nothing removes them: every message sent, every copy handed out by
ReceiveMessage and every DynamoDB item version stays referenced, so the backend's
memory grows with the run's total traffic (about 1.8 KB per message sent, received and
deleted) even after the queue has forgotten them. This module swaps those lists for one
that keeps nothing, for the SQS and DynamoDB models only; the queues and tables hold
what SQS and DynamoDB semantics need, as before. The cost: the dashboard lists no
SQS/DynamoDB instances. Lambda's models (``LAZY_SERVICES``) are left out too, once Lambda is
loaded: a function's ``docker_client`` property raises when Docker is absent, which made the
dashboard answer 500 for every request after a function existed.

Owns only the ``instances_tracked`` attribute of those model classes; must not touch
the models' behaviour (that is ``patches``).
"""

from __future__ import annotations

from typing import Any, SupportsIndex

SERVICES = ("sqs", "dynamodb")
"""moto services whose model instances are not tracked."""
LAZY_SERVICES = ("awslambda",)
"""Services loaded only when first requested, whose instances are not tracked either (their
loader calls ``stop_tracking_instances`` with them)."""


class KeepsNothing(list[Any]):
    """A list that ignores appends (moto only ever appends to ``instances_tracked``)."""

    def append(self, item: Any, /) -> None:
        del item

    def insert(self, index: SupportsIndex, item: Any, /) -> None:
        del index, item


def stop_tracking_instances(services: tuple[str, ...] = SERVICES) -> list[str]:
    """Replace ``instances_tracked`` of every model class of ``services`` (SQS and DynamoDB by
    default); returns their names (``sqs.Message``, ...). Call after those services' models
    are imported."""
    if services == SERVICES:
        import moto.dynamodb.models
        import moto.sqs.models

        del moto.dynamodb.models
    from moto.core.model_instances import model_data

    replaced = []
    for service in services:
        for name, model in model_data.get(service, {}).items():
            model.instances_tracked = KeepsNothing()  # type: ignore[attr-defined]
            replaced.append(f"{service}.{name}")
    return replaced

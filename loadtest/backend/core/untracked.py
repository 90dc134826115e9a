"""Stops moto from keeping every SQS and DynamoDB model object it ever made.

moto's ``BaseModel.__new__`` appends every instance to its class's
``instances_tracked`` list, only so that the moto dashboard (``/moto-api/data.json``)
can list them. Nothing removes them: every message sent, every copy handed out by
ReceiveMessage and every DynamoDB item version stays referenced, so the backend's
memory grows with the run's total traffic (about 1.8 KB per message sent, received and
deleted) even after the queue has forgotten them. This module swaps those lists for one
that keeps nothing, for the SQS and DynamoDB models only; the queues and tables hold
what SQS and DynamoDB semantics need, as before. The cost: the dashboard lists no
SQS/DynamoDB instances.

Owns only the ``instances_tracked`` attribute of those model classes; must not touch
the models' behaviour (that is ``patches``).
"""

from __future__ import annotations

from typing import Any, SupportsIndex

SERVICES = ("sqs", "dynamodb")
"""moto services whose model instances are not tracked."""


class KeepsNothing(list[Any]):
    """A list that ignores appends (moto only ever appends to ``instances_tracked``)."""

    def append(self, item: Any, /) -> None:
        del item

    def insert(self, index: SupportsIndex, item: Any, /) -> None:
        del index, item


def stop_tracking_instances() -> list[str]:
    """Replace ``instances_tracked`` of every SQS and DynamoDB model class; returns
    their names (``sqs.Message``, ...). Call after moto's models are imported."""
    import moto.dynamodb.models
    import moto.sqs.models
    from moto.core.model_instances import model_data

    del moto.dynamodb.models
    replaced = []
    for service in SERVICES:
        for name, model in model_data.get(service, {}).items():
            model.instances_tracked = KeepsNothing()  # type: ignore[attr-defined]
            replaced.append(f"{service}.{name}")
    return replaced

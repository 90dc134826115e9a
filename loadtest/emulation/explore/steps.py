"""The numbered interleaving of an explored schedule: what each step did, as a reader follows it.

One ``Step`` per thing that happened: an invocation starting, a DynamoDB call
with its answer (and the item before and after a write), an effect call (a
publish, a send, an object put) with its answer, a sleep, an
acknowledgement, a failure, a fault. The explorer tells the ``StepLog`` as it
goes; the observer's records fill in the answers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from loadtest.model.explore.points import Delivery, Fault, Point
from loadtest.model.history.log import ReadRecord, TypedItem, WriteOutcome, WriteRecord
from loadtest.model.history.observation import Observation


@dataclass
class Step:
    """One line of a counterexample."""

    number: int
    delivery: str
    """The delivery's label: ``COPY`` or ``COPY.RECEIVE``."""
    environment: int
    at_ms: float
    """Virtual time since the schedule started."""
    what: str
    answer: str | None = None
    item_before: TypedItem | None = None
    item_after: TypedItem | None = None
    fault: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def plain_item(item: TypedItem | None) -> str:
    """An item as ``{id: x, quantity: 4}`` (typed values unwrapped), or ``absent``."""
    if item is None:
        return "absent"
    parts = []
    for name, value in item.items():
        inner = next(iter(value.values())) if isinstance(value, dict) and len(value) == 1 else value
        parts.append(f"{name}: {inner}")
    return "{" + ", ".join(parts) + "}"


class StepLog:
    """Collects a schedule's steps in the order they happen (one delivery runs at a time)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self._environment: dict[Delivery, int] = {}
        self._pending: dict[Delivery, str] = {}
        self._throttled_as: dict[Delivery, str] = {}
        self._open: dict[Delivery, Step] = {}
        self._now_ms = 0.0

    def received(self, delivery: Delivery, environment: int) -> None:
        self._environment[delivery] = environment

    def _add(self, delivery: Delivery, what: str, fault: Fault | None = None) -> Step:
        step = Step(
            len(self.steps) + 1,
            delivery.label,
            self._environment.get(delivery, 0),
            self._now_ms,
            what,
            fault=fault.value if fault else None,
        )
        self.steps.append(step)
        return step

    def at(self, now_ns: int) -> None:
        self._now_ms = round(now_ns / 1e6, 3)

    def pending(
        self,
        delivery: Delivery,
        operation: str,
        target: str,
        throttled_as: str = "ProvisionedThroughputExceededException",
    ) -> None:
        """The call ``delivery`` is about to make (and the error it is answered with if the
        scheduler throttles it)."""
        self._pending[delivery] = f"{operation} {target}".strip()
        self._throttled_as[delivery] = throttled_as

    def slept(self, delivery: Delivery, seconds: float) -> None:
        self._pending[delivery] = f"sleeps {seconds:g} s"

    def released(self, delivery: Delivery, point: Point | None, fault: Fault | None = None) -> None:
        if point is Point.START:
            receive = f" (receive {delivery.receive})" if delivery.receive > 1 else ""
            self._add(delivery, f"invocation starts{receive}")
        elif point is Point.CALL:
            step = self._add(delivery, self._pending.pop(delivery, "call"), fault)
            if fault is Fault.THROTTLE:
                code = self._throttled_as.get(delivery, "ProvisionedThroughputExceededException")
                step.answer = f"throttled ({code})"
            self._open[delivery] = step
        elif point is Point.SLEEP:
            self._add(delivery, self._pending.pop(delivery, "sleeps"))

    def observed(self, delivery: Delivery, observation: Observation) -> None:
        step = self._open.get(delivery)
        if step is None or step.answer is not None:
            return
        if isinstance(observation, ReadRecord):
            step.answer = (
                "absent" if observation.found is None else "found " + plain_item(observation.found)
            )
            step.item_before = observation.found
        elif isinstance(observation, WriteRecord):
            if observation.outcome is WriteOutcome.ACCEPTED:
                step.answer = "accepted"
            elif observation.outcome is WriteOutcome.REJECTED:
                step.answer = f"rejected ({observation.error_code})"
            else:
                step.answer = f"{observation.outcome.value} ({observation.error_code})"
            step.item_before = observation.item_before
            step.item_after = (
                observation.item_after
                if observation.outcome is WriteOutcome.ACCEPTED
                else observation.item_before
            )

    def answered(self, delivery: Delivery, answer: str | None = None) -> None:
        step = self._open.pop(delivery, None)
        if step is not None and step.answer is None:
            step.answer = answer or "answered"

    def note(self, delivery: Delivery, what: str, fault: Fault | None = None) -> None:
        self._add(delivery, what, fault)

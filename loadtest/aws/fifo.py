"""FIFO queues as the run provisions them: names, attributes and the labelled window fault.

Owns what makes a run's queue and DLQ FIFO (the ``.fifo`` suffix SQS requires, the
``FifoQueue`` and ``ContentBasedDeduplication`` attributes) and the queue tag through which
the ``dedup_window_s`` fault reaches loadtest's embedded backend
(``loadtest.backend.sqs.fifo`` reads it; real SQS cannot honour it). Must not touch: creating or deleting
anything (``loadtest.aws.clients`` does, with these attributes).
"""

from __future__ import annotations

from dataclasses import dataclass

from loadtest.errors import ScenarioError
from loadtest.model.scenario.loading import Deduplication, Scenario

SUFFIX = ".fifo"
"""SQS requires a FIFO queue's name to end so."""
DEDUP_WINDOW_TAG = "loadtest:dedup-window-s"
"""Queue tag: the shortened deduplication window (in seconds) the embedded backend honours."""


@dataclass(frozen=True)
class FifoQueue:
    """How a run's FIFO queue is made."""

    content_based_deduplication: bool = False
    """Set ``ContentBasedDeduplication``: the queue hashes bodies sent without an id."""
    dedup_window_s: float = 0.0
    """The fault: a shortened deduplication window (in seconds); 0 keeps SQS's five minutes."""

    def name(self, base: str) -> str:
        """``base`` with the ``.fifo`` suffix (within SQS's 80 characters)."""
        return base[: 80 - len(SUFFIX)] + SUFFIX

    def attributes(self) -> dict[str, str]:
        attributes = {"FifoQueue": "true"}
        if self.content_based_deduplication:
            attributes["ContentBasedDeduplication"] = "true"
        return attributes

    def tags(self) -> dict[str, str]:
        return {DEDUP_WINDOW_TAG: f"{self.dedup_window_s:g}"} if self.dedup_window_s else {}


def fifo_queue(scenario: Scenario) -> FifoQueue | None:
    """The scenario's FIFO queue, or ``None`` for a standard one."""
    if not scenario.consumer.fifo:
        return None
    return FifoQueue(
        content_based_deduplication=scenario.workload.deduplication is Deduplication.CONTENT,
        dedup_window_s=scenario.faults.dedup_window_s,
    )


def refuse_window_fault(fifo: FifoQueue | None, *, real_aws: bool) -> None:
    """Refuse the shortened window on real SQS, where it cannot hold. Another endpoint
    honours it only if it is loadtest's own backend (``loadtest serve``); ``loadtest
    doctor`` says whether one does."""
    if fifo is not None and fifo.dedup_window_s and real_aws:
        raise ScenarioError(
            f"faults.dedup_window_s = {fifo.dedup_window_s:g} needs loadtest's embedded "
            "backend (SQS's deduplication window is five minutes and cannot be changed); "
            "allowed with --target aws: 0 (leave it out)"
        )

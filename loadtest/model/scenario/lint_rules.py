"""The names of the lint rules: what ``loadtest lint`` shows and ``[lint] intended`` takes.

Owns ``Rule`` alone, so a scenario can name the rules it breaks on purpose without
importing the checks (``loadtest.model.advice.lint``, which reads a scenario). Pure.
"""

from __future__ import annotations

from enum import StrEnum


class Rule(StrEnum):
    """The rules, by the name ``loadtest lint`` shows and ``[lint] intended`` takes."""

    VISIBILITY = "visibility-timeout"
    """The visibility timeout is below six times the function timeout plus the batching window."""
    BATCH_WINDOW = "batch-without-window"
    """A batch size above 10 without a batching window of at least 1 s."""
    CONCURRENCY = "maximum-vs-reserved-concurrency"
    """MaximumConcurrency above the function's reserved concurrency, or reserved concurrency 0."""
    REDRIVE = "max-receive-count"
    """A redrive maxReceiveCount below 5, or no redrive policy."""
    EXPIRY = "idempotency-expiry"
    """Idempotency records that expire before the redelivery horizon."""
    HANDLER_DURATION = "visibility-vs-handler-duration"
    """A run's injected handler time outlasts the visibility timeout (run warnings only)."""

"""Settings that invite duplicates: the checks behind ``loadtest lint`` and every report's warnings.

Pure: a ``MappingSettings`` in, findings out. It is built from a scenario
(``from_scenario``) or, by ``loadtest.deploy.lint_aws``, from a deployed event
source mapping, its function and its queue, so a scenario and the system it
models are judged by the same rules:

- visibility timeout below six times the function timeout (plus the batching
  window): a message still being processed reappears and is delivered again
  (AWS's own recommendation for SQS event sources); worded more strongly when it is
  below the function timeout itself;
- batch size above 10 without a batching window (Lambda refuses it);
- MaximumConcurrency above the function's reserved concurrency: the mapping
  invokes more than the function may run, the throttled batches return to
  the queue and their receive counts grow;
- a redrive ``maxReceiveCount`` below 5 (throttles and retries reach the DLQ),
  or no redrive at all;
- an idempotency record that expires before the redelivery horizon
  (``maxReceiveCount`` x visibility timeout): a late redelivery finds no record
  and is processed again.

A run's report carries the same findings as warnings (``run_warnings``), with one more
rule that only a run has: injected handler time longer than the visibility timeout.
This module is the one owner of these warnings. A scenario that breaks a rule on
purpose names it in ``[lint] intended``: its warning still shows, marked as intended,
and ``loadtest lint`` does not fail on it. The rules' names (``Rule``) are
``loadtest.model.scenario.lint_rules``', re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from loadtest.model.scenario.lint_rules import Rule as Rule
from loadtest.model.scenario.settings import ConsumerSettings, Faults

if TYPE_CHECKING:
    from loadtest.model.scenario.loading import Scenario

POWERTOOLS_DEFAULT_EXPIRY_S = 3600
"""Powertools' ``IdempotencyConfig.expires_after_seconds`` default (one hour)."""
MIN_MAX_RECEIVE_COUNT = 5
VISIBILITY_FACTOR = 6

INTENDED = "intended by the scenario ([lint] intended)"
"""How a warning the scenario breaks on purpose is marked."""


@dataclass(frozen=True)
class MappingSettings:
    """What the rules look at, whichever way it was read."""

    source: str
    """What these settings describe, for messages ("scenario seed-lab", "function orders")."""
    visibility_timeout_s: int
    function_timeout_s: int
    batch_size: int
    batching_window_s: float
    maximum_concurrency: int | None
    """The mapping's ScalingConfig.MaximumConcurrency (None: not set)."""
    reserved_concurrency: int | None
    """The function's reserved concurrency (None: none reserved)."""
    max_receive_count: int | None
    """The queue's redrive maxReceiveCount (None: no redrive policy)."""
    idempotency_expiry_s: int | None = None
    """How long the consumer's idempotency records live (None: unknown or no records)."""


@dataclass(frozen=True)
class Finding:
    rule: Rule
    message: str


def lint(settings: MappingSettings) -> list[Finding]:
    """Every rule the settings break, with a message that names the numbers and the risk."""
    s = settings
    findings: list[Finding] = []
    needed_s = VISIBILITY_FACTOR * s.function_timeout_s + s.batching_window_s
    if s.visibility_timeout_s < s.function_timeout_s:
        findings.append(
            Finding(
                Rule.VISIBILITY,
                f"visibility timeout {s.visibility_timeout_s} s is shorter than the function "
                f"timeout ({s.function_timeout_s} s): a slow invocation's messages become visible "
                "again and are delivered twice (AWS recommends at least six times the function "
                f"timeout plus the batching window, {needed_s:g} s)",
            )
        )
    elif s.visibility_timeout_s < needed_s:
        findings.append(
            Finding(
                Rule.VISIBILITY,
                f"visibility timeout {s.visibility_timeout_s} s is below six times the function "
                f"timeout ({s.function_timeout_s} s) plus the batching window "
                f"({s.batching_window_s:g} s) = {needed_s:g} s: a message still being processed, "
                "or retried after a throttle, can reappear and be delivered again",
            )
        )
    if s.batch_size > 10 and s.batching_window_s < 1:
        findings.append(
            Finding(
                Rule.BATCH_WINDOW,
                f"batch size {s.batch_size} is above 10 without a batching window: Lambda needs "
                "MaximumBatchingWindowInSeconds of at least 1 s for it",
            )
        )
    if s.reserved_concurrency is not None:
        if s.reserved_concurrency == 0:
            findings.append(
                Finding(
                    Rule.CONCURRENCY,
                    "reserved concurrency is 0: the function never runs and every message "
                    "ends in the DLQ (or stays)",
                )
            )
        elif s.maximum_concurrency is not None and s.maximum_concurrency > s.reserved_concurrency:
            findings.append(
                Finding(
                    Rule.CONCURRENCY,
                    f"MaximumConcurrency {s.maximum_concurrency} is above the function's reserved "
                    f"concurrency {s.reserved_concurrency}: throttled batches go back to the queue "
                    "and their receive counts grow toward the DLQ",
                )
            )
    if s.max_receive_count is None:
        findings.append(
            Finding(
                Rule.REDRIVE,
                "the queue has no redrive policy: a message that always fails is retried until "
                "its retention period ends",
            )
        )
    elif s.max_receive_count < MIN_MAX_RECEIVE_COUNT:
        findings.append(
            Finding(
                Rule.REDRIVE,
                f"redrive maxReceiveCount {s.max_receive_count} is below "
                f"{MIN_MAX_RECEIVE_COUNT}: throttled or briefly failing messages reach the DLQ "
                "unprocessed",
            )
        )
    if s.idempotency_expiry_s is not None and s.max_receive_count is not None:
        horizon_s = s.max_receive_count * s.visibility_timeout_s
        if s.idempotency_expiry_s < horizon_s:
            findings.append(
                Finding(
                    Rule.EXPIRY,
                    f"idempotency records expire after {s.idempotency_expiry_s} s, before the "
                    f"redelivery horizon ({s.max_receive_count} receives x "
                    f"{s.visibility_timeout_s} s = {horizon_s} s): a late redelivery finds no "
                    "record and is processed again",
                )
            )
    return findings


def from_consumer(
    consumer: ConsumerSettings, *, source: str, idempotency_expiry_s: int | None = None
) -> MappingSettings:
    """The settings a deploy of this consumer configuration creates (see ``deploy_plan``)."""
    concurrency = consumer.concurrency
    below_minimum = concurrency < 2  # MaximumConcurrency's minimum: reserved concurrency instead
    return MappingSettings(
        source=source,
        visibility_timeout_s=consumer.visibility_timeout_s,
        function_timeout_s=consumer.function_timeout_s,
        batch_size=consumer.batch_size,
        batching_window_s=consumer.batching_window_s,
        maximum_concurrency=None if below_minimum else min(concurrency, 1000),
        reserved_concurrency=concurrency if below_minimum else None,
        max_receive_count=consumer.max_receive_count,
        idempotency_expiry_s=idempotency_expiry_s,
    )


def from_scenario(scenario: Scenario, variants: Sequence[str] = ()) -> MappingSettings:
    """The scenario's settings; Powertools' record expiry when a variant keeps records."""
    chosen = variants or scenario.variants
    expiry = POWERTOOLS_DEFAULT_EXPIRY_S if "powertools" in chosen else None
    return from_consumer(
        scenario.consumer, source=f"scenario {scenario.name}", idempotency_expiry_s=expiry
    )


def run_findings(consumer: ConsumerSettings, faults: Faults, variant: str) -> list[Finding]:
    """What a run's report warns about: the handler time it injects against the visibility
    timeout, then every lint rule its settings break."""
    findings: list[Finding] = []
    slowest_ms = faults.handler_duration_ms + faults.handler_jitter_ms
    if slowest_ms and consumer.visibility_timeout_s * 1000 < slowest_ms:
        findings.append(
            Finding(
                Rule.HANDLER_DURATION,
                f"visibility timeout ({consumer.visibility_timeout_s} s) is shorter than the "
                f"handler duration (up to {slowest_ms} ms): messages reappear while still being "
                "processed and are delivered again with the same messageId",
            )
        )
    expiry = POWERTOOLS_DEFAULT_EXPIRY_S if variant == "powertools" else None
    findings += lint(from_consumer(consumer, source="run", idempotency_expiry_s=expiry))
    return findings


def worded(finding: Finding, intended: Sequence[str] = ()) -> str:
    """A finding as a warning line, marked when the scenario breaks its rule on purpose."""
    return f"{INTENDED}: {finding.message}" if finding.rule in intended else finding.message


def run_warnings(
    consumer: ConsumerSettings, faults: Faults, variant: str, intended: Sequence[str] = ()
) -> list[str]:
    """A run's settings warnings, as its report lists them (``engine.settings_warnings``)."""
    return [worded(finding, intended) for finding in run_findings(consumer, faults, variant)]

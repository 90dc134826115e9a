"""The doctor's data-plane checks: what an event source mapping really does, measured.

A backend whose conditional writes are atomic can still be unable to show a race:
a mapping that runs one invocation at a time never overlaps two deliveries. These
checks run the probe handler (``consumer.mapping_probe``) behind a mapping, deployed
on an endpoint that serves Lambda (``loadtest.deploy.doctor_probe``) or on the
emulated mapping (``loadtest.engine.doctor_probe``), and judge the history the run
recorded: when each invocation started and ended, the records it carried and their
receive counts. This module owns the probe workloads (``PROBES``, each a scenario
and the check that reads its history) and the judging; it creates nothing.

* ``mapping-concurrency`` - a burst of ``BURST`` messages, batch size 1, each taking
  ``BURST_SLEEP_MS``: how many invocations ran at once (at least 2 to pass).
* ``visibility-redelivers-in-flight`` - one message whose first delivery outlasts the
  queue's visibility timeout: is it delivered again while the first still runs?
* ``partial-batch-response`` - a batch in which one record is named in
  ``batchItemFailures``: does that record alone come back?
* ``fifo-mapping-order`` - one FIFO group: are its messages processed in send order,
  one batch at a time?
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from loadtest.doctor.checks import CheckResult
from loadtest.model.history.log import History, Invocation
from loadtest.model.scenario.loading import Scenario, parse_scenario

PROBE_HANDLER = "consumer.mapping_probe:handler"
"""The probe: sleeps and fails as each message's body says, writes nothing."""

CONCURRENCY = "mapping-concurrency"
VISIBILITY_IN_FLIGHT = "visibility-redelivers-in-flight"
PARTIAL_BATCH = "partial-batch-response"
FIFO_MAPPING_ORDER = "fifo-mapping-order"
MAPPING_CHECK_NAMES = (CONCURRENCY, VISIBILITY_IN_FLIGHT, PARTIAL_BATCH, FIFO_MAPPING_ORDER)
"""The data-plane checks, in the order they run."""

BURST = 8
"""Messages in the concurrency check's burst."""
BURST_SLEEP_MS = 1500
"""Time (in milliseconds) each burst message's invocation takes."""
VISIBILITY_S = 2
"""The visibility timeout (in seconds) of the redelivery check's queue."""
PARTIAL_VISIBILITY_S = 5
"""The visibility timeout (in seconds) of the partial-batch check's queue: long enough that
a batch of four ends within it on a busy machine, short enough that the failed record comes
back soon."""
IN_FLIGHT_SLEEP_MS = 6000
"""How long (in milliseconds) the first delivery in the redelivery check runs: three
visibility timeouts."""
FIFO_MESSAGES = 6
FIFO_SLEEP_MS = 300
"""Time (in milliseconds) each FIFO message's invocation takes, so overlaps would show."""
PROBE_DEADLINE_S = 90
"""Each probe run's deadline (in seconds)."""


def _body(n: int, prefix: str, **probe: Any) -> dict[str, Any]:
    return {"body": {"id": f"{prefix}-{n:02d}", "quantity": 1, "probe": probe}, "copies": 1}


def _scenario(name: str, messages: list[dict[str, Any]], **consumer: Any) -> Scenario:
    raw = {
        "name": f"doctor-{name}",
        "seed": 1,
        "variants": [PROBE_HANDLER],
        "workload": {"messages": messages},
        "consumer": {"max_receive_count": 5, "function_timeout_s": 15, **consumer},
        "run": {"deadline_s": PROBE_DEADLINE_S},
    }
    return parse_scenario(raw, source=f"loadtest doctor ({name})")


@dataclass(frozen=True)
class Probe:
    """One data-plane check: the workload to run through the mapping and its judge."""

    name: str
    scenario: Scenario
    judge: Callable[[History], CheckResult]


def _starts(history: History) -> list[Invocation]:
    return sorted(history.invocations, key=lambda i: i.started_ns)


def max_overlap(invocations: Iterable[Invocation]) -> int:
    """The most invocations running at one moment (an end before a start at the same time)."""
    edges = sorted(
        [(i.started_ns, 1) for i in invocations] + [(i.ended_ns, -1) for i in invocations],
        key=lambda edge: (edge[0], edge[1]),
    )
    running = peak = 0
    for _, step in edges:
        running += step
        peak = max(peak, running)
    return peak


def judge_concurrency(history: History) -> CheckResult:
    invocations = list(history.invocations)
    peak = max_overlap(invocations)
    seconds = (
        (max(i.ended_ns for i in invocations) - min(i.started_ns for i in invocations)) / 1e9
        if invocations
        else 0.0
    )
    figures = (
        f"{peak} invocation(s) at once at most for a burst of {BURST} messages "
        f"(batch size 1, {BURST_SLEEP_MS} ms each; {len(invocations)} invocations in {seconds:.1f} s)"
    )
    details: dict[str, int | float | str] = {
        "max_concurrent": peak,
        "burst": BURST,
        "invocations": len(invocations),
        "span_s": round(seconds, 3),
    }
    if peak >= 2:
        return CheckResult(CONCURRENCY, True, figures, details)
    return CheckResult(
        CONCURRENCY,
        False,
        f"{figures}: this mapping delivers one batch at a time, so no two deliveries of a "
        "message ever overlap and a race between deliveries cannot happen here; a PASS on "
        "this endpoint says nothing about concurrency bugs",
        details,
    )


def judge_visibility(history: History) -> CheckResult:
    invocations = _starts(history)
    details: dict[str, int | float | str] = {
        "visibility_timeout_s": VISIBILITY_S,
        "first_delivery_ms": IN_FLIGHT_SLEEP_MS,
        "deliveries": len(invocations),
    }
    first = next((i for i in invocations if any(r.receive_count == 1 for r in i.records)), None)
    if first is None:
        return CheckResult(
            VISIBILITY_IN_FLIGHT, False, "the message's first delivery was not seen", details
        )
    again = [
        i
        for i in invocations
        if i is not first
        and any(r.receive_count > 1 for r in i.records)
        and i.started_ns < first.ended_ns
    ]
    if again:
        after_s = (again[0].started_ns - first.started_ns) / 1e9
        details["redelivered_after_s"] = round(after_s, 3)
        return CheckResult(
            VISIBILITY_IN_FLIGHT,
            True,
            f"delivered again {after_s:.1f} s after the first delivery started, while it was "
            f"still running (visibility timeout {VISIBILITY_S} s, first delivery "
            f"{IN_FLIGHT_SLEEP_MS} ms; {len(invocations)} deliveries)",
            details,
        )
    return CheckResult(
        VISIBILITY_IN_FLIGHT,
        False,
        f"not delivered again while its first delivery ran {IN_FLIGHT_SLEEP_MS} ms past a "
        f"{VISIBILITY_S} s visibility timeout ({len(invocations)} deliveries): a slow "
        "handler's duplicate delivery, the commonest cause of double processing, cannot "
        "happen here",
        details,
    )


def _fails_first(body: str) -> bool:
    try:
        return bool(json.loads(body).get("probe", {}).get("fail_first"))
    except (ValueError, AttributeError):
        return False


def judge_partial_batch(history: History) -> CheckResult:
    """Whether exactly the records named in ``batchItemFailures`` came back.

    A record whose first batch outlasted the queue's visibility timeout (a slow or busy
    endpoint) comes back whatever the response said, as on SQS: it is not judged, and when
    no other record's batch ended in time the check fails saying so."""
    failed = {m.message_id for m in history.sent if m.message_id and _fails_first(m.body)}
    counts: dict[str, int] = {}
    first_batch_s: dict[str, float] = {}
    for invocation in sorted(history.invocations, key=lambda i: i.received_ns):
        for record in invocation.records:
            counts[record.message_id] = counts.get(record.message_id, 0) + 1
            first_batch_s.setdefault(
                record.message_id, (invocation.ended_ns - invocation.received_ns) / 1e9
            )
    failed_again = sum(1 for m in failed if counts.get(m, 0) > 1)
    sent_others = [
        m.message_id for m in history.sent if m.message_id and m.message_id not in failed
    ]
    late = [m for m in sent_others if first_batch_s.get(m, 0.0) > PARTIAL_VISIBILITY_S]
    others = [m for m in sent_others if m not in late]
    others_again = sum(1 for m in others if counts.get(m, 0) > 1)
    batch = max((len(i.records) for i in history.invocations), default=0)
    details: dict[str, int | float | str] = {
        "failed_records": len(failed),
        "failed_redelivered": failed_again,
        "other_records": len(others),
        "others_redelivered": others_again,
        "largest_batch": batch,
    }
    figures = (
        f"{failed_again} of {len(failed)} record(s) named in batchItemFailures came back, "
        f"{others_again} of {len(others)} others did (largest batch {batch})"
    )
    if late:
        details["others_not_judged"] = len(late)
        figures += (
            f"; {len(late)} other(s) not judged: their batch outlasted the "
            f"{PARTIAL_VISIBILITY_S} s visibility timeout"
        )
    if failed and failed_again == len(failed) and others and others_again == 0:
        return CheckResult(PARTIAL_BATCH, True, figures, details)
    if failed_again < len(failed):
        why = (
            "a record the handler reported failed was deleted anyway: partial batch "
            "responses are ignored, and a consumer relying on them loses messages here"
        )
    elif not others:
        why = (
            "every batch outlasted the queue's visibility timeout, so whether records that "
            "succeeded are retried could not be seen: the endpoint was too slow for this "
            "check (run it again on an idle machine)"
        )
    else:
        why = (
            "records that succeeded came back with the failed one: the whole batch is "
            "retried, so partial failures cause redeliveries here that Lambda would not make"
        )
    return CheckResult(PARTIAL_BATCH, False, f"{figures}: {why}", details)


def judge_fifo_order(history: History) -> CheckResult:
    sent = [m.message_id for m in sorted(history.sent, key=lambda m: m.index) if m.message_id]
    first_seen: list[str] = []
    for invocation in _starts(history):
        for record in invocation.records:
            if record.message_id not in first_seen:
                first_seen.append(record.message_id)
    in_order = first_seen == sent
    peak = max_overlap(history.invocations)
    details: dict[str, int | float | str] = {
        "messages": len(sent),
        "delivered": len(first_seen),
        "in_send_order": int(in_order),
        "max_concurrent_in_group": peak,
    }
    figures = (
        f"{len(first_seen)} of {len(sent)} messages of one group delivered, "
        f"{'in' if in_order else 'NOT in'} send order, at most {peak} invocation(s) of the "
        "group at once"
    )
    if in_order and peak <= 1 and len(first_seen) == len(sent):
        return CheckResult(FIFO_MAPPING_ORDER, True, figures, details)
    return CheckResult(
        FIFO_MAPPING_ORDER,
        False,
        f"{figures}: a FIFO group is not delivered as Lambda delivers it (in order, one batch "
        "at a time), so ordering bugs show here that Lambda would not cause, or are hidden",
        details,
    )


def probes() -> list[Probe]:
    """The data-plane checks' workloads, in ``MAPPING_CHECK_NAMES`` order."""
    return [
        Probe(
            CONCURRENCY,
            _scenario(
                "concurrency",
                [_body(n, "burst", sleep_ms=BURST_SLEEP_MS) for n in range(BURST)],
                batch_size=1,
                concurrency=BURST,
                visibility_timeout_s=30,
            ),
            judge_concurrency,
        ),
        Probe(
            VISIBILITY_IN_FLIGHT,
            _scenario(
                "visibility",
                [_body(0, "slow", first_sleep_ms=IN_FLIGHT_SLEEP_MS)],
                batch_size=1,
                concurrency=2,
                visibility_timeout_s=VISIBILITY_S,
            ),
            judge_visibility,
        ),
        Probe(
            PARTIAL_BATCH,
            _scenario(
                "partial",
                [_body(n, "part", fail_first=n == 1) for n in range(4)],
                batch_size=10,
                batching_window_s=1,
                concurrency=2,
                visibility_timeout_s=PARTIAL_VISIBILITY_S,
                report_batch_item_failures=True,
            ),
            judge_partial_batch,
        ),
        Probe(
            FIFO_MAPPING_ORDER,
            _scenario_fifo(),
            judge_fifo_order,
        ),
    ]


def _scenario_fifo() -> Scenario:
    scenario = _scenario(
        "fifo",
        [_body(n, "fifo", sleep_ms=FIFO_SLEEP_MS) for n in range(FIFO_MESSAGES)],
        batch_size=1,
        concurrency=3,
        visibility_timeout_s=30,
        fifo=True,
    )
    return scenario.with_overrides(message_group="fixed", message_groups=1)

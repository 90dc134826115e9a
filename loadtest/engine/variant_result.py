"""The one builder of a variant's result: ``variant_result`` makes the engine's ``VariantRun``.

Both runtimes (``loadtest.engine.runtime``: the local emulation and a deployed
function behind a real event source mapping) measure a history, an end state
and a check; this module turns those into the record the reports read, with
the same latencies, rate figures and warnings (settings lint, rate shortfall,
and what the runtime itself noticed). Runs nothing; prints nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadtest.aws import clients as aws
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.engine.results import VariantRun, settings_warnings
from loadtest.model.checker import Check
from loadtest.model.figures.metrics import Latency
from loadtest.model.figures.rate import rate_figures, rate_warning, requested_per_s
from loadtest.model.history.log import EndState, History
from loadtest.model.scenario.loading import Scenario


def variant_result(
    scenario: Scenario,
    ref: HandlerRef,
    names: aws.ResourceNames,
    history: History,
    end_state: EndState,
    *,
    check: Check,
    latency: dict[str, Latency],
    cold_starts: int,
    cleanup_problems: Sequence[str] = (),
    incomplete: str | None = None,
    backlog_peak: int = 0,
    stopped_early: str | None = None,
    consumer_warnings: Sequence[str] | None = None,
    noticed: Sequence[str] = (),
) -> VariantRun:
    """One variant's record for the reports.

    ``consumer_warnings``: the lint of settings the run did not choose (an
    attached consumer's own); ``None`` lints the scenario's settings.
    ``noticed``: what the runtime saw that the user should know (lines that
    were not loadtest's, invocations that never reported), after the settings
    warnings and before the rate shortfall.
    """
    summaries = {name: latency[name].summary() for name in ("end_to_end", "queue_dwell")}
    rate = rate_figures(history, requested_per_s(scenario), backlog_peak, summaries, stopped_early)
    if consumer_warnings is not None:
        warnings = list(consumer_warnings)
    else:
        warnings = settings_warnings(
            scenario.consumer, scenario.faults, ref.variant, scenario.lint_intended
        )
    warnings.extend(noticed)
    shortfall = rate_warning(rate, summaries)
    if shortfall is not None:
        warnings.append(shortfall)
    return VariantRun(
        variant=ref.variant,
        handler=ref.ref if ref.path else f"{ref.module}:{ref.function}",
        settings=scenario.consumer,
        history=history,
        end_state=end_state,
        check=check,
        latency=latency,
        duration_s=max(0, history.ended_ns - history.started_ns) / 1e9,
        cold_starts=cold_starts,
        resources=names,
        cleanup_problems=list(cleanup_problems),
        warnings=warnings,
        faults=scenario.faults,
        incomplete=incomplete,
        rate=rate,
    )

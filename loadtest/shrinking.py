"""The library's ``shrink``: the smallest workload that still fails, from a failing report.

Owns reading what failed in a saved report (the first run, or the named
variant's, whose counts show an anomaly: a count that fails the default
verdict when above zero, ``BAD_WHEN_NONZERO``), probing candidates by
running them (``loadtest.api``: each candidate runs ``tries`` times under
seeds s, s+1, ... and fails when any run shows one of the same anomalies),
the search itself being ``loadtest.model.search.shrink``'s, and the minimal
scenario it returns: the original with the reduced fields, the failing
variant only, and neither the scenario's thresholds nor its relaxations, so
that running it fails on the anomaly itself. Sits above ``loadtest.api``;
prints nothing, never exits, writes no file (the caller writes ``toml``).

``loadtest explore`` takes over where a shrink ends: the minimal workload
(one id with its copies, as a rule) is what an exhaustive exploration of
interleavings can afford. ``ShrinkResult.scenario`` is that hand-off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loadtest.api import execute as execute_plan
from loadtest.api import prepare
from loadtest.errors import InputError
from loadtest.model.checker import BAD_WHEN_NONZERO
from loadtest.model.scenario.loading import Scenario, parse_scenario, to_raw
from loadtest.model.search.shrink import Outcome, Shrunk, shrink, to_toml
from loadtest.reports.model import ReportModel, RunModel, as_model

DEFAULT_TRIES = 5


@dataclass(frozen=True)
class ShrinkResult:
    """A shrink's answer."""

    variant: str
    anomalies: tuple[str, ...]
    """The counts that made the original run fail (and each candidate, to count as failing)."""
    original: Scenario
    scenario: Scenario
    """The minimal scenario: reduced, this variant only, no thresholds or relaxations."""
    shrunk: Shrunk
    tries: int
    toml: str
    """``scenario`` as a TOML file, with a header saying where it came from."""

    def command(self, path: str | Path) -> str:
        """The command that runs the minimal scenario, saved at ``path``, as the shrink did."""
        repeat = f" --repeat {self.tries}" if self.tries > 1 else ""
        return f"loadtest run {path} --variant {self.variant} --seed {self.shrunk.seed}{repeat}"


def failing_run(report: ReportModel, variant: str | None) -> tuple[RunModel, tuple[str, ...]]:
    """The run to shrink and the anomaly counts it showed; ``InputError`` if none fails."""
    runs = [r for r in report.runs if variant is None or r.variant == variant]
    if variant is not None and not runs:
        names = sorted({r.variant for r in report.runs})
        raise InputError(
            f"the report has no run of variant {variant!r}; variants: {', '.join(names)}"
        )
    for run in runs:
        counts = run.counts
        shown = tuple(name for name in BAD_WHEN_NONZERO if (counts.get(name) or 0) > 0)
        if shown:
            return run, shown
    raise InputError(
        "nothing to shrink: no run in the report shows an anomaly "
        f"({', '.join(BAD_WHEN_NONZERO)} all 0); shrink reduces a run that failed on one"
    )


def _scenario_of(report: ReportModel) -> Scenario:
    raw = dict(report.scenario)
    source = str(raw.pop("source", "the report's scenario"))
    try:
        return parse_scenario(raw, source=f"{source} (from the report)")
    except InputError as exc:
        raise InputError(f"the report's scenario cannot be run again: {exc}") from exc


def shrink_report(
    report: ReportModel | Mapping[str, Any],
    *,
    variant: str | None = None,
    tries: int = DEFAULT_TRIES,
    endpoint_url: str | None = None,
    max_probes: int = 60,
    on_step: Callable[[str, Any, Outcome], None] | None = None,
) -> ShrinkResult:
    """Reduce a failing report's workload to the smallest that still fails in one of ``tries``.

    Runs on the local runtime (the embedded backend, or ``endpoint_url``). ``on_step`` is
    called after each candidate with (field, value, outcome). Raises ``InputError`` when the
    report shows no anomaly, and ``LookupError`` when its workload no longer fails.
    """
    if isinstance(tries, bool) or not isinstance(tries, int) or tries < 1:
        raise InputError(f"tries must be a whole number, 1 or more; got {tries!r}")
    report = as_model(report)
    run, anomalies = failing_run(report, variant)
    name = run.variant
    original = _scenario_of(report)
    seed = run.seed if run.seed is not None else int(report.known("seed", original.seed))
    original = original.with_overrides(seed=seed)

    def probe(overrides: Mapping[str, Any]) -> Outcome:
        plan = prepare(
            original,
            variants=[name],
            endpoint_url=endpoint_url,
            repeat=tries,
            **dict(overrides),
        )
        judged = execute_plan(plan).to_dict()
        for candidate in judged["runs"]:
            counts = candidate["counts"]
            shown = [f"{a} = {counts[a]}" for a in anomalies if counts.get(a)]
            if shown:
                return Outcome(int(candidate.get("seed", seed)), ", ".join(shown))
        return Outcome(None)

    def observed(overrides: Mapping[str, Any]) -> Outcome:
        outcome = probe(overrides)
        if on_step is not None and overrides:
            field, value = list(overrides.items())[-1]
            on_step(field, value, outcome)
        return outcome

    first = probe({})
    if first.failed_seed is None:
        raise LookupError(
            f"{name} did not fail again in {tries} run(s) of the report's workload "
            f"(seeds {seed}..{seed + tries - 1}): nothing to shrink; try more --tries"
        )
    shrunk = shrink(original, observed, first, max_probes=max_probes)
    minimal = _minimal(original, shrunk, name)
    header = (
        f"The smallest workload found that still shows {', '.join(anomalies)} with {name}\n"
        f"(from {original.name}, seed {shrunk.seed}: {shrunk.detail}; failing in at least\n"
        f"one of {tries} runs). Written by `loadtest shrink`."
    )
    return ShrinkResult(
        variant=name,
        anomalies=anomalies,
        original=original,
        scenario=minimal,
        shrunk=shrunk,
        tries=tries,
        toml=to_toml(to_raw(minimal), header),
    )


def _minimal(original: Scenario, shrunk: Shrunk, variant: str) -> Scenario:
    reduced = original.with_overrides(seed=shrunk.seed, **shrunk.overrides)
    return replace(
        reduced,
        name=f"{original.name}-minimal"[:64],
        description=f"The smallest workload of {original.name} that still fails with {variant}.",
        variants=(variant,),
        thresholds=(),
        allow=(),
    )

"""Shrinking a failing run's workload to the smallest that still fails.

Owns the search of ``loadtest shrink``: which dimensions of a workload are
reduced (``DIMENSIONS``: faults off, a burst instead of a rate, fewer distinct
ids, fewer copies, less concurrency, smaller batches), in which order, and
how (``shrink``): delta debugging over one dimension at a time, each tried
at its floor first and otherwise bisected between the floor and the value
that still fails, passes repeated until none shrinks any more, so the result
is 1-minimal per dimension: lowering any one of them by one step no longer
failed in the tries made. Whether a candidate fails is the caller's question
(``Probe``: it runs the candidate and says which seed failed), so this module
stays pure. Also owns writing the minimal scenario as TOML (``to_toml``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.scenario.loading import Scenario
from loadtest.model.scenario.toml_text import toml_key as _key
from loadtest.model.scenario.toml_text import toml_value


@dataclass(frozen=True)
class Dimension:
    """One reducible part of a workload: a scenario field and its smallest value."""

    field: str
    """The scenario field (a command-line override name: ``distinct_ids``, ``race_window_ms``)."""
    floor: Any
    section: str
    bisect: bool = True
    """Whether values between the floor and the current one are tried (integers)."""


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("crash_after_write", 0.0, "faults", bisect=False),
    Dimension("handler_jitter_ms", 0, "faults"),
    Dimension("handler_duration_ms", 0, "faults"),
    Dimension("race_window_ms", 0, "faults"),
    Dimension("dedup_window_s", 0.0, "faults", bisect=False),
    Dimension("arrival", "burst", "workload", bisect=False),
    Dimension("distinct_ids", 1, "workload"),
    Dimension("copies", 1, "workload"),
    Dimension("concurrency", 1, "consumer"),
    Dimension("batch_size", 1, "consumer"),
    Dimension("batching_window_s", 0.0, "consumer", bisect=False),
)
"""In the order they are reduced: faults first (a failure without a fault is the
stronger finding), then the workload's size, then the consumer's parallelism."""


@dataclass(frozen=True)
class Outcome:
    """What a probe of one candidate found."""

    failed_seed: int | None
    """A seed whose run still showed the failure; None if no try did."""
    detail: str = ""
    """What the failing run showed, in words ("2 duplicate write(s)")."""


Probe = Callable[[Mapping[str, Any]], Outcome]
"""Runs the scenario with these overrides (its tries) and says whether it still fails."""


@dataclass
class Step:
    """One candidate tried."""

    dimension: str
    value: Any
    failed: bool
    detail: str


@dataclass
class Shrunk:
    """The smallest workload found, and how it was found."""

    overrides: dict[str, Any]
    """The reduced fields, against the original scenario."""
    seed: int
    """A seed with which the minimal workload failed."""
    detail: str
    steps: list[Step] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)
    """Dimensions left above their floor, and why (in words)."""


def _value(scenario: Scenario, dimension: Dimension) -> Any:
    value = getattr(getattr(scenario, dimension.section), dimension.field)
    return getattr(value, "value", value)  # an enum's plain value


def reducible(scenario: Scenario) -> list[Dimension]:
    """The dimensions this scenario can reduce (explicit messages fix their ids and copies)."""
    fixed = {"distinct_ids", "copies"} if scenario.workload.messages else set()
    return [d for d in DIMENSIONS if d.field not in fixed]


def shrink(scenario: Scenario, probe: Probe, first: Outcome, *, max_probes: int = 60) -> Shrunk:
    """Reduce ``scenario``'s workload while ``probe`` says it still fails.

    ``first`` is the probe of the scenario as it is (it must have failed). At most
    ``max_probes`` candidates are run; what is left then is kept and said so.
    """
    if first.failed_seed is None:
        raise ValueError("the workload to shrink must fail first")
    current: dict[str, Any] = {}
    best = Shrunk(overrides=current, seed=first.failed_seed, detail=first.detail)
    probes = 0

    def attempt(dimension: Dimension, value: Any) -> bool:
        nonlocal probes
        probes += 1
        # The field tried comes last, so a caller can tell which one it was.
        others = {k: v for k, v in current.items() if k != dimension.field}
        outcome = probe({**others, dimension.field: value})
        failed = outcome.failed_seed is not None
        best.steps.append(Step(dimension.field, value, failed, outcome.detail))
        if failed:
            current[dimension.field] = value
            best.seed = outcome.failed_seed or best.seed
            best.detail = outcome.detail
        return failed

    changed = True
    while changed and probes < max_probes:
        changed = False
        for dimension in reducible(scenario):
            value = current.get(dimension.field, _value(scenario, dimension))
            if value == dimension.floor or probes >= max_probes:
                continue
            if attempt(dimension, dimension.floor):
                changed = True
                continue
            if not dimension.bisect:
                continue
            low, high = dimension.floor, value  # low passed, high fails
            while high - low > 1 and probes < max_probes:
                middle = (low + high) // 2
                if attempt(dimension, middle):
                    high = middle
                    changed = True
                else:
                    low = middle
    for dimension in reducible(scenario):
        value = current.get(dimension.field, _value(scenario, dimension))
        if value != dimension.floor:
            best.kept[dimension.field] = (
                f"{value}: with {_below(dimension, value)} it did not fail in the tries made"
                if probes < max_probes
                else f"{value}: the search stopped after {max_probes} candidates"
            )
    return best


def _below(dimension: Dimension, value: Any) -> str:
    if dimension.bisect and isinstance(value, int):
        return f"{value - 1}" if value - 1 > dimension.floor else f"{dimension.floor}"
    return f"{dimension.floor}"


# --------------------------------------------------------------------------- TOML


def to_toml(raw: Mapping[str, Any], header: str = "") -> str:
    """A scenario mapping (``to_raw``'s shape) as TOML: top-level values, then one table
    per section (nested mappings as inline tables). ``header`` becomes leading comments."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    tables = {k: v for k, v in raw.items() if isinstance(v, Mapping)}
    lines += [
        f"{_key(k)} = {toml_value(v, skip_none=True)}"
        for k, v in raw.items()
        if k not in tables and v is not None
    ]
    for name, table in tables.items():
        if not table:
            continue
        lines += ["", f"[{_key(name)}]"]
        lines += [
            f"{_key(k)} = {toml_value(v, skip_none=True)}"
            for k, v in table.items()
            if v is not None
        ]
    return "\n".join(lines) + "\n"

"""A run's plan: the scenario, its cells' scenarios and its thresholds, each built once.

Owns ``RunPlan`` and ``Cell``. A plan is built (and its input checked) before
anything runs; the engine runs its cells' scenarios as they are, and the report
builder judges the runs with its parsed thresholds and prices it with its price
table: neither rebuilds a scenario from overrides nor parses a threshold again.
Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from loadtest.model.figures.cost import Prices
from loadtest.model.figures.thresholds import Threshold, parse_thresholds
from loadtest.model.scenario.loading import Scenario


@dataclass(frozen=True)
class Cell:
    """One cell of a sweep: the overrides it names and the scenario they make."""

    overrides: Mapping[str, Any]
    """The settings this cell overrides (``{}`` for a plain run); shown in the report."""
    scenario: Scenario
    """The plan's scenario with ``overrides`` applied (validated when the cell was made)."""

    @classmethod
    def of(cls, scenario: Scenario, overrides: Mapping[str, Any]) -> Cell:
        """The cell of ``overrides`` over ``scenario``; bad overrides raise ``ScenarioError``."""
        return cls(dict(overrides), scenario.with_overrides(**overrides))


def cells_of(scenario: Scenario, cells: Iterable[Cell | Mapping[str, Any]]) -> tuple[Cell, ...]:
    """Cells as they are, and override mappings made into cells of ``scenario``."""
    return tuple(c if isinstance(c, Cell) else Cell.of(scenario, c) for c in cells)


@dataclass(frozen=True)
class RunPlan:
    """What a run is asked to do and how it is judged, with every piece already built."""

    scenario: Scenario
    """With the caller's overrides applied."""
    thresholds: tuple[Threshold, ...] = ()
    """The scenario's own thresholds, then the caller's, parsed."""
    cells: tuple[Cell, ...] = field(default=())
    """One run of every variant per cell; a plain run has one cell of no overrides."""
    prices: Prices | None = None
    """The price table for the cost per million messages (None: the committed one)."""
    repeat: int = 1
    """Runs of the workload, under seeds s, s+1, ... (each a cell ``{"seed": ...}``)."""

    def __post_init__(self) -> None:
        if not self.cells:
            object.__setattr__(self, "cells", (Cell({}, self.scenario),))

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        thresholds: Sequence[str] = (),
        *,
        cells: Sequence[Mapping[str, Any]] = (),
        prices: Prices | None = None,
        repeat: int = 1,
    ) -> RunPlan:
        """A plan whose thresholds are the scenario's and ``thresholds`` (the caller's).

        With ``repeat`` above 1 the cells are the seeds s, s+1, ... A threshold that
        does not parse raises ``ThresholdError``, a cell's bad override ``ScenarioError``.
        """
        parsed = parse_thresholds([*scenario.thresholds, *thresholds])
        if repeat > 1:
            cells = [{"seed": scenario.seed + i} for i in range(repeat)]
        return cls(scenario, tuple(parsed), cells_of(scenario, cells), prices, repeat)

    @property
    def repeated(self) -> bool:
        """Whether the runs are one workload under successive seeds, or a threshold
        addresses a repeat's statistics: then the report gains its ``repeat`` object."""
        return self.repeat > 1 or any(t.aggregate is not None for t in self.thresholds)

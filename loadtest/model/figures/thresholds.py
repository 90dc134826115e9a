"""Thresholds: k6-style pass/fail expressions evaluated over one run of the JSON report.

Owns the evaluation of a threshold against the figures of one run of a report
(``schema_version`` 1) or a repeat's statistics, and which reasons the explicit
relaxation of the default verdict drops for demonstration scenarios (applying both to
a run is ``loadtest.reports.judge``'s). The grammar and its parser are
``loadtest.model.figures.threshold_grammar``'s; their names are re-exported here. Pure: no I/O,
no clock, no printing; what is passed in is never mutated.

Relaxing the default verdict (a demonstration scenario may expect
the racy variant to fail). Two pieces, both explicit:

1. *Expect* the failure with an ordinary threshold, which passes only when the
   race reproduced: ``read-then-write: duplicate_writes > 0``.
2. *Relax* the default verdict for that variant (``loadtest.reports.judge``;
   :func:`relaxed_reasons` says which reasons go), naming which default-verdict reasons the
   scenario allows (``duplicate_writes``, ``conflicting_writes``,
   ``lost_outcomes``). A scenario file would say so in a table such as::

       [verdict.allow]
       "read-then-write" = ["duplicate_writes", "conflicting_writes"]

   ``unsettled`` and ``send_failures`` can never be relaxed: they mean the run
   itself is incomplete. The dropped reasons stay visible in the run's
   ``relaxed_reasons`` list, so the report never hides them.

Without the threshold of step 1, a relaxed demonstration would pass silently
the day the race stops reproducing; pairing the two keeps it honest.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from loadtest.errors import InputError
from loadtest.model.checker import Counts, default_reasons
from loadtest.model.checker.reasons import effect_reason_count
from loadtest.model.figures.threshold_grammar import (
    AGGREGATES,
    COUNT_NAMES,
    LATENCIES,
    UNITS_US,
    MetricKind,
    Operator,
    Threshold,
    allowed_help,
    check_scenario,
    check_variants,
    parse_threshold,
    parse_thresholds,
)
from loadtest.model.scenario.loading import RELAXABLE

__all__ = [
    "AGGREGATES",
    "COUNT_NAMES",
    "LATENCIES",
    "RELAXABLE",
    "UNITS_US",
    "MetricKind",
    "Operator",
    "Threshold",
    "allowed_help",
    "check_scenario",
    "check_variants",
    "evaluate",
    "evaluate_aggregate",
    "observe",
    "parse_threshold",
    "parse_thresholds",
    "relaxed_reasons",
]

_COMPARE: Mapping[Operator, Callable[[float, float], bool]] = {
    Operator.LT: operator.lt,
    Operator.LE: operator.le,
    Operator.GT: operator.gt,
    Operator.GE: operator.ge,
    Operator.EQ: operator.eq,
    Operator.NE: operator.ne,
}


def observe(threshold: Threshold, run: Mapping[str, Any]) -> float | None:
    """The run's value of the threshold's metric, or None if it has no data."""
    node: Any = run
    for key in threshold.path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    # bool is an int subclass; a flag is never a metric value.
    if isinstance(node, bool) or not isinstance(node, int | float):
        return None
    if isinstance(node, float) and math.isnan(node):
        return None
    return node


def evaluate(threshold: Threshold, run: Mapping[str, Any]) -> dict[str, Any]:
    """``{"expr", "observed", "ok"}`` for one run; a metric with no data fails."""
    observed = observe(threshold, run)
    ok = observed is not None and _COMPARE[threshold.operator](observed, threshold.value)
    return {"expr": threshold.expr, "observed": observed, "ok": ok}


def evaluate_aggregate(threshold: Threshold, statistics: Mapping[str, Any]) -> dict[str, Any]:
    """``{"expr", "observed", "ok"}`` of a threshold on one variant's repeat statistics
    (``loadtest.model.search.repeats``); a metric with no data fails."""
    node: Any = statistics
    for key in (*threshold.path, threshold.aggregate or ""):
        node = node.get(key) if isinstance(node, Mapping) else None
    observed = None if isinstance(node, bool) or not isinstance(node, int | float) else node
    ok = observed is not None and _COMPARE[threshold.operator](observed, threshold.value)
    return {"expr": threshold.expr, "observed": observed, "ok": ok}


def relaxed_reasons(
    reasons: Iterable[str], counts: Mapping[str, Any], allowed: Collection[str], *, timed_out: bool
) -> tuple[list[str], list[str]]:
    """``reasons`` split into those kept and those the ``allowed`` counts drop.

    ``allowed`` holds names from :data:`RELAXABLE`; only the scenario may pass them (see
    the module docstring). The checker's own sentences for just the allowed counts are
    dropped, so only those exact reasons go and anything else the run reported stays.
    """
    unknown = sorted(set(allowed) - set(RELAXABLE))
    if unknown:
        raise InputError(
            f"cannot relax {', '.join(unknown)}; relaxable: {', '.join(RELAXABLE)} "
            "(unsettled messages and send failures always fail a run)"
        )
    only_allowed = Counts(
        **{name: (int(counts.get(name, 0)) if name in allowed else 0) for name in COUNT_NAMES}
    )
    droppable = set(default_reasons(only_allowed, timed_out=timed_out))

    def dropped(reason: str) -> bool:
        # An effect's reason names its witnesses: it is told by its count's words.
        return reason in droppable or effect_reason_count(reason) in allowed

    listed = list(reasons)
    return [r for r in listed if not dropped(r)], [r for r in listed if dropped(r)]

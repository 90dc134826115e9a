"""Thresholds: k6-style pass/fail expressions evaluated over one run of the JSON report.

Owns the evaluation of a threshold against one run of a report (``schema_version`` 1)
or a repeat's statistics, applying thresholds to a report, and the explicit relaxation
of the default verdict for demonstration scenarios. The grammar and its parser are
``loadtest.model.threshold_grammar``'s; their names are re-exported here. Pure: no I/O,
no clock, no printing; the report dicts passed in are never mutated (new ones are
returned).

Relaxing the default verdict (a demonstration scenario may expect
the racy variant to fail). Two pieces, both explicit:

1. *Expect* the failure with an ordinary threshold, which passes only when the
   race reproduced: ``read-then-write: duplicate_writes > 0``.
2. *Relax* the default verdict for that variant with
   :func:`relax_default_verdict`, naming which default-verdict reasons the
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

import copy
import math
import operator
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from loadtest.errors import InputError
from loadtest.model.checker import Counts, default_reasons, verdict_of
from loadtest.model.scenario import RELAXABLE
from loadtest.model.threshold_grammar import (
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
    "apply_thresholds",
    "check_scenario",
    "check_variants",
    "evaluate",
    "evaluate_aggregate",
    "observe",
    "parse_threshold",
    "parse_thresholds",
    "relax_default_verdict",
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
    (``loadtest.model.repeats``); a metric with no data fails."""
    node: Any = statistics
    for key in (*threshold.path, threshold.aggregate or ""):
        node = node.get(key) if isinstance(node, Mapping) else None
    observed = None if isinstance(node, bool) or not isinstance(node, int | float) else node
    ok = observed is not None and _COMPARE[threshold.operator](observed, threshold.value)
    return {"expr": threshold.expr, "observed": observed, "ok": ok}


def apply_thresholds(report: Mapping[str, Any], thresholds: Iterable[Threshold]) -> dict[str, Any]:
    """A new report whose runs carry the results of the thresholds that apply to them.

    Each run's ``thresholds`` list is replaced (so applying twice is the same
    as once); if any result failed, its ``verdict`` becomes "fail", or
    "inconclusive" for an incomplete run (``verdict_of``). An existing "fail" is
    kept: thresholds add to the default verdict, never relax it.
    """
    chosen = [t for t in thresholds if t.aggregate is None]
    out: dict[str, Any] = copy.deepcopy(dict(report))
    for run in out["runs"]:
        results = [evaluate(t, run) for t in chosen if t.applies_to(run["variant"])]
        run["thresholds"] = results
        if any(not r["ok"] for r in results) and run["verdict"] != "fail":
            run["verdict"] = verdict_of(
                run.get("reasons", []),
                run.get("inconclusive", []),
                failed_thresholds=True,
                incomplete=bool(run.get("incomplete")),
            ).value
    return out


def relax_default_verdict(run: Mapping[str, Any], allowed: Collection[str]) -> dict[str, Any]:
    """A new run with the default-verdict reasons for the ``allowed`` counts dropped.

    ``allowed`` holds names from :data:`RELAXABLE`; only the scenario may pass
    them (see the module docstring). The dropped reasons move to
    ``relaxed_reasons``. The verdict is then "fail" if any reason remains or any
    threshold result failed, else "pass", so this may run before or after
    :func:`apply_thresholds`.
    """
    unknown = sorted(set(allowed) - set(RELAXABLE))
    if unknown:
        raise InputError(
            f"cannot relax {', '.join(unknown)}; relaxable: {', '.join(RELAXABLE)} "
            "(unsettled messages and send failures always fail a run)"
        )
    out: dict[str, Any] = copy.deepcopy(dict(run))
    counts = out.get("counts", {})
    # The checker's own sentences for just the allowed counts, so only those
    # exact reasons are dropped and anything else the run reported stays.
    only_allowed = Counts(
        **{name: (int(counts.get(name, 0)) if name in allowed else 0) for name in COUNT_NAMES}
    )
    droppable = set(default_reasons(only_allowed, timed_out=bool(out.get("timed_out", False))))
    reasons = list(out.get("reasons", []))
    out["reasons"] = [r for r in reasons if r not in droppable]
    out["relaxed_reasons"] = list(out.get("relaxed_reasons", [])) + [
        r for r in reasons if r in droppable
    ]
    out["verdict"] = verdict_of(
        out["reasons"],
        out.get("inconclusive", []),
        failed_thresholds=any(not r.get("ok", False) for r in out.get("thresholds", [])),
        incomplete=bool(out.get("incomplete")),
    ).value
    return out

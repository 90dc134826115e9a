"""The report of ``explore``: the JSON report with its ``explore`` object, and its terminal text.

An explore report is a run report (a ``ReportModel`` built by
``loadtest.reports.report.build``, its ``explore`` set): its one run is the schedule it shows (the shrunk
counterexample when a schedule failed, else an inconclusive one, else the
first), judged as any run is, so every renderer, threshold and exit code
works on it unchanged. The ``explore`` object adds what the search did:

```
"explore": {"strategy", "schedules_run", "schedules_failed", "schedules_inconclusive",
            "exhaustive": bool, "bound": {...}, "elapsed_s", "schedules_per_s",
            "faults": [...], "max_faults", "copies", "replay": str, "stop_at_first": bool,
            "counterexample": {"schedule", "steps": [...], "counts", "reasons",
                               "deliveries", "faults"} | null,
            "bugs": [{"schedule", "steps", "counts", "reasons", "deliveries", "faults",
                      "schedules", "departure", "replay"}, ...], "bugs_left_out": int}
```

``bugs`` holds every distinct bug the search found (``loadtest.model.explore.bugs``),
each shrunk, smallest first: its replay token (``schedule``), steps, counts and reasons
as the counterexample has them, how many failing schedules of the search it stood for
(``schedules``), where it leaves the default schedule in words (``departure``) and the
command that replays it (``replay``). ``counterexample`` is the first of them (a search
with ``stop_at_first`` finds one).

``bound`` is what the search covered (``loadtest.model.explore.points.Bound``): ``deliveries``,
``ids``, ``faults`` (each with the most a schedule may take), ``max_faults``,
``strategy``, ``schedules``, ``exhaustive``, ``stopped_by`` (``space``, ``budget``,
``time_budget``, ``first_failure`` (with ``stop_at_first``), ``unscheduled_call``), ``pct`` (``depth``, ``n``, ``k``, ``probability``, or
null) and ``sentence``, the bound in words.

``replay`` is the command that reruns the shown schedule exactly.

An exploration set by ``--bound`` also holds ``bound_spec`` (the spec, as its replay lines
carry it) and ``fault_limits`` (each fault offered and the most of it one schedule may
take); ``bound.faults`` then gives each kind its own limit and ``max_faults`` the most of
all together.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from loadtest.emulation.environment.handlers import BUILTIN_VARIANTS
from loadtest.model.plan import RunPlan
from loadtest.reports.model import ReportModel, RunModel, as_model
from loadtest.reports.report import build

if TYPE_CHECKING:
    from loadtest.engine.explore import Counterexample, ExploreResult


def replay_command(result: ExploreResult, token: str, scenario_ref: str) -> str:
    """``loadtest explore ... --schedule TOKEN``: the shown schedule, exactly.

    Carries every option that changes what a schedule does: the scenario, the handler,
    the copies and business ids explored, the faults offered at each point and how many
    one schedule may take (the token's choices index the options they make), the clock
    fault's jump, the function's ``--env`` variables and a seed other than the scenario's. Options that only steer the search
    (strategy, budget) and the outputs are left out: a replay does not search."""
    options = result.options
    args = ["loadtest", "explore", scenario_ref]
    if result.ref.variant in BUILTIN_VARIANTS:
        args += ["--variant", result.ref.variant]
    else:
        args += ["--handler", result.ref.variant]
    if options.bound is not None:
        # The bound set the copies, the faults and their limits: it is replayed as given.
        args += ["--bound", options.bound.text]
        if options.bound.ids is None and options.distinct_ids != 1:
            args += ["--distinct-ids", str(options.distinct_ids)]
    else:
        if options.copies is not None:
            args += ["--copies", str(options.copies)]
        if options.distinct_ids != 1:
            args += ["--distinct-ids", str(options.distinct_ids)]
        if options.faults:
            args += ["--faults", ",".join(f.value for f in options.faults)]
            if options.max_faults != 1:
                args += ["--max-faults", str(options.max_faults)]
    if options.clock_jump_s is not None:
        args += ["--clock-jump", f"{options.clock_jump_s:g}"]
    for pair in options.env:
        args += ["--env", pair]
    if options.seed != result.scenario.seed:
        args += ["--seed", str(options.seed)]
    args += ["--schedule", token]
    return shlex.join(args)


def explore_report(
    result: ExploreResult, *, scenario_ref: str, command: str | None = None
) -> ReportModel:
    from loadtest.engine.explore import plain_ids, variant_run
    from loadtest.engine.results import RunResult

    report = build(
        RunResult(result.scenario, result.target, [variant_run(result)]),
        RunPlan.of(result.scenario),
        command=command,
    )
    # The shown schedule's run names its business ids as the scenario does (its steps
    # already do), never the schedule's fresh ``id_sN``.
    plain = plain_ids(result)
    report = dataclasses.replace(
        report,
        runs=tuple(
            RunModel.from_json(json.loads(plain(json.dumps(r.to_json())))) for r in report.runs
        ),
    )
    counterexample = None
    example = result.counterexample
    if example is not None:
        counterexample = _example(example)
    bugs = [
        {
            **_example(bug),
            "schedules": bug.schedules,
            "departure": bug.key.departure.text if bug.key is not None else None,
            "replay": replay_command(result, bug.schedule.token, scenario_ref),
        }
        for bug in result.bugs
    ]
    shown_token = (
        example.schedule.token
        if example is not None
        else (result.options.schedule.token if result.options.schedule is not None else None)
    )
    explored = {
        "strategy": "replay" if result.options.schedule is not None else result.options.strategy,
        "schedules_run": result.schedules_run,
        "schedules_failed": result.schedules_failed,
        "schedules_inconclusive": result.schedules_inconclusive,
        "exhaustive": result.exhaustive,
        "bound": result.bound.to_dict() if result.bound is not None else None,
        "budget": result.options.budget,
        "time_budget_s": result.options.time_budget_s,
        "elapsed_s": round(result.elapsed_s, 3),
        "schedules_per_s": round(result.schedules_per_s, 1),
        "faults": [f.value for f in result.options.faults],
        "max_faults": result.options.max_faults if result.options.faults else 0,
        "copies": len(result.messages),
        "shrink_tries": result.shrink_tries,
        "nondeterministic": result.nondeterministic,
        "replay": replay_command(result, shown_token, scenario_ref) if shown_token else None,
        "counterexample": counterexample,
        "stop_at_first": result.options.stop_at_first,
        "bugs": bugs,
        "bugs_left_out": result.bugs_left_out,
    }
    if result.options.bound is not None:
        explored["bound_spec"] = result.options.bound.text
        explored["fault_limits"] = {f.value: n for f, n in result.options.limits if n > 0}
    return dataclasses.replace(report, explore=explored)


def _example(example: Counterexample) -> dict[str, Any]:
    """A shrunk failing schedule as the report keeps it."""
    return {
        "schedule": example.schedule.token,
        "steps": [s.to_dict() for s in example.steps],
        "counts": example.judged.check.counts.as_dict(),
        "reasons": example.reasons or list(example.judged.check.reasons),
        "deliveries": example.judged.execution.deliveries,
        "faults": example.schedule.faults,
    }


def _item(item: Any) -> str:
    from loadtest.emulation.explore.steps import plain_item

    return plain_item(item)


def step_lines(steps: Sequence[dict[str, Any]]) -> list[str]:
    """The numbered interleaving, one line per step."""
    lines = []
    for s in steps:
        fault = f"  [fault: {s['fault']}]" if s.get("fault") else ""
        answer = f" -> {s['answer']}" if s.get("answer") else ""
        change = ""
        # An effect's step (a publish, the delete of a message) has no item to show.
        table_write = s.get("item_before") is not None or s.get("item_after") is not None
        if table_write and str(s.get("answer", "")).startswith(("accepted", "rejected")):
            change = f"   before {_item(s.get('item_before'))}, after {_item(s.get('item_after'))}"
        lines.append(
            f"{s['number']:>3}  delivery {s['delivery']:<4} env {s['environment']:<2} "
            f"t={s['at_ms']:g}ms  {s['what']}{answer}{change}{fault}"
        )
    return lines


def bug_lines(bugs: Sequence[Mapping[str, Any]], left_out: int = 0) -> list[str]:
    """Each distinct bug in one line (its reasons, its schedules, where it departs), then
    the command that replays it."""
    failing = sum(int(b.get("schedules", 1)) for b in bugs)
    lines = [f"bugs: {len(bugs)} distinct, in {failing} failing schedule(s), each shrunk:"]
    for n, bug in enumerate(bugs, start=1):
        reasons = "; ".join(bug["reasons"]) or "failed"
        where = f"; departs by {bug['departure']}" if bug.get("departure") else ""
        lines += [
            f"  {n}. {reasons} ({bug.get('schedules', 1)} schedule(s), "
            f"{bug['deliveries']} deliveries, {bug['faults']} fault(s){where})",
            f"     replay: {bug['replay']}",
        ]
    if left_out:
        lines.append(f"  and {left_out} failing schedule(s) of further kinds, not shrunk")
    return lines


def _faults_offered(e: Mapping[str, Any]) -> str:
    """The faults offered and the most of them a schedule may take: each kind's own limit
    when a bound set them, else the limit on all together."""
    if not e["faults"]:
        return "none"
    limits = e.get("fault_limits")
    if limits:
        each = ", ".join(f"{name} (at most {n})" for name, n in limits.items())
        return each + f", at most {e['max_faults']} in all per schedule"
    return f"{', '.join(e['faults'])} (at most {e['max_faults']} per schedule)"


def explore_text(report: ReportModel | Mapping[str, Any]) -> str:
    """The terminal summary of an explore report."""
    report = as_model(report)
    e = report.explore or {}
    run = report.runs[0]
    lines = [
        f"explore {report.name} / {run.variant}: {e['strategy']}, "
        f"{e['copies']} deliveries, faults: " + _faults_offered(e),
        f"schedules run: {e['schedules_run']}, failed: {e['schedules_failed']}, "
        f"inconclusive: {e['schedules_inconclusive']}  ({e['elapsed_s']:g} s, "
        f"{e['schedules_per_s']:g} schedules/s)",
    ]
    bound = e.get("bound") or {}
    if e["strategy"] == "exhaustive":
        lines.append(f"exhaustive: {'true' if e['exhaustive'] else 'false'}")
    if bound.get("sentence"):
        lines.append(f"covered: {bound['sentence']}")
    example = e["counterexample"]
    bugs = e.get("bugs") or []
    searched = e["strategy"] != "replay" and not e.get("stop_at_first", True)
    if searched and bugs:
        lines += ["", *bug_lines(bugs, e.get("bugs_left_out", 0))]
    if example is not None:
        if e["strategy"] == "replay":
            origin = ":"
        elif searched:
            origin = f", shrunk, the smallest of {len(bugs)} bug(s):"
        else:
            origin = ", shrunk from the first failing schedule:"
        lines += [
            "",
            f"counterexample ({example['deliveries']} deliveries, {example['faults']} fault(s), "
            f"{len(example['steps'])} steps)" + origin,
            *step_lines(example["steps"]),
            "",
            *(f"  {reason}" for reason in example["reasons"]),
        ]
    elif run.verdict != "pass":
        lines += ["", f"verdict of the shown schedule: {run.verdict}"]
        lines += [f"  {r}" for r in [*run.reasons, *run.inconclusive]]
    if e["replay"]:
        lines += ["", f"replay: {e['replay']}"]
    expected = run.verdict == "pass" and e["schedules_failed"] and run.relaxed_reasons
    lines.append(
        f"verdict: {run.verdict}"
        + (" (what failed is expected by this scenario: [verdict.allow])" if expected else "")
    )
    return "\n".join(lines)

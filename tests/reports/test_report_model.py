"""The report model and its JSON, and the run plan the report is judged by."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loadtest.errors import ScenarioError, ThresholdError
from loadtest.model.plan import Cell, RunPlan
from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.model import ReportModel, RunModel, ThresholdResult
from tools.report_golden import build, load_case

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("case", ["seed-lab", "race-burst-repeat-small", "poison-batch-partial"])
def test_a_report_read_back_writes_the_same_bytes(case: str) -> None:
    data = build(load_case(GOLDEN / f"{case}.pickle"))
    text = json.dumps(data, indent=2)
    model = ReportModel.from_json(json.loads(text))
    assert json.dumps(model.to_json(), indent=2) == text
    assert model.absent == frozenset()
    assert all(run.absent == frozenset() and not run.extra for run in model.runs)


def test_an_older_report_keeps_its_keys_and_unknown_ones_are_kept_in_order() -> None:
    run = {
        "variant": "conditional",
        "handler": None,
        "settings": {},
        "counts": {"duplicate_writes": 2},
        "queue_after": {},
        "table_after": {},
        "latency_us": {},
        "throughput": {"messages_per_s": 1.5},
        "thresholds": [{"expr": "duplicate_writes == 0", "observed": 2, "ok": False}],
        "verdict": "fail",
        "future_key": [1, 2],
    }
    data = {"seed": 3, "scenario": {"name": "old"}, "backend": {}, "runs": [run], "later": True}
    model = ReportModel.from_json(data)
    (read,) = model.runs
    assert read.thresholds == (ThresholdResult("duplicate_writes == 0", 2, False),)
    assert read.count("duplicate_writes") == 2
    assert read.count("overlapping_ids", -1) == -1
    assert read.known("cold_starts", "–") == "–"
    assert read.known("handler", "–") is None
    assert read.extra == {"future_key": [1, 2]}
    assert model.to_json() == data
    assert list(model.to_json()) == list(data)
    assert list(model.to_json()["runs"][0]) == list(run)


def test_the_model_owns_its_data() -> None:
    data = {
        "seed": 1,
        "scenario": {"name": "s"},
        "backend": {"kind": "embedded"},
        "runs": [{"variant": "v", "counts": {"acked": 1}, "verdict": "pass"}],
    }
    model = ReportModel.from_json(data)
    data["runs"][0]["counts"]["acked"] = 9  # type: ignore[index]
    out = model.to_json()
    out["runs"][0]["counts"]["acked"] = 7
    assert model.runs[0].counts["acked"] == 1
    assert RunModel.from_json(model.runs[0].to_json()) == model.runs[0]


def test_a_plan_parses_the_thresholds_once_the_scenarios_first() -> None:
    scenario = load_scenario("race-burst")
    plan = RunPlan.of(scenario, ["conditional: duplicate_writes == 0"])
    assert [t.expr for t in plan.thresholds] == [
        *scenario.thresholds,
        "conditional: duplicate_writes == 0",
    ]
    assert plan.cells == (Cell({}, scenario),)
    assert not plan.repeated
    with pytest.raises(ThresholdError):
        RunPlan.of(scenario, ["duplicate_writes <"])


def test_a_plan_builds_each_cell_scenario_once_and_a_repeat_from_the_seeds() -> None:
    scenario = load_scenario("race-burst").with_overrides(seed=11)
    sweep = RunPlan.of(scenario, cells=[{"batch_size": 1}, {"batch_size": 5}])
    assert [c.scenario.consumer.batch_size for c in sweep.cells] == [1, 5]
    assert [dict(c.overrides) for c in sweep.cells] == [{"batch_size": 1}, {"batch_size": 5}]
    repeat = RunPlan.of(scenario, repeat=3)
    assert [dict(c.overrides) for c in repeat.cells] == [{"seed": 11}, {"seed": 12}, {"seed": 13}]
    assert [c.scenario.seed for c in repeat.cells] == [11, 12, 13]
    assert repeat.repeated
    with pytest.raises(ScenarioError):
        RunPlan.of(scenario, cells=[{"batch_size": 0}])

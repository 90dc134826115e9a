"""``loadtest lint``: the rules (pure), a scenario, a deployed mapping on moto, and reports."""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.deploy.deploy_plan import Kind, plan_deploy
from loadtest.deploy.lambda_deploy import Clients, Deployed, deploy, function_zip
from loadtest.deploy.lint_aws import deployed_settings
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.engine import settings_warnings
from loadtest.errors import ScenarioError
from loadtest.model.advice.lint import (
    INTENDED,
    MappingSettings,
    Rule,
    from_scenario,
    lint,
    run_findings,
)
from loadtest.model.scenario.loading import (
    Faults,
    builtin_scenarios,
    load_scenario,
    parse_scenario,
    to_raw,
)
from tests.conftest import REGION

runner = CliRunner()

CLEAN = MappingSettings(
    source="test",
    visibility_timeout_s=180,
    function_timeout_s=30,
    batch_size=10,
    batching_window_s=0,
    maximum_concurrency=5,
    reserved_concurrency=10,
    max_receive_count=5,
    idempotency_expiry_s=3600,
)


def _rules(settings: MappingSettings) -> list[Rule]:
    return [finding.rule for finding in lint(settings)]


def test_clean_settings_have_no_findings() -> None:
    assert lint(CLEAN) == []


def test_each_rule_fires_on_its_own_setting() -> None:
    r = dataclasses.replace
    assert _rules(r(CLEAN, visibility_timeout_s=179)) == [Rule.VISIBILITY]
    assert _rules(r(CLEAN, visibility_timeout_s=180, batching_window_s=5)) == [Rule.VISIBILITY]
    assert _rules(r(CLEAN, batch_size=11)) == [Rule.BATCH_WINDOW]
    assert _rules(r(CLEAN, batch_size=11, batching_window_s=1, visibility_timeout_s=181)) == []
    assert _rules(r(CLEAN, maximum_concurrency=11)) == [Rule.CONCURRENCY]
    assert _rules(r(CLEAN, reserved_concurrency=0)) == [Rule.CONCURRENCY]
    assert _rules(r(CLEAN, max_receive_count=4)) == [Rule.REDRIVE]
    assert _rules(r(CLEAN, max_receive_count=None)) == [Rule.REDRIVE]
    # 5 receives x 180 s = 900 s of redeliveries; records living 899 s do not cover them.
    assert _rules(r(CLEAN, idempotency_expiry_s=899)) == [Rule.EXPIRY]
    assert _rules(r(CLEAN, idempotency_expiry_s=900)) == []


@given(st.integers(0, 43200), st.integers(1, 900), st.floats(0, 300))
def test_visibility_rule_is_exactly_six_times_timeout_plus_window(
    visibility_s: int, timeout_s: int, window_s: float
) -> None:
    settings = dataclasses.replace(
        CLEAN,
        visibility_timeout_s=visibility_s,
        function_timeout_s=timeout_s,
        batching_window_s=window_s,
        batch_size=1,
    )
    assert (Rule.VISIBILITY in _rules(settings)) == (visibility_s < 6 * timeout_s + window_s)


def test_a_scenario_with_powertools_checks_the_record_expiry() -> None:
    scenario = load_scenario("race-burst").with_overrides(
        visibility_timeout_s=2000, function_timeout_s=30, max_receive_count=5
    )
    assert Rule.EXPIRY in _rules(from_scenario(scenario, ["powertools"]))
    assert Rule.EXPIRY not in _rules(from_scenario(scenario, ["conditional"]))


def test_the_same_warnings_reach_every_report() -> None:
    scenario = load_scenario("race-burst").with_overrides(
        visibility_timeout_s=30, max_receive_count=3
    )  # 30 s / 30 s, maxReceiveCount 3
    warnings = settings_warnings(scenario.consumer, Faults(), "conditional")
    expected = [f.message for f in lint(from_scenario(scenario))]
    assert warnings == expected and len(warnings) == 2


def test_a_visibility_timeout_below_the_function_timeout_is_one_warning_worded_strongly() -> None:
    consumer = load_scenario("race-burst").with_overrides(visibility_timeout_s=10).consumer
    (warning,) = settings_warnings(consumer, Faults(), "conditional")
    assert warning.startswith("visibility timeout 10 s is shorter than the function timeout (30 s)")
    assert "180 s" in warning


def test_intended_rules_are_marked_in_the_report_and_the_others_are_not() -> None:
    lab = load_scenario("seed-lab")  # the reference lab's 30 s / 30 s, maxReceiveCount 3
    assert lab.lint_intended == ("visibility-timeout", "max-receive-count")
    plain = settings_warnings(lab.consumer, Faults(), "conditional")
    marked = settings_warnings(lab.consumer, Faults(), "conditional", ("max-receive-count",))
    assert len(plain) == 2
    assert marked == [plain[0], f"{INTENDED}: {plain[1]}"]


def test_every_builtin_scenario_breaks_exactly_the_rules_it_intends() -> None:
    # Built-in scenarios follow the lint's advice unless breaking it is their point, and
    # then they say so: an intended rule that no longer fires is stale, an unintended
    # finding is a warning on the scenario's first screen.
    for name, scenario in builtin_scenarios().items():
        fired = {
            finding.rule.value
            for variant in scenario.variants
            for finding in run_findings(scenario.consumer, scenario.faults, variant)
        }
        assert fired == set(scenario.lint_intended), name


def test_lint_intended_is_validated_and_kept_in_the_report() -> None:
    raw = {"workload": {"distinct_ids": 1}, "lint": {"intended": ["visibility-timeout"]}}
    scenario = parse_scenario(raw, source="s.toml")
    assert scenario.lint_intended == ("visibility-timeout",)
    assert to_raw(scenario)["lint"] == {"intended": ["visibility-timeout"]}
    assert "lint" not in to_raw(parse_scenario({"workload": {}}, source="s.toml"))
    for bad, says in (
        ({"intended": ["visibility"]}, "'visibility', which is not a lint rule; allowed: "),
        ({"intended": "visibility-timeout"}, "lint.intended must be a list of rule names"),
        ({"ignored": []}, "unknown key lint.'ignored'"),
    ):
        try:
            parse_scenario({"workload": {}, "lint": bad}, source="s.toml")
        except ScenarioError as exc:
            assert says in str(exc) and str(exc).startswith("s.toml: "), exc
        else:
            raise AssertionError(f"{bad} was accepted")


def test_cli_lint_scenario_exit_codes() -> None:
    found = runner.invoke(app, ["lint", _scenario(max_receive_count=3)])
    assert found.exit_code == 1 and "WARN" in found.output and "[max-receive-count]" in found.output
    clean = runner.invoke(app, ["lint", _scenario()])
    assert clean.exit_code == 0, clean.output
    assert runner.invoke(app, ["lint"]).exit_code == 2


def test_cli_lint_shows_intended_findings_as_notes_and_passes() -> None:
    intended = runner.invoke(
        app, ["lint", _scenario(max_receive_count=3, intended='["max-receive-count"]')]
    )
    assert intended.exit_code == 0, intended.output
    assert "NOTE" in intended.output and "WARN" not in intended.output
    assert f"[max-receive-count] {INTENDED}: redrive maxReceiveCount 3" in intended.output


def _scenario(max_receive_count: int = 5, intended: str | None = None) -> str:
    import tempfile

    text = (
        'name = "clean"\n[consumer]\nvisibility_timeout_s = 180\nfunction_timeout_s = 30\n'
        f"max_receive_count = {max_receive_count}\nconcurrency = 4\n"
    )
    if intended is not None:
        text += f"[lint]\nintended = {intended}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as handle:
        handle.write(text)
    return handle.name


def test_lint_reads_a_deployed_mapping(aws: Clients) -> None:
    scenario = load_scenario("race-burst").with_overrides(
        batch_size=20, batching_window_s=2, concurrency=8, max_receive_count=2
    )
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="l1", region=REGION)
    code = {f.name: function_zip(parse_ref("conditional")) for f in plan.of_kind(Kind.FUNCTION)}
    deploy(plan, aws, code, into=Deployed(), sleep=lambda s: None)
    function = plan.of_kind(Kind.FUNCTION)[0].name
    aws.lambda_.put_function_concurrency(FunctionName=function, ReservedConcurrentExecutions=4)

    [settings] = deployed_settings(aws, function)
    assert settings.batch_size == 20 and settings.batching_window_s == 2
    assert settings.maximum_concurrency == 8 and settings.reserved_concurrency == 4
    assert settings.max_receive_count == 2
    assert settings.visibility_timeout_s == scenario.consumer.visibility_timeout_s
    assert set(_rules(settings)) >= {Rule.CONCURRENCY, Rule.REDRIVE}

    shown = runner.invoke(app, ["lint", "--function", function])
    assert shown.exit_code == 1, shown.output
    assert "MaximumConcurrency 8 is above the function's reserved concurrency 4" in shown.output
    missing = runner.invoke(app, ["lint", "--function", "nope"])
    assert missing.exit_code == 2 and "nope does not exist" in missing.output

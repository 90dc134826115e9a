"""The library API: ``loadtest.run`` returns the report the CLI would judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import loadtest
from loadtest.api import Report
from loadtest.cli import app
from loadtest.errors import HandlerRefError, InputError, ScenarioError, ThresholdError
from loadtest.model.scenario.loading import builtin_scenarios

HERE = Path(__file__).parent
MY_HANDLER = str(HERE.parent / "integration" / "my_handler.py") + ":handler"
runner = CliRunner()


def test_run_by_name(backend_url: str) -> None:
    report = loadtest.run("seed-lab", endpoint_url=backend_url)
    assert report.passed and report.exit_code == 0
    [run] = report.runs
    assert run.variant == "conditional" and run.verdict == "pass"
    assert run.counts.writes_accepted == 2 and run.counts.duplicate_writes == 0
    p99 = run.latency["end_to_end"].p99
    assert p99 is not None and p99 > 0  # microseconds
    assert report.incomplete is None


def test_run_by_path_and_by_scenario(backend_url: str, tmp_path: Path) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(
        # Whether 3 ids' copies overlap is up to timing: not what this test is about.
        'variants = ["conditional"]\n[expect]\noverlap = false\n'
        "[workload]\ndistinct_ids = 3\ncopies = 2\n",
        encoding="utf-8",
    )
    by_path = loadtest.run(path, endpoint_url=backend_url, seed=3)
    assert by_path.passed and by_path.runs[0].counts.messages_sent == 6

    scenario = loadtest.load_scenario(str(path))
    assert isinstance(scenario, loadtest.Scenario)
    by_value = loadtest.run(scenario, endpoint_url=backend_url, seed=3, copies=3)
    assert by_value.passed and by_value.runs[0].counts.messages_sent == 9


def test_handler_is_a_variant(backend_url: str) -> None:
    report = loadtest.run(
        "resends-at-once",
        variants=[],
        handler=MY_HANDLER,
        endpoint_url=backend_url,
        distinct_ids=3,
        copies=2,
        thresholds=["duplicate_writes == 0"],
    )
    [mine] = report.runs  # a handler alone replaces the scenario's variants
    assert mine.variant == MY_HANDLER
    # Keyed by messageId: every resend is written again.
    assert mine.counts.duplicate_writes == 3
    assert not report.passed and report.exit_code == 1


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"scenario": "no-such-scenario"}, ScenarioError),
        ({"scenario": "seed-lab", "handler": "nowhere.py:handler"}, HandlerRefError),
        ({"scenario": "seed-lab", "variants": ["no-such-variant"]}, InputError),
        ({"scenario": "seed-lab", "thresholds": ["duplicate_writes ~ 0"]}, ThresholdError),
        ({"scenario": "seed-lab", "batch_size": 0}, ScenarioError),
        ({"scenario": "seed-lab", "no_such_field": 1}, ScenarioError),
        ({"scenario": "seed-lab", "target": "moon"}, InputError),
        ({"scenario": "seed-lab", "target": "aws", "endpoint_url": "http://x"}, InputError),
    ],
)
def test_bad_input_raises_named_errors(kwargs: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        loadtest.run(**kwargs)
    assert issubclass(error, ValueError)  # what a caller would catch


def test_to_dict_is_the_json_the_cli_writes(backend_url: str, tmp_path: Path) -> None:
    out = tmp_path / "cli.json"
    result = runner.invoke(
        app, ["run", "seed-lab", "--endpoint-url", backend_url, "--json", str(out), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    written = json.loads(out.read_text(encoding="utf-8"))
    assert Report(written).to_dict() == written

    # A second run differs in timings and names only: same keys, counts and verdicts.
    library = loadtest.run("seed-lab", endpoint_url=backend_url).to_dict()
    assert library.keys() == written.keys()
    for mine, theirs in zip(library["runs"], written["runs"], strict=True):
        assert mine.keys() == theirs.keys()
        assert mine["counts"] == theirs["counts"] and mine["verdict"] == theirs["verdict"]
        assert mine["latency_us"].keys() == theirs["latency_us"].keys()

    saved = tmp_path / "lib.json"
    report = Report(written)
    report.write_json(saved)
    assert json.loads(saved.read_text(encoding="utf-8")) == written
    assert "<html" in report.write_html(tmp_path / "lib.html").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(builtin_scenarios()))
def test_library_verdict_is_the_cli_exit_code(name: str, backend_url: str, tmp_path: Path) -> None:
    out = tmp_path / f"{name}.json"
    # Every environment of a run is started (a cold start each) whether its messages need it
    # or not: two are enough for a verdict, whichever it is. A scenario whose handler is
    # made slow (seconds each) keeps one per message, or its ten messages would wait for
    # two environments in turns.
    scenario = builtin_scenarios()[name]
    slow = scenario.faults.handler_duration_ms > 0
    concurrency = min(10 if slow else 2, scenario.consumer.concurrency)
    result = runner.invoke(
        app,
        [
            "run",
            name,
            "--endpoint-url",
            backend_url,
            "--distinct-ids",
            "5",
            "--copies",
            "2",
            "--concurrency",
            str(concurrency),
            "--json",
            str(out),
            "--quiet",
        ],
    )
    assert result.exit_code in (0, 1, 4), result.output
    report = Report(json.loads(out.read_text(encoding="utf-8")))
    assert report.exit_code == result.exit_code
    assert report.passed == (result.exit_code == 0)


@pytest.mark.slow
def test_repeat_keeps_every_run_and_states_each_share(backend_url: str) -> None:
    # The statistics need read-then-write to race in every one of the 10 runs: four
    # environments (half race-burst's cold starts) with a 20 ms pause after each read of the
    # table, so that copies delivered together both read the order absent. Without the
    # pause, four raced 3 to 12 times a run, and now and then not at all.
    report = loadtest.run(
        "race-burst",
        endpoint_url=backend_url,
        distinct_ids=10,
        concurrency=4,
        race_window_ms=20,
        repeat=10,
        thresholds=["read-then-write: duplicate_writes.runs_with == 10"],
    )
    data = report.to_dict()
    runs = data["runs"]
    assert [(r["variant"], r["seed"]) for r in runs] == [
        (variant, seed) for seed in range(7, 17) for variant in ("read-then-write", "conditional")
    ]
    repeat = data["repeat"]
    assert repeat["runs"] == 10 and repeat["seeds"] == list(range(7, 17))
    racy, guarded = repeat["variants"]["read-then-write"], repeat["variants"]["conditional"]
    racy_duplicates = sorted(r["counts"]["duplicate_writes"] for r in runs[::2])
    assert racy["counts"]["duplicate_writes"]["min"] == racy_duplicates[0] > 0
    assert racy["counts"]["duplicate_writes"]["max"] == racy_duplicates[-1]
    assert (
        racy["counts"]["duplicate_writes"]["median"]
        == (racy_duplicates[4] + racy_duplicates[5]) / 2
    )
    [racy_dup] = [a for a in racy["anomalies"] if a["count"] == "duplicate_writes"]
    [guarded_dup] = [a for a in guarded["anomalies"] if a["count"] == "duplicate_writes"]
    # Clopper-Pearson by hand: 10 of 10 -> lower 0.025^(1/10); 0 of 10 -> upper 1 - that.
    assert racy_dup["runs_with"] == 10
    assert racy_dup["lower"] == pytest.approx(0.025**0.1, abs=1e-9)
    assert racy_dup["sentence"] == (
        "10 of 10 runs showed a duplicate write: at 95% confidence it shows in more than "
        "69% of such runs"
    )
    assert guarded_dup["runs_with"] == 0
    assert guarded_dup["upper"] == pytest.approx(1 - 0.025**0.1, abs=1e-9)
    assert guarded_dup["sentence"] == (
        "0 of 10 runs showed a duplicate write: at 95% confidence it shows in fewer than "
        "31% of such runs"
    )
    assert guarded["verdicts"] == {"pass": 10}
    assert repeat["thresholds"] == [
        {
            "variant": "read-then-write",
            "expr": "read-then-write: duplicate_writes.runs_with == 10",
            "observed": 10,
            "ok": True,
        }
    ]
    assert report.exit_code == 0


def test_a_failed_repeat_threshold_fails_the_report(backend_url: str) -> None:
    report = loadtest.run(
        "race-burst",
        variants=["conditional"],
        endpoint_url=backend_url,
        distinct_ids=5,
        repeat=2,
        thresholds=["end_to_end.p99.max < 1us"],
    )
    assert all(run.verdict == "pass" for run in report.runs)
    [result] = report.to_dict()["repeat"]["thresholds"]
    assert result["ok"] is False and result["observed"] > 1
    assert report.exit_code == 1


def test_repeat_refuses_nonsense() -> None:
    with pytest.raises(InputError, match="repeat must be a whole number"):
        loadtest.run("seed-lab", repeat=0)
    with pytest.raises(InputError, match="takes no sweep cells"):
        loadtest.run("seed-lab", repeat=2, cells=[{"batch_size": 1}])


def test_progress_names_the_variant(backend_url: str) -> None:
    seen: set[str] = set()
    loadtest.run(
        "resends-at-once",
        endpoint_url=backend_url,
        distinct_ids=2,
        copies=2,
        on_progress=lambda variant, *_: seen.add(variant),
    )
    assert seen == {"read-then-write", "conditional"}


def test_scenarios_json_lists_every_builtin_whole() -> None:
    result = runner.invoke(app, ["scenarios", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [s["name"] for s in listed] == sorted(builtin_scenarios())
    assert all(set(s) == {"name", "variants", "description"} for s in listed)
    plain = runner.invoke(app, ["scenarios"])
    assert "visibility-timeout-short" in plain.output  # never cut in a pipe


def test_a_scenario_file_with_a_bad_threshold_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('thresholds = ["duplicate_writes ~ 0"]\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"bad\.toml: thresholds"):
        loadtest.run(path)


def test_latency_summary_has_the_metrics_stats() -> None:
    import dataclasses

    from loadtest.api import LatencySummary
    from loadtest.model.figures.metrics import LATENCY_STATS

    names = [f.name for f in dataclasses.fields(LatencySummary)]
    assert names == [*LATENCY_STATS, "out_of_range"]


def test_run_takes_everything_prepare_takes() -> None:
    import inspect

    from loadtest.api import prepare

    prepared = inspect.signature(prepare).parameters
    ran = inspect.signature(loadtest.run).parameters
    for name, parameter in prepared.items():
        assert name in ran, name
        assert ran[name].kind == parameter.kind and ran[name].default == parameter.default, name


def _empty_variants(tmp_path: Path) -> Path:
    path = tmp_path / "handlers-only.toml"
    path.write_text("variants = []\n[workload]\ndistinct_ids = 2\ncopies = 1\n", encoding="utf-8")
    return path


def test_a_scenario_without_variants_runs_the_handler_given(
    backend_url: str, tmp_path: Path
) -> None:
    path = _empty_variants(tmp_path)
    report = loadtest.run(path, handler=MY_HANDLER, endpoint_url=backend_url, env=["X={table}"])
    assert [run.variant for run in report.runs] == [MY_HANDLER]
    assert report.runs[0].counts.messages_sent == 2
    with pytest.raises(InputError) as info:
        loadtest.run(path, endpoint_url=backend_url)
    assert str(info.value) == (
        f"{path}: variants = [] names no consumer; give one with --handler "
        "path/to/file.py:function (or --variants NAME)"
    )


def test_cli_env_is_checked_before_anything_runs(tmp_path: Path) -> None:
    path = _empty_variants(tmp_path)
    for command in ("run", "compare", "sweep"):
        extra = ["--batch-size", "1,2"] if command == "sweep" else []
        result = runner.invoke(
            app, [command, str(path), "--handler", MY_HANDLER, "--env", "T={tabel}", *extra]
        )
        assert result.exit_code == 2, (command, result.output)
        assert "--env T = '{tabel}': unknown placeholder {tabel}; allowed: {table}" in (
            " ".join(result.output.split())
        )
    result = runner.invoke(app, ["run", str(path), "--env", "T={table}"])
    assert result.exit_code == 2
    assert "variants = [] names no consumer" in " ".join(result.output.split())


def test_target_embedded_with_an_endpoint_names_a_running_embedded_backend() -> None:
    from loadtest.api import backend_kind
    from loadtest.aws.clients import BackendKind

    assert backend_kind("embedded", "http://127.0.0.1:5000") is BackendKind.EMBEDDED
    assert backend_kind(None, "http://127.0.0.1:5000") is BackendKind.ENDPOINT
    assert backend_kind("endpoint", "http://127.0.0.1:5000") is BackendKind.ENDPOINT
    assert backend_kind(None, None) is BackendKind.EMBEDDED


def test_explore_takes_its_bound_from_the_library(backend_url: str) -> None:
    report = loadtest.explore(
        "seed-lab",
        variant="conditional",
        bound="deliveries=1,crash=1,redeliver=1",
        endpoint_url=backend_url,
    )
    bound = report.to_dict()["explore"]["bound"]
    assert report.passed and bound["exhaustive"] is True
    assert bound["faults"] == {"crash": 1, "redeliver": 1} and bound["deliveries"] == 1
    with pytest.raises(InputError, match="which wins is ambiguous"):
        loadtest.explore("seed-lab", bound="crash=1", max_faults=2, endpoint_url=backend_url)
    with pytest.raises(InputError, match="key 'crashes' is not known"):
        loadtest.explore("seed-lab", bound="crashes=1", endpoint_url=backend_url)


def test_explore_refuses_a_fault_the_scenario_never_lets_strike() -> None:
    from loadtest.model.scenario.loading import load_scenario

    once = load_scenario("seed-lab").with_overrides(max_receive_count=1)
    # Refused before any backend is reached: the endpoint is never called.
    with pytest.raises(InputError, match="fault redeliver cannot strike in scenario"):
        loadtest.explore(once, bound="redeliver=1", endpoint_url="http://127.0.0.1:9")
    with pytest.raises(InputError, match="max_receive_count is 1"):
        loadtest.explore(once, faults="crash,redeliver", endpoint_url="http://127.0.0.1:9")

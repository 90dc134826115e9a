"""The pytest plugin: loadtest in a user's own test suite.

Registered through the ``pytest11`` entry point, so it is active wherever loadtest
is installed. Owns the command-line options (``--loadtest-seed``,
``--loadtest-endpoint-url``, ``--loadtest-reports``), the session's seed (printed in
the header), the ``loadtest_backend`` fixture (one embedded backend for the whole
session, started by the first test that asks for it, stopped at the end) and the
``loadtest`` fixture (``run``, ``compare`` and ``explore`` bound to that backend and seed, reports
written per test and attached as JUnit properties), and the explanation a failing
test shows for each report that did not pass.

Must stay cheap to load: every test session of a machine with loadtest installed
imports it. Nothing beyond pytest and the standard library is imported until a
fixture is used.
"""

from __future__ import annotations

import random
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from loadtest.api import Plan, Report
    from loadtest.model.scenario.loading import Scenario

SEED_KEY = pytest.StashKey[int]()
MADE_KEY = pytest.StashKey["Loadtest"]()
_MAX_SEED = 2**31 - 1
_EXECUTE_ONLY = ("on_progress", "cleanup_timeout_s")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("loadtest", "loadtest (load tests of SQS -> DynamoDB consumers)")
    group.addoption(
        "--loadtest-seed",
        type=int,
        default=None,
        metavar="N",
        help="Seed of every loadtest run that names none (default: one drawn per session, "
        "printed in the header).",
    )
    group.addoption(
        "--loadtest-endpoint-url",
        default=None,
        metavar="URL",
        help="Run the loadtest fixtures against this SQS + DynamoDB endpoint instead of "
        "one embedded backend for the session.",
    )
    group.addoption(
        "--loadtest-reports",
        default=None,
        metavar="DIR",
        help="Keep each test's loadtest reports under DIR (default: the test's tmp_path).",
    )


def pytest_configure(config: pytest.Config) -> None:
    seed = config.getoption("loadtest_seed")
    worker = getattr(config, "workerinput", None)
    if seed is None and worker is not None:
        seed = worker.get("loadtest_seed")  # pytest-xdist: the controller's seed
    if seed is None:
        seed = random.SystemRandom().randint(1, _MAX_SEED)
    config.stash[SEED_KEY] = int(seed)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: every worker runs under the controller's seed."""
    node.workerinput["loadtest_seed"] = node.config.stash[SEED_KEY]


def pytest_report_header(config: pytest.Config) -> str:
    seed = config.stash[SEED_KEY]
    where = config.getoption("loadtest_endpoint_url") or "embedded backend"
    return f"loadtest: seed {seed} (replay with --loadtest-seed {seed}), {where}"


@dataclass(frozen=True)
class LoadtestBackend:
    """Where the session's runs go."""

    endpoint_url: str
    embedded: bool
    """True for the session's own embedded backend; False for ``--loadtest-endpoint-url``."""


@pytest.fixture(scope="session")
def loadtest_backend(pytestconfig: pytest.Config) -> Iterator[LoadtestBackend]:
    """One backend for the whole session: the embedded one, started when first asked for.

    It runs as a child process in its own process group and stops at the end of the
    session, Ctrl-C included; if pytest itself is killed, the child stops when its
    stdin closes. With ``--loadtest-endpoint-url`` nothing is started.
    """
    url = pytestconfig.getoption("loadtest_endpoint_url")
    if url:
        yield LoadtestBackend(str(url), embedded=False)
        return
    from loadtest.backend.embedded import EmbeddedBackend

    with EmbeddedBackend() as backend:
        yield LoadtestBackend(backend.endpoint_url, embedded=True)


@pytest.fixture
def loadtest(
    request: pytest.FixtureRequest,
    loadtest_backend: LoadtestBackend,
    tmp_path: Path,
) -> Loadtest:
    """``run``, ``compare``, ``explore`` and ``assert_passed``, bound to the session's backend and seed."""
    config = request.config
    kept = config.getoption("loadtest_reports")
    directory = (
        Path(kept) / _safe_name(request.node.nodeid) if kept else tmp_path / "loadtest-reports"
    )
    bound = Loadtest(
        backend=loadtest_backend,
        seed=config.stash[SEED_KEY],
        directory=directory,
        replay_test=_pytest_command(request.node.nodeid, config),
        properties=request.node.user_properties,
    )
    request.node.stash[MADE_KEY] = bound
    return bound


@dataclass(repr=False)
class Loadtest:
    """The ``loadtest`` fixture's value."""

    backend: LoadtestBackend
    seed: int
    """The seed a run gets unless it names its own."""
    directory: Path
    """Where this test's reports are written."""
    replay_test: str
    properties: list[tuple[str, object]]
    """The test's ``user_properties``: what JUnit XML writes as its properties."""
    reports: list[Report] = field(default_factory=list)
    """Every report this test made, in order."""
    _explained: set[int] = field(default_factory=set)

    def __repr__(self) -> str:
        return f"<loadtest fixture: seed {self.seed}, {self.backend.endpoint_url}>"

    def run(self, scenario: str | Path | Scenario, **options: Any) -> Report:
        """``loadtest.run`` against the session's backend, under the session's seed.

        Takes ``loadtest.run``'s arguments (variants, handler, thresholds, seed,
        overrides such as ``distinct_ids=20``, ...). The report's JSON and HTML files
        are written under ``directory`` and attached to the test as the JUnit
        properties ``loadtest_report`` and ``loadtest_html``.
        """
        from loadtest import api

        execute_options = {k: options.pop(k) for k in _EXECUTE_ONLY if k in options}
        options.setdefault("seed", self.seed)
        embedded = self._bind(options)
        plan = api.prepare(scenario, **options)
        command = replay_command(scenario, plan, options, embedded)
        report = api.execute(plan, command=command, **execute_options)
        self._keep(report)
        return report

    def compare(
        self, scenario: str | Path | Scenario, variants: Sequence[str] = (), **options: Any
    ) -> Report:
        """The same seeded workload against several variants (and ``handler``), side by side."""
        return self.run(scenario, variants=variants, **options)

    def explore(self, scenario: str | Path | Scenario, **options: Any) -> Report:
        """``loadtest.explore`` against the session's backend (``variant`` or ``handler``,
        ``strategy``, ``faults``, ``budget``, ...); its random strategy uses the
        session's seed unless given one. The report's counterexample, if any, carries
        the ``loadtest explore ... --schedule`` command that replays it exactly."""
        from loadtest import api

        options.setdefault("seed", self.seed)
        self._bind(options)
        report = api.explore(scenario, **options)
        self._keep(report)
        return report

    def _bind(self, options: dict[str, Any]) -> bool:
        """Send a run to the session's backend unless it names its own; True if embedded."""
        if "endpoint_url" in options or "target" in options:
            return False
        options["endpoint_url"] = self.backend.endpoint_url
        if self.backend.embedded:
            options["target"] = "embedded"  # the session's, already running
        return self.backend.embedded

    def assert_passed(self, report: Report) -> None:
        """Fail the test unless every verdict passed, with the run's explanation.

        The message holds each verdict and its failing counts, the first counterexample
        (for a race, the interleaving of reads and writes) and the commands that replay
        it: ``loadtest run ...`` and this test under its seed.
        """
        __tracebackhide__ = True
        self._explained.add(id(report))
        report.assert_passed(f"Replay this test: {self.replay_test}")

    def unexplained_failures(self) -> list[Report]:
        """The reports that did not pass and whose explanation the test has not shown."""
        return [r for r in self.reports if not r.passed and id(r) not in self._explained]

    def _keep(self, report: Report) -> None:
        self.reports.append(report)
        stem = f"{len(self.reports):02d}-{_safe_name(report.model.name)}"
        json_path = report.write_json(self.directory / f"{stem}.json")
        html_path = report.write_html(self.directory / f"{stem}.html")
        # Appended as record_property does, without its warning under junit_family xunit2.
        self.properties.append(("loadtest_report", str(json_path)))
        self.properties.append(("loadtest_html", str(html_path)))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test that made failing reports shows why each failed, after its traceback."""
    report = yield
    bound = item.stash.get(MADE_KEY, None)
    if bound is not None and report.when == "call" and report.failed:
        from loadtest.reports.text.explain import explanation

        for failed in bound.unexplained_failures():
            text = explanation(failed.model, [f"Replay this test: {bound.replay_test}"])
            report.sections.append(("loadtest: why the run did not pass", text))
    return report


def replay_command(
    scenario: str | Path | Scenario, plan: Plan, options: Mapping[str, Any], embedded: bool
) -> str | None:
    """The ``loadtest run`` command that repeats a run, or ``None`` when none can.

    A scenario built in memory, a sweep's cells and a caller's own progress callback
    have no command line.
    """
    from loadtest.model.scenario.loading import Scenario, override_fields

    if isinstance(scenario, Scenario):
        source = scenario.source
        if source.startswith("builtin:"):
            name = source.removeprefix("builtin:")
        elif source.startswith("<"):
            return None
        else:
            name = source
    else:
        name = str(scenario)
    if options.get("cells"):
        return None
    args = ["loadtest", "run", name]
    variants = [v for item in options.get("variants", ()) for v in str(item).split(",") if v]
    if variants:
        args += ["--variants", ",".join(variants)]
    handler = options.get("handler")
    for ref in [handler] if isinstance(handler, str) else list(handler or ()):
        args += ["--handler", str(ref)]
    args += ["--seed", str(plan.scenario.seed)]
    if options.get("repeat", 1) != 1:
        args += ["--repeat", str(options["repeat"])]
    for expr in options.get("thresholds", ()):
        args += ["--threshold", str(expr)]
    if options.get("prices") is not None:
        args += ["--prices", str(options["prices"])]
    overridable = {f.name for f, _ in override_fields()}
    for key, value in options.items():
        if key in overridable and value is not None:
            args += _override_args(key, value)
    for pair in options.get("env", ()):
        args += ["--env", str(pair)]
    if not embedded and options.get("endpoint_url"):
        args += ["--endpoint-url", str(options["endpoint_url"])]
    if options.get("target") not in (None, "embedded", "endpoint"):
        args += ["--target", str(options["target"])]
    return shlex.join(args)


def _override_args(key: str, value: Any) -> list[str]:
    from loadtest.cli.options import option_name

    flag = "--" + option_name(key).replace("_", "-")
    if isinstance(value, bool):
        return [flag if value else "--no-" + flag.removeprefix("--")]
    return [flag, str(value)]


def _pytest_command(nodeid: str, config: pytest.Config) -> str:
    args = ["pytest", nodeid, "--loadtest-seed", str(config.stash[SEED_KEY])]
    url = config.getoption("loadtest_endpoint_url")
    if url:
        args += ["--loadtest-endpoint-url", str(url)]
    return shlex.join(args)


def _safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:120] or "test"

"""Developer sessions: tests, lint, typecheck, bench.

nox -s tests        the whole test suite (what CI runs), spread over 4 worker processes
                    (pytest-xdist, --dist loadgroup: tests that share a module-scoped
                    fixture, or carry one @pytest.mark.xdist_group, run in one worker;
                    the tests marked slow are handed out first, the pure ones last);
                    `nox -s tests -- -n 0` runs it in one process. tests/ mirrors the
                    package (tests/model, tests/engine, tests/backend, ...) with
                    tests/integration for whole runs
nox -s quick        the pure tests only (the inner loop, well under a minute): the tests
                    tests/conftest.py marks `pure` -- those under its PURE_PATHS
                    (tests/model, tests/reports, tests/tools, tests/consumer and the pure
                    files of tests/emulation, tests/engine and tests/observer) that use no
                    backend fixture and are not marked `process` (mark a test
                    @pytest.mark.process when it starts a child process itself)
nox -s lint         ruff check + ruff format --check + the import layers (lint-imports)
                    + the tree's no-diary check (tools/check_tree.py)
nox -s typecheck    mypy --strict over loadtest, consumer and tests
nox -s docs         the docs site (mkdocs build --strict: a broken link fails)
nox -s bench        prints throughput figures; asserts nothing about time
nox -s bench_against -- COMMIT [--pairs N] [-- run_bench args]
                    the bench in COMMIT's tree and this one, alternating, with each
                    figure's ratio (this tree / COMMIT)
"""

from __future__ import annotations

from pathlib import Path

import nox

# uv makes the session environments and installs into them in seconds (pip takes
# minutes for the test group); without uv on the path or beside nox (``pip install
# 'nox[uv]'``), the standard library's venv and pip do the same, slower.
nox.options.default_venv_backend = "uv|venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests", "lint", "typecheck", "docs"]

PYPROJECT = nox.project.load_toml("pyproject.toml")


def _install(session: nox.Session, *groups: str, project: bool = True) -> None:
    requirements: list[str] = []
    for group in groups:
        requirements += nox.project.dependency_groups(PYPROJECT, group)
    if project:
        session.install("-e", ".", *requirements)
    elif requirements:
        session.install(*requirements)


MINISTACK = "ministack==1.5.33"
"""The local Lambda data plane the deploy and attach tests run on (tests/deploy/test_ministack.py)."""


def _ministack(session: nox.Session) -> str:
    """MiniStack in a virtual environment of its own (it pins its own botocore), with the
    boto3 matching it, as the Lambda Python runtime provides boto3 to functions; made
    with uv when the session's environment is."""
    venv = Path(".nox") / "ministack"
    binary = venv / "bin" / "ministack"
    if not binary.exists():
        if session.venv_backend == "uv":
            session.run("uv", "venv", "--quiet", "--python", "python", str(venv))
            python = str(venv / "bin" / "python")
            session.run("uv", "pip", "install", "--quiet", "--python", python, MINISTACK, "boto3")
        else:
            session.run("python", "-m", "venv", str(venv))
            pip = str(venv / "bin" / "pip")
            session.run(pip, "install", "--quiet", MINISTACK, "boto3", external=True)
    return str(binary.resolve())


WRITE_BYTECODE = {"PYTHONDONTWRITEBYTECODE": ""}
"""Bytecode caches written even where the environment turns them off: the suite starts
hundreds of interpreters (CLI subprocesses, servers, workers), and without a cache each
compiled loadtest's modules and pytest rewrote the test modules anew (~0.3 s CPU each)."""

XDIST = ("-n", "4", "--dist", "loadgroup", "--durations=30")
"""How ``nox -s tests`` spreads the suite (a later ``-n``/``--dist`` in posargs wins), and
the 30 slowest tests it names at the end (where the suite's time goes)."""


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Run the test suite against the real embedded backend (and MiniStack for the Lambda path)."""
    _install(session, "test")
    ministack = _ministack(session)
    # Much of the suite waits on subprocesses, sleeps and visibility timeouts: 4 workers
    # keep a 2-core machine busy. Each worker starts its own session backend.
    session.run(
        "pytest",
        *XDIST,
        *session.posargs,
        env={"LOADTEST_MINISTACK": ministack, **WRITE_BYTECODE},
    )


@nox.session(python="3.11")
def quick(session: nox.Session) -> None:
    """The pure tests: no backend, no child process (see tests/conftest.py)."""
    _install(session, "test")
    session.run("pytest", "-m", "pure", *session.posargs, env=WRITE_BYTECODE)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    _install(session, "lint", project=False)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    # The layers in pyproject.toml's [tool.importlinter]: an import that runs back up fails.
    session.run("lint-imports")
    # The tree describes the product: no "stop N", "issue N", session narrative, or
    # citation of a document or module that does not exist (how it was built goes in git).
    session.run("python", "tools/check_tree.py")


@nox.session(python="3.11")
def typecheck(session: nox.Session) -> None:
    _install(session, "typecheck")
    session.run("mypy")


@nox.session(python="3.11")
def docs(session: nox.Session) -> None:
    """Build the docs site strictly; the scenario and CLI references are generated from the code."""
    _install(session, "docs")
    session.run(
        "mkdocs",
        "build",
        "--strict",
        "--site-dir",
        str(Path(".nox") / "site"),
        env={"NO_MKDOCS_2_WARNING": "1"},
    )


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """A burst of a few thousand messages on the embedded backend; prints figures only."""
    _install(session)
    session.run("python", "-m", "benchmarks.run_bench", *session.posargs)


@nox.session(python="3.11")
def bench_against(session: nox.Session) -> None:
    """The bench side by side with a named commit: ``nox -s bench_against -- 470a8a2``."""
    if not session.posargs:
        session.error("name the commit to compare with: nox -s bench_against -- COMMIT")
    _install(session)
    session.run("python", "-m", "benchmarks.against", *session.posargs)


@nox.session(python="3.11")
def regress(session: nox.Session) -> None:
    """Rerun every scenario with a committed baseline and diff it (exit 1 on a regression).

    Baselines live in reports/baselines/NAME.json; refresh one with
    ``loadtest run NAME --json reports/baselines/NAME.json`` after an intended change.
    Extra arguments go to ``loadtest diff`` (e.g. ``-- --max-regression 25%``).
    """
    import json
    import pathlib
    import tempfile

    _install(session)
    baselines = sorted(pathlib.Path("reports/baselines").glob("*.json"))
    if not baselines:
        session.error("no baselines in reports/baselines/")
    out = pathlib.Path(tempfile.mkdtemp(prefix="loadtest-regress-"))
    for baseline in baselines:
        report = json.loads(baseline.read_text())
        if "runs" not in report:
            continue  # not a report (bench.json holds the benchmark's figures)
        scenario = report["scenario"]["name"]
        variants = ",".join(run["variant"] for run in report["runs"])
        new = out / baseline.name
        session.run(
            "loadtest",
            "compare",
            scenario,
            "--variants",
            variants,
            "--seed",
            str(report["seed"]),
            "--json",
            str(new),
            "--quiet",
            success_codes=[0, 1],
        )
        # Exits 1 (and fails the session) on a regression.
        session.run("loadtest", "diff", str(baseline), str(new), *session.posargs)

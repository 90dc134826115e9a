"""Developer sessions: tests, lint, typecheck, bench.

    nox -s tests        the whole test suite (what CI runs)
    nox -s lint         ruff check + ruff format --check
    nox -s typecheck    mypy --strict over loadtest, consumer and tests
    nox -s bench        prints throughput figures; asserts nothing about time
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests", "lint", "typecheck"]

PYPROJECT = nox.project.load_toml("pyproject.toml")


def _install(session: nox.Session, *groups: str, project: bool = True) -> None:
    requirements: list[str] = []
    for group in groups:
        requirements += nox.project.dependency_groups(PYPROJECT, group)
    if project:
        session.install("-e", ".", *requirements)
    elif requirements:
        session.install(*requirements)


@nox.session(python="3.11")
def tests(session: nox.Session) -> None:
    """Run the test suite against the real embedded backend."""
    _install(session, "test")
    session.run("pytest", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    _install(session, "lint", project=False)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python="3.11")
def typecheck(session: nox.Session) -> None:
    _install(session, "typecheck")
    session.run("mypy")


@nox.session(python="3.11")
def bench(session: nox.Session) -> None:
    """A burst of a few thousand messages on the embedded backend; prints figures only."""
    _install(session)
    session.run("python", "-m", "loadtest.bench", *session.posargs)

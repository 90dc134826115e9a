"""Shared fixtures (one real embedded backend per test session, or per xdist worker), the
hypothesis profile, and the ``pure`` marker that ``nox -s quick`` selects.

A test is *pure* when it lives under one of ``PURE_PATHS`` (the model, the pure parts of
the core, the gates, the tools), uses none of the fixtures in ``BACKEND_FIXTURES`` and is
not marked ``process``. Mark a test ``@pytest.mark.process`` when it starts a child
process itself (``subprocess``, a zygote, ``loadtest serve``): it then runs only in
``nox -s tests``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from loadtest.backend.embedded import EmbeddedBackend

TESTS = Path(__file__).resolve().parent

PURE_PATHS = (
    "core",
    "gates",
    "tools",
    "explore/test_explore_model.py",
    "html/test_heatmap.py",
)
"""Folders and files of pure tests, relative to ``tests/``."""

pytest_plugins = ["pytester"]
"""The plugin's tests (tests/plugin) run sample projects in a pytest of their own; pytest
takes ``pytest_plugins`` from the top-level conftest only."""

BACKEND_FIXTURES = frozenset({"backend_url", "ministack", "aws", "dynamo"})
"""Fixtures that start a backend or a server: a test using one is not pure."""

# Hypothesis's per-example deadline (200 ms) measures the machine, not the property: on a
# busy machine or with the suite spread over workers an example is simply slower. Every
# property is still checked on every example; a hang meets the suite's per-test timeout.
settings.register_profile("loadtest", deadline=None)
settings.load_profile("loadtest")


@pytest.fixture(scope="session")
def backend_url() -> Iterator[str]:
    """The endpoint of a real embedded backend (moto server + loadtest's patches)."""
    with EmbeddedBackend() as backend:
        yield backend.endpoint_url


def _is_pure(item: pytest.Item) -> bool:
    relative = item.path.resolve().relative_to(TESTS).as_posix()
    if not any(relative == p or relative.startswith(p + "/") for p in PURE_PATHS):
        return False
    if item.get_closest_marker("process") or item.get_closest_marker("slow"):
        return False
    return not BACKEND_FIXTURES.intersection(getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _is_pure(item):
            item.add_marker(pytest.mark.pure)

"""Shared fixtures (one real embedded backend per test session, or per xdist worker), the
hypothesis profile, and the ``pure`` marker that ``nox -s quick`` selects.

A test is *pure* when it lives under one of ``PURE_PATHS`` (the model, the reports, the
tools and the pure parts of the emulation, the engine and the observer), uses none of the fixtures in ``BACKEND_FIXTURES`` and is
not marked ``process``. Mark a test ``@pytest.mark.process`` when it starts a child
process itself (``subprocess``, a zygote, ``loadtest serve``): it then runs only in
``nox -s tests``.

Under ``nox -s tests`` (pytest-xdist, ``--dist loadgroup``) the tests that share a
module-scoped fixture run in one worker, so its value is made once, the tests marked
``slow`` are handed out first and the pure ones last (see ``pytest_collection_modifyitems``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from loadtest.backend.embedded import EmbeddedBackend

if TYPE_CHECKING:
    from loadtest.deploy.lambda_deploy import Clients

TESTS = Path(__file__).resolve().parent

PURE_PATHS = (
    "model",
    "consumer",
    "reports",
    "tools",
    "emulation/test_ceilings.py",
    "emulation/test_child_host.py",
    "emulation/test_events.py",
    "emulation/test_handlers.py",
    "emulation/test_poller_stop.py",
    "engine/test_end_state.py",
    "observer/test_record_marks.py",
    "observer/test_runtime_marshal.py",
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


REGION = "us-east-1"
"""The region of the ``aws`` fixture's clients."""


@pytest.fixture(autouse=True)
def _reports_outside_the_tree(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A command a test runs in this process without ``--json`` or ``--out`` writes its
    reports to a folder of the test's own, never into the checkout's ``reports/``."""
    from loadtest.cli import outputs

    monkeypatch.setattr(outputs, "DEFAULT_FOLDER", tmp_path_factory.mktemp("reports"))


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Clients]:
    """Control-plane clients on a fresh moto account (in-process: no Docker, no network);
    nothing leaves the process."""
    import boto3
    from moto import mock_aws

    from loadtest.deploy.lambda_deploy import Clients

    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield Clients(
            iam=boto3.client("iam", region_name=REGION),
            lambda_=boto3.client("lambda", region_name=REGION),
            sqs=boto3.client("sqs", region_name=REGION),
            dynamodb=boto3.client("dynamodb", region_name=REGION),
        )


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


SHARED_SCOPES = frozenset({"module", "class", "package"})
"""Fixture scopes whose value the tests of one module (or class, or package) share."""


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """The module-, class- and package-scoped fixtures ``item`` uses, each named by where
    its value lives (the session's are left out: every worker has its own anyway)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    named = []
    for name, definitions in info.name2fixturedefs.items():
        scope = definitions[-1].scope
        if scope in SHARED_SCOPES:
            home = item.nodeid.split("::", 1)[0]  # the module
            if scope == "class" and (cls := item.getparent(pytest.Class)) is not None:
                home = cls.nodeid
            elif scope == "package":
                home = item.path.parent.relative_to(TESTS).as_posix()
            # Group names go after an "@" in node ids: no "::" or brackets in them.
            named.append(re.sub(r"[^\w.]+", ".", f"{home.removesuffix('.py')}.{name}"))
    return named


def _group_by_shared_fixtures(items: list[pytest.Item]) -> None:
    """Tests that share a module-scoped fixture's value run in one worker.

    pytest-xdist hands tests out one by one, so the tests of one module-scoped run (an
    adversarial consumer's engine run, the doctor's report) would each rebuild it in
    another worker. Under ``--dist loadgroup`` an ``xdist_group`` keeps them together:
    tests linked by any shared fixture form one group (named after its first fixture),
    and tests that share none are still handed out one by one.
    """
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    shared = [_shared_fixtures(item) for item in items]
    for names in shared:
        for name in names[1:]:
            parent[root(name)] = root(names[0])
    for item, names in zip(items, shared, strict=True):
        if names and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(root(names[0])))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _is_pure(item):
            item.add_marker(pytest.mark.pure)
    _group_by_shared_fixtures(items)
    if getattr(config.option, "loadgroup", False):  # a pytest-xdist worker under loadgroup
        for item in items:
            _suffix_group(item)
        # The long tests first, so that no worker starts one when the others are done, and
        # the pure ones (a fraction of a second each) last, to even out the workers' ends
        # (the scheduler hands out the groups first, then single tests in this order).
        items.sort(key=_hand_out_order)


def _hand_out_order(item: pytest.Item) -> tuple[bool, bool]:
    """Slow tests first, then those with a backend or a process, then the pure ones."""
    return item.get_closest_marker("slow") is None, item.get_closest_marker("pure") is not None


def _suffix_group(item: pytest.Item) -> None:
    """Give a grouped test the ``@group`` node-id suffix the loadgroup scheduler reads.

    pytest-xdist sets it on the node id's legacy attribute, which pytest 9.2's structured
    node ids no longer read, so every group would be ignored (pytest-dev/pytest-xdist#1386);
    on an older pytest (no ``_id``) pytest-xdist's own suffix stands.
    """
    groups = sorted(
        {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
    )
    if groups and hasattr(item, "_id"):
        from _pytest.nodeid import NodeId  # pytest 9.2's

        item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")

"""Each explored environment's copy of the consumer's modules, and the process's own view
of them after a copy is made."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loadtest.emulation.explore.environments import EnvironmentHandlers

PACKAGE = "envcopy_orders"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    home = tmp_path / PACKAGE
    home.mkdir()
    (home / "__init__.py").write_text("")
    (home / "_clients.py").write_text("client = object()\n")
    (home / "app.py").write_text(
        "from . import _clients\n\ndef handler(event, context):\n    return id(_clients.client)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield PACKAGE
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]


def test_each_environment_has_its_own_module_state(package: str) -> None:
    handlers = EnvironmentHandlers(f"{package}.app:handler", f"{package}.app", None)
    try:
        assert handlers(1)(None, None) != handlers(2)(None, None)
        assert handlers(2) is handlers(2)  # warm: the copy is kept
    finally:
        handlers.close()


def test_a_package_imported_before_points_at_environment_one_after_a_copy(
    package: str,
) -> None:
    shared = importlib.import_module(package)  # the package is imported before the session
    handlers = EnvironmentHandlers(f"{package}.app:handler", f"{package}.app", None)
    try:
        handlers(2)
        for child in ("app", "_clients"):
            assert getattr(shared, child) is sys.modules[f"{package}.{child}"]
        # What a later ``import package.module`` sees is what the first environment runs.
        clients: Any = importlib.import_module(f"{package}._clients")
        clients.client = "patched"
        assert handlers(1).__globals__["_clients"].client == "patched"
    finally:
        handlers.close()

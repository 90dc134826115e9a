"""The backend refuses a patched library at a version it was not written for, before patching."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from loadtest.backend import versions
from loadtest.backend.errors import BackendError, UnsupportedMotoVersion, UnsupportedVersion

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_pins_every_patched_library_to_the_supported_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = {}
    for requirement in project["project"]["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?(.*)", requirement)
        assert match is not None, requirement
        pins[match.group(1).lower()] = match.group(3)
    for package, supported in versions.SUPPORTED.items():
        assert pins.get(package) == str(supported), package


def test_the_installed_versions_are_supported() -> None:
    versions.check_versions()


@pytest.mark.parametrize(
    ("package", "version"),
    [
        ("werkzeug", "3.2.0"),
        ("flask", "3.0.3"),
        ("py-partiql-parser", "0.7.0"),
        ("moto", "5.3.0"),
        ("moto", "5.2.6"),
    ],
)
def test_an_unknown_version_is_refused_by_name_with_the_range(package: str, version: str) -> None:
    installed = {
        "moto": "5.2.5",
        "werkzeug": "3.1.9",
        "flask": "3.1.3",
        "py-partiql-parser": "0.6.3",
    }
    installed[package] = version
    with pytest.raises(UnsupportedVersion) as info:
        versions.check_versions(installed.__getitem__)
    supported = versions.SUPPORTED[package]
    assert str(info.value) == (
        f"loadtest's embedded backend patches {package} {supported}, but {package} "
        f"{version} is installed; install '{package}{supported}' (or port "
        "loadtest/backend/ to the new version first)"
    )
    assert isinstance(info.value, BackendError)
    assert isinstance(info.value, UnsupportedMotoVersion) == (package == "moto")


def test_a_refused_version_patches_nothing() -> None:
    # A fresh interpreter: this one's moto may already be patched by other tests.
    script = """
import importlib.metadata as metadata
real = metadata.version
metadata.version = lambda name: "0.7.1" if name == "py-partiql-parser" else real(name)
from moto.sqs.models import Queue, SQSBackend
before = (Queue.delete_message, SQSBackend.receive_message, Queue.__dict__.get("_messages"))
from loadtest.backend import patches
from loadtest.backend.errors import UnsupportedVersion
try:
    patches.apply()
except UnsupportedVersion as exc:
    print(exc)
after = (Queue.delete_message, SQSBackend.receive_message, Queue.__dict__.get("_messages"))
print(patches.is_applied(), before == after)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    refusal, state = done.stdout.splitlines()
    assert "patches py-partiql-parser >=0.6.3,<0.7, but py-partiql-parser 0.7.1" in refusal
    assert state == "False True"


def test_the_embedded_backend_is_refused_in_one_line_before_its_child_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from loadtest.backend.embedded import EmbeddedBackend

    monkeypatch.setitem(versions.SUPPORTED, "moto", versions.Supported((9,), (10,)))
    backend = EmbeddedBackend()
    with pytest.raises(UnsupportedMotoVersion, match=r"^loadtest's embedded backend patches moto "):
        backend.__enter__()
    assert backend.pid is None

"""The versions of the libraries the embedded backend patches, and the refusal of any other.

Owns ``SUPPORTED``: for each distribution whose code the backend replaces or
copies (moto's SQS and DynamoDB models and server, werkzeug's request handler,
Flask's response, py-partiql-parser's statements), the range it was written
and tested for - the same ranges ``pyproject.toml`` pins. ``check_versions``
raises before anything is patched, naming the package, the version found and
the range supported. Imports none of them (reads installed metadata only).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from loadtest.backend.errors import UnsupportedMotoVersion, UnsupportedVersion


@dataclass(frozen=True)
class Supported:
    """A half-open range of release versions: ``minimum`` <= version < ``below``."""

    minimum: tuple[int, ...]
    below: tuple[int, ...]

    def admits(self, version: str) -> bool:
        release = _release(version)
        return release is not None and self.minimum <= release < self.below

    def __str__(self) -> str:
        return f">={'.'.join(map(str, self.minimum))},<{'.'.join(map(str, self.below))}"


SUPPORTED: dict[str, Supported] = {
    "moto": Supported((5, 2, 5), (5, 2, 6)),
    "werkzeug": Supported((3, 1), (3, 2)),
    "flask": Supported((3, 1), (3, 2)),
    "py-partiql-parser": Supported((0, 6, 3), (0, 7)),
}
"""Distribution name -> the versions the patches were written for (``pyproject.toml`` pins
the same ranges; a test holds the two equal)."""


def _release(version: str) -> tuple[int, ...] | None:
    """The numeric release part of a version (``5.2.10.dev3`` -> (5, 2, 10)); None if none."""
    match = re.match(r"\d+(\.\d+)*", version)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(0).split("."))


def check_version(package: str, version: str) -> None:
    """Raise ``UnsupportedVersion`` (``UnsupportedMotoVersion`` for moto) unless supported."""
    supported = SUPPORTED[package]
    if supported.admits(version):
        return
    error = UnsupportedMotoVersion if package == "moto" else UnsupportedVersion
    raise error(
        f"loadtest's embedded backend patches {package} {supported}, but {package} "
        f"{version} is installed; install '{package}{supported}' (or port "
        "loadtest/backend/ to the new version first)"
    )


def check_versions(installed: Callable[[str], str] = metadata.version) -> None:
    """Check every patched distribution's installed version; the first unsupported raises."""
    for package in SUPPORTED:
        try:
            version = installed(package)
        except metadata.PackageNotFoundError:
            version = "(not installed)"
        check_version(package, version)

"""Errors raised by the embedded backend.

::

    loadtest.errors.BackendError       the embedded backend could not start, answer or stop
     └── UnsupportedVersion            a patched library is outside the versions supported
          └── UnsupportedMotoVersion   ... and that library is moto

``BackendError`` is the project's own (exit code 3 from the CLI), re-exported
here so the backend's modules name it locally.
"""

from __future__ import annotations

from loadtest.errors import BackendError

__all__ = ["BackendError", "UnsupportedMotoVersion", "UnsupportedVersion"]


class UnsupportedVersion(BackendError):
    """A library the backend patches is installed at a version it was not written for
    (``loadtest.backend.versions``)."""


class UnsupportedMotoVersion(UnsupportedVersion):
    """The installed moto is outside the range ``loadtest.backend.patches`` targets."""

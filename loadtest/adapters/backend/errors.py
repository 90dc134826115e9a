"""Errors raised by the embedded backend.

::

    loadtest.errors.BackendError       the embedded backend could not start, answer or stop
     └── UnsupportedMotoVersion        moto is outside the series the patches were written for

``BackendError`` is the project's own (exit code 3 from the CLI), re-exported
here so the backend's modules name it locally.
"""

from __future__ import annotations

from loadtest.errors import BackendError

__all__ = ["BackendError", "UnsupportedMotoVersion"]


class UnsupportedMotoVersion(BackendError):
    """The installed moto is not the minor series ``loadtest.adapters.backend.patches`` targets."""

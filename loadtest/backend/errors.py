"""Errors raised by the embedded backend.

::

    RuntimeError
     └── BackendError                  the embedded backend could not start, answer or stop
          └── UnsupportedMotoVersion   moto is outside the series the patches were written for

``BackendError`` is a plain ``RuntimeError`` for now; the project's root
``LoadtestError`` will become its first base once it exists.
"""

from __future__ import annotations


class BackendError(RuntimeError):
    """The embedded backend could not be started, reached or stopped."""


class UnsupportedMotoVersion(BackendError):
    """The installed moto is not the minor series ``loadtest.backend.patches`` targets."""

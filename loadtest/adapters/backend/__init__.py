"""The embedded backend: moto's server in a child process, made atomic and fast enough.

``loadtest.adapters.backend.embedded`` holds ``EmbeddedBackend``, ``serve`` and ``build_app``; it is
not imported here, so ``python -m loadtest.adapters.backend.embedded`` runs it exactly once.
"""

from __future__ import annotations

from loadtest.adapters.backend.errors import (
    BackendError,
    UnsupportedMotoVersion,
    UnsupportedVersion,
)

__all__ = ["BackendError", "UnsupportedMotoVersion", "UnsupportedVersion"]

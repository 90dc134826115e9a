"""The embedded backend: moto's server in a child process, made atomic and fast enough.

``loadtest.backend.embedded`` holds ``EmbeddedBackend``, ``serve`` and ``build_app``; it is
not imported here, so ``python -m loadtest.backend.embedded`` runs it exactly once.
"""

from __future__ import annotations

from loadtest.backend.errors import BackendError, UnsupportedMotoVersion, UnsupportedVersion

__all__ = ["BackendError", "UnsupportedMotoVersion", "UnsupportedVersion"]

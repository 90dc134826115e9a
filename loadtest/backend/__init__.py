"""The embedded backend: moto's server in a child process, made atomic and fast enough.

It serves SQS and DynamoDB (patched, ``patches``) and, as moto ships them, the services a
consumer's other effects go to: SNS (SQS subscriptions, raw and wrapped), EventBridge (rules
with SQS targets), S3 and Step Functions. moto's dispatcher builds a service's app on its
first request, so a run that never calls one never imports it.

``loadtest.backend.embedded`` holds ``EmbeddedBackend``, ``serve`` and ``build_app``; it is
not imported here, so ``python -m loadtest.backend.embedded`` runs it exactly once.
"""

from __future__ import annotations

from loadtest.backend.errors import BackendError, UnsupportedMotoVersion, UnsupportedVersion

__all__ = ["BackendError", "UnsupportedMotoVersion", "UnsupportedVersion"]

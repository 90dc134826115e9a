"""Shared fixtures: one real embedded backend per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loadtest.adapters.backend.embedded import EmbeddedBackend


@pytest.fixture(scope="session")
def backend_url() -> Iterator[str]:
    """The endpoint of a real embedded backend (moto server + loadtest's patches)."""
    with EmbeddedBackend() as backend:
        yield backend.endpoint_url

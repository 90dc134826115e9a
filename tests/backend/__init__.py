"""Tests of the embedded backend (loadtest.adapters.backend)."""

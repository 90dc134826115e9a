"""Tests of the embedded backend (loadtest.backend)."""

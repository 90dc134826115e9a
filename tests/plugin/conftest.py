"""The plugin's tests run sample projects in a pytest of their own (``pytester``, loaded
by tests/conftest.py: pytest reads ``pytest_plugins`` from the top-level conftest only)."""

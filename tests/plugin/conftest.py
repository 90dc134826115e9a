"""The plugin's tests run sample projects in a pytest of their own (``pytester``)."""

pytest_plugins = ["pytester"]

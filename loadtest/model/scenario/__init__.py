"""What a run is asked to do: the scenario, its settings, its messages' bodies and the consumer's configuration.

Owns ``loading`` (built-in scenarios and TOML files), ``model`` (``Scenario``), ``fields``
(validating its parts), ``settings`` (frozen settings with defaults and ranges), ``body`` and
``body_template`` (a generated body and where its business id lives), ``envelopes`` (SNS or
EventBridge around a body, message attributes), ``function_config`` (the consumer's
environment and tables), ``lint_rules`` (the rule names a scenario may mark as intended) and
``toml_text`` (TOML loadtest writes). Reads only the history's names; never the checker or
the figures (enforced by import-linter, see pyproject.toml).
"""

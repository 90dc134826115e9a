"""What a run sends, and finding it again: the seeded key schedule and id indexes.

Owns ``schedule`` (the seeded list of messages a scenario sends, and when) and ``ids``
(finding a run's messages by their ids in a few bytes each). Reads the scenario; never
imports the checker or the figures (enforced by import-linter, see pyproject.toml).
"""

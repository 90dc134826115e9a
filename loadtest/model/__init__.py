"""The model: what a run is, what happened in it, and how it is judged. Pure.

Its rooms, from the bottom up (each importing only those below it, enforced by
import-linter, see pyproject.toml):

- ``dynamodb``: DynamoDB's write language (attribute values, UpdateExpressions, PartiQL);
  ``history``: the record of a run and the observation protocol; ``explore``: controlled
  interleavings' points, strategies and shrinking. The first two ship in the observer's
  Lambda layer.
- ``scenario``: what a run is asked to do; ``workload``: the seeded schedule it sends.
- ``checker``: from a history to counts and a verdict.
- ``figures``: latencies, rate, cost and thresholds.
- ``search`` (shrinking, repeats, confidence) and ``advice`` (lint, scaffolding, reading a
  handler's source).
- ``plan`` (a run's cells and thresholds) and ``judging`` (the checker given a scenario).

Nothing here touches AWS, a process, a clock or the terminal; only
``scenario.loading.load_scenario`` reads the one file it is given.
"""

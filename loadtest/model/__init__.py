"""The model: what a run is, what happened in it, and how it is judged. Pure.

Owns the scenario (``scenario``, ``schedule``), the record of a run
(``history``, ``observation``), DynamoDB's write semantics as pure
functions (``partiql`` with ``partiql_clauses`` and ``partiql_syntax``;
``updates`` with ``update_expressions`` and ``attribute_values``) and the
evaluation built on them (the ``checker`` package, ``metrics``, ``thresholds``). Nothing here touches AWS, a
process, a clock or the terminal; only ``load_scenario`` reads the one file
it is given. The scenario half never imports the evaluation half (enforced
by import-linter, see pyproject.toml).
"""

"""The model: what a run is, what happened in it, and how it is judged. Pure.

Owns the scenario (``scenario``, ``schedule``), the record of a run
(``history``, ``observation``), DynamoDB's write semantics as pure
functions (``partiql``, ``updates``) and the evaluation built on them
(``checker``, ``metrics``, ``thresholds``). Nothing here touches AWS, a
process, a clock or the terminal; only ``load_scenario`` reads the one file
it is given. The scenario half never imports the evaluation half (enforced
by import-linter, see pyproject.toml).
"""

"""Searching and repeating runs: shrinking a failing workload and the statistics of repeated runs.

Owns ``shrink`` (the search of ``loadtest shrink``), ``repeats`` (what ``--repeat N`` adds
to a report) and ``confidence`` (exact small-sample statistics).
"""

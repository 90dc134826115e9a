"""Advice on a user's consumer and settings: lint, a first scenario, reading a handler's source.

Owns ``lint`` (settings that invite duplicates: ``loadtest lint`` and every report's
warnings), ``scaffold`` (what ``loadtest new`` writes: ``writer``, ``key``, ``sample``) and
``handler_source`` (a handler's source read with ``ast``, never imported).
"""

"""Controlled interleavings, the pure part of ``loadtest explore``.

Owns ``points`` (points, choices, schedule tokens and replay), ``strategies`` (exhaustive
search and PCT), ``shrink`` (the smallest failing schedule) and ``bugs`` (which failing
schedules are one bug). No process, no clock.
"""

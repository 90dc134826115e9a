"""Controlled interleavings, the pure part of ``loadtest explore``.

Owns ``points`` (points, choices, schedule tokens and replay), ``strategies`` (exhaustive
search and PCT) and ``shrink`` (the smallest failing schedule). No process, no clock.
"""

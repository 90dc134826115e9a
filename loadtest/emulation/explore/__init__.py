"""The explorer's side of the emulation: one schedule of a few deliveries run step by step
(``explorer``, ``runs``, ``steps``), its observer, its virtual clock and each execution
environment's copy of the handler (``environments``).
"""

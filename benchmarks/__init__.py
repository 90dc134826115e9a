"""Developer benchmarks, outside the package: they print figures and assert nothing about time.

``run_bench`` (``nox -s bench``: a burst on the embedded backend, per process kind),
``backend_bench`` (the embedded backend alone, patched or as moto ships it),
``stub_sqs`` (an SQS endpoint that answers at once, for the producer's ceiling) and
``explore_bench`` (schedules per second of ``loadtest explore``). Run them from the
repository root, e.g. ``python -m benchmarks.run_bench``.
"""

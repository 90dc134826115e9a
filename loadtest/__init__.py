"""loadtest: a load tester for idempotent SQS -> DynamoDB consumers.

The engine is usable as a library::

    from loadtest.engine import run_scenario
    from loadtest.scenario import load_scenario

The CLI (``loadtest.cli``) is the only place that prints or sets exit codes.
"""

__version__ = "0.1.0"

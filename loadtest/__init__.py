"""loadtest: a load tester for idempotent SQS -> DynamoDB consumers.

Use it as a library::

    import loadtest

    report = loadtest.run("race-burst", variants=["read-then-write", "conditional"], seed=7)
    report.passed                                   # what the CLI's exit code says
    report.runs[0].counts.duplicate_writes
    report.runs[0].latency["end_to_end"].p99       # microseconds
    report.write_html("out.html")

    # Every interleaving of the lab's deliveries, and the smallest failing one:
    loadtest.explore("seed-lab", variant="read-then-write").to_dict()["explore"]["counterexample"]

``loadtest.api`` owns this facade; the CLI (``loadtest.cli``) is a thin layer
over it and the only place that prints or sets exit codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["Report", "Scenario", "__version__", "explore", "load_scenario", "run"]

if TYPE_CHECKING:
    from loadtest.api import Report, explore, run
    from loadtest.model.scenario.loading import Scenario, load_scenario


def __getattr__(name: str) -> Any:
    # Lazy, so `import loadtest` (and the execution environments, which import
    # the observer through this package) stays cheap.
    if name in ("run", "explore", "Report"):
        from loadtest import api

        return getattr(api, name)
    if name in ("Scenario", "load_scenario"):
        from loadtest.model.scenario import loading as scenario

        return getattr(scenario, name)
    raise AttributeError(f"module 'loadtest' has no attribute {name!r}")

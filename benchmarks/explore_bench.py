"""How fast ``loadtest explore`` runs schedules: schedules per second and milliseconds per schedule.

Runs the lab's guarded consumer through its whole space (with crash, redeliver and
ack-lost: 252 schedules of 3 deliveries) and the racy one to its shrunk
counterexample, each ``--repeat`` times on one embedded backend, and prints the
figures with their spread. Prints; asserts nothing about time.

    python benchmarks/explore_bench.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import loadtest
from loadtest.backend.embedded import EmbeddedBackend

CASES = (
    (
        "conditional, crash,redeliver,ack-lost (whole space)",
        {"variant": "conditional", "faults": "crash,redeliver,ack-lost"},
    ),
    ("conditional, no faults (whole space)", {"variant": "conditional"}),
    ("read-then-write (search, shrink, replay)", {"variant": "read-then-write"}),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with EmbeddedBackend() as backend:
        for label, options in CASES:
            rates, per_ms, walls = [], [], []
            for _ in range(args.repeat):
                started = time.perf_counter()
                report = loadtest.explore("seed-lab", endpoint_url=backend.endpoint_url, **options)  # type: ignore[arg-type]
                walls.append(time.perf_counter() - started)
                explore = report.to_dict()["explore"]
                rates.append(explore["schedules_per_s"])
                per_ms.append(1000 * explore["elapsed_s"] / max(1, explore["schedules_run"]))
            spread = statistics.stdev(rates) if len(rates) > 1 else 0.0
            print(
                f"{label}: {explore['schedules_run']} schedules, "
                f"{statistics.mean(rates):.1f} ± {spread:.1f} schedules/s, "
                f"{statistics.mean(per_ms):.1f} ms per schedule (min {min(per_ms):.1f}), "
                f"wall {statistics.mean(walls):.2f} s per explore (shrinking included)"
            )


if __name__ == "__main__":
    main()

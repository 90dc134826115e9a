"""The benchmark: a burst of a few thousand messages on the embedded backend.

``nox -s bench`` (or ``python -m loadtest.cli.bench``) prints figures and asserts
nothing about time; it is the baseline later work must beat. Figures:

- messages per second end to end (settled messages / run duration),
- requests per second the backend served (its own request counter),
- CPU seconds of the harness (this process), the execution environments and
  the backend, and the harness's share of all CPU the run used.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
import urllib.request
from typing import Any

from loadtest import engine
from loadtest.adapters.aws import BackendKind
from loadtest.adapters.backend.embedded import EmbeddedBackend
from loadtest.emulation.handlers import parse_ref
from loadtest.model.scenario import load_scenario


def _proc_cpu_s(pid: int) -> float:
    """User+system CPU seconds of a live process (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def _backend_requests(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"{url}/_loadtest/stats", timeout=5) as response:
            stats: dict[str, Any] = json.load(response)
            return stats
    except OSError:
        return {}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--ids", type=int, default=1000, help="distinct business ids (default 1000)"
    )
    parser.add_argument("--copies", type=int, default=3, help="messages per id (default 3)")
    parser.add_argument(
        "--concurrency", type=int, default=8, help="execution environments (default 8)"
    )
    parser.add_argument(
        "--variant", default="conditional", help="consumer variant (default conditional)"
    )
    args = parser.parse_args(argv)

    scenario = load_scenario("race-burst").with_overrides(
        distinct_ids=args.ids, copies=args.copies, concurrency=args.concurrency, deadline_s=1800
    )
    refs = [parse_ref(args.variant)]
    self_before = resource.getrusage(resource.RUSAGE_SELF)
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with EmbeddedBackend() as backend:
        assert backend.pid is not None
        backend_cpu_before = _proc_cpu_s(backend.pid)
        requests_before = _backend_requests(backend.endpoint_url)
        wall_start = time.perf_counter()
        result = engine.run(
            scenario, refs, kind=BackendKind.ENDPOINT, endpoint_url=backend.endpoint_url
        )
        wall_s = time.perf_counter() - wall_start
        backend_cpu_s = _proc_cpu_s(backend.pid) - backend_cpu_before
        requests_after = _backend_requests(backend.endpoint_url)
    self_after = resource.getrusage(resource.RUSAGE_SELF)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)

    harness_cpu_s = (self_after.ru_utime + self_after.ru_stime) - (
        self_before.ru_utime + self_before.ru_stime
    )
    # RUSAGE_CHILDREN counts waited-for children: the environments, and the
    # backend once stopped; subtract the backend's share measured live.
    children_cpu_s = (children_after.ru_utime + children_after.ru_stime) - (
        children_before.ru_utime + children_before.ru_stime
    )
    environments_cpu_s = max(0.0, children_cpu_s - backend_cpu_s)
    total_cpu_s = harness_cpu_s + environments_cpu_s + backend_cpu_s
    run = result.runs[0]
    counts = run.check.counts
    served = requests_after.get("requests", 0) - requests_before.get("requests", 0)

    print(
        f"loadtest bench: {counts.messages_sent} messages ({args.ids} ids x {args.copies}), "
        f"variant {run.variant}, {args.concurrency} environments, embedded backend"
    )
    print(
        f"  settled                {counts.acked + counts.dead_lettered} (acked {counts.acked}, "
        f"dead-lettered {counts.dead_lettered}, duplicate writes {counts.duplicate_writes})"
    )
    print(
        f"  run duration           {run.duration_s:.2f} s (whole process incl. setup {wall_s:.2f} s)"
    )
    print(f"  end to end             {run.messages_per_s:.1f} messages/s")
    e2e = run.latency["end_to_end"].summary()
    print(f"  end-to-end p50/p99     {e2e['p50'] / 1000:.0f} ms / {e2e['p99'] / 1000:.0f} ms")
    if served:
        print(
            f"  backend served         {served} requests, {served / run.duration_s:.1f} requests/s "
            f"({requests_after.get('dynamodb', 0) - requests_before.get('dynamodb', 0)} DynamoDB, "
            f"{requests_after.get('sqs', 0) - requests_before.get('sqs', 0)} SQS)"
        )
    else:
        print("  backend served         (the backend exposes no request counter)")
    print(
        f"  CPU harness            {harness_cpu_s:.2f} s ({100 * harness_cpu_s / total_cpu_s:.1f}% of the run's CPU)"
    )
    print(f"  CPU environments       {environments_cpu_s:.2f} s")
    print(f"  CPU backend            {backend_cpu_s:.2f} s")
    print(f"  cores busy (avg)       {total_cpu_s / wall_s:.2f} of {os.cpu_count()}")


if __name__ == "__main__":
    main()

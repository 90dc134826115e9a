"""How fast ``loadtest explore`` runs schedules, one tree against another on one machine.

Runs the command a user runs, as a user runs it (a new process each time, with its own
embedded backend)::

    python -m loadtest explore seed-lab --variant conditional --faults crash,redeliver

``--runs`` times for each tree given (``--tree LABEL=PATH``, put first on ``PYTHONPATH``;
default: this checkout), the trees taken in turn within each round so that a machine
busy with something else slows them alike. Prints, per tree, the median of the report's
``explore.schedules_per_s``, milliseconds per schedule, the process's wall time and the CPU
it used with its backend (seconds), and each median's ratio to the first tree's: only
ratios measured side by side travel. Asserts nothing about time.

    python tools/explore_bench.py --runs 5 --tree before=/path/to/old --tree after=. \
        --tree alone=. --env alone:LOADTEST_EXPLORE_WORKERS=1
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

COMMAND = ("explore", "seed-lab", "--variant", "conditional", "--faults", "crash,redeliver")


@dataclass
class Tree:
    label: str
    path: Path
    rates: list[float] = field(default_factory=list)
    """``explore.schedules_per_s`` of each run."""
    per_schedule_ms: list[float] = field(default_factory=list)
    walls_s: list[float] = field(default_factory=list)
    cpus_s: list[float] = field(default_factory=list)
    schedules: set[int] = field(default_factory=set)
    env: dict[str, str] = field(default_factory=dict)
    """Variables set for this tree's runs (``--env LABEL:NAME=VALUE``)."""


def _tree(text: str) -> Tree:
    label, _, path = text.rpartition("=")
    resolved = Path(path).resolve()
    if not (resolved / "loadtest" / "__init__.py").is_file():
        raise argparse.ArgumentTypeError(f"{path!r} holds no loadtest package")
    return Tree(label or resolved.name, resolved)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(tree: Tree, workdir: Path) -> None:
    """One explore in a new process; its figures appended to ``tree``."""
    report = workdir / f"{tree.label}.json"
    environ = dict(os.environ, PYTHONPATH=str(tree.path), **tree.env)
    cpu = _children_cpu_s()
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "loadtest", *COMMAND, "--json", str(report)],
        cwd=workdir,
        env=environ,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    tree.walls_s.append(time.perf_counter() - started)
    tree.cpus_s.append(_children_cpu_s() - cpu)  # the process and its backend, both waited for
    explore = json.loads(report.read_text())["explore"]
    tree.rates.append(float(explore["schedules_per_s"]))
    tree.per_schedule_ms.append(1000 * explore["elapsed_s"] / max(1, explore["schedules_run"]))
    tree.schedules.add(int(explore["schedules_run"]))


def _ratio(value: float, first: float) -> str:
    return f"{value / first:.2f}x" if first else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per tree (default 5)")
    parser.add_argument(
        "--tree",
        type=_tree,
        action="append",
        help="LABEL=PATH of a checkout to measure (repeatable; default: this one)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="LABEL:NAME=VALUE",
        help="a variable for one tree's runs, e.g. after-1:LOADTEST_EXPLORE_WORKERS=1",
    )
    args = parser.parse_args(argv)
    trees: list[Tree] = args.tree or [_tree(f"this={Path(__file__).resolve().parents[1]}")]
    by_label = {tree.label: tree for tree in trees}
    for given in args.env:
        label, _, assignment = given.partition(":")
        name, equals, value = assignment.partition("=")
        if label not in by_label or not name or not equals:
            parser.error(f"--env {given!r}: expected LABEL:NAME=VALUE with a --tree LABEL")
        by_label[label].env[name] = value
    print(
        f"{platform.node()}: {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.2f} at the start, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )
    print("command: python -m loadtest " + " ".join(COMMAND))
    with tempfile.TemporaryDirectory(prefix="explore-bench-") as workdir:
        for _ in range(args.runs):
            for tree in trees:
                run_once(tree, Path(workdir))
    first = trees[0]
    rate0 = statistics.median(first.rates)
    ms0 = statistics.median(first.per_schedule_ms)
    wall0 = statistics.median(first.walls_s)
    cpu0 = statistics.median(first.cpus_s)
    print(f"load average {os.getloadavg()[0]:.2f} at the end; medians of {args.runs} runs:")
    print("tree | schedules | schedules/s | ms/schedule | process wall s | process+backend CPU s")
    for tree in trees:
        rate = statistics.median(tree.rates)
        ms = statistics.median(tree.per_schedule_ms)
        wall = statistics.median(tree.walls_s)
        cpu = statistics.median(tree.cpus_s)
        print(
            f"{tree.label} | {','.join(map(str, sorted(tree.schedules)))} | "
            f"{rate:.1f} ({_ratio(rate, rate0)}, range {min(tree.rates):.1f}-{max(tree.rates):.1f}) | "
            f"{ms:.1f} ({_ratio(ms, ms0)}) | {wall:.2f} ({_ratio(wall, wall0)}) | "
            f"{cpu:.2f} ({_ratio(cpu, cpu0)})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

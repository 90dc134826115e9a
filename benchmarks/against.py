"""The benchmark run side by side with a named commit: each figure and its ratio.

``nox -s bench_against -- COMMIT`` (or ``python -m benchmarks.against COMMIT``) extracts
COMMIT's tree (``git archive``) into a temporary folder, then runs ``benchmarks.run_bench``
``--pairs`` times in each tree, taking them in turn (old, new, old, new, ...) so that a
machine busy with something else slows both alike, and prints the median of each figure
for both trees and the ratio of this tree's to COMMIT's. Arguments after ``--`` go to both
trees' ``run_bench`` (``--ids``, ``--variant``, ...): the older tree must know them.

Both trees run in this interpreter with its installed dependencies, the older one first on
``PYTHONPATH``. Figures are read from ``run_bench``'s printed lines, which keep their labels
across commits; a figure a tree does not print is left out. Asserts nothing about time:
only ratios measured side by side travel between machines.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BENCH_MODULES = ("benchmarks.run_bench", "loadtest.cli.bench")
"""Where the bench lives, newest first: an older tree kept it in the package's CLI."""

FIGURES: tuple[tuple[str, str, str], ...] = (
    # (the printed label, how it is shown, unit)
    ("run duration", "run duration", "s"),
    ("end to end", "messages per second", "msg/s"),
    ("CPU per message, all processes", "CPU per message, all processes", "ms"),
    ("harness", "  harness", "ms"),
    ("execution environments", "  execution environments", "ms"),
    ("backend", "  backend", "ms"),
    ("peak memory, all processes (PSS)", "peak memory, all processes (PSS)", "MB"),
    ("JSON report", "JSON report", "KB"),
)
"""The figures compared, in the order shown."""

_LINE = re.compile(r"^\s+(?P<label>\S.*?)\s{2,}(?P<value>[0-9.]+)\s")
_WHOLE = re.compile(r"whole process incl\. setup (?P<value>[0-9.]+) s")


def parse_figures(output: str) -> dict[str, float]:
    """Each figure of ``FIGURES`` that ``run_bench``'s output prints, by label; the first
    line of a label counts (``harness`` is the CPU line before the memory ones), and the
    whole process's time is read from the run-duration line."""
    wanted = {label for label, _, _ in FIGURES}
    figures: dict[str, float] = {}
    for line in output.splitlines():
        match = _LINE.match(line)
        if match and match["label"] in wanted and match["label"] not in figures:
            figures[match["label"]] = float(match["value"])
        whole = _WHOLE.search(line)
        if whole and "whole process" not in figures:
            figures["whole process"] = float(whole["value"])
    return figures


def extract(commit: str, into: Path) -> str:
    """COMMIT's tree under ``into``; its full hash (exit 2 with git's message if unknown)."""
    resolved = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--verify", f"{commit}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if resolved.returncode != 0:
        sys.exit(f"bench_against: {commit!r} is not a commit of {REPO}: {resolved.stderr.strip()}")
    full = resolved.stdout.strip()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", full], capture_output=True, check=True
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return full


def bench_module(tree: Path) -> str:
    """The bench's module in ``tree`` (the first of ``BENCH_MODULES`` it has)."""
    for module in BENCH_MODULES:
        if (tree / (module.replace(".", "/") + ".py")).is_file():
            return module
    sys.exit(f"bench_against: {tree} has none of {', '.join(BENCH_MODULES)}")


def run_once(tree: Path, arguments: Sequence[str]) -> dict[str, float]:
    """One ``run_bench`` in ``tree``: its figures (exit with its output if it fails)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-m", bench_module(tree), "--ceiling-messages", "0", *arguments],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        sys.exit(f"bench_against: run_bench failed in {tree} (exit {done.returncode}):\n{output}")
    return parse_figures(output)


def table(label_old: str, old: list[dict[str, float]], new: list[dict[str, float]]) -> str:
    """The medians side by side with this tree's ratio to the older one's."""
    rows = [f"{'figure (median)':<36} {label_old:>15} {'this tree':>15} {'ratio':>8}"]
    shown = [*FIGURES, ("whole process", "whole process incl. setup", "s")]
    for label, title, unit in shown:
        before = [f[label] for f in old if label in f]
        after = [f[label] for f in new if label in f]
        if not before or not after:
            continue
        a, b = statistics.median(before), statistics.median(after)
        ratio = f"{b / a:.2f}x" if a else "-"
        rows.append(f"{title:<36} {a:>9.2f} {unit:<5} {b:>9.2f} {unit:<5} {ratio:>8}")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.against",
        description=__doc__.split("\n\n")[0],
        epilog="Arguments after -- go to both trees' run_bench, e.g. -- --ids 300.",
    )
    parser.add_argument("commit", help="the commit to compare with (hash, tag or branch)")
    parser.add_argument("--pairs", type=int, default=3, help="runs in each tree (default 3)")
    given = list(sys.argv[1:] if argv is None else argv)
    ours, bench_args = (
        (given[: given.index("--")], given[given.index("--") + 1 :])
        if "--" in given
        else (given, [])
    )
    args = parser.parse_args(ours)
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    folder = Path(tempfile.mkdtemp(prefix="loadtest-bench-against-"))
    try:
        full = extract(args.commit, folder)
        old: list[dict[str, float]] = []
        new: list[dict[str, float]] = []
        print(
            f"bench against {full[:10]}: {args.pairs} runs each, alternating; "
            f"{platform.python_version()} on {os.cpu_count()} cores, "
            f"load average {os.getloadavg()[0]:.2f} at the start, "
            f"{time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC",
            flush=True,
        )
        for n in range(args.pairs):
            for tree, into in ((folder, old), (REPO, new)):
                figures = run_once(tree, bench_args)
                into.append(figures)
                cpu = figures.get("CPU per message, all processes", float("nan"))
                which = full[:10] if tree == folder else "this tree"
                print(f"  run {n + 1} {which:>10}: {cpu:.2f} ms CPU per message", flush=True)
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
        print(table(full[:10], old, new))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()

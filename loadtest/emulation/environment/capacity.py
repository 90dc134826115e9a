"""Can this machine hold the run? An estimate made before anything is created.

Limits such as ``concurrency <= 1000`` and ``distinct_ids <= 1,000,000`` are
what a scenario may *ask*; whether the machine can run it depends on its
memory, processes and file descriptors. Each execution environment is a Python
process (about ``ENVIRONMENT_MB`` resident with boto3 loaded) and every message
is kept in the history until the report is written (about
``MESSAGE_KB`` with its deliveries and write records). A run whose estimate
exceeds what the machine has is refused with the figures, so the user learns it
in a second, not after the machine starts swapping.

Pure apart from ``machine()``, which reads the machine's limits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from loadtest.errors import InputError

ENVIRONMENT_MB = 45
"""Resident memory (in MB) of one idle execution environment (Python + boto3 + observer)."""
MESSAGE_KB = 4
"""Memory (in KiB) per planned message: plan, history, deliveries, writes and the report."""
BASE_MB = 150
"""loadtest itself and, for the embedded backend, its server (in MB)."""
FDS_PER_ENVIRONMENT = 6
"""Pipes and log file per environment, plus its pollers' connections."""
SHARE = 0.8
"""Fraction of the available memory a run may plan to use."""


class CapacityError(InputError):
    """The run would need more memory, processes or file descriptors than the machine has."""


@dataclass(frozen=True)
class Machine:
    """What this machine offers a run."""

    available_mb: int | None
    """MemAvailable (in MB), or ``None`` when unknown."""
    max_processes: int | None
    """RLIMIT_NPROC soft limit, or ``None`` when unlimited or unknown."""
    max_open_files: int | None
    """RLIMIT_NOFILE soft limit, or ``None`` when unlimited or unknown."""


@dataclass(frozen=True)
class Estimate:
    """What a run is expected to need at its peak."""

    memory_mb: int
    environments: int
    messages: int
    open_files: int


def estimate(*, concurrency: int, messages: int) -> Estimate:
    """The peak needs of a run with ``concurrency`` environments sending ``messages`` messages."""
    memory_mb = BASE_MB + concurrency * ENVIRONMENT_MB + (messages * MESSAGE_KB) // 1024
    return Estimate(memory_mb, concurrency, messages, 64 + concurrency * FDS_PER_ENVIRONMENT)


def refuse_beyond(need: Estimate, machine: Machine) -> None:
    """Raise ``CapacityError`` with the estimate when ``machine`` cannot hold ``need``."""
    problems = []
    if machine.available_mb is not None and need.memory_mb > machine.available_mb * SHARE:
        problems.append(
            f"about {need.memory_mb:,} MB of memory ({need.environments} environments x "
            f"{ENVIRONMENT_MB} MB + {need.messages:,} messages x {MESSAGE_KB} KiB + {BASE_MB} MB), "
            f"but {machine.available_mb:,} MB is available"
        )
    if machine.max_processes is not None and need.environments > machine.max_processes // 2:
        problems.append(
            f"{need.environments} processes, but this user may start {machine.max_processes}"
        )
    if machine.max_open_files is not None and need.open_files > machine.max_open_files:
        problems.append(
            f"about {need.open_files} open files, but the limit is {machine.max_open_files} "
            "(ulimit -n)"
        )
    if problems:
        raise CapacityError(
            "this machine cannot hold the run: it needs "
            + "; and ".join(problems)
            + ". Lower --concurrency, --distinct-ids or --copies."
        )


def machine() -> Machine:
    """This machine's available memory and per-user limits (``None`` where unknown)."""
    return Machine(_available_mb(), _limit("RLIMIT_NPROC"), _limit("RLIMIT_NOFILE"))


def _available_mb() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return None


def _limit(name: str) -> int | None:
    try:
        import resource

        soft, _ = resource.getrlimit(getattr(resource, name))
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)

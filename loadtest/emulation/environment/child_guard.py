"""Guards run inside an execution environment: die with the parent, and Lambda's memory limit.

Imported by ``loadtest.emulation.environment.child_host`` only; standard library only, so the handler's
environment stays as bare as Lambda's.

- **Parent death.** An environment whose parent is gone (killed by SIGKILL,
  or crashed) must not live on, least of all inside a hung handler. On Linux
  the kernel sends SIGKILL when the parent dies (``PR_SET_PDEATHSIG``, asked for
  again in a forked environment: a fork clears it); the parent's pid is checked
  once the request is made (the parent may have died before), and a watchdog
  thread checks it again twice a second (other systems). A forked environment's
  parent is the zygote; its watchdog also waits on a pidfd on the harness. When
  the watchdog finds the harness or the parent gone, it kills the environment's
  process group (the environment leads one), so what the handler started there
  ends with it. A forked environment's other descendants are ended by the
  zygote, their subreaper (``loadtest.emulation.environment.child_zygote``). A
  directly started environment dies of the kernel's SIGKILL before its watchdog
  can act: processes its handler started outlive a killed harness there.
- **Memory.** Lambda stops an environment whose memory use passes the
  function's ``memory_mb``. A watchdog thread samples this process's resident
  set size and, past the limit, writes one line to the log and exits with
  ``OUT_OF_MEMORY_EXIT``; the parent reports the invocation as
  ``Runtime.OutOfMemory``. It samples while invocations run and sleeps once
  the environment has waited ``MEMORY_IDLE_POLLS`` samples for the next one
  (``MemoryWatch``), as Lambda freezes an environment between invocations: an
  idle environment costs no CPU, and the first sample after a wait is taken
  as the next invocation starts. A hard ceiling on the address space
  (``RLIMIT_AS``, well above the limit, set after the import) protects the
  machine from an allocation the sampler cannot see in time: the handler then
  gets a ``MemoryError``, which the parent reports the same way.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading
import time
from typing import NoReturn

OUT_OF_MEMORY_EXIT = 99
"""Must equal ``loadtest.emulation.environment.parent_replies.OUT_OF_MEMORY_EXIT``."""
PARENT_POLL_S = 0.5
"""How often (in seconds) the watchdog checks that the parent is alive."""
MEMORY_POLL_S = 0.02
"""How often (in seconds) the watchdog samples the resident set size while an invocation runs."""
MEMORY_IDLE_POLLS = 10
"""Samples in a row without an invocation before the watchdog waits for the next one: gaps
between back-to-back invocations do not put it to sleep, so it is not woken for each."""
HARD_CEILING_SLACK_MB = 512
"""Address space allowed above what the process had mapped after its import, plus ``memory_mb``."""
_PR_SET_PDEATHSIG = 1


def parent_death_signal(signal_number: int = signal.SIGKILL) -> None:
    """Ask the kernel for ``signal_number`` when the thread that started this process dies
    (its parent process, for a single-threaded parent or a parent's lasting thread); Linux
    only, elsewhere a no-op. Cleared by ``fork``: a forked child asks again."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal_number, 0, 0, 0)
        except (OSError, AttributeError):
            pass


def end_own_group() -> NoReturn:
    """Kill this process and, when it leads its process group, the whole group; never returns."""
    try:
        if os.getpgrp() == os.getpid():
            os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(1)


def die_with_parent(parent_pid: int | None = None, harness_pidfd: int | None = None) -> None:
    """Exit at once when the process that started this one is gone.

    Started directly, the parent is the harness (``LOADTEST_PARENT_PID``).
    Forked by the zygote (``loadtest.emulation.environment.child_zygote``), the parent is the
    zygote (``parent_pid``), which itself dies with the harness; the harness is
    also watched directly through ``harness_pidfd``, which becomes readable
    when it exits.
    """
    expected = parent_pid or int(os.environ.get("LOADTEST_PARENT_PID", "0")) or os.getppid()
    parent_death_signal()
    if os.getppid() != expected:  # the parent died before prctl took effect
        end_own_group()

    def watch() -> None:
        while True:
            if harness_pidfd is not None:
                ready, _, _ = select.select([harness_pidfd], [], [], PARENT_POLL_S)
                if ready:
                    end_own_group()
            else:
                time.sleep(PARENT_POLL_S)
            if os.getppid() != expected:
                end_own_group()

    threading.Thread(target=watch, name="loadtest-parent-watch", daemon=True).start()


class _Statm:
    """This process's ``/proc/self/statm``, opened once and read again in place (``pread``).

    The sampler reads it every ``MEMORY_POLL_S``; opening the file each time cost more than
    reading it. Opened in the process it describes (``self`` is resolved at open).
    """

    def __init__(self) -> None:
        self._fd = os.open("/proc/self/statm", os.O_RDONLY)
        self._page_bytes = os.sysconf("SC_PAGE_SIZE")

    def sizes(self) -> tuple[int, int] | None:
        """(mapped address space, resident set), in bytes; None when unreadable."""
        try:
            fields = os.pread(self._fd, 256, 0).split()
            return int(fields[0]) * self._page_bytes, int(fields[1]) * self._page_bytes
        except (OSError, ValueError, IndexError):
            return None


class MemoryWatch:
    """When the memory watchdog samples: every ``MEMORY_POLL_S`` while invocations run.

    The environment host calls ``invocation_started`` and ``invocation_ended`` around
    each invocation. The watchdog waits (blocked, no wake-ups) once ``MEMORY_IDLE_POLLS``
    samples in a row found no invocation running and none started since the sample
    before; the next start wakes it. Both sides run under the interpreter lock, and the
    watchdog checks again after clearing its wake-up, so a start that races with it going
    to sleep still wakes it.
    """

    def __init__(self) -> None:
        self._awake = threading.Event()
        self._awake.set()
        self._running = False
        self._started = 0
        self._idle_polls = 0

    def invocation_started(self) -> None:
        self._started += 1
        self._running = True
        if not self._awake.is_set():
            self._awake.set()

    def invocation_ended(self) -> None:
        self._running = False

    def next_sample(self, seen: int) -> int:
        """Called by the watchdog after each sample's pause, with ``seen`` the count of
        started invocations it returned last time; waits while the environment is idle,
        and returns the count now."""
        if self._running or self._started != seen:
            self._idle_polls = 0
            return self._started
        self._idle_polls += 1
        if self._idle_polls >= MEMORY_IDLE_POLLS:
            self._awake.clear()
            if self._running or self._started != seen:
                self._awake.set()
            self._awake.wait()
            self._idle_polls = 0
        return self._started


def enforce_memory(memory_mb: int) -> MemoryWatch:
    """Stop this process as out of memory once its resident set passes ``memory_mb``,
    sampled while the invocations the returned ``MemoryWatch`` is told about run."""
    limit = memory_mb * 1024 * 1024
    schedule = MemoryWatch()
    try:
        statm = _Statm()
    except OSError:
        return schedule  # no /proc: not enforced (the report's settings still say memory_mb)
    sizes = statm.sizes()
    if sizes is None:
        return schedule
    mapped, _ = sizes
    try:
        import resource

        ceiling = mapped + limit + HARD_CEILING_SLACK_MB * 1024 * 1024
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or ceiling < hard:
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    except (ImportError, OSError, ValueError):
        pass

    def watch() -> None:
        seen = 0
        while True:
            sizes = statm.sizes()
            rss = 0 if sizes is None else sizes[1]
            if rss > limit:
                try:
                    os.write(
                        2,
                        f"loadtest: out of memory: {rss >> 20} MB used, memory_mb = {memory_mb}\n".encode(),
                    )
                finally:
                    os._exit(OUT_OF_MEMORY_EXIT)
            time.sleep(MEMORY_POLL_S)
            seen = schedule.next_sample(seen)

    threading.Thread(target=watch, name="loadtest-memory-watch", daemon=True).start()
    return schedule


def over_memory_peak(memory_mb: int) -> int | None:
    """This process's peak resident set (in MB) when it passed ``memory_mb``, else None.

    The sampler can miss a burst: one C call that allocates and frees holds
    the interpreter lock throughout. The kernel's high-water mark cannot, so
    the environment checks it after every invocation, as Lambda would have
    stopped the function at that peak. ``VmHWM`` belongs to this process's own
    memory; ``getrusage``'s ``ru_maxrss`` would not do: Linux carries it across
    ``exec`` from the forked parent, so a large harness would look like a
    large function. It is never below ``VmHWM`` (the same high-water mark, or
    the parent's when larger), though, and costs a fraction of reading
    ``/proc/self/status``: a ``ru_maxrss`` within the limit answers None at once.
    """
    try:
        import resource

        if resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024 <= memory_mb:
            return None  # KiB on Linux; where it is in bytes, it only sends more to the exact read
    except ImportError:
        pass
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    peak_mb = int(line.split()[1]) // 1024
                    return peak_mb if peak_mb > memory_mb else None
    except (OSError, ValueError, IndexError):
        return None
    return None

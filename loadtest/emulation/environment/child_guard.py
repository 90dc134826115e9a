"""Guards run inside an execution environment: die with the parent, and Lambda's memory limit.

Imported by ``loadtest.emulation.environment.child_host`` only; standard library only, so the handler's
environment stays as bare as Lambda's.

- **Parent death.** An environment whose parent is gone (killed by SIGKILL,
  or crashed) must not live on, least of all inside a hung handler. On Linux
  the kernel sends SIGKILL when the parent dies (``PR_SET_PDEATHSIG``, asked for
  again in a forked environment: a fork clears it); the parent's pid is checked
  once the request is made (the parent may have died before), and the watchdog
  thread checks it again at least twice a second (other systems). A forked environment's
  parent is the zygote; its watchdog also waits on a pidfd on the harness. When
  the watchdog finds the harness or the parent gone, it kills the environment's
  process group (the environment leads one), so what the handler started there
  ends with it. A forked environment's other descendants are ended by the
  zygote, their subreaper (``loadtest.emulation.environment.child_zygote``).
- **The guard of a directly started environment.** Without a zygote
  (``LOADTEST_ZYGOTE=0``), on Linux, the environment becomes a child subreaper
  (``PR_SET_CHILD_SUBREAPER``: what its handler started stays below it, a
  process in a session of its own or a double fork's orphan included) and,
  before it imports anything of the handler's, forks its guard (``start_guard``):
  a process in a group of its own (a freeze's SIGSTOP to the environment's group
  and a retire's SIGKILL do not reach it) that holds pidfds on the harness and
  on the environment. The environment's death signal is then SIGSTOP, not
  SIGKILL: a killed harness leaves it stopped, still the parent of everything
  below it, and the guard kills every descendant, round after round until none
  is left, then the environment, then removes the run's ``loadtest-envs-*``
  folder (the folder of ``LOADTEST_OBSERVATIONS``, or the one holding it for a variant's
  ``variant-*`` folder); several environments'
  guards may all remove it. An environment that ends while the harness lives
  (a timeout, a crash, a retire) ends its guard; it is signalled and waited for
  by the harness exactly as before, and the guard never signals it while the
  harness lives. Should the guard be gone when the harness dies, the
  environment's watchdog ends its own group, as without one. Not armed where
  the platform lacks pidfds or the subreaper (other systems): there a killed
  harness's environment dies of the kernel's SIGKILL or its watchdog, and
  processes its handler started in a session of their own outlive it. Also
  beyond the guard's reach: what a handler left in a session of its own in an
  environment that had already ended (init adopted it), and the folder of a run
  killed while no environment was alive (the next run's
  ``parent_runs.new_log_dir`` removes it).
- **Memory.** Lambda stops an environment whose memory use passes the
  function's ``memory_mb``. The same watchdog thread samples this process's resident
  set size and, past the limit, writes one line to the log and exits with
  ``OUT_OF_MEMORY_EXIT``; the parent reports the invocation as
  ``Runtime.OutOfMemory``. It samples while invocations run and stops sampling once
  the environment has waited ``MEMORY_IDLE_POLLS`` samples for the next one
  (``Watchdog``), as Lambda freezes an environment between invocations: an
  idle environment's watchdog wakes only to check its parent, and the first sample
  after a wait is taken as the next invocation starts. One thread watches both, so
  a freeze and its continue wake two of the environment's threads, not three. A hard ceiling on the address space
  (``RLIMIT_AS``, well above the limit, set after the import) protects the
  machine from an allocation the sampler cannot see in time: the handler then
  gets a ``MemoryError``, which the parent reports the same way.
"""

from __future__ import annotations

import contextlib
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
GUARD_STOP_S = 5.0
"""How long (in seconds) a guard kills an environment's descendants before it kills the
environment whatever is left."""
RUN_FOLDER_PREFIX = "loadtest-envs-"
"""The start of a run's folder's name (``loadtest.emulation.environment.parent_runs``)."""
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


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


def die_with_parent(parent_pid: int | None = None, harness_pidfd: int | None = None) -> Watchdog:
    """Exit at once when the process that started this one is gone; return the process's
    watchdog, whose thread checks it (``enforce_memory`` gives it the memory limit too).

    Started directly, the parent is the harness (``LOADTEST_PARENT_PID``), and on Linux
    a guard is started (``start_guard``), which ends this process and everything below it.
    Forked by the zygote (``loadtest.emulation.environment.child_zygote``), the parent is the
    zygote (``parent_pid``), which itself dies with the harness; the harness is
    also watched directly through ``harness_pidfd``, which becomes readable
    when it exits.
    """
    expected = parent_pid or int(os.environ.get("LOADTEST_PARENT_PID", "0")) or os.getppid()
    guard = None
    if parent_pid is None and harness_pidfd is None:
        guarded = start_guard(expected)
        if guarded is not None:
            harness_pidfd, guard = guarded
    # Guarded, a dead harness leaves this process stopped for its guard to end (see above).
    parent_death_signal(signal.SIGKILL if guard is None else signal.SIGSTOP)
    if os.getppid() != expected:  # the parent died before prctl took effect
        end_own_group()
    return Watchdog(expected, harness_pidfd, guard)


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)`` through libc; False where it fails or is missing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def start_guard(harness: int) -> tuple[int, int] | None:
    """Make this process a child subreaper and fork its guard (``_guard``, which never
    returns); return pidfds on the harness and on the guard, or None where either is
    unavailable (not Linux, no pidfds): nothing is changed then.

    Called before any thread is started and before the handler is imported.
    """
    if not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"):
        return None
    try:
        harness_fd = os.pidfd_open(harness)  # before the caller checks its parent is the harness
    except OSError:
        return None
    if not _prctl(_PR_SET_CHILD_SUBREAPER, 1):
        os.close(harness_fd)
        return None
    environment = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        pid = os.fork()
    except OSError:
        _prctl(_PR_SET_CHILD_SUBREAPER, 0)
        os.close(harness_fd)
        return None
    if pid == 0:
        _guard(environment, harness_fd)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also done by the guard: whichever runs first
    try:
        guard_fd = os.pidfd_open(pid)  # not reaped before this process waits for it
    except OSError:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        _prctl(_PR_SET_CHILD_SUBREAPER, 0)
        os.close(harness_fd)
        return None
    return harness_fd, guard_fd


def _guard(environment: int, harness_fd: int) -> NoReturn:
    """The guard's whole life: wait for the harness's or the environment's end; for the
    harness's, end the environment and its descendants and remove the run's folder."""
    try:
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        folder = os.path.dirname(os.environ.get("LOADTEST_OBSERVATIONS", ""))
        if os.path.basename(os.path.dirname(folder)).startswith(RUN_FOLDER_PREFIX):
            folder = os.path.dirname(folder)  # a variant's folder, within its run's
        try:
            environment_fd = os.pidfd_open(environment)
        except OSError:
            os._exit(0)
        if os.getppid() != environment:  # ended before its pidfd was open
            os._exit(0)
        _keep_only(2, harness_fd, environment_fd)
        poller = select.poll()
        poller.register(harness_fd, select.POLLIN)
        poller.register(environment_fd, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if harness_fd in ready:
                _end_tree(environment, environment_fd)
                if os.path.basename(folder).startswith(RUN_FOLDER_PREFIX):
                    _remove(folder)
                os._exit(0)
            if environment_fd in ready:  # ended while the harness lives: nothing to guard
                os._exit(0)
    finally:
        os._exit(1)


def _remove(folder: str) -> None:
    """Remove the run's folder, again while it is there: the guards of the run's other
    environments remove it at the same time, and a folder one of them is emptying cannot
    be removed by another (each ignores what the others removed first)."""
    import shutil  # only here: the environment's own imports stay as they were

    deadline = time.monotonic() + GUARD_STOP_S
    while os.path.lexists(folder) and time.monotonic() < deadline:
        shutil.rmtree(folder, ignore_errors=True)
        time.sleep(0.01)


def _keep_only(*kept: int) -> None:
    """Close every descriptor but ``kept``; stdin and stdout (the harness's pipes, whose end
    the harness reads as the environment's) become ``/dev/null``."""
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    keep = {0, 1, *kept}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def _end_tree(environment: int, environment_fd: int) -> None:
    """Kill every descendant of ``environment`` (its subreaper: orphans come back to it, so
    each round finds the next generation) until none is left, then the environment."""
    deadline = time.monotonic() + GUARD_STOP_S
    me = os.getpid()
    while time.monotonic() < deadline:
        below = [pid for pid in _descendants(environment) if pid != me]
        if not below:
            break
        for pid in below:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    with contextlib.suppress(OSError):
        signal.pidfd_send_signal(environment_fd, signal.SIGKILL)


def _state_and_parent(pid: int) -> tuple[bytes, int] | None:
    """A process's state letter and parent pid (``/proc/PID/stat``); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def _listed_children(pid: int) -> list[int] | None:
    """``pid``'s children from ``/proc/PID/task/*/children``; None without that file."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children", "rb") as listing:
                found.extend(int(child) for child in listing.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{task}"):
                continue  # the thread ended meanwhile
            return None  # a kernel without CONFIG_PROC_CHILDREN
        except (OSError, ValueError):
            continue
    return found


def _every_parent() -> dict[int, list[int]]:
    """Each process's children by its parent, from every ``/proc/PID/stat``: what a kernel
    without ``CONFIG_PROC_CHILDREN`` leaves to read."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            seen = _state_and_parent(int(entry))
            if seen is not None:
                parents.setdefault(seen[1], []).append(int(entry))
    return parents


def children_of(pid: int) -> list[int]:
    """``pid``'s children (zombies included), as ``/proc`` lists them."""
    found = _listed_children(pid)
    return found if found is not None else _every_parent().get(pid, [])


def _descendants(root: int) -> list[int]:
    """The live (not zombie) processes below ``root``."""
    parents: dict[int, list[int]] | None = None
    found: list[int] = []
    pending = [root]
    while pending:
        pid = pending.pop()
        below = None if parents is not None else _listed_children(pid)
        if below is None:
            if parents is None:  # read every process's parent once
                parents = _every_parent()
            below = parents.get(pid, [])
        for child in below:
            seen = _state_and_parent(child)
            if seen is not None and seen[0] not in (b"Z", b"X"):
                found.append(child)
                pending.append(child)
    return found


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


class Watchdog:
    """The environment's one watchdog thread: the parent's end and Lambda's memory limit.

    One thread does both, so a freeze (SIGSTOP) and its continue wake two threads of the
    environment, not three. It waits in ``select`` on the harness's pidfd and on its own
    wake-up pipe: up to ``PARENT_POLL_S`` while no invocation runs (then it checks the
    parent's pid), ``MEMORY_POLL_S`` while invocations run (then it also samples the
    resident set size).

    The environment host calls ``invocation_started`` and ``invocation_ended`` around each
    invocation. The memory sampling stops once ``MEMORY_IDLE_POLLS`` samples in a row found
    no invocation running and none started since the sample before; the next start wakes
    the thread (one byte on the pipe) and it samples at once. Both sides run under the
    interpreter lock, and each sets its own flag before it reads the other's, so a start
    that races with the thread going idle still wakes it.
    """

    def __init__(
        self,
        expected_parent: int | None = None,
        harness_pidfd: int | None = None,
        guard: int | None = None,
    ) -> None:
        """Watch for ``expected_parent`` (a pid) to stop being this process's parent, for
        ``harness_pidfd`` to become readable (then wait for ``guard``, a pidfd on a direct
        start's guard, to end this process); None: not watched."""
        self._expected_parent = expected_parent
        self._harness_pidfd = harness_pidfd
        self._guard = guard
        self._statm: _Statm | None = None
        self._limit_bytes = 0
        self._memory_mb = 0
        self._sampling = False
        self._running = False
        self._started = 0
        self._wake_read, self._wake_write = os.pipe()  # not inherited (PEP 446)
        os.set_blocking(self._wake_write, False)
        self._fds = [self._wake_read] if harness_pidfd is None else [self._wake_read, harness_pidfd]
        threading.Thread(target=self._watch, name="loadtest-watch", daemon=True).start()

    def enforce(self, memory_mb: int, statm: _Statm) -> None:
        """Sample ``statm`` against ``memory_mb`` from now on, starting with a sample at once."""
        self._limit_bytes = memory_mb * 1024 * 1024
        self._memory_mb = memory_mb
        self._statm = statm
        self._wake()

    def invocation_started(self) -> None:
        self._started += 1
        self._running = True
        if not self._sampling and self._statm is not None:
            self._wake()

    def invocation_ended(self) -> None:
        self._running = False

    def _wake(self) -> None:
        self._sampling = True
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_write, b"\0")

    def _watch(self) -> None:
        seen = idle_polls = 0
        while True:
            timeout = MEMORY_POLL_S if self._sampling else PARENT_POLL_S
            ready, _, _ = select.select(self._fds, [], [], timeout)
            if ready:
                if self._wake_read in ready:
                    os.read(self._wake_read, 64)
                if self._harness_pidfd in ready:
                    if self._guard is not None:  # the guard ends this process; unless it is gone
                        select.select([self._guard], [], [])
                    end_own_group()
            if self._expected_parent is not None and os.getppid() != self._expected_parent:
                end_own_group()
            statm = self._statm
            if statm is None or not self._sampling:
                continue
            sizes = statm.sizes()
            rss = 0 if sizes is None else sizes[1]
            if rss > self._limit_bytes:
                _out_of_memory(rss, self._memory_mb)
            if self._running or self._started != seen:
                idle_polls = 0
                seen = self._started
                continue
            idle_polls += 1
            if idle_polls >= MEMORY_IDLE_POLLS:
                idle_polls = 0
                self._sampling = False
                if self._running or self._started != seen:
                    self._sampling = True


def _out_of_memory(rss: int, memory_mb: int) -> NoReturn:
    try:
        os.write(
            2, f"loadtest: out of memory: {rss >> 20} MB used, memory_mb = {memory_mb}\n".encode()
        )
    finally:
        os._exit(OUT_OF_MEMORY_EXIT)


def enforce_memory(memory_mb: int, watchdog: Watchdog | None = None) -> Watchdog:
    """Stop this process as out of memory once its resident set passes ``memory_mb``,
    sampled while the invocations the returned watchdog is told about run: ``watchdog``
    (``die_with_parent``'s), or one of its own."""
    watchdog = watchdog if watchdog is not None else Watchdog()
    try:
        statm = _Statm()
    except OSError:
        return watchdog  # no /proc: not enforced (the report's settings still say memory_mb)
    sizes = statm.sizes()
    if sizes is None:
        return watchdog
    mapped, _ = sizes
    try:
        import resource

        ceiling = mapped + memory_mb * 1024 * 1024 + HARD_CEILING_SLACK_MB * 1024 * 1024
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or ceiling < hard:
            resource.setrlimit(resource.RLIMIT_AS, (ceiling, hard))
    except (ImportError, OSError, ValueError):
        pass
    watchdog.enforce(memory_mb, statm)
    return watchdog


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

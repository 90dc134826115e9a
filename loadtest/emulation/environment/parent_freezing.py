"""Lambda's freeze between invocations, for the local execution environments.

After an invocation Lambda freezes its execution environment: threads and
event-loop tasks the handler left running make no progress until the
environment's next invocation, and never if it is retired. Here each
environment process stops itself and its process group (SIGSTOP,
``loadtest.emulation.environment.child_host``) right after its reply; ``thaw`` continues them
(SIGCONT) with the next invocation, once it has stopped (``open_state``: the descriptor
that tells, kept per process); ``retire`` kills them
while stopped (``ExecutionEnvironment.aclose``). Owns the switch and the wait for the stop.
"""

from __future__ import annotations

import os
import signal
import time

import anyio
from anyio.abc import Process

FREEZE_ENV = "LOADTEST_FREEZE"
FREEZE = os.environ.get(FREEZE_ENV, "1") != "0" and os.path.exists("/proc/self/stat")
"""Freeze environments between invocations, as Lambda does (``LOADTEST_FREEZE=0`` turns it
off): each stops itself (SIGSTOP) right after its reply and is continued (SIGCONT) with the
next invocation, so threads and tasks a handler left running make no progress in between.
Needs ``/proc`` to see that a process has stopped."""
THAW_WAIT_S = 2.0
"""How long to wait for a process to have stopped itself before continuing it anyway."""


def open_state(pid: int) -> int | None:
    """A descriptor of ``/proc/PID/stat`` for ``thaw`` to read again (one ``pread`` each
    time instead of opening the file), or None if it cannot be opened. It names that
    process, not its pid: once the process is gone it reads nothing. The caller closes it."""
    try:
        return os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None


def _stopped(pid: int, state_fd: int | None = None) -> bool:
    """Whether process ``pid`` is stopped (or gone): state ``T`` in ``/proc/PID/stat``
    (read through ``state_fd``, ``open_state``'s, when given)."""
    try:
        if state_fd is None:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                line = stat.read()
        else:
            line = os.pread(state_fd, 4096, 0)
        state = line.rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return True
    return state in (b"T", b"t", b"Z", b"X")


async def thaw(process: Process, state_fd: int | None = None) -> None:
    """Continue a frozen process, once it has stopped (it stops itself just after its
    reply; a continue sent before that stop would be lost and the process stay stopped).
    ``state_fd``: the process's ``open_state``, if the caller keeps one."""
    deadline = time.monotonic() + THAW_WAIT_S
    while not _stopped(process.pid, state_fd) and time.monotonic() < deadline:  # noqa: ASYNC110
        await anyio.sleep(0.001)  # a /proc state, not an event anything could set
    # The process leads its group (its own session) and stays in it, as its freeze assumes
    # (it stops the group it led when it started): one signal continues it and what it
    # started. Only a process that leads no group is continued by itself.
    if not _signal_group(process.pid, signal.SIGCONT):
        process.send_signal(signal.SIGCONT)


def retire(process: Process) -> None:
    """Kill a frozen process and the processes it started (its group), still stopped."""
    process.kill()
    _signal_group(process.pid, signal.SIGKILL)
    process.send_signal(signal.SIGCONT)


def _signal_group(pid: int, signal_number: int) -> bool:
    """Signal the process group ``pid`` leads (an environment is a session of its own, so
    the processes a handler started are in it), if it still exists; whether it did."""
    try:
        os.killpg(pid, signal_number)
    except (ProcessLookupError, PermissionError):
        return False
    return True

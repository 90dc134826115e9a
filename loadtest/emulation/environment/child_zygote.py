"""The zygote: one process per run that forks the run's execution environments.

``python -c layer.ZYGOTE LAYER_DIR PACKAGE_DIR`` imports what an environment
imports before the user's handler (the layer path set-up, then
``loadtest.emulation.environment.child_host``: the observer, its entry point, botocore) and
then waits on its control socket (its stdin, from
``loadtest.emulation.environment.parent_zygote``). Each request carries three descriptors: the
environment's protocol socket, its log file and a status socket. The zygote
forks; the child becomes the environment (``become_environment``) and returns
from ``serve`` into ``child_host.main``, which imports the handler: the cold
start. The zygote writes ``pid N`` (with a pidfd, so the harness can signal
the child without a pid-reuse race) and, once it has reaped the child,
``exit CODE`` (``-SIGNAL`` for a signal) on the status socket, then closes it.

Must stay single-threaded, hold no sockets but its own control and status
sockets, and import nothing beyond the standard library and what the
environment host imports: whatever it holds, every environment inherits. Linux only.

What it guarantees: once the harness is gone, however it went (SIGKILL
included), no process of the run is left, neither an environment nor any
process an environment's handler started (a pool worker, a daemon in a session of its own).

- The zygote learns that the harness is gone three ways, each of which wakes
  its one loop: a pidfd on the harness (readable when it exits), the end of
  its control socket, and ``PR_SET_PDEATHSIG`` (SIGTERM, caught: it only
  wakes the loop). The pidfd is opened before the zygote checks that its parent
  is still the harness, so a harness that died during the zygote's imports is
  seen too. The zygote then ends the run's processes (``_stop``) and exits.
  The death signal follows the harness's thread that started the zygote, and the end
  of the control socket comes as the harness's descriptors close: either can come
  before the harness's exit is visible, so whether it is gone (and the run's folder
  to be removed) is read on the pidfd too (``_died``, and again once ``_stop`` has
  reaped the children).
- It is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process whose parent
  dies (a handler's child once its environment is gone) becomes the zygote's
  child, not init's. ``_stop`` kills every environment's process group, then
  every child it has, again and again as orphans are handed to it, until none is left.
- An environment's process group (each is a session of its own) is killed
  as soon as the environment ends, before it is reaped (its pid, and so the
  group's id, cannot be reused until then): what its handler left behind ends
  with it, as it does when Lambda retires an environment.
- An environment itself also dies with the zygote (``PR_SET_PDEATHSIG``
  SIGKILL, re-armed after the fork, which clears it) and ends its own group
  when it sees the harness gone (``loadtest.emulation.environment.child_guard``).
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Set
from typing import NoReturn

from loadtest.emulation.environment.child_guard import RUN_FOLDER_PREFIX as RUN_FOLDER_PREFIX
from loadtest.emulation.environment.child_guard import children_of, parent_death_signal

_PR_SET_CHILD_SUBREAPER = 36
RUN_FOLDER_ENV = "LOADTEST_RUN_FOLDER"
"""The run's ``loadtest-envs-*`` folder, given to the zygote alone (never to an environment)."""

READY = b'{"ready":true}\n'
"""The zygote's hello on its control socket once its imports are done."""


def _fail(message: str) -> NoReturn:
    os.write(2, f"loadtest zygote: {message}\n".encode())
    os._exit(1)


def serve(environment_modules: Set[str]) -> tuple[int, int]:
    """Serve fork requests; return only in a forked child, as ``(zygote pid, harness pidfd)``.

    ``environment_modules`` are the modules a direct start has imported before
    its handler; a child drops any other (this module and what it imported).
    """
    harness = int(os.environ.get("LOADTEST_PARENT_PID", "0")) or os.getppid()
    zygote = os.getpid()  # the children's parent, whatever has happened to it by the time they look
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    # Both signals only wake the loop (the wake-up descriptor carries their numbers).
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    _no_stop_notices()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: None)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    _subreaper()
    parent_death_signal(signal.SIGTERM)
    try:
        harness_fd = os.pidfd_open(harness)
    except OSError as exc:
        _fail(f"cannot watch the harness (pid {harness}): {exc}")
    if os.getppid() != harness:  # the harness died before the guards took effect
        os._exit(1)
    control = socket.socket(fileno=os.dup(0))
    children: dict[int, socket.socket] = {}
    poller = select.poll()
    for fd in (control.fileno(), wake_r, harness_fd):
        poller.register(fd, select.POLLIN)
    control.sendall(READY)
    while True:
        events = poller.poll()
        for fd, _ in events:
            if fd == wake_r:
                woken = b""
                while True:
                    try:
                        chunk = os.read(wake_r, 512)
                    except BlockingIOError:
                        break
                    if not chunk:
                        break
                    woken += chunk
                _reap(children)
                if signal.SIGTERM in woken:  # the harness died, or someone asks the run to end
                    _stop(children, harness_gone=_died(harness, harness_fd))
            elif fd == harness_fd:
                _stop(children, harness_gone=True)
            elif fd == control.fileno():
                message, fds, _, _ = socket.recv_fds(control, 16, 3)
                if not message:  # the harness closed the run, or it is exiting (killed)
                    _stop(children, harness_gone=_exiting(harness), harness_fd=harness_fd)
                if len(fds) != 3:
                    for extra in fds:
                        os.close(extra)
                    continue
                forked = _fork(*fds, children=children, keep=environment_modules)
                if forked:
                    # This process is now an environment: drop the zygote's own descriptors.
                    for child in children.values():
                        child.close()
                    control.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    return zygote, harness_fd


def _fork(
    proto: int, log: int, status: int, *, children: dict[int, socket.socket], keep: Set[str]
) -> bool:
    """Fork one environment; True in the child (set up as one), False in the zygote."""
    status_sock = socket.socket(fileno=status)
    sys.stdout.flush()
    sys.stderr.flush()
    # The imported modules' objects move to the collector's permanent generation: a child's
    # collections then never write to their pages, which stay shared (see gc.freeze).
    gc.freeze()
    try:
        pid = os.fork()
    except OSError as exc:
        with _quiet():
            status_sock.sendall(f"error cannot fork: {exc}\n".encode())
        status_sock.close()
        os.close(proto)
        os.close(log)
        return False
    if pid == 0:
        status_sock.close()
        become_environment(proto, log, keep)
        return True
    os.close(proto)
    os.close(log)
    try:
        pidfd = os.pidfd_open(pid)  # before any reap: it names this child, never a reused pid
    except OSError:
        pidfd = -1
    with _quiet():
        socket.send_fds(status_sock, [f"pid {pid}\n".encode()], [pidfd] if pidfd >= 0 else [])
    if pidfd >= 0:
        os.close(pidfd)
    children[pid] = status_sock
    return False


class _quiet:
    """Ignore a harness that stopped listening: its end of a status socket is gone."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: object, tb: object) -> bool:
        return isinstance(exc, OSError)


def _subreaper() -> None:
    """Become the child subreaper of every process below this one (Linux 3.4 and later)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            _fail(f"cannot become a child subreaper: {os.strerror(ctypes.get_errno())}")
    except (OSError, AttributeError) as exc:
        _fail(f"cannot become a child subreaper: {exc}")


_SA_NOCLDSTOP = 0x1
_SA_ONSTACK = 0x08000000
"""Linux's flags on x86, Arm and most architectures (``asm-generic/signal-defs.h``)."""


class _SigAction(ctypes.Structure):
    """libc's ``struct sigaction`` on Linux (glibc and musl, x86 and Arm): handler, mask, flags."""

    _fields_ = (
        ("handler", ctypes.c_void_p),
        ("mask", ctypes.c_ulong * (1024 // (8 * ctypes.sizeof(ctypes.c_ulong)))),
        ("flags", ctypes.c_int),
        ("restorer", ctypes.c_void_p),
    )


def _no_stop_notices() -> None:
    """Keep the SIGCHLD handler, without notices of a child stopping or continuing
    (``SA_NOCLDSTOP``): every environment stops itself after each reply and is continued
    with the next invocation (Lambda's freeze), and the loop only acts on an exit.

    Python's ``signal.signal`` sets no such flag: it is added through libc to the action
    Python installed, which is recognised by the ``SA_ONSTACK`` it always sets. Where the
    structure is laid out otherwise, the action is left as it is (each stop and continue
    then wakes the loop, which finds nothing to reap)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        action = _SigAction()
        if libc.sigaction(signal.SIGCHLD, None, ctypes.byref(action)) != 0:
            return
        if not action.handler or action.flags & _SA_ONSTACK == 0:
            return
        action.flags |= _SA_NOCLDSTOP
        libc.sigaction(signal.SIGCHLD, ctypes.byref(action), None)
    except (OSError, AttributeError):
        return


def _reap(children: dict[int, socket.socket]) -> None:
    """Reap every ended child; an environment's process group is killed before it is reaped."""
    while True:
        try:
            # WNOWAIT: the ended child stays a zombie, holding its pid (and group id) meanwhile.
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return
        if ended is None or ended.si_pid == 0:
            return
        pid = ended.si_pid
        if pid in children:
            _kill_group(pid)
        _, status = os.waitpid(pid, 0)
        _report_exit(children, pid, status)


def _kill_group(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (an environment's, while ``pid`` is not reaped)."""
    with _quiet():
        os.killpg(pid, signal.SIGKILL)


def _report_exit(children: dict[int, socket.socket], pid: int, status: int) -> None:
    """Tell the harness how a reaped child ended (``exit CODE``) and close its status socket."""
    sock = children.pop(pid, None)
    if sock is not None:
        with _quiet():
            sock.sendall(f"exit {os.waitstatus_to_exitcode(status)}\n".encode())
        sock.close()


def _stop(
    children: dict[int, socket.socket], *, harness_gone: bool = False, harness_fd: int = -1
) -> NoReturn:
    """End the zygote: kill every environment's group and every process handed to this one
    (a subreaper's orphans), reap them all, exit. When the harness is gone (killed), also
    remove the run's folder (``RUN_FOLDER_ENV``), which the harness can no longer do: known
    at the call, or seen on ``harness_fd`` once the children are reaped (a killed harness's
    socket can close before its exit is visible in ``/proc``)."""
    for pid in children:
        _kill_group(pid)
    while True:
        # Killed in rounds: a process reaped here had its own children handed to this one
        # (before it could be reaped), so each round kills the next generation.
        for pid in children_of(os.getpid()):
            with _quiet():
                os.kill(pid, signal.SIGKILL)
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        _report_exit(children, pid, status)
    if harness_gone or (harness_fd >= 0 and select.select([harness_fd], [], [], 0)[0]):
        _remove_run_folder()
    os._exit(0)


_PF_EXITING = 0x4
"""``/proc/PID/stat``'s flag of a process in ``do_exit``: set before its descriptors close."""


def _exiting(pid: int) -> bool:
    """Whether the process is gone or exiting (a killed harness's sockets close as it exits)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return True
    return fields[0] in (b"Z", b"X") or int(fields[6]) & _PF_EXITING != 0


DEATH_SIGNAL_WAIT_S = 1.0
"""How long (in seconds) the zygote waits, after its death signal, to see the harness exit."""


def _died(harness: int, harness_fd: int) -> bool:
    """After the death signal (SIGTERM): whether the harness is dying. The signal follows the
    harness's thread that started the zygote, and a killed harness's threads end one by one:
    the zygote may then be handed to another of its threads (its parent pid unchanged) before
    the harness has exited. A SIGTERM from anyone else with the harness alive waits out
    ``DEATH_SIGNAL_WAIT_S`` and answers False."""
    if os.getppid() != harness:
        return True
    ready, _, _ = select.select([harness_fd], [], [], DEATH_SIGNAL_WAIT_S)
    return bool(ready)


def _remove_run_folder() -> None:
    folder = os.environ.get(RUN_FOLDER_ENV, "")
    if os.path.basename(folder).startswith(RUN_FOLDER_PREFIX) and os.path.isdir(folder):
        import shutil  # only now: the zygote's imports are every environment's

        shutil.rmtree(folder, ignore_errors=True)


def _read_line(fd: int) -> bytes:
    """The set-up line the harness writes before anything else on the protocol socket."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            os._exit(1)  # the harness gave up on this environment before it started
        data += chunk
    return data


def become_environment(proto: int, log: int, keep: Set[str]) -> None:
    """In the forked child: the session, descriptors, environ and working folder of a fresh start.

    The harness's set-up line (``{"environ": {...}, "cwd": ...}``) is read
    from the protocol socket and applied before anything of the user's runs.
    """
    os.setsid()
    signal.set_wakeup_fd(-1)
    # The zygote's own handlers: an environment has the default actions, as a fresh start.
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.dup2(proto, 0)
    os.dup2(proto, 1)
    os.dup2(log, 2)
    os.close(proto)
    os.close(log)
    setup = json.loads(_read_line(0))
    os.environ.clear()
    os.environ.update(setup["environ"])
    time.tzset()  # TZ may differ from the zygote's
    os.chdir(setup["cwd"])
    # The zygote's own modules are not part of an environment's state.
    for name in set(sys.modules) - keep:
        del sys.modules[name]
    package = sys.modules.get("loadtest.emulation.environment")
    if package is not None and hasattr(package, "child_zygote"):
        delattr(package, "child_zygote")

"""The harness's side of the zygote: starting it, asking it for environments, stopping it.

One ``Zygote`` per run (``loadtest.emulation.environment.parent_runs.log_directory`` owns
it and stops it however the run ends) forks every execution environment of
the run from a process that has already imported what an environment imports
before the handler (``loadtest.emulation.environment.child_zygote``): an environment starts
in milliseconds and shares those pages copy-on-write.

A forked environment is a ``ForkedProcess``: an ``anyio.abc.Process`` whose
stdin and stdout are one socket (the protocol), signalled through a pidfd (no
pid-reuse race once the zygote has reaped it), whose exit code the zygote
reports on a status socket. A zygote that dies takes its environments with
it; the harness then raises ``ZygoteError`` rather than reporting their deaths
as the consumer's crashes. Owns the zygote process and the sockets it is
given; must not decide anything about invocations (``environments`` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Mapping

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream, ByteStream, Process

from loadtest.emulation.environment.child_zygote import RUN_FOLDER_ENV
from loadtest.errors import ZygoteError
from loadtest.observer import layer

__all__ = ["ForkedProcess", "Zygote", "ZygoteError", "available", "startup_key"]

STOP_TIMEOUT_S = 5.0
"""How long (in seconds) a stopped zygote may take to reap its children and exit."""
ZYGOTE_READY_TIMEOUT_S = 60.0
"""How long (in seconds) the zygote's imports may take (the handler's are timed per environment)."""
_STARTUP_PREFIXES = ("PYTHON", "LC_")
_STARTUP_NAMES = ("LANG", "LANGUAGE")


def log_tail(path: str) -> str:
    """The last 1,500 bytes of a process's log (stderr), as text; empty if unreadable."""
    try:
        with open(path, "rb") as log:
            return log.read()[-1500:].decode("utf-8", "replace").strip()
    except OSError:
        return ""


class _SocketStream(ByteStream):
    """A connected socket as a byte stream, waiting with ``anyio.wait_readable``/``wait_writable``.

    Not ``anyio.abc.UNIXSocketStream.from_socket``: on asyncio (anyio 4.16) a
    receive cancelled while the socket turns readable logs an ``InvalidStateError``
    traceback from the event loop, and environments' reads are cancelled at
    every deadline and interrupt.
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self._sock = sock

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            try:
                data = self._sock.recv(max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self._sock)
                continue
            except OSError as exc:
                if self._sock.fileno() < 0:
                    raise anyio.ClosedResourceError from None
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def receive_fds(self, max_bytes: int, max_fds: int) -> tuple[bytes, list[int]]:
        while True:
            try:
                data, fds, _, _ = socket.recv_fds(self._sock, max_bytes, max_fds)
            except BlockingIOError:
                await anyio.wait_readable(self._sock)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data and not fds:
                raise anyio.EndOfStream
            return data, fds

    def send_now(self, item: bytes) -> memoryview:
        """Write what the socket takes without waiting; the rest (empty once it took all)."""
        view = memoryview(item)
        try:
            return view[self._sock.send(view) :]
        except BlockingIOError:
            return view
        except OSError:
            return view  # ``send`` of the rest raises what the socket says

    async def send(self, item: bytes | memoryview) -> None:
        view = memoryview(item)
        while view:
            try:
                view = view[self._sock.send(view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._sock)
            except OSError as exc:
                if self._sock.fileno() < 0:
                    raise anyio.ClosedResourceError from None
                raise anyio.BrokenResourceError from exc

    async def send_eof(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)

    async def aclose(self) -> None:
        if self._sock.fileno() >= 0:
            anyio.notify_closing(self._sock)
            self._sock.close()
        await anyio.lowlevel.checkpoint()


class WatchedSocketStream(_SocketStream):
    """A ``_SocketStream`` whose socket stays registered with the asyncio event loop while
    it is open: what arrives is read by the loop's callback as it arrives, and a receive
    waits on one future only when nothing has.

    An environment's protocol socket answers every invocation; ``anyio.wait_readable``
    registered it with the loop and removed it again for each answer (two ``epoll_ctl``
    calls, a callback and a future each time). A receive cancelled while an answer arrives
    leaves the answer buffered for the next receive, as a socket would.
    """

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(sock)
        self._loop = loop
        self._buffer = bytearray()
        self._ended = False
        """Nothing more will arrive: the peer closed its end, or the socket broke."""
        self._broken: OSError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._watching = False
        self._time_up = False
        """``receive_line``'s deadline has passed (its timer ran)."""

    def _readable(self) -> None:
        try:
            data = self._sock.recv(65536)
        except BlockingIOError:
            return
        except OSError as exc:
            data = b""
            self._broken = exc
        if data:
            self._buffer += data
        else:
            self._ended = True
            self._unwatch()
        self._wake()

    def _deadline_passed(self) -> None:
        self._time_up = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _unwatch(self) -> None:
        if self._watching:
            self._watching = False
            self._loop.remove_reader(self._sock)

    async def _woken(self) -> None:
        """Wait, the socket watched, until the loop's callback or the deadline's timer (or a
        close) wakes this receive."""
        if not self._watching:
            self._loop.add_reader(self._sock, self._readable)
            self._watching = True
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while not self._buffer and not self._ended and self._sock.fileno() >= 0:
            await self._woken()
        if self._buffer:
            data = bytes(self._buffer[:max_bytes])
            del self._buffer[:max_bytes]
            return data
        if self._sock.fileno() < 0:
            raise anyio.ClosedResourceError
        if self._broken is not None:
            raise anyio.BrokenResourceError from self._broken
        raise anyio.EndOfStream

    async def receive_line(self, max_bytes: int, deadline: float) -> bytes | None:
        """The next line, without its newline, as ``BufferedByteReceiveStream.receive_until``
        reads it (``DelimiterNotFound`` past ``max_bytes``, ``IncompleteRead`` when the
        stream ends first); None once the loop's clock (``anyio.current_time()``) reaches
        ``deadline`` with no line. One timer instead of a cancel scope with a deadline: an
        environment's answer is waited for this way at every invocation."""
        buffer = self._buffer
        offset = 0
        timer: asyncio.TimerHandle | None = None
        self._time_up = False
        try:
            while True:
                index = buffer.find(b"\n", offset)
                if index >= 0:
                    line = bytes(buffer[:index])
                    del buffer[: index + 1]
                    return line
                if len(buffer) >= max_bytes:
                    raise anyio.DelimiterNotFound(max_bytes)
                offset = len(buffer)
                if self._sock.fileno() < 0:
                    raise anyio.ClosedResourceError
                if self._ended:
                    if self._broken is not None:
                        raise anyio.BrokenResourceError from self._broken
                    raise anyio.IncompleteRead
                if self._time_up or self._loop.time() >= deadline:
                    return None
                if timer is None:
                    timer = self._loop.call_at(deadline, self._deadline_passed)
                await self._woken()
        finally:
            if timer is not None:
                timer.cancel()

    async def aclose(self) -> None:
        if self._sock.fileno() >= 0:
            self._unwatch()
            anyio.notify_closing(self._sock)
            self._sock.close()
            self._wake()  # a receive waiting now raises ClosedResourceError
        await anyio.lowlevel.checkpoint()


def _protocol_stream(sock: socket.socket) -> _SocketStream:
    """The stream of an environment's protocol socket: watched by the event loop on
    asyncio (``WatchedSocketStream``), else waited for at each receive."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another event loop than asyncio's
        return _SocketStream(sock)
    return WatchedSocketStream(sock, loop)


def available() -> bool:
    """Whether environments can be forked here (Linux pidfds), unless ``LOADTEST_ZYGOTE=0``."""
    return (
        os.environ.get("LOADTEST_ZYGOTE", "1") != "0"
        and sys.platform.startswith("linux")
        and hasattr(os, "pidfd_open")
        and hasattr(signal, "pidfd_send_signal")
    )


def startup_key(env: Mapping[str, str], cwd: str) -> tuple[tuple[str, str], ...]:
    """What an interpreter reads once at its start (``PYTHON*``, locale) and the working folder:
    a forked environment matches a fresh start only when these equal the zygote's."""
    chosen = sorted(
        (k, v) for k, v in env.items() if k.startswith(_STARTUP_PREFIXES) or k in _STARTUP_NAMES
    )
    return (*chosen, ("cwd", cwd))


class Zygote:
    """A started zygote process and its control socket."""

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        control: socket.socket,
        key: tuple[tuple[str, str], ...],
        log_path: str,
    ) -> None:
        self._process = process
        self._control = control
        self.key = key
        """``startup_key`` of the environ and folder the zygote started with."""
        self._log_path = log_path
        self.pid = process.pid

    @classmethod
    async def start(
        cls,
        layer_dir: str,
        env: Mapping[str, str],
        log_path: str,
        ready_timeout_s: float = ZYGOTE_READY_TIMEOUT_S,
    ) -> Zygote:
        """Start a zygote and wait (at most ``ready_timeout_s`` seconds) for its imports."""
        ours, theirs = socket.socketpair()
        try:
            # A local file opened once per run; not worth a thread.
            with open(log_path, "ab") as log:  # noqa: ASYNC230
                # Spawned from this (the event loop's) thread, which lives as long as the run:
                # the zygote's PR_SET_PDEATHSIG follows the thread that started it.
                process = subprocess.Popen(  # noqa: ASYNC220 - a fork-exec, like open_process's
                    [sys.executable, "-c", layer.ZYGOTE, layer_dir, str(layer.package_dir())],
                    stdin=theirs.fileno(),
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                    # The run's folder, for the zygote to remove if the harness is killed.
                    env={**env, RUN_FOLDER_ENV: os.path.dirname(log_path)},
                    start_new_session=True,
                )
        finally:
            theirs.close()
        zygote = cls(process, ours, startup_key(env, os.getcwd()), log_path)
        ours.setblocking(False)
        try:
            with anyio.fail_after(ready_timeout_s):
                hello = b""
                while not hello.endswith(b"\n"):
                    await anyio.wait_readable(ours)
                    chunk = ours.recv(64)
                    if not chunk:
                        break
                    hello += chunk
        except TimeoutError:
            zygote.stop()
            raise ZygoteError(
                f"the execution environments' zygote did not finish its imports within "
                f"{ready_timeout_s:g} s: {zygote.log_tail() or 'no output'}"
            ) from None
        except BaseException:
            zygote.stop()
            raise
        if hello != b'{"ready":true}\n':
            zygote.stop()
            raise ZygoteError(
                f"the execution environments' zygote did not start: {zygote.log_tail() or hello!r}"
            )
        return zygote

    def alive(self) -> bool:
        return self._process.poll() is None

    def log_tail(self) -> str:
        return log_tail(self._log_path)

    def died(self) -> ZygoteError:
        """The error for a zygote found dead during the run."""
        code = self._process.poll()
        return ZygoteError(
            f"the execution environments' zygote (pid {self.pid}) died"
            f"{'' if code is None else f' with exit code {code}'}; its environments died with it: "
            f"{self.log_tail() or 'no output'}"
        )

    async def spawn(self, env: Mapping[str, str], log_path: str) -> ForkedProcess:
        """Fork one environment with exactly ``env`` as its environ, its stderr on ``log_path``."""
        proto, proto_child = socket.socketpair()
        status, status_child = socket.socketpair()
        try:
            # A local file opened once per cold start; not worth a thread.
            with open(log_path, "ab") as log:  # noqa: ASYNC230
                fds = [proto_child.fileno(), log.fileno(), status_child.fileno()]
                while True:
                    try:
                        sent = socket.send_fds(self._control, [b"S"], fds)
                    except BlockingIOError:
                        await anyio.wait_writable(self._control)
                        continue
                    except OSError as exc:
                        raise self.died() from exc
                    if sent:
                        break
        except BaseException:
            proto.close()
            status.close()
            raise
        finally:
            proto_child.close()
            status_child.close()
        status_stream = _SocketStream(status)
        proto_stream = _protocol_stream(proto)
        try:
            try:
                data, fds = await status_stream.receive_fds(64, 1)
            except (anyio.EndOfStream, anyio.BrokenResourceError) as exc:
                raise self.died() from exc
            first, _, rest = data.partition(b"\n")
            if not first.startswith(b"pid ") or not fds:
                for fd in fds:
                    os.close(fd)
                raise ZygoteError(
                    f"the execution environments' zygote could not fork: "
                    f"{first.decode('utf-8', 'replace') or self.died()}"
                )
            child = ForkedProcess(int(first[4:]), fds[0], proto_stream, status_stream, rest)
        except BaseException:
            await proto_stream.aclose()
            await status_stream.aclose()
            raise
        setup = {"environ": dict(env), "cwd": os.getcwd()}
        # The child reads this line before anything of the user's runs.
        with contextlib.suppress(anyio.BrokenResourceError, OSError):
            await proto_stream.send(json.dumps(setup).encode() + b"\n")
        return child

    def stop(self) -> None:
        """Stop the zygote (it kills and reaps any child left) and reap it; idempotent."""
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        self._control.close()
        try:
            self._process.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()  # its children get SIGKILL from the kernel with it
            self._process.wait()


class ForkedProcess(Process):
    """An environment forked by the zygote (its child, not this process's)."""

    def __init__(
        self,
        pid: int,
        pidfd: int,
        protocol: _SocketStream,
        status: _SocketStream,
        pending: bytes,
    ) -> None:
        self._pid = pid
        self._pidfd = pidfd
        self._protocol = protocol
        self._status = status
        self._pending = pending
        self._returncode: int | None = None
        self.zygote_lost = False
        """The zygote died before reporting this process's exit (it died with the zygote)."""
        self._parse()

    def _parse(self) -> None:
        line, newline, rest = self._pending.partition(b"\n")
        if newline and line.startswith(b"exit "):
            self._returncode = int(line[5:])
            self._pending = rest

    async def wait(self) -> int:
        while self._returncode is None:
            try:
                self._pending += await self._status.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                # The zygote is gone without a word; its children get SIGKILL with it.
                self.zygote_lost = True
                self._returncode = -signal.SIGKILL
            else:
                self._parse()
        return self._returncode

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, signal_number: int) -> None:
        if self._returncode is not None or self._pidfd < 0:
            return
        # Already reaped: the pidfd still names it, so no other process can be hit.
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(self._pidfd, signal_number)

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def returncode(self) -> int | None:
        return self._returncode

    @property
    def stdin(self) -> ByteSendStream:
        return self._protocol

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._protocol

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return None

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._protocol.aclose()
            if self._returncode is None:
                self.kill()
                await self.wait()
            await self._status.aclose()
            if self._pidfd >= 0:
                os.close(self._pidfd)
                self._pidfd = -1

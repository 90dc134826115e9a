"""Execution environments seen from the runner: child processes driven over pipes.

Each ``ExecutionEnvironment`` is one ``loadtest.emulation.environment.child_host`` process that
imports the handler once (its cold start) and runs one invocation at a time,
like a Lambda execution environment, frozen between invocations as Lambda freezes one
(``FREEZE``: stopped after each reply, continued with the next invocation, killed while
stopped when retired). It runs the observer and its entry point
from the observer layer zip (``loadtest.observer.layer``), unpacked once per
run into the log folder: the artifact a deploy publishes. A timeout or a crash stops the
process and the next invocation starts a fresh one, as Lambda does.

Within ``log_directory`` (a run), environments are forked from the run's zygote
(``loadtest.emulation.environment.parent_zygote``), which has already imported what an
environment imports before the handler; the handler is still imported in
each environment, as its cold start. ``LOADTEST_ZYGOTE=0``, a platform
without pidfds, or an environment outside ``log_directory`` starts the
process directly instead (``python -c layer.BOOTSTRAP``).

Owns the child processes: every one started here is stopped by ``aclose``,
and dies with this process even when it is killed, with what its handler started (see
``loadtest.emulation.environment.child_zygote`` for a forked environment, and
``loadtest.emulation.environment.child_guard``, whose guard does it for a direct start on
Linux; a direct start's guard process is the environment's child, never signalled here). Each runs in its
own session, so a terminal's Ctrl-C reaches loadtest only, which ends them.
What an environment is started with is ``parent_config``'s (``FunctionConfig``); the
run's log folder and zygote ``parent_runs``' (``log_directory``); how a reply or an exit
reads in Lambda's words ``parent_replies``' (``Reply``): all re-exported here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import signal
import sys
import time
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from loadtest.emulation.environment import parent_freezing as freezing
from loadtest.emulation.environment import parent_zygote as zygotes
from loadtest.emulation.environment.parent_config import FunctionConfig as FunctionConfig
from loadtest.emulation.environment.parent_freezing import FREEZE, FREEZE_ENV
from loadtest.emulation.environment.parent_replies import CUT_OFF_ERROR as CUT_OFF_ERROR
from loadtest.emulation.environment.parent_replies import OUT_OF_MEMORY_EXIT as OUT_OF_MEMORY_EXIT
from loadtest.emulation.environment.parent_replies import RESULT_KEEP_BYTES as RESULT_KEEP_BYTES
from loadtest.emulation.environment.parent_replies import Reply as Reply
from loadtest.emulation.environment.parent_replies import exit_reason, memory_error
from loadtest.emulation.environment.parent_replies import keep_result as keep_result
from loadtest.emulation.environment.parent_replies import out_of_memory_error as out_of_memory_error
from loadtest.emulation.environment.parent_runs import _RUNS as _RUNS
from loadtest.emulation.environment.parent_runs import log_directory as log_directory
from loadtest.emulation.environment.parent_runs import new_log_dir as new_log_dir
from loadtest.emulation.environment.parent_runs import run_folder, zygote_for
from loadtest.errors import HandlerRefError
from loadtest.model.checker.harness import gaps_in
from loadtest.model.history.log import WriteRecord
from loadtest.model.history.observation import (
    Observation,
    SharedValues,
    WriteBegun,
    collect,
    decode,
    left_work_of,
)
from loadtest.observer import layer
from loadtest.observer.layer_environment import FAULT_SEED_ENV
from loadtest.observer.point_faults import POINT_TIMEOUT_EXIT


class _AlreadyReaped(logging.Filter):
    """Drop asyncio's "Unknown child process pid" warning for environment processes.

    On Python 3.11, ``subprocess.Popen``'s own clean-up of finished children
    (run whenever a new process starts) can reap a stopped environment before
    asyncio's watcher thread does; asyncio then logs that it reports exit code
    255. The environment was already waited for and stopped; nothing is lost.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Unknown child process pid")


logging.getLogger("asyncio").addFilter(_AlreadyReaped())


READY_TIMEOUT_S = float(os.environ.get("LOADTEST_READY_TIMEOUT_S", "60"))
"""How long a cold start (the handler's import) may take, in seconds."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""The largest reply line read from an environment; a longer one fails the invocation."""


class ExecutionEnvironment:
    """One execution environment; not safe for concurrent ``invoke`` calls."""

    def __init__(
        self,
        config: FunctionConfig,
        number: int,
        log_dir: str,
        shared: SharedValues | None = None,
    ) -> None:
        self.config = config
        self.number = number
        self._shared = shared if shared is not None else SharedValues()
        """Equal items, keys and results decoded once (one table for a run's environments)."""
        self.cold_starts = 0
        self._log_dir = log_dir
        self.entry_file = ""
        """Where the observer's entry point was imported from (the unpacked layer zip)."""
        self._log_path = os.path.join(log_dir, f"env-{number}.log")
        self._observations_path = os.path.join(log_dir, f"env-{number}.observations")
        self._observations_offset = 0
        self._observations_fd: int | None = None
        """The observation file, kept open and read in place (``_observation_bytes``)."""
        self._sent_ns = 0
        self._process: Process | None = None
        self._reader: BufferedByteReceiveStream | None = None
        self._frozen = False
        """The process stopped itself after its last reply (Lambda's freeze, see ``_thaw``)."""
        self._state_fd: int | None = None
        """The process's ``/proc`` state, read before each thaw (``freezing.open_state``)."""
        self._request_ids: set[str] = set()
        """This process's invocations so far (their late observations are re-attributed)."""

    async def start(self) -> None:
        """Start the process and wait for the handler import (raises HandlerRefError)."""
        self._forget_state()  # a process that ended on its own was not closed
        # A local file opened once per cold start; not worth a thread.
        with open(self._log_path, "ab") as log:  # noqa: ASYNC230
            env = self.config.environ()
            # Each cold start draws its own fault sequence, reproducibly.
            seed = f"{env.get(FAULT_SEED_ENV, '0')}:{self.number}:{self.cold_starts}"
            env[FAULT_SEED_ENV] = seed
            env["LOADTEST_OBSERVATIONS"] = self._observations_path
            env[FREEZE_ENV] = "1" if FREEZE else "0"
            day = time.strftime("%Y/%m/%d", time.gmtime())
            env["AWS_LAMBDA_LOG_STREAM_NAME"] = f"{day}/[$LATEST]{os.urandom(16).hex()}"
            # Once per run (its variants share it, as they share its zygote): the same
            # bytes a deploy publishes.
            folder = run_folder(self._log_dir)
            layer_dir = os.path.join(folder, "layer", layer.PYTHON_DIR)
            if not os.path.isdir(layer_dir):  # noqa: ASYNC240 - a local temp folder, once per run
                layer.unpack(folder)
            zygote = await zygote_for(self._log_dir, layer_dir, env)
            if zygote is not None:
                self._process = await zygote.spawn(env, self._log_path)
            else:
                self._process = await anyio.open_process(
                    [sys.executable, "-c", layer.BOOTSTRAP, layer_dir, str(layer.package_dir())],
                    env=env,
                    stderr=log,
                    start_new_session=True,
                )
        assert self._process.stdout is not None
        self._reader = BufferedByteReceiveStream(self._process.stdout)
        self.cold_starts += 1
        try:
            with anyio.fail_after(READY_TIMEOUT_S):
                hello = await self._read()
        except TimeoutError as exc:
            # Ask the process where it is stuck (child_host registers a traceback dump on
            # SIGUSR1), so the message names the import line that hangs.
            with contextlib.suppress(ProcessLookupError, OSError):
                self._process.send_signal(signal.SIGUSR1)
                await anyio.sleep(0.5)
            await self.aclose()
            raise HandlerRefError(
                f"handler {self.config.handler.variant!r} did not finish importing within "
                f"{READY_TIMEOUT_S:g} s (a module-level call that blocks, such as a network "
                f"call or a lock, stops a cold start); where it was: {self._log_tail() or 'unknown'}"
            ) from exc
        except (anyio.EndOfStream, anyio.IncompleteRead) as exc:
            await self._reap()  # a zygote that died raises its own error here
            raise HandlerRefError(
                f"handler {self.config.handler.variant!r} did not start: "
                f"{self._log_tail() or type(exc).__name__}"
            ) from exc
        self.entry_file = str(hello.get("entry", ""))
        if not hello.get("ready"):
            await self.aclose()
            error = str(hello.get("error"))
            fixes = "; ".join(gap.sentence for gap in gaps_in(error))
            raise HandlerRefError(
                f"handler {self.config.handler.variant!r} could not be loaded: {error}"
                + (f"; {fixes}" if fixes else "")
            )

    async def _read(self) -> dict[str, Any]:
        assert self._reader is not None
        line = await self._reader.receive_until(b"\n", MAX_LINE_BYTES)
        message: dict[str, Any] = json.loads(line)
        return message

    def _observations(self, request_id: str) -> list[Observation]:
        """The complete observation lines written since the last call, for ``request_id``.

        Read after every invocation, however it ended: a line written before a
        timeout, a crash or a kill is there. A line cut off by a kill (no
        newline yet) is left for the next read.

        A line of an earlier invocation of this process was written by code the
        handler left running (a thread, a task) after that invocation returned:
        the environment is frozen between invocations (``FREEZE``), so it ran during
        this one, and is this invocation's (unfrozen, it is dropped: when it ran is
        not known). A write whose start was read with an earlier
        invocation stays there (as a write whose answer never came).
        """
        data = self._observation_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        self._observations_offset += len(complete)
        decoded = [
            decode(line.decode("utf-8"), self._shared, request_id) for line in complete.splitlines()
        ]
        begun_now = {o.call_id for o in decoded if isinstance(o, WriteBegun)}
        out = []
        for observation in decoded:
            owner = observation.request_id
            if owner == request_id:
                out.append(observation)
            elif (
                FREEZE
                and owner in self._request_ids
                and (not isinstance(observation, WriteRecord) or observation.call_id in begun_now)
            ):
                out.append(dataclasses.replace(observation, request_id=request_id))
        return out

    def _log_tail(self) -> str:
        return zygotes.log_tail(self._log_path)

    async def invoke(self, request_id: str, event: dict[str, Any]) -> Reply:
        """Run one invocation; a timeout or crash replaces the process."""
        if self._process is None or self._process.returncode is not None:
            await self.start()
        assert self._process is not None and self._process.stdin is not None
        timeout_ms = self.config.timeout_s * 1000
        request = {"request_id": request_id, "event": event, "timeout_ms": timeout_ms}
        sent_ns = time.monotonic_ns()
        self._sent_ns = sent_ns
        self._request_ids.add(request_id)
        try:
            request_line = (json.dumps(request) + "\n").encode()
            stdin = self._process.stdin
            if isinstance(stdin, zygotes.WatchedSocketStream):
                # Written while the process is still frozen, then continued: it reads the
                # request at once instead of waking to an empty socket and sleeping again.
                rest = stdin.send_now(request_line)
                await self._thaw()
                if rest:
                    await stdin.send(rest)
            else:
                await self._thaw()
                await stdin.send(request_line)
            deadline = anyio.current_time() + self.config.timeout_s
            stdout = self._process.stdout
            assert self._reader is not None
            if isinstance(stdout, zygotes.WatchedSocketStream) and not self._reader.buffer:
                # A forked environment's socket, watched by the event loop: the line waited
                # for under one timer.
                line = await stdout.receive_line(MAX_LINE_BYTES, deadline)
                if line is None:
                    raise TimeoutError
                reply = json.loads(line)
            else:
                # anyio.fail_after, without its two generator context managers around the
                # scope: every invocation waits under one.
                with anyio.CancelScope(deadline=deadline) as waiting:
                    reply = await self._read()
                if waiting.cancelled_caught and anyio.current_time() >= waiting.deadline:
                    raise TimeoutError
        except TimeoutError:
            await self.aclose()
            return self._failed(
                request_id,
                sent_ns,
                f"Task timed out after {self.config.timeout_s} seconds",
                timed_out=True,
            )
        except anyio.DelimiterNotFound:
            # The rest of the line is still in the pipe: this process cannot answer again.
            await self.aclose()
            return self._failed(
                request_id,
                sent_ns,
                f"Function.ResponseSizeTooLarge: the reply was over {MAX_LINE_BYTES >> 20} MiB "
                "and was not kept (Lambda refuses responses over 6 MB); the invocation failed",
            )
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError):
            tail = self._log_tail()
            code = await self._reap()
            return self._failed(
                request_id,
                sent_ns,
                exit_reason(code, self.config.memory_mb, request_id),
                # The timeout point fault ends the process as the function timeout does.
                timed_out=code == POINT_TIMEOUT_EXIT,
                crashed=code != POINT_TIMEOUT_EXIT,
                log_tail=tail,
            )
        crashed = bool(reply.get("crashed"))
        ack_lost = bool(reply.get("ack_lost"))
        left, ended = left_work_of(reply)
        if crashed:
            await self.aclose()  # it exits on purpose; reap it before the next invocation
        else:
            self._frozen = FREEZE  # it stopped itself right after the reply
        return Reply(
            ok=bool(reply["ok"]),
            timed_out=False,
            crashed=crashed,
            result=self._shared.share(keep_result(reply.get("result"))),
            error=memory_error(reply.get("error"), self.config.memory_mb),
            started_ns=int(reply["started_ns"]),
            ended_ns=int(reply["ended_ns"]),
            observed=collect(
                self._observations(request_id), ended_ns=int(reply["ended_ns"]), shared=self._shared
            ),
            log_tail=str(reply.get("log_tail", "")),
            ack_lost=ack_lost,
            response_json=bool(reply.get("response_json", True)),
            left_work=left,
            ended_work=ended,
        )

    async def _thaw(self) -> None:
        """Continue the process if it is frozen (``loadtest.emulation.environment.parent_freezing``)."""
        if not self._frozen or self._process is None:
            return
        self._frozen = False
        if self._state_fd is None:
            self._state_fd = freezing.open_state(self._process.pid)
        await freezing.thaw(self._process, self._state_fd)

    def _observation_bytes(self) -> bytes:
        """What the observation file holds past ``_observations_offset`` (nothing while
        the process has not made it).

        Read after every invocation through a descriptor kept until the process is
        retired, with one ``fstat`` and one ``pread``: opening, seeking, reading and closing
        the file each time cost the harness about 8 µs of CPU per invocation.
        """
        fd = self._observations_fd
        if fd is None:
            try:
                fd = self._observations_fd = os.open(self._observations_path, os.O_RDONLY)
            except FileNotFoundError:
                return b""
        unread = os.fstat(fd).st_size - self._observations_offset
        if unread <= 0:
            return b""
        return os.pread(fd, unread, self._observations_offset)

    def _forget_state(self) -> None:
        """Close the last process's ``/proc`` state descriptor and observation file."""
        state_fd, self._state_fd = self._state_fd, None
        if state_fd is not None:
            os.close(state_fd)
        observations_fd, self._observations_fd = self._observations_fd, None
        if observations_fd is not None:
            os.close(observations_fd)

    async def cut_off(self, request_id: str) -> Reply:
        """The invocation was cancelled (the run's deadline, or an interrupt): stop the
        process, keep its writes."""
        await self.aclose()
        return self._failed(request_id, self._sent_ns, CUT_OFF_ERROR, timed_out=True)

    def _failed(
        self,
        request_id: str,
        started_ns: int | None,
        error: str,
        *,
        timed_out: bool = False,
        crashed: bool = False,
        log_tail: str = "",
    ) -> Reply:
        """An invocation that gave no answer of its own, ended now, with the writes it made."""
        ended = time.monotonic_ns()
        return Reply(
            ok=False,
            timed_out=timed_out,
            crashed=crashed,
            result=None,
            error=error,
            started_ns=started_ns or ended,
            ended_ns=ended,
            observed=collect(self._observations(request_id), ended_ns=ended, shared=self._shared),
            log_tail=log_tail,
        )

    async def _reap(self) -> int | None:
        """Stop the process (if still running) and return its exit code.

        Raises ZygoteError when the process died with its zygote: that death is
        loadtest's, not the consumer's crash.
        """
        process = self._process
        await self.aclose()
        if isinstance(process, zygotes.ForkedProcess) and process.zygote_lost:
            zygote = _RUNS.get(self._log_dir)
            if zygote is not None and zygote.zygote is not None:
                raise zygote.zygote.died()
            raise zygotes.ZygoteError("the execution environments' zygote died")
        return None if process is None else process.returncode

    async def aclose(self) -> None:
        process, self._process = self._process, None
        frozen, self._frozen = self._frozen, False
        self._forget_state()
        self._reader = None
        self._request_ids.clear()
        if process is None:
            return
        with anyio.CancelScope(shield=True):
            if process.returncode is None and frozen:
                # Retired while frozen, as Lambda retires one: what the handler left
                # running never runs again (a stopped process dies of SIGKILL at once).
                freezing.retire(process)
                await process.wait()
            if process.returncode is None:
                process.terminate()
                if FREEZE:  # it may have stopped itself after a reply never read
                    process.send_signal(signal.SIGCONT)
                with anyio.move_on_after(3):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            await process.aclose()

"""One exhaustive search of ``explore`` run by several processes at once.

Owns the worker processes of an exploration. Each is forked before the caller opens its
own session (which it does only to shrink what they found), opens a session of its own
(``Session``: its own table and sinks on the same backend, the handler imported in it)
and searches the branches of the space it is handed
(``Exhaustive.subtree``), the first worker the whole space; the others are forked once
it has run ``SPREAD_AFTER`` schedules without covering it. When a worker runs out of
branches, another one splits off the first untried branch of its shallowest decision
(``Exhaustive.split``) for it. Each schedule goes back as run (``Ran``), with its place
in the one search's order (``Exhaustive.path``); the caller puts them in that order and
judges them with its own session (``Session.judge``), so every verdict, what a complete
outcome holds and every bug are what one search would find.

Why: a schedule's cost is the handler's own calls over HTTP and the backend answering
them, one delivery at a time; one search keeps a single core busy however many the
machine has.

A worker says in its ready message what its session made; one whose process ends before
its session unwinds (its handler called ``os._exit``, it was killed) ends the search
without a verdict (``ExploreError``), and what it made is deleted here.

Must not judge, shrink nor report (``loadtest.engine.explore``). Forked workers need
``fork`` (Linux, macOS): elsewhere ``workers_for`` answers 1 and the caller searches in
its own process.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any

from loadtest.aws import clients as aws
from loadtest.emulation.environment.child_guard import parent_death_signal
from loadtest.emulation.environment.handlers import HandlerRef
from loadtest.emulation.explore.runs import ExploreSettings
from loadtest.engine.explore_session import Ran, Session, drop_made
from loadtest.errors import ExploreError, InputError
from loadtest.model.explore.points import Fault
from loadtest.model.explore.strategies import Exhaustive
from loadtest.model.history.log import SentMessage
from loadtest.model.scenario.loading import Scenario

MOST_WORKERS = 4
"""Workers at most, however many cores: the backend serves them all."""

WORKERS_ENV = "LOADTEST_EXPLORE_WORKERS"
"""Overrides the number of workers (1: search in the caller's process)."""

_POLL_S = 0.5
"""How long the coordinator waits for a worker's message before it checks its budgets."""

_STOP_S = 10.0
"""How long a worker has to close its session once told to stop, before it is killed."""

SPREAD_AFTER = 8
"""Schedules the first worker runs alone before the others are forked. A worker costs
about as much CPU to start and end (its fork, its session, its environments' cold starts)
as several schedules: a space the first covers on its own (the guarded consumer's six
orders of three deliveries) never pays for them."""


def workers_for(requested: int | None = None, scenario: Scenario | None = None) -> int:
    """The workers to search with: ``requested``, else ``LOADTEST_EXPLORE_WORKERS``, else the
    cores this process may use (at most ``MOST_WORKERS``) on Linux and 1 elsewhere (macOS's
    system libraries are not safe in a forked copy unless asked for); 1 where processes
    cannot fork, and for a scenario whose consumer hard-codes a table's name (``[table]
    name``, a ``[[tables]]`` name): every session would make and drop that one table."""
    if requested is None and (env := os.environ.get(WORKERS_ENV, "").strip()):
        if not (env.isascii() and env.isdigit()) or int(env) < 1:
            raise InputError(
                f"{WORKERS_ENV}={env!r}: expected a number of processes, 1 or more "
                "(1: search in the explore process alone)"
            )
        requested = int(env)
    # A forked copy starts with the caller's imports done; its open connections are
    # dropped (``_drop_inherited_connections``), so no socket is shared.
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    if scenario is not None and fixed_names(scenario):
        return 1
    if requested is None:
        if not sys.platform.startswith("linux"):
            return 1
        requested = min(len(os.sched_getaffinity(0)), MOST_WORKERS)
    return max(1, requested)


def warm_in_background() -> threading.Thread:
    """Load botocore's DynamoDB model, endpoint rules and list of services into boto3's
    default session, in a thread started now (``join`` it before forking workers).

    Every session of an exploration (each worker's, this process's) builds a DynamoDB
    client on that session, and the handler's clients are built on it too: loaded once
    here, while the embedded backend starts, the workers inherit it warm instead of each
    reading the same JSON files again (about 80 ms of CPU apiece); so too boto3's S3
    transfer modules, which every session patches (``transfers``: 15-35 ms apiece). No
    request is sent and no credentials are read (the client is given fixed ones)."""
    thread = threading.Thread(target=_warm, name="loadtest-warm-clients", daemon=True)
    thread.start()
    return thread


def _warm() -> None:
    with contextlib.suppress(Exception):  # only ever a head start: the sessions load it anyway
        import boto3
        import boto3.s3.inject
        import boto3.s3.transfer  # each session patches it: imported once, here

        if boto3.DEFAULT_SESSION is None:
            boto3.setup_default_session()
        assert boto3.DEFAULT_SESSION is not None
        boto3.DEFAULT_SESSION.client(
            "dynamodb",
            region_name="us-east-1",
            endpoint_url="http://127.0.0.1:9",
            aws_access_key_id="warm",
            aws_secret_access_key="warm",
        )


def fixed_names(scenario: Scenario) -> tuple[str, ...]:
    """The tables the scenario's consumer hard-codes (no run may make them twice at once)."""
    setup = scenario.function
    names = [setup.table_name] if setup.table_name else []
    return (*names, *(t.name for t in setup.tables if t.name))


@dataclass
class Searched:
    """What the workers ran, and what their searches say about the space."""

    ran: list[tuple[tuple[int, ...], Ran]] = field(default_factory=list)
    """Each schedule run (abandoned ones left out) with its place in the search's order, in
    the order they arrived."""
    covered: bool = False
    """Every branch was searched to its end."""
    blocked: int = 0
    nondeterministic: int = 0
    executions: int = 0
    """Executions run, abandoned ones included: when the space is covered, as many as one
    search runs, so the caller numbers the schedules it runs next as one search would."""
    stopped_by: str | None = None
    """The budget that cut the search (None: it ran to the end of the space)."""


@dataclass
class _Worker:
    number: int
    process: Any
    conn: Connection
    busy: bool = False
    starting: bool = True
    """Forked, its ready message not yet read: it is handed nothing."""
    asked: bool = False
    """A split was asked of it and not yet answered."""
    made: tuple[list[str], list[Any]] = ([], [])
    """The tables and sinks its session made (its ready message says them): deleted here
    when its process ends without deleting them itself."""


class Workers:
    """The worker processes of one exploration, the first forked when made and the others
    by ``search`` (all before the caller opens its own session, so that no thread of it is
    copied); ``search`` runs the space with them and tells them to stop, ``close`` (or
    leaving the ``with`` block) waits for them to end (and stops them on every other path)."""

    def __init__(
        self,
        scenario: Scenario,
        ref: HandlerRef,
        target: aws.Target,
        settings: ExploreSettings,
        messages: Sequence[SentMessage],
        *,
        workers: int,
        local_first: bool,
        limits: Mapping[Fault, int],
    ) -> None:
        self._context = multiprocessing.get_context("fork")
        self._target = target
        self._pool: list[_Worker] = []
        self._workers = workers
        # Found here, before forking: a child that walked every object itself would copy
        # nearly all of its memory pages (each object's reference count is written).
        inherited = _pooled_connections()
        self._args = (
            workers,
            scenario,
            ref,
            target,
            settings,
            list(messages),
            local_first,
            dict(limits),
            inherited,
        )
        try:
            self._fork(0)
        except BaseException:
            self.close()
            raise

    def _fork(self, number: int) -> None:
        """Start worker ``number`` (of ``workers``: it numbers its schedules by both). This
        process opens no session while workers search, so a later fork copies no thread
        of it either."""
        mine, theirs = self._context.Pipe()
        process = self._context.Process(
            target=_work,
            args=(theirs, number, *self._args),
            name=f"loadtest-explore-{number}",
            daemon=True,
        )
        # The objects the child starts with are left out of its collections, which would
        # otherwise write to each one and copy its page (about a fifth of a worker's
        # minor faults, 10 ms of its CPU); this process collects them again at once.
        gc.freeze()
        try:
            process.start()
        finally:
            gc.unfreeze()
        theirs.close()
        self._pool.append(_Worker(number, process, mine))

    def _spread(self) -> None:
        """Fork the workers not forked yet; each is handed a branch once it is ready."""
        try:
            for number in range(len(self._pool), self._workers):
                self._fork(number)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        pool, self._pool = self._pool, []
        _stop_all(pool)
        for worker in pool:
            if worker.process.exitcode != 0 and any(worker.made):
                # It ended before its session could unwind: what it made goes here.
                drop_made(self._target, *worker.made)

    def search(self, stop: Callable[[int], str | None]) -> Searched:
        """Search the whole space until it is covered or ``stop`` (called with the
        schedules run so far) names the budget that ran out; the workers are told to stop
        after it (``close`` waits for them)."""
        pool = self._pool
        searched = Searched()
        try:
            _expect_ready(pool[0])
            _send(pool[0], ("task", None))
            pool[0].busy = True
            every_search_covered = True
            # Branches handed away while no worker was idle: the next idle one takes one.
            spare: list[Any] = []
            while any(w.busy for w in pool) or spare:
                cut = stop(len(searched.ran))
                if cut is not None:
                    searched.stopped_by = cut
                    break
                if len(pool) < self._workers and len(searched.ran) >= SPREAD_AFTER:
                    self._spread()
                _hand_out(pool, spare)
                _ask_for_branches(pool)
                by_conn = {w.conn: w for w in pool}
                for conn in wait(list(by_conn), timeout=_POLL_S):
                    worker = by_conn[conn]  # type: ignore[index]
                    every_search_covered &= _take(worker, pool, searched, spare)
            else:
                searched.covered = every_search_covered
        finally:
            # Told now, waited for by ``close``: they drop their tables and end while the
            # caller judges what they ran.
            _tell_to_stop(pool)
        return searched


def _hand_out(pool: Sequence[_Worker], spare: list[Any]) -> None:
    """Give the spare branches to idle workers, one each."""
    for worker in pool:
        if not spare:
            return
        if not worker.busy and not worker.starting:
            _send(worker, ("task", spare.pop(0)))
            worker.busy = True


def _take(worker: _Worker, pool: Sequence[_Worker], searched: Searched, spare: list[Any]) -> bool:
    """Take one message of ``worker``; False when it says its search did not cover its
    branch."""
    try:
        message = worker.conn.recv()
    except (EOFError, OSError):  # a worker that died: its end of the pipe is gone
        raise _ended(worker, "while it searched") from None
    kind = message[0]
    if kind == "ready":
        worker.made, worker.starting = message[1], False
        _hand_out(pool, spare)
    elif kind == "ran":
        searched.ran.append((message[1], message[2]))
    elif kind == "branch":
        worker.asked = False  # every request gets exactly one answer
        if message[1] is not None:
            spare.append(message[1])
            _hand_out(pool, spare)
    elif kind == "idle":
        # A request it has not read yet is still answered (with nothing): ``asked`` stays.
        worker.busy = False
        _, blocked, nondeterministic, covered, executions = message
        searched.blocked += blocked
        searched.nondeterministic += nondeterministic
        searched.executions += executions
        return bool(covered)
    elif kind == "error":
        raise message[1]
    return True


def _ask_for_branches(pool: Sequence[_Worker]) -> None:
    """Ask busy workers to split off a branch, one request per idle worker (an idle worker's
    own unanswered request counts among them)."""
    idle = sum(1 for w in pool if not w.busy and not w.starting)
    waiting = sum(1 for w in pool if w.asked)
    for worker in pool:
        if idle <= waiting:
            return
        if worker.busy and not worker.asked:
            _send(worker, ("split",))
            worker.asked = True
            waiting += 1


def _expect_ready(worker: _Worker) -> None:
    try:
        message = worker.conn.recv()
    except (EOFError, OSError):
        raise _ended(worker, "before it was ready") from None
    if message[0] == "error":
        raise message[1]
    worker.made, worker.starting = message[1], False


def _send(worker: _Worker, message: tuple[Any, ...]) -> None:
    try:
        worker.conn.send(message)
    except OSError:  # a worker that died: its end of the pipe is gone
        raise _ended(worker, "while it searched") from None


def _ended(worker: _Worker, when: str) -> ExploreError:
    worker.process.join(_STOP_S)
    code = worker.process.exitcode
    status = f"killed by signal {-code}" if code is not None and code < 0 else f"exit {code}"
    return ExploreError(
        f"explore worker {worker.number} ended {when} ({status}): the handler may have "
        "ended its process (os._exit, a signal); --workers 1 runs the search in this "
        "process"
    )


def _tell_to_stop(pool: Sequence[_Worker]) -> None:
    for worker in pool:
        with contextlib.suppress(OSError, ValueError):
            worker.conn.send(("stop",))


def _stop_all(pool: Sequence[_Worker]) -> None:
    _tell_to_stop(pool)
    for worker in pool:
        worker.process.join(_STOP_S)
        if worker.process.is_alive():
            worker.process.terminate()  # SIGTERM: it closes its session (drops its table)
            worker.process.join(_STOP_S)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join()
        worker.conn.close()


def _pooled_connections() -> list[Any]:
    """The caller's urllib3 connection pools (the clients of an exploration it ran before, a
    user's cached one), for its workers to forget (``_drop_inherited_connections``)."""
    try:
        from urllib3.connectionpool import HTTPConnectionPool
    except ImportError:  # pragma: no cover - botocore always brings urllib3
        return []
    # An instance of a class defined in Python refers to its class for the collector, so
    # the collector finds the pools itself: a third of the time of testing every object
    # here (about 26 ms of the explore process's CPU before it forks, on its critical path).
    kinds: list[type] = []
    found = [HTTPConnectionPool]
    while found:
        kind = found.pop()
        kinds.append(kind)
        found.extend(kind.__subclasses__())
    return [o for o in gc.get_referrers(*kinds) if isinstance(o, HTTPConnectionPool)]


def _drop_inherited_connections(pools: Sequence[Any]) -> None:
    """Forget the pooled HTTP connections this copy inherited from the caller in ``pools``
    (``_pooled_connections``, found before the fork): two processes on one socket read
    each other's answers. The pools stay usable and open connections of their own; the
    caller's sockets stay open for the caller (closing a copied descriptor does not end
    the connection)."""
    for pool in pools:
        queue = pool.pool
        if queue is None:
            continue
        with queue.mutex:
            held = [c for c in queue.queue if c is not None]
            queue.queue = type(queue.queue)(None for _ in queue.queue)
        for connection in held:
            with contextlib.suppress(Exception):
                connection.close()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _work(
    conn: Connection,
    number: int,
    workers: int,
    scenario: Scenario,
    ref: HandlerRef,
    target: aws.Target,
    settings: ExploreSettings,
    messages: list[SentMessage],
    local_first: bool,
    limits: Mapping[Fault, int],
    inherited: Sequence[Any] = (),
) -> None:
    """A worker: open a session, then search the branches it is handed until told to stop."""
    # A coordinator that dies (even by SIGKILL) stops its workers; SIGTERM unwinds the session,
    # so the worker's table and sinks are removed.
    parent_death_signal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, _interrupt)
    # Ctrl-C and a closed terminal reach the whole process group: the caller decides, and
    # stops its workers (they must not end first and leave it without an answer).
    for name in ("SIGINT", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    _drop_inherited_connections(inherited)
    # Each worker numbers its schedules apart from the others' (worker 0: 0, W, 2W, ...):
    # no two schedules of the exploration share a business or message id, so state the
    # consumer keeps outside its session's table (a resource it made itself) never mixes.
    counter = number
    try:
        session = Session(scenario, ref, target, settings)
        with session.open():
            conn.send(("ready", session.made))
            while True:
                message = conn.recv()
                if message[0] == "stop":
                    return
                if message[0] == "split":  # asked as it went idle: nothing left to give
                    conn.send(("branch", None))
                    continue
                way_in = message[1]
                space = (
                    Exhaustive(local_first=local_first, limits=limits)
                    if way_in is None
                    else Exhaustive.subtree(way_in, local_first=local_first, limits=limits)
                )
                executions = 0
                while True:
                    while conn.poll():
                        asked = conn.recv()
                        if asked[0] == "stop":
                            return
                        conn.send(("branch", space.split()))
                    chooser = space.execution()
                    if chooser is None:
                        break
                    ran = session.search(chooser, messages, counter)
                    counter += workers
                    executions += 1
                    if ran is not None:
                        conn.send(("ran", space.path(), ran))
                conn.send(
                    ("idle", space.blocked, space.nondeterministic, space.covered, executions)
                )
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        return
    except BaseException as exc:
        with contextlib.suppress(Exception):
            try:
                conn.send(("error", exc))
            except Exception:  # not picklable: its words
                conn.send(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
        return
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()

"""Work a handler leaves running when it returns: threads it started and calls it handed to
a thread pool that had not finished when its invocation returned.

Lambda freezes the whole execution environment once the handler returns: such work runs on
only while the environment is invoked again, and ends unfinished when the environment is
retired ("make sure that any background processes or callbacks in your code are complete
before the code exits", the Lambda execution environment's documentation). A publish left
to a thread is an event that may never be sent; the run has to know.

Owns the two patches that see such work, installed once per environment (``install``):

- ``threading.Thread.start``: a thread started by code running for an invocation (the
  handler, or work it started) runs with the record mark of the code that started it
  (``loadtest.observer.record_marks``), so what it writes or sends is tied to the record it
  was started for, whenever it runs; and it is tracked until its ``run`` returns. A thread
  pool's own threads are not tracked (they outlive their work by design): the calls handed
  to the pool are.
- ``concurrent.futures.ThreadPoolExecutor.submit``: a call submitted for an invocation runs
  with the submitter's record mark and is tracked until its future is done.
- ``multiprocessing.pool.ThreadPool``'s ``apply_async`` (once the consumer has imported
  ``multiprocessing.pool``): the same for a call handed to a thread pool of that kind, tracked
  until it returns (a process pool's calls run in other processes, and are left as they
  are).
- ``asyncio``'s ``BaseEventLoop.create_task`` (once the consumer has imported asyncio): a
  task created for an invocation is tracked until it is done; one left pending on a loop
  the handler keeps runs on only when that loop runs again. One still pending when
  ``asyncio.run`` closes its loop is cancelled there, before it finished its work (a
  "fire and forget" task under ``asyncio.run``): it is never finished, so it is reported
  left and never ended, saying so. (A task keeps the record mark of the code that created
  it by itself: tasks copy their context.)

Work started outside an invocation (at import, the init phase) is neither marked nor
tracked. Only ``loadtest.observer.record_marks``' own variable is set in the new thread:
the consumer's context variables behave exactly as without the observer.

At the end of each invocation ``LeftWork.returned`` lists the work that invocation started
and left unfinished (``left``), and ``take_ended`` the work earlier invocations left that
has finished since: whatever was left and never reported ended was still unfinished when
its environment was retired (``loadtest.model.checker.left_work`` reads that). Ships in
the observer layer: imports nothing beyond the standard library and ``record_marks``.
"""

from __future__ import annotations

import concurrent.futures
import contextvars
import itertools
import sys
import threading
from collections.abc import Callable
from concurrent.futures import thread as futures_thread
from typing import Any

from loadtest.observer import record_marks


class _Invocation:
    """One invocation's share of the tracking: the work it started."""

    __slots__ = ("started", "work")

    def __init__(self, work: LeftWork) -> None:
        self.work = work
        self.started: list[str] = []


_INVOCATION: contextvars.ContextVar[_Invocation | None] = contextvars.ContextVar(
    "loadtest_invocation", default=None
)
"""The invocation the calling code runs for (None outside one): the handler's, and the
work it started (its threads, pool calls and tasks run for it)."""

_POOL_MODULES = frozenset({futures_thread.__name__, "multiprocessing.pool"})
"""Where a thread pool's own threads run from (``ThreadPoolExecutor``'s workers,
``multiprocessing.pool.ThreadPool``'s workers and handlers): such a thread is the pool's,
idle between the calls handed to it, not work."""


def _pool_thread(thread: threading.Thread) -> bool:
    target = getattr(thread, "_target", None)
    return getattr(target, "__module__", None) in _POOL_MODULES


_installed: dict[str, Any] = {}


class LeftWork:
    """The work one execution environment's invocations started, until it finishes."""

    def __init__(self, environment: str) -> None:
        self._prefix = environment
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._running: dict[str, tuple[str, str]] = {}
        """Work started for an invocation and not finished: id -> (record mark, what)."""
        self._left: set[str] = set()
        """Work reported left by an invocation that has not finished yet."""
        self._ended: list[str] = []
        """Work reported left that finished since the last ``take_ended``."""

    # --- the invocation's bounds (the entry point's) ---

    def begin(self) -> contextvars.Token[_Invocation | None]:
        """The handler is about to run (in this thread or task): what it starts from here
        on is tracked; ``returned`` takes the token back."""
        if _installed and "create_task" not in _installed and "asyncio" in sys.modules:
            _patch_asyncio()
        if _installed and "apply_async" not in _installed and _POOL in sys.modules:
            _patch_thread_pool()
        return _INVOCATION.set(_Invocation(self))

    def returned(self, token: contextvars.Token[_Invocation | None]) -> list[list[str]]:
        """The handler returned: the work it started and left running, as
        ``[id, record mark, what]`` rows (the reply's ``left``)."""
        invocation = _INVOCATION.get()
        _INVOCATION.reset(token)
        if invocation is None:
            return []
        with self._lock:
            rows = [
                [work_id, *self._running[work_id]]
                for work_id in invocation.started
                if work_id in self._running
            ]
            self._left.update(row[0] for row in rows)
            invocation.started = []
        return rows

    def take_ended(self) -> list[str]:
        """The ids of work reported left that has finished since the last call."""
        with self._lock:
            ended, self._ended = self._ended, []
        return ended

    # --- the work itself ---

    def _start(self, invocation: _Invocation, what: str) -> tuple[str, str]:
        work_id = f"{self._prefix}-{next(self._ids)}"
        record = record_marks.current_record()
        with self._lock:
            self._running[work_id] = (record, what)
            invocation.started.append(work_id)
        return work_id, record

    def _abandon(self, work_id: str, why: str) -> None:
        """The work will never finish (its task was cancelled by its loop's closing): it
        stays unfinished, ``why`` added to what it is."""
        with self._lock:
            if work_id in self._running:
                record, what = self._running[work_id]
                self._running[work_id] = (record, f"{what}, {why}")

    def _finish(self, work_id: str) -> None:
        with self._lock:
            self._running.pop(work_id, None)
            if work_id in self._left:
                self._left.discard(work_id)
                self._ended.append(work_id)


def _run_as(invocation: _Invocation, record: str, call: Callable[[], Any]) -> Any:
    """Run ``call`` for ``invocation``, marked on ``record``; the thread's context as it
    was afterwards (a pool's worker runs other calls next)."""
    token = _INVOCATION.set(invocation)
    marked = record_marks.mark(record)
    try:
        return call()
    finally:
        record_marks.unmark(marked)
        _INVOCATION.reset(token)


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or fn)


def install() -> None:
    """Patch ``Thread.start`` and ``ThreadPoolExecutor.submit`` (once per process)."""
    if _installed:
        return
    start = threading.Thread.start
    submit = concurrent.futures.ThreadPoolExecutor.submit

    def tracked_start(self: threading.Thread) -> None:
        invocation = _INVOCATION.get()
        if invocation is None or _pool_thread(self):
            start(self)
            return
        work = invocation.work
        work_id, record = work._start(invocation, f"thread {self.name!r}")
        run = self.run

        def run_tracked() -> None:
            try:
                _run_as(invocation, record, run)
            finally:
                work._finish(work_id)

        # An instance attribute: ``Thread._bootstrap_inner`` calls ``self.run()``, a
        # subclass's own ``run`` included.
        self.run = run_tracked  # type: ignore[method-assign]
        try:
            start(self)
        except BaseException:
            work._finish(work_id)
            del self.run
            raise

    def tracked_submit(
        self: concurrent.futures.ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any
    ) -> concurrent.futures.Future[Any]:
        invocation = _INVOCATION.get()
        if invocation is None:
            return submit(self, fn, *args, **kwargs)
        work = invocation.work
        work_id, record = work._start(invocation, f"{_name(fn)} handed to a thread pool")
        try:
            future = submit(self, _run_as, invocation, record, lambda: fn(*args, **kwargs))
        except BaseException:
            work._finish(work_id)
            raise
        future.add_done_callback(lambda _: work._finish(work_id))
        return future

    _installed.update(start=start, submit=submit)
    threading.Thread.start = tracked_start  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.submit = tracked_submit  # type: ignore[method-assign,assignment]


def _patch_asyncio() -> None:
    """Patch ``BaseEventLoop.create_task`` (once asyncio is imported: an environment whose
    consumer never uses it does not import it): a task created for an invocation is
    tracked until it is done. A task left pending on a loop the handler keeps runs on only
    when the loop runs again, in a later invocation of the environment, if there is one."""
    import asyncio.base_events
    import asyncio.runners
    import weakref

    create_task = asyncio.base_events.BaseEventLoop.create_task
    # asyncio.run's shutdown (a private function: where a Python has none, such tasks are
    # only done, as without the observer).
    cancel_all = getattr(asyncio.runners, "_cancel_all_tasks", None)
    closing: weakref.WeakSet[Any] = weakref.WeakSet()
    """Tasks ``asyncio.run`` cancelled as it closed their loop."""

    def tracked_create_task(self: Any, coro: Any, **kwargs: Any) -> Any:
        task = create_task(self, coro, **kwargs)
        invocation = _INVOCATION.get()
        if invocation is not None:
            work = invocation.work
            what = (
                f"asyncio task {task.get_name()!r} ({_name(getattr(coro, '__qualname__', coro))})"
            )
            work_id, _ = work._start(invocation, what)

            def done(task: Any) -> None:
                if task in closing and task.cancelled():
                    work._abandon(work_id, "cancelled when asyncio.run closed its loop")
                else:
                    work._finish(work_id)

            task.add_done_callback(done)
        return task

    def tracked_cancel_all(loop: Any) -> Any:
        closing.update(asyncio.all_tasks(loop))
        assert cancel_all is not None  # installed only where it is
        return cancel_all(loop)

    _installed["create_task"] = create_task
    asyncio.base_events.BaseEventLoop.create_task = tracked_create_task  # type: ignore[method-assign]
    if cancel_all is not None:
        _installed["cancel_all"] = cancel_all
        asyncio.runners._cancel_all_tasks = tracked_cancel_all  # type: ignore[attr-defined]


_POOL = "multiprocessing.pool"


def _patch_thread_pool() -> None:
    """Patch ``multiprocessing.pool.Pool.apply_async`` (once the module is imported): a call
    handed to a ``ThreadPool`` for an invocation runs with the caller's record mark and is
    tracked until it returns."""
    import multiprocessing.pool

    apply_async = multiprocessing.pool.Pool.apply_async

    def tracked_apply_async(
        self: Any, func: Any, args: Any = (), kwds: Any = None, *more: Any, **options: Any
    ) -> Any:
        invocation = _INVOCATION.get()
        if invocation is None or not isinstance(self, multiprocessing.pool.ThreadPool):
            return apply_async(self, func, args, {} if kwds is None else kwds, *more, **options)
        work = invocation.work
        work_id, record = work._start(invocation, f"{_name(func)} handed to a thread pool")
        given = {} if kwds is None else kwds

        def tracked() -> Any:
            try:
                return _run_as(invocation, record, lambda: func(*args, **given))
            finally:
                work._finish(work_id)

        try:
            return apply_async(self, tracked, (), {}, *more, **options)
        except BaseException:
            work._finish(work_id)
            raise

    _installed["apply_async"] = apply_async
    multiprocessing.pool.Pool.apply_async = tracked_apply_async  # type: ignore[method-assign]


def uninstall() -> None:
    """Put ``Thread.start``, ``ThreadPoolExecutor.submit``, ``create_task`` and
    ``apply_async`` back."""
    if not _installed:
        return
    if "apply_async" in _installed:
        import multiprocessing.pool

        multiprocessing.pool.Pool.apply_async = _installed.pop("apply_async")  # type: ignore[method-assign]
    if "create_task" in _installed:
        import asyncio.base_events

        asyncio.base_events.BaseEventLoop.create_task = _installed.pop("create_task")  # type: ignore[method-assign]
        if "cancel_all" in _installed:
            import asyncio.runners

            asyncio.runners._cancel_all_tasks = _installed.pop("cancel_all")  # type: ignore[attr-defined]
    threading.Thread.start = _installed.pop("start")  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.submit = _installed.pop("submit")  # type: ignore[method-assign]

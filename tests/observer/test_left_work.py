"""Work a handler leaves running: threads and pool calls started for an invocation are
tracked until they finish, and run marked on the record they were started for."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.pool import ThreadPool

import pytest

from loadtest.observer import left_work, record_marks


@pytest.fixture
def work() -> Iterator[left_work.LeftWork]:
    # On no record, whatever an earlier test in this process left marked.
    unmarked = record_marks.mark("")
    left_work.install()
    try:
        yield left_work.LeftWork("env")
    finally:
        left_work.uninstall()
        record_marks.unmark(unmarked)


def test_a_thread_left_running_is_reported_left_then_ended(work: left_work.LeftWork) -> None:
    release = threading.Event()
    marks: list[str] = []
    token = work.begin()
    marked = record_marks.mark("message-1")

    def announce() -> None:
        release.wait(5)
        marks.append(record_marks.current_record())

    thread = threading.Thread(target=announce, name="announcer")
    thread.start()
    record_marks.unmark(marked)
    assert work.returned(token) == [["env-1", "message-1", "thread 'announcer'"]]
    assert work.take_ended() == []
    release.set()
    thread.join(5)
    assert marks == ["message-1"]
    assert work.take_ended() == ["env-1"]
    assert work.take_ended() == []


def test_a_thread_joined_before_the_return_is_not_left(work: left_work.LeftWork) -> None:
    token = work.begin()
    thread = threading.Thread(target=time.sleep, args=(0.01,))
    thread.start()
    thread.join()
    assert work.returned(token) == []
    assert work.take_ended() == []


def test_pool_calls_are_tracked_and_the_pools_idle_threads_are_not(
    work: left_work.LeftWork,
) -> None:
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        token = work.begin()
        marked = record_marks.mark("message-2")
        assert pool.submit(record_marks.current_record).result(5) == "message-2"
        record_marks.unmark(marked)
        release = threading.Event()
        pending = pool.submit(release.wait, 5)
        left = work.returned(token)
        assert [row[1:] for row in left] == [["", "Event.wait handed to a thread pool"]]
        release.set()
        assert pending.result(5) is True
        assert work.take_ended() == [left[0][0]]
        # The worker threads are idle and alive: no work of the invocation's.
        assert all(t.is_alive() for t in pool._threads)
    finally:
        pool.shutdown()


def test_a_multiprocessing_thread_pool_left_open_is_no_work_left(
    work: left_work.LeftWork,
) -> None:
    token = work.begin()
    pool = ThreadPool(2)  # never closed: its threads stay, idle
    try:
        assert pool.map(abs, [-1, -2]) == [1, 2]
        assert work.returned(token) == []
    finally:
        pool.terminate()


def test_a_call_handed_to_a_multiprocessing_thread_pool_is_tracked_and_marked(
    work: left_work.LeftWork,
) -> None:
    pool = ThreadPool(2)
    try:
        token = work.begin()  # multiprocessing.pool is imported: apply_async is followed
        marked = record_marks.mark("message-4")
        assert pool.apply_async(record_marks.current_record).get(5) == "message-4"
        release = threading.Event()
        pending = pool.apply_async(release.wait, (5,))
        record_marks.unmark(marked)
        left = work.returned(token)
        assert [row[1:] for row in left] == [["message-4", "Event.wait handed to a thread pool"]]
        release.set()
        assert pending.get(5) is True
        deadline = time.monotonic() + 5
        ended: list[str] = []
        while not ended and time.monotonic() < deadline:
            ended = work.take_ended()
            time.sleep(0.01)
        assert ended == [left[0][0]]
        # Outside an invocation, a call is handed over untouched.
        assert pool.apply_async(record_marks.current_record).get(5) == ""
    finally:
        pool.terminate()


def test_work_started_outside_an_invocation_is_neither_marked_nor_tracked(
    work: left_work.LeftWork,
) -> None:
    marked = record_marks.mark("message-3")
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.append(record_marks.current_record()))
    thread.start()
    thread.join()
    record_marks.unmark(marked)
    assert seen == [""]
    assert work.returned(work.begin()) == []


def test_the_consumers_context_variables_are_not_carried_into_its_threads(
    work: left_work.LeftWork,
) -> None:
    users: contextvars.ContextVar[str] = contextvars.ContextVar("users", default="unset")
    users.set("in the handler")
    seen: list[str] = []
    token = work.begin()
    thread = threading.Thread(target=lambda: seen.append(users.get()))
    thread.start()
    thread.join()
    work.returned(token)
    assert seen == ["unset"]  # as without the observer: a new thread starts empty


def test_an_asyncio_task_left_pending_on_a_kept_loop_is_left_until_the_loop_runs_it(
    work: left_work.LeftWork,
) -> None:
    loop = asyncio.new_event_loop()
    release = asyncio.Event()

    async def announce() -> str:
        await release.wait()
        return record_marks.current_record()

    async def handler() -> asyncio.Task[str]:
        record_marks.mark("message-4")
        awaited = asyncio.ensure_future(asyncio.sleep(0))
        await awaited  # done before the return: not left
        return asyncio.ensure_future(announce())

    try:
        token = work.begin()
        task = loop.run_until_complete(handler())
        left = work.returned(token)
        ((_, record, what),) = left
        assert record == "message-4"
        assert what.startswith(f"asyncio task {task.get_name()!r} (") and what.endswith(
            ".announce)"
        )
        loop.call_soon(release.set)
        assert loop.run_until_complete(task) == "message-4"
        assert work.take_ended() == [left[0][0]]
    finally:
        loop.close()


def test_a_task_asyncio_run_cancels_as_it_closes_its_loop_never_finishes(
    work: left_work.LeftWork,
) -> None:
    async def announce() -> None:
        await asyncio.sleep(5)

    async def handler() -> None:
        asyncio.create_task(announce())  # noqa: RUF006 - the bug shown
        await asyncio.create_task(asyncio.sleep(0))

    token = work.begin()
    marked = record_marks.mark("message-5")
    asyncio.run(handler())
    record_marks.unmark(marked)
    left = work.returned(token)
    [(_, record, what)] = left
    assert record == "message-5"
    assert what.startswith("asyncio task 'Task-")
    assert what.endswith("announce), cancelled when asyncio.run closed its loop")
    assert work.take_ended() == []


def test_uninstall_puts_thread_start_back() -> None:
    left_work.uninstall()  # as no earlier test in this process left it installed
    start, apply_async = threading.Thread.start, ThreadPool.apply_async
    left_work.install()
    work = left_work.LeftWork("env")
    work.returned(work.begin())  # the pool's patch comes with an invocation
    assert threading.Thread.start is not start and ThreadPool.apply_async is not apply_async
    left_work.uninstall()
    assert threading.Thread.start is start and ThreadPool.apply_async is apply_async

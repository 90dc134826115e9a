"""loadtest.observer.record_marks: which record of a batch the handler is on."""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import threading

from loadtest.observer import record_marks
from loadtest.observer.record_marks import TrackedRecord, current_record, tracked


def _event(*ids: str) -> dict[str, object]:
    return {"Records": [{"messageId": i, "body": json.dumps({"id": i})} for i in ids]}


def test_reading_a_records_body_or_message_id_marks_it() -> None:
    record_marks.clear()
    event = tracked(_event("m-1", "m-2"))
    first, second = event["Records"]
    assert current_record() == ""
    assert first["body"]
    assert current_record() == "m-1"
    assert second.get("messageId") == "m-2"
    assert current_record() == "m-2"
    assert first.get("attributes") is None  # other fields mark nothing
    assert current_record() == "m-2"
    record_marks.clear()
    assert current_record() == ""


def test_a_tracked_record_is_the_record_it_stands_for() -> None:
    plain = _event("m-1")["Records"][0]  # type: ignore[index]
    record = TrackedRecord(plain)
    assert record == plain and isinstance(record, dict)
    assert json.dumps(record) == json.dumps(plain)
    assert type(pickle.loads(pickle.dumps(record))) is dict
    assert type(copy.deepcopy(record)) is dict
    assert tracked("not an event") == "not an event"
    assert tracked({"Records": "odd"}) == {"Records": "odd"}


def test_tasks_and_threads_keep_their_own_mark() -> None:
    record_marks.clear()
    records = tracked(_event("m-1", "m-2", "m-3"))["Records"]
    seen: dict[str, str] = {}

    async def process(record: TrackedRecord) -> None:
        mine = record["messageId"]
        await asyncio.sleep(0.01)  # the others mark theirs meanwhile
        seen[mine] = current_record()

    async def all_of_them() -> None:
        await asyncio.gather(*(process(r) for r in records))

    asyncio.run(all_of_them())
    assert seen == {"m-1": "m-1", "m-2": "m-2", "m-3": "m-3"}

    barrier = threading.Barrier(3)
    threaded: dict[str, str] = {}

    def work(record: TrackedRecord) -> None:
        mine = record["body"] and dict.__getitem__(record, "messageId")
        barrier.wait()
        threaded[mine] = current_record()

    threads = [threading.Thread(target=work, args=(r,)) for r in records]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert threaded == {"m-1": "m-1", "m-2": "m-2", "m-3": "m-3"}
    assert current_record() == ""

"""A stub SQS endpoint that answers ``SendMessageBatch`` at once: bench tooling only.

``python -m benchmarks.stub_sqs --port N`` (or :class:`StubSqs`) serves
HTTP/1.1 with keep-alive on localhost and answers every request as a successful
``SendMessageBatch`` in SQS's JSON protocol (a made-up MessageId and the body's real
MD5 per entry), whatever the target. It keeps nothing, so what a producer achieves
against it is the producer's own ceiling, not a backend's. It must never be on the
product path: no queue semantics, no other operation, no signature check.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any

_OK_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: "


def _answer(body: bytes) -> bytes:
    try:
        entries: list[dict[str, Any]] = json.loads(body).get("Entries", [])
    except ValueError:
        entries = []
    successful = [
        {
            "Id": e.get("Id", ""),
            "MessageId": str(uuid.uuid4()),
            "MD5OfMessageBody": hashlib.md5(
                str(e.get("MessageBody", "")).encode(), usedforsecurity=False
            ).hexdigest(),
        }
        for e in entries
    ]
    payload = json.dumps({"Successful": successful, "Failed": []}).encode()
    return _OK_HEAD + str(len(payload)).encode() + b"\r\n\r\n" + payload


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            writer.write(_answer(body))
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


def serve(sock: socket.socket) -> None:
    """Serve on an already bound, listening socket until the process is killed."""

    async def main() -> None:
        server = await asyncio.start_server(_serve_connection, sock=sock)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class StubSqs:
    """The stub in a child process (so its CPU is not the producer's): a context manager."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.endpoint_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._process = multiprocessing.get_context("spawn").Process(
            target=serve, args=(self._sock,), daemon=True
        )

    @property
    def pid(self) -> int | None:
        """The stub process's id once started."""
        return self._process.pid

    def __enter__(self) -> StubSqs:
        self._process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._process.terminate()
        self._process.join(5)
        self._sock.close()


@dataclass(frozen=True)
class ProducerCeiling:
    """What one producer process achieved against :class:`StubSqs`."""

    messages: int
    """Messages the stub accepted."""
    wall_s: float
    """Wall time of the sending (in seconds)."""
    cpu_s: float
    """CPU time of the producing process while sending (in seconds)."""

    @property
    def messages_per_s(self) -> float:
        """Messages per second of wall time."""
        return self.messages / self.wall_s if self.wall_s else 0.0

    @property
    def messages_per_cpu_s(self) -> float:
        """Messages per CPU second: the ceiling per core."""
        return self.messages / self.cpu_s if self.cpu_s else 0.0


def producer_ceiling(messages: int = 20_000, processes: int = 1) -> ProducerCeiling:
    """Run the product's producer (a burst, SendMessageBatch of 10) against a stub that
    answers at once; the stub runs in its own process, so the CPU counted is the
    producer's alone. With one process a warm-up of 100 messages is not counted; with
    ``processes`` > 1 (``--producers``) the children are started and their clients open
    before the clock starts, and the CPU is theirs plus the collecting harness's."""
    import resource
    from typing import cast

    import anyio

    from loadtest.aws import clients as aws
    from loadtest.model.history.log import History
    from loadtest.model.workload.schedule import PlannedMessage
    from loadtest.producer.processes import producing
    from loadtest.producer.send import produce

    planned = [
        PlannedMessage(
            i, f"order-{i % 1000}", json.dumps({"id": f"order-{i % 1000}", "quantity": 3}), 0
        )
        for i in range(messages)
    ]

    def ignore(message_ids: list[str]) -> None:
        del message_ids

    async def no_first(business_id: str) -> None:
        del business_id

    def children_cpu_s() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    async def several(url: str) -> ProducerCeiling:
        target = aws.Target.resolve(aws.BackendKind.ENDPOINT, url)
        queue_url = f"{url}/000000000000/ceiling"
        history = History()
        children_before = children_cpu_s()
        async with producing(processes, target, queue_url, planned) as send:
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            await send(
                cast(Any, None),
                history,
                time.monotonic_ns(),
                ignore,
                no_first,
                time.monotonic_ns,
                anyio.Event(),
            )
            wall_s = time.perf_counter() - wall_start
            own_cpu_s = time.process_time() - cpu_start
        cpu_s = own_cpu_s + children_cpu_s() - children_before  # the children were joined
        accepted = sum(1 for m in history.sent if m.message_id)
        return ProducerCeiling(accepted, wall_s, cpu_s)

    async def main(url: str) -> ProducerCeiling:
        if processes > 1:
            return await several(url)
        target = aws.Target.resolve(aws.BackendKind.ENDPOINT, url)
        queue_url = f"{url}/000000000000/ceiling"
        async with aws.clients(target) as (sqs, _):
            await produce(
                sqs, queue_url, planned[:100], History(), time.monotonic_ns(), ignore, no_first
            )
            history = History()
            cpu_start, wall_start = time.process_time(), time.perf_counter()
            await produce(sqs, queue_url, planned, history, time.monotonic_ns(), ignore, no_first)
            cpu_s, wall_s = time.process_time() - cpu_start, time.perf_counter() - wall_start
        accepted = sum(1 for m in history.sent if m.message_id)
        return ProducerCeiling(accepted, wall_s, cpu_s)

    with StubSqs() as stub:
        return anyio.run(main, stub.endpoint_url)

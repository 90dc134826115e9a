"""A stub SQS endpoint that answers ``SendMessageBatch`` at once: bench tooling only.

``python -m loadtest.adapters.backend.stub --port N`` (or :class:`StubSqs`) serves
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
import uuid
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

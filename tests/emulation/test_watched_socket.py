"""A forked environment's protocol socket, watched by the event loop: its lines, its end,
its deadline, and a receive cancelled while an answer arrives."""

from __future__ import annotations

import socket

import anyio
import pytest

from loadtest.emulation.environment.parent_zygote import WatchedSocketStream, _protocol_stream


async def _pair() -> tuple[WatchedSocketStream, socket.socket]:
    ours, theirs = socket.socketpair()
    stream = _protocol_stream(ours)
    assert isinstance(stream, WatchedSocketStream)
    return stream, theirs


def test_lines_come_whole_however_they_arrive() -> None:
    async def run() -> list[bytes | None]:
        stream, theirs = await _pair()
        theirs.sendall(b'{"a": 1}\n{"b"')
        first = await stream.receive_line(1024, anyio.current_time() + 5)

        async def rest() -> None:
            await anyio.sleep(0.05)
            theirs.sendall(b": 2}\n")

        async with anyio.create_task_group() as tg:
            tg.start_soon(rest)
            second = await stream.receive_line(1024, anyio.current_time() + 5)
        await stream.aclose()
        theirs.close()
        return [first, second]

    assert anyio.run(run, backend="asyncio") == [b'{"a": 1}', b'{"b": 2}']


def test_no_line_by_the_deadline_is_none_and_a_later_line_is_read_next() -> None:
    async def run() -> tuple[bytes | None, bytes | None]:
        stream, theirs = await _pair()
        late = await stream.receive_line(1024, anyio.current_time() + 0.05)
        theirs.sendall(b"late\n")
        next_line = await stream.receive_line(1024, anyio.current_time() + 5)
        await stream.aclose()
        theirs.close()
        return late, next_line

    assert anyio.run(run, backend="asyncio") == (None, b"late")


def test_an_answer_arriving_while_a_receive_is_cancelled_is_kept_for_the_next() -> None:
    async def run() -> bytes | None:
        stream, theirs = await _pair()
        with anyio.move_on_after(0.05):
            await stream.receive_line(1024, anyio.current_time() + 5)
        theirs.sendall(b"kept\n")
        await anyio.sleep(0.05)  # read by the loop's callback, no receive waiting
        line = await stream.receive_line(1024, anyio.current_time() + 5)
        await stream.aclose()
        theirs.close()
        return line

    assert anyio.run(run, backend="asyncio") == b"kept"


def test_the_end_before_a_newline_and_a_line_too_long_are_the_buffered_readers_errors() -> None:
    async def ended() -> None:
        stream, theirs = await _pair()
        theirs.sendall(b"cut")
        theirs.close()
        try:
            await stream.receive_line(1024, anyio.current_time() + 5)
        finally:
            await stream.aclose()

    async def too_long() -> None:
        stream, theirs = await _pair()
        theirs.sendall(b"x" * 100)
        try:
            await stream.receive_line(50, anyio.current_time() + 5)
        finally:
            await stream.aclose()
            theirs.close()

    with pytest.raises(anyio.IncompleteRead):
        anyio.run(ended, backend="asyncio")
    with pytest.raises(anyio.DelimiterNotFound):
        anyio.run(too_long, backend="asyncio")


def test_a_closed_stream_wakes_its_receive_and_reads_as_closed() -> None:
    async def run() -> list[str]:
        stream, theirs = await _pair()
        outcome: list[str] = []

        async def receive() -> None:
            try:
                await stream.receive(1024)
            except anyio.ClosedResourceError:
                outcome.append("closed")

        async with anyio.create_task_group() as tg:
            tg.start_soon(receive)
            await anyio.sleep(0.05)
            await stream.aclose()
        theirs.close()
        return outcome

    assert anyio.run(run, backend="asyncio") == ["closed"]


def test_on_another_event_loop_the_socket_is_waited_for_at_each_receive() -> None:
    ours, theirs = socket.socketpair()
    try:
        assert not isinstance(_protocol_stream(ours), WatchedSocketStream)  # no loop running
    finally:
        ours.close()
        theirs.close()


def test_what_the_socket_does_not_take_at_once_is_left_for_send() -> None:
    async def run() -> tuple[int, int, bytes]:
        stream, theirs = await _pair()
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        line = b"x" * 1_000_000 + b"\n"
        rest = stream.send_now(line)  # nobody reads yet: the socket takes part of it
        taken = len(line) - len(rest)
        received = bytearray()

        async def read() -> None:
            while not received.endswith(b"\n"):
                await anyio.wait_readable(theirs)
                received.extend(theirs.recv(65536))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await stream.send(rest)
        small_rest = stream.send_now(b"small\n")
        await stream.aclose()
        theirs.close()
        return taken, len(small_rest), bytes(received)

    taken, small_rest, received = anyio.run(run, backend="asyncio")
    assert 0 < taken < 1_000_001
    assert small_rest == 0
    assert received == b"x" * 1_000_000 + b"\n"

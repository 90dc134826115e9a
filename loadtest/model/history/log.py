"""The run's history: everything a variant run produced, and the names of its records.

Owns ``History`` (the run's logs of what was sent, delivered, acknowledged and
dead-lettered, with the run's start, end and deadline) and re-exports the
record types (``history_records``), the logs that keep them as compressed
frames (``history_frames``) and the key text (``history_keys``), so
``loadtest.model.history.log`` stays the one name to import them by.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from loadtest.model.history.frames import (
    FRAME_RECORDS,
    FrameStore,
    FrameStores,
    InvocationLog,
    RecordLog,
    decode_ack,
    decode_dead_letter,
    decode_effect,
    decode_reads,
    decode_records,
    decode_sent,
    decode_write,
    encode_ack,
    encode_dead_letter,
    encode_effect,
    encode_reads,
    encode_records,
    encode_sent,
    encode_write,
    write_outline,
)
from loadtest.model.history.keys import OutcomeKey, key_string
from loadtest.model.history.records import (
    IDEMPOTENCY_WINDOW_NS,
    Ack,
    DeadLetter,
    EffectKind,
    EffectRecord,
    EndState,
    Invocation,
    InvocationOutcome,
    InvocationRef,
    ObserverFault,
    ReadRecord,
    Record,
    SentMessage,
    SideWrite,
    SinkContents,
    SinkMessage,
    TypedItem,
    UnobservedCall,
    WorkLeft,
    WriteOutcome,
    WriteRecord,
)

__all__ = [
    "FRAME_RECORDS",
    "IDEMPOTENCY_WINDOW_NS",
    "Ack",
    "DeadLetter",
    "EffectKind",
    "EffectRecord",
    "EndState",
    "FrameStore",
    "FrameStores",
    "History",
    "Invocation",
    "InvocationLog",
    "InvocationOutcome",
    "InvocationRef",
    "ObserverFault",
    "OutcomeKey",
    "ReadRecord",
    "Record",
    "RecordLog",
    "SentMessage",
    "SideWrite",
    "SinkContents",
    "SinkMessage",
    "TypedItem",
    "UnobservedCall",
    "WorkLeft",
    "WriteOutcome",
    "WriteRecord",
    "decode_effect",
    "decode_reads",
    "decode_records",
    "decode_write",
    "encode_effect",
    "encode_reads",
    "encode_records",
    "encode_write",
    "key_string",
    "write_outline",
]


class History:
    """Everything a variant run produced; appended to by the engine only.

    ``sent``, ``invocations``, ``acks`` and ``dead_letters`` are ``RecordLog`` logs
    (``invocations`` an ``InvocationLog``): append-only sequences whose framed
    records leave the Python heap as the run goes, kept where ``frames`` says
    (in memory by default; a run's engine passes a store on disk, so a run's
    memory does not grow with its messages). ``stores``, when given, makes each
    log's store by the log's name (``sent``, ``invocations``, ``acks``,
    ``dead_letters``) instead: a durable history (``history_journal``) keeps
    each log's frames apart. Assigning any iterable of records to one of them
    stores the records in a new log.
    """

    def __init__(
        self,
        sent: Iterable[SentMessage] = (),
        invocations: Iterable[Invocation] = (),
        acks: Iterable[Ack] = (),
        dead_letters: Iterable[DeadLetter] = (),
        started_ns: int = 0,
        ended_ns: int = 0,
        timed_out: bool = False,
        frames: FrameStores = list,
        stores: Callable[[str], FrameStore] | None = None,
    ) -> None:
        self.frames = frames
        """Makes each log's frame store."""
        self.stores = stores
        """Makes a log's frame store by its name (``frames`` is used when None)."""
        self.sent = sent
        self.invocations = invocations
        self.acks = acks
        self.dead_letters = dead_letters
        self.started_ns = started_ns
        self.ended_ns = ended_ns
        self.timed_out = timed_out
        """The run's deadline passed before every message was settled."""

    def _frames_of(self, log: str) -> FrameStores:
        stores = self.stores
        if stores is None:
            return self.frames
        return lambda: stores(log)

    @property
    def sent(self) -> RecordLog[SentMessage]:
        return self._sent

    @sent.setter
    def sent(self, sent: Iterable[SentMessage]) -> None:
        self._sent = RecordLog(encode_sent, decode_sent, sent, self._frames_of("sent"))

    @property
    def invocations(self) -> InvocationLog:
        return self._invocations

    @invocations.setter
    def invocations(self, invocations: Iterable[Invocation]) -> None:
        self._invocations = (
            invocations
            if isinstance(invocations, InvocationLog)
            else InvocationLog(invocations, self._frames_of("invocations"))
        )

    @property
    def acks(self) -> RecordLog[Ack]:
        return self._acks

    @acks.setter
    def acks(self, acks: Iterable[Ack]) -> None:
        self._acks = RecordLog(encode_ack, decode_ack, acks, self._frames_of("acks"))

    @property
    def dead_letters(self) -> RecordLog[DeadLetter]:
        return self._dead_letters

    @dead_letters.setter
    def dead_letters(self, dead_letters: Iterable[DeadLetter]) -> None:
        self._dead_letters = RecordLog(
            encode_dead_letter, decode_dead_letter, dead_letters, self._frames_of("dead_letters")
        )

    def __repr__(self) -> str:
        # Short whatever the run's size: asyncio formats a finished task's
        # result with repr() (a SIGINT check in Runner.run), and reprlib only
        # truncates the string after building all of it.
        return (
            f"History(sent={len(self.sent)}, invocations={len(self.invocations)}, "
            f"acks={len(self.acks)}, dead_letters={len(self.dead_letters)}, "
            f"timed_out={self.timed_out})"
        )

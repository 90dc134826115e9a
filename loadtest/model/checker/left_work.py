"""Work a handler left running that never finished: how the checker reads it.

An invocation's ``left_work`` is what the handler started (a thread, a call handed to a
thread pool, an asyncio task) and left unfinished when it returned; a later invocation of the same
environment names it in ``ended_work`` once it has finished. Lambda freezes such work with
the environment, so it runs on only while the environment is invoked again: work that was
left and never ended was still unfinished when its environment was retired (or died), and
what it had left to do was never done.

Owns ``Unfinished`` (that work, with the deliveries it was started for), ``Unfinished.add``
(fed each invocation once, in the survey's pass) and the sentences that say it. A delivery
whose work never finished did not complete: the checker counts it as a failed delivery
(``survey.Survey.failed_deliveries``), so nothing is learned from it as from a clean one,
and a sink that could not be learned required cannot say whether that work was to reach
it (``effects.judge_effects``). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from loadtest.model.history.records import Invocation, WorkLeft


@dataclass(frozen=True, slots=True)
class Cut:
    """One piece of work left running that never finished."""

    work: WorkLeft
    request_id: str
    """The invocation that started it."""
    deliveries: tuple[tuple[str, str | None], ...]
    """(message id, business id) of the records it was started for: the record the handler
    was on, or every record of its invocation when it was on none."""


@dataclass
class Unfinished:
    """What the run's invocations left running, and what of it ended (one pass)."""

    _left: dict[str, Cut] = field(default_factory=dict)
    _ended: set[str] = field(default_factory=set)

    def add(self, inv: Invocation) -> None:
        if inv.ended_work:
            self._ended.update(inv.ended_work)
        for work in inv.left_work:
            records = [r for r in inv.records if r.message_id == work.record_id] or list(
                inv.records
            )
            self._left[work.work_id] = Cut(
                work, inv.request_id, tuple((r.message_id, r.business_id) for r in records)
            )

    def cut(self) -> list[Cut]:
        """The work that never finished, in the order it was started."""
        return [c for work_id, c in self._left.items() if work_id not in self._ended]

    @property
    def left(self) -> int:
        """How much work the handler left running in all (finished later or not)."""
        return len(self._left)


def _example(cut: Sequence[Cut]) -> str:
    first = cut[0]
    message = first.deliveries[0][0] if first.deliveries else ""
    return f"{first.work.what}, started for message {message}" if message else first.work.what


def unfinished_note(cut: Sequence[Cut], left: int) -> str:
    """The report's sentence for work the handler left running that never finished."""
    return (
        f"{len(cut)} of the {left} piece(s) of work (threads, pool calls, asyncio tasks) the "
        f"handler left running when it returned never finished (e.g. {_example(cut)}): "
        "Lambda freezes such work with the "
        "execution environment, and it ends unfinished when the environment is retired; "
        "those deliveries are judged as cut short. Wait for the work before returning"
    )


def unjudged_sink(sink: str, kind: str, cut: Sequence[Cut]) -> str:
    """Why a sink that is not required says nothing of work that never finished."""
    return (
        f"sink {sink!r} ({kind}) is not known to be required, and {len(cut)} piece(s) of "
        "work (threads, pool calls, asyncio tasks) the handler left running never finished "
        f"(e.g. {_example(cut)}): "
        "whether they were to reach it is not known, so nothing is counted lost there. "
        "Wait for them before the handler returns, or declare the sink required "
        f'([[effects]] sink = "{sink}", required = true)'
    )

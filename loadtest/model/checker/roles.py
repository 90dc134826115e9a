"""Roles and delivery units: which accepted write of an outcome is the first, a step, a duplicate.

Owns step 2 and 3 of the checker (see ``loadtest.model.checker``): the
backend's real order of one item's writes, read from item-before images and
never from client clocks (``backend_order``); the delivery a write belongs to,
``(invocation, n-th copy of the id in it)`` (``delivery_unit``); and the role each
accepted write gets, with the duplicate, conflicting and no-op counts
(``judge_outcome``; a delivery that finishes a failed one's half-written outcome takes it
over, ``Takeover``); and the message a write was made for (``message_id``, and for a side
write ``marked_record`` and ``side_business_id``). ``LiveDuplicates`` applies the same unit rule to the
writes seen so far, for the live progress line. It does not decide where
outcomes live or which writes are outcome writes; the checker does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.model.checker.details import carries, carries_id, records_of
from loadtest.model.checker.verdict import Role
from loadtest.model.dynamodb.updates import same_item
from loadtest.model.history.log import (
    IDEMPOTENCY_WINDOW_NS,
    InvocationRef,
    OutcomeKey,
    Record,
    TypedItem,
    WriteOutcome,
    WriteRecord,
    key_string,
)


@dataclass(slots=True)
class Write:
    """A write being judged: its invocation and, once known, its business id."""

    write: WriteRecord
    invocation: InvocationRef
    template: str
    business_id: str | None = None
    role: Role = Role.SIDE
    order: int = 0
    copy_index: int = 0
    """Which of the invocation's records of this id made it (batches with copies)."""


def is_replay(write: WriteRecord, first_ended_ns: int | None) -> bool:
    """Whether a write repeats an accepted call with the same ClientRequestToken and request
    that ended at ``first_ended_ns`` (None: there was none), within DynamoDB's window.

    DynamoDB applies such a call once: a repeat that overlapped it was refused
    (TransactionInProgressException), so an accepted repeat wrote nothing, whichever of
    the two the client's clocks put first."""
    return first_ended_ns is not None and write.started_ns - first_ended_ns <= IDEMPOTENCY_WINDOW_NS


def replayed_writes(writes: list[Write]) -> set[int]:
    """The ``id`` of each write that repeats an earlier accepted identical call's write of
    the same item (``is_replay``): DynamoDB answered it as it answered the first and wrote
    nothing. (A call's parts on other items share its token: they are no repeats.)"""
    applied: dict[tuple[str, str], int] = {}
    """(the call's token and request, the item's key) -> when the write DynamoDB applied ended."""
    replays: set[int] = set()
    for w in sorted(writes, key=lambda w: w.write.started_ns):
        if not w.write.idempotency:
            continue
        call = (w.write.idempotency, key_string(w.write.key))
        if is_replay(w.write, applied.get(call)):
            replays.add(id(w))
        else:
            applied[call] = w.write.ended_ns  # the first, or the window had passed
    return replays


def backend_order(writes: list[Write]) -> list[Write]:
    """One item's accepted writes in the backend's order, read from their item-before images."""
    remaining = sorted(writes, key=lambda w: (w.write.ended_ns, w.write.started_ns))
    ordered: list[Write] = []
    state: TypedItem | None = None
    state_known = True
    while remaining:
        pick = None
        if state_known:
            pick = next(
                (
                    w
                    for w in remaining
                    if w.write.before_known and same_item(w.write.item_before, state)
                ),
                None,
            )
        if pick is None:
            pick = next((w for w in remaining if not w.write.before_known), remaining[0])
        remaining.remove(pick)
        ordered.append(pick)
        if pick.write.deletes:
            state, state_known = None, True
        elif pick.write.after_known:
            state, state_known = pick.write.item_after, True
        else:
            state_known = False
    return ordered


def marked_invocations(writes: Sequence[Write], business_id: str) -> set[str]:
    """The invocations holding several records of ``business_id`` whose marks tie each of
    its writes to one of those records (``WriteRecord.record_id``).

    A mark is the record the handler last read: trusted only where every write of the
    id in the invocation is marked with a record of the id, and not all with one record
    that is not the id's first in the batch while the earlier ones wrote nothing (the
    mark a handler leaves when it reads every body before writing)."""
    by_invocation: dict[str, list[Write]] = {}
    for w in writes:
        by_invocation.setdefault(w.invocation.request_id, []).append(w)
    marked: set[str] = set()
    for request_id, mine in by_invocation.items():
        records = [r.message_id for r in records_of(mine[0].invocation, business_id)]
        if len(records) < 2:
            continue
        marks = {w.write.record_id for w in mine}
        if not marks <= set(records):
            continue
        if len(marks) == 1 and records.index(next(iter(marks))) > 0:
            continue
        marked.add(request_id)
    return marked


def delivery_unit(
    w: Write,
    business_id: str,
    existed: bool,
    before: TypedItem | None,
    details: Sequence[Mapping[str, Any]],
    units: Sequence[tuple[str, int]],
    marked: bool = False,
) -> tuple[str, int]:
    """The delivery a write belongs to: (invocation, n-th copy of the id in it).

    One record of the id in the invocation: every write of it is that
    delivery's (a claim, then the result). Several copies in one batch: the
    record the write is marked with (``marked``: its invocation's marks are
    trusted, ``marked_invocations``); else a write that finds the outcome
    already complete (the item holds a message's details, or its old image is
    unknown) is the next copy's write, up to as many deliveries as the batch
    carries copies.
    """
    request_id = w.invocation.request_id
    records = records_of(w.invocation, business_id)
    copies = len(records)
    if copies > 1 and marked:
        return (
            request_id,
            next(n for n, r in enumerate(records) if r.message_id == w.write.record_id),
        )
    mine = [n for rid, n in units if rid == request_id]
    if not mine:
        return (request_id, 0)
    complete = before is None or any(carries(before, d) for d in details)
    if copies > 1 and existed and complete and len(mine) < copies:
        return (request_id, max(mine) + 1)
    return (request_id, max(mine))


def unattributed_reason(writes: int) -> str:
    """Why a run with writes no record was tied to (``Judged.unattributed``) is inconclusive."""
    return (
        f"{writes} write(s) of an id that several records of one batch carried could not "
        "be tied to the record that made them (the handler's reads of the records did not "
        "mark which one it was on, or every body was read before the first write), so a "
        "duplicate write may be counted as a step of one delivery. Run with batch_size = 1 "
        "([consumer] batch_size), or read each record's body where it is processed"
    )


def over_live_claims_note(writes: int) -> str:
    """What a run whose duplicate writes include takeovers of a live claim
    (``Judged.over_live_claims``) is told about them."""
    return (
        f"{writes} of the duplicate writes took over a claim (an outcome not finished yet) "
        "from a delivery that had not failed: a second delivery did the work between the "
        "claim and the completion while the first still held it. Taking a claim over is no "
        "duplicate only when every delivery that wrote it failed (raised, crashed or timed "
        "out)"
    )


@dataclass(frozen=True)
class Takeover:
    """What tells a delivery that finishes a failed delivery's half-written outcome (a
    takeover) from a duplicate write over it.

    A second delivery's accepted write over an outcome another delivery wrote is a
    duplicate unless both hold: the stored outcome it wrote over was unfinished (it
    lacked what a complete one holds, ``completeness.lacks_complete``) and every
    delivery that wrote it before failed (its invocation failed, crashed or timed out, or
    reported its record failed). A racy second write over a live delivery's claim, or
    over a finished outcome whose image the observer could not read, stays a duplicate:
    a claim exists so that one delivery does what lies between it and the completion, and
    a second delivery that took a live one's claim over did that work again, whether or
    not the table shows it (``Judged.over_live_claims``). Over a claim that carries none of
    the messages' details it changed no stored details, so it is no conflicting write.

        delivery A (crashes)           delivery B (the redelivery)
        PutItem {id, PENDING} ─► claim
        ✗ crash
                                       UpdateItem SET status = DONE, details ─► takeover

    The taking write may finish the outcome, or claim it again first (its own token, so
    a holder that comes back cannot complete it): every write of B is a step of the one
    delivery that now holds it.
    """

    failed: frozenset[tuple[str, str]]
    """The deliveries that failed: (invocation request id, message id)."""
    unfinished: Callable[[TypedItem, Sequence[Mapping[str, Any]]], bool]
    """Whether a stored item (given the outcome's messages' details) lacks what a
    complete outcome holds."""

    def took_over(
        self,
        before: TypedItem,
        details: Sequence[Mapping[str, Any]],
        earlier: Sequence[tuple[str, str | None]],
    ) -> bool:
        """Whether a write over ``before`` finishes what the ``earlier`` deliveries
        (invocation, message) that wrote the outcome left: all failed, and it is unfinished."""
        return (
            bool(earlier)
            and all(
                message is not None and (request, message) in self.failed
                for request, message in earlier
            )
            and self.unfinished(before, details)
        )


@dataclass
class Judged:
    duplicate: int = 0
    conflicting: int = 0
    noop: int = 0
    over_live_claims: int = 0
    """Duplicate writes over an unfinished outcome that carries none of the messages' details
    (a claim) whose deliveries had not all failed: a delivery took over a claim another
    delivery still held."""
    unattributed: int = 0
    """Writes judged a step of a delivery of an id that several records of one batch
    carried, that no trusted mark tied to a record: another record's write, for all the
    checker can tell."""


def judge_outcome(
    business_id: str,
    writes: list[Write],
    copies: bool,
    judged: Judged,
    details: Sequence[Mapping[str, Any]],
    takeover: Takeover | None = None,
) -> None:
    """Roles for one outcome's accepted writes (see the module docstring, step 3).

    ``takeover`` (None: no write takes an outcome over) says which deliveries failed and
    which stored items are unfinished: a write of another delivery over the outcome is a
    step of a takeover, not a duplicate, only when every delivery that wrote it before
    failed and the item it wrote over was unfinished (``Takeover.took_over``).

    A repeat of an accepted transaction call with the same ClientRequestToken
    and request, within DynamoDB's window, changed nothing: a no-op, outside the
    order (its old image, if any, says nothing of the item's)."""
    replays = replayed_writes(writes)
    replayed = sorted((w for w in writes if id(w) in replays), key=lambda w: w.write.ended_ns)
    writes = [w for w in writes if id(w) not in replays]
    for position, w in enumerate(replayed, start=len(writes) + 1):
        w.role = Role.NOOP
        w.order = position
        judged.noop += 1
    ordered = sorted(writes, key=lambda w: w.write.ended_ns) if copies else backend_order(writes)
    marked = marked_invocations(writes, business_id)
    units: list[tuple[str, int]] = []
    state: TypedItem | None = None
    state_known = True
    first_after: TypedItem | None = None
    owners: dict[tuple[str, int], tuple[str, str | None]] = {}
    """Each delivery unit's (invocation, message), for ``Takeover.took_over``."""
    removed: TypedItem | None = None
    """The stored outcome the last write took away (a delete's old image), until the
    next write stores one: a delivery that deletes and puts other details replaced it."""
    for position, w in enumerate(ordered, start=1):
        write = w.write
        w.order = position
        before_known = write.before_known or state_known
        before = write.item_before if write.before_known else state
        existed = (before is not None) if before_known else bool(units)
        if copies:
            existed = bool(units)
        request_id = w.invocation.request_id
        unit = delivery_unit(
            w,
            business_id,
            existed,
            before if before_known else None,
            details,
            units,
            request_id in marked,
        )
        w.copy_index = unit[1]
        owners.setdefault(unit, (request_id, message_id(w.invocation, business_id, unit[1])))
        changed = not (before_known and write.after_known and same_item(before, write.item_after))
        if write.deletes:
            w.role = Role.DELETE
        elif (
            existed
            and write.noop_when_present
            and not (before_known and write.after_known and changed)
        ):
            w.role = Role.NOOP
            judged.noop += 1
        elif unit in units:
            w.role = Role.STEP
            if request_id not in marked and len(records_of(w.invocation, business_id)) > sum(
                1 for rid, _ in units if rid == request_id
            ):
                judged.unattributed += 1
        elif not units:
            w.role = Role.FIRST
            units.append(unit)
            first_after = write.item_after
        elif (
            takeover is not None
            and not copies
            and existed
            and before_known
            and before is not None
            and write.after_known
            and takeover.took_over(before, details, [owners[u] for u in units])
        ):
            # Every delivery that wrote the outcome before failed and left it unfinished
            # (a claim): this one takes it over, at once or by a claim of its own first
            # (a token that fences the failed holder out), and finishes it or leaves it
            # unfinished, lost. From now on the earlier deliveries' writes are another
            # delivery's.
            w.role = Role.STEP
            units[:] = [unit]
        else:
            w.role = Role.AGAIN
            earlier = [owners[u] for u in units]
            units.append(unit)
            judged.duplicate += 1
            over_claim = (
                takeover is not None
                and not copies
                and existed
                and before_known
                and before is not None
                and not any(carries(before, d) for d in details)
                and takeover.unfinished(before, details)
                and not takeover.took_over(before, details, earlier)
            )
            judged.over_live_claims += over_claim
            if copies:
                # Each copy is its own item: it conflicts when it holds other
                # details than the first copy.
                first = next((d for d in details if carries(first_after, d)), None)
                if write.after_known and first is not None and not carries(write.item_after, first):
                    judged.conflicting += 1
            elif write.after_known and (
                (existed and before_known and changed and not over_claim)
                or (
                    not existed and removed is not None and not same_item(removed, write.item_after)
                )
            ):
                judged.conflicting += 1
        removed = before if write.deletes and before_known else None
        if write.deletes:
            state, state_known = None, True
        elif write.after_known:
            state, state_known = write.item_after, True
        else:
            state_known = False


class LiveDuplicates:
    """Duplicate writes so far, for the live progress line (the key model only).

    The same rule as ``check``: per outcome item, the deliveries that stored it
    beyond the first (an invocation, or within it the record a write names),
    no-op-by-construction writes aside. ``add`` is given
    each invocation's writes once, all together (as the runner hands them over),
    so an item keeps no more than that it was stored: whether a later write is
    by another invocation is known from the call it came in. A takeover (``Takeover``)
    needs what only the whole run shows (which deliveries failed, what a complete outcome
    holds), so the live line counts one as a duplicate; the report's count is ``check``'s.
    """

    def __init__(self, outcome_key: OutcomeKey | None = None) -> None:
        self.outcome_key = outcome_key or OutcomeKey()
        self._stored: set[str] = set()
        """The outcome items an invocation stored (their canonical keys)."""
        self._applied: dict[tuple[str, str], int] = {}
        """(a ClientRequestToken and request, an item) -> when its applied write ended."""
        self.duplicate_writes = 0

    def add(self, writes: Iterable[WriteRecord]) -> int:
        """Note an invocation's writes; return the new duplicate count."""
        counted: set[tuple[str, str, str]] = set()  # (invocation, record, item) noted here
        for w in writes:
            if w.outcome is not WriteOutcome.ACCEPTED or w.deletes:
                continue
            canon = self.outcome_key.canonical(w.key)
            if w.idempotency:
                if is_replay(w, self._applied.get((w.idempotency, canon))):
                    continue
                self._applied[w.idempotency, canon] = w.ended_ns
            stored = canon in self._stored
            if w.noop_when_present and stored:
                continue
            # One delivery's writes of the item count once: its invocation's, or, where the
            # write names the record it was made for, that record's.
            if (w.request_id, w.record_id, canon) in counted:
                continue
            counted.add((w.request_id, w.record_id, canon))
            if stored:
                self.duplicate_writes += 1
            else:
                self._stored.add(canon)
        return self.duplicate_writes


def side_business_id(record: WriteRecord, ref: InvocationRef) -> str | None:
    """The business id a side write belongs to, for display: by its item, else its only record."""
    ids = [r.business_id for r in ref.records if r.business_id]
    item = record.item_after or record.requested or {}
    for business_id in ids:
        if carries_id(item, record.key, business_id):
            return business_id
    return ids[0] if len(ids) == 1 else None


def named_record(record: WriteRecord, ref: InvocationRef) -> Record | None:
    """The record of its invocation a write names (the one the handler was on when it made
    the call, ``WriteRecord.record_id``); None when it names none of them."""
    if record.record_id:
        for r in ref.records:
            if r.message_id == record.record_id:
                return r
    return None


def marked_record(record: WriteRecord, ref: InvocationRef, business_id: str | None) -> str | None:
    """The record a side write names (the one the handler was on), when it is one of its
    invocation's records of ``business_id`` (of any, when that is None)."""
    named = named_record(record, ref)
    if named is None or business_id not in (None, named.business_id):
        return None
    return named.message_id


def message_id(ref: InvocationRef, business_id: str | None, copy_index: int) -> str | None:
    """The message a write was made for: the ``copy_index``-th record of its business id in
    its invocation, else the invocation's only record."""
    if business_id is not None:
        mine = records_of(ref, business_id)
        if mine:
            return mine[min(copy_index, len(mine) - 1)].message_id
    return ref.records[0].message_id if len(ref.records) == 1 else None

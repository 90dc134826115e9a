"""The checker: from a run's history and end state to the counts and the verdict.

Pure, and the one owner of the counting rules (documented in docs/verdict-and-counts.md): which
item holds a message's outcome, which writes are side writes, what one
delivery's write of an outcome is, the real order of writes, and which counts
fail or leave a run inconclusive. The live progress line, the terminal, the
HTML page and the thresholds all use its answers.

How a run is judged, in the order the code does it:

1. **Where outcomes live.** A message's outcome item is the item keyed by its
   business id under the scenario's ``OutcomeKey`` (the lab's ``id``). An item
   keyed by something else (a messageId, a random id) that carries the
   business id and the message's details (anywhere: in its maps, lists and
   JSON strings too) is the outcome stored under a key that changes per
   delivery: it counts as a copy of the outcome, when the outcome key itself
   carries no details. Every other item is a side write.
   When no item is keyed per message because each message changes a shared
   item (a running total per customer: ``shared``), outcomes are aggregates,
   judged per business id and item: declared (``[outcome] shared``), or
   detected and said so when an item was changed for several business ids and
   every write of it is tied to its record.
   When nothing matches and the choice is ambiguous, the run is inconclusive
   and the key templates seen are named; the checker never guesses.
2. **Real order.** Writes of one item are ordered by their item-before
   images (each write's old image is the previous write's new one), the
   backend's own order, never client clocks; time only breaks ties.
3. **Deliveries.** An outcome's first write is the one that found it absent.
   Writes by the same invocation for the same record are steps of one
   delivery (a claim, then the result); a delivery that finishes an outcome
   every delivery before it failed to finish (they failed, and it lacked what a
   complete one holds: step 4) takes it over. With several records of one id in a
   batch, a write is the record's it names (the one the handler last read,
   where the marks agree with the writes), else a write that finds the
   outcome finished is the next record's; one neither tells apart leaves the
   run inconclusive. Another delivery's accepted write is a duplicate write,
   unless it was a no-op by construction (``SET p = if_not_exists(p, v)``
   throughout) or a repeat of an accepted transaction call's
   (TransactWriteItems, ExecuteTransaction) ClientRequestToken and request
   within DynamoDB's window (both ``noop_writes``); one that changed the
   stored outcome (or deleted it and stored other details) is also a
   conflicting write.
4. **Per message.** An acknowledged message whose own details were never
   stored, or whose outcome is gone or lacks a field the scenario says a
   complete outcome holds (``[outcome] fields``, else what every outcome where
   nothing failed holds: its names, its details, the values it ends with rather than
   those it passes through), is a lost outcome (for an
   aggregate: no change made for it, or an item that listed it no longer does,
   its change overwritten by another id's), and so is one whose change to any item
   another message's write replaced, computed from a read made before it
   (``lost_updates``); when no
   outcome holds any message's details and no fields are declared, the table
   cannot tell a finished outcome from a half-written one: inconclusive; a
   dead-lettered message that was neither a planted poison record nor a
   resend with conflicting details is an unexpected dead letter.
   An item beside the outcomes (in the outcome table or an extra table) that two
   successful deliveries of one business id each added to (``ADD``, ``SET p = p + :q``)
   and left changed is a duplicate side write (``side_changes``).
5. **Effects beyond the table** (a run with sinks or effects only). Each entry the
   consumer sent, and what each sink held when read back, is given its business id
   as an item is (its payload's leaves, else its key, or the scenario's
   ``[[effects]]``; one naming none leaves the run inconclusive). Per business id
   and sink, what the sink holds beyond the first is a duplicate effect (reported,
   not failed, on an ``at-least-once`` sink), an entry with other content a
   conflicting one, and an acknowledged message whose id never reached a required
   sink (declared, or learned: every clean message reached it) a lost one.

``check`` (in ``checking``) runs those steps and decides step 1 itself; the rest is owned by the
package's other modules, and the names callers use are importable from here:
``verdict`` (the counts, roles, ``Check`` and the fail/inconclusive/pass rule),
``reasons`` (the reasons in words), ``details`` (what a message said and whether an
item carries it), ``completeness`` (whether a stored outcome is complete, and when the
table cannot tell), ``lost_updates`` (a change another message's stale write replaced),
``sent`` (what was sent and how each message was settled),
``roles`` (real order, delivery units, duplicate and conflicting writes, and
``LiveDuplicates``), ``side_changes`` (the duplicate side writes of step 4), ``effects`` (step 5), ``shared`` (the same for aggregates), ``survey`` (the first pass over the invocations), ``passes`` (the
pass that gives each write its business id and role), ``parts`` (an outcome's
accepted writes judged together in bounded parts) and ``evidence`` (the witnesses a
report shows).

A check's memory grows with the run's business ids and a few bytes per
message, not with its writes: the writes are streamed from the history, the
decisions kept where the history keeps its logs (``lost_updates`` holds the writes of
the items a stale write replaced, only).
"""

from __future__ import annotations

from loadtest.model.checker.checking import check
from loadtest.model.checker.details import carries, carries_id, details_of, key_template, plain
from loadtest.model.checker.evidence import duplicate_evidence
from loadtest.model.checker.exposure import Exposure, overlapping_pairs
from loadtest.model.checker.reasons import default_reasons, inconclusive_reasons
from loadtest.model.checker.roles import LiveDuplicates
from loadtest.model.checker.verdict import (
    BAD_WHEN_NONZERO,
    COUNT_NAMES,
    EFFECT_COUNT_NAMES,
    FLAGGED_WHEN_NONZERO,
    INCONCLUSIVE_WHEN_NONZERO,
    NOTEWORTHY_WHEN_NONZERO,
    OPTIONAL_COUNT_NAMES,
    Check,
    Counts,
    Decision,
    Role,
    Verdict,
    verdict_of,
)

__all__ = [
    "BAD_WHEN_NONZERO",
    "COUNT_NAMES",
    "EFFECT_COUNT_NAMES",
    "FLAGGED_WHEN_NONZERO",
    "INCONCLUSIVE_WHEN_NONZERO",
    "NOTEWORTHY_WHEN_NONZERO",
    "OPTIONAL_COUNT_NAMES",
    "Check",
    "Counts",
    "Decision",
    "Exposure",
    "LiveDuplicates",
    "Role",
    "Verdict",
    "carries",
    "carries_id",
    "check",
    "default_reasons",
    "details_of",
    "duplicate_evidence",
    "inconclusive_reasons",
    "key_template",
    "overlapping_pairs",
    "plain",
    "verdict_of",
]

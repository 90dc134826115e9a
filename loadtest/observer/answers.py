"""Reading an observed call's answer: what each planned part's write decided.

Owns turning DynamoDB's answer (success, a condition failure with the old image,
a batch's unprocessed items, a transaction's cancellation reasons, a PartiQL
batch's per-statement errors) into one ``WriteRecord`` per ``Part`` of a
``Call`` planned by ``loadtest.observer.plans``: the outcome, the item
before (the write's own old image) and the item after (the request applied to
it). It also strips from the answer what the observer added, so the consumer
sees exactly the response it asked for. Must not touch botocore or send
anything: the records go to ``emit``.

Also reads any call's answer for a refusal that says the run did not provide what the
handler asked for (``missing_line``: a table or queue the run did not create, a
permission it did not grant, a table made with another key than the handler uses), for any table or queue, watched or not; and a call's
writes to the consumer's extra tables (``side_writes``), side writes by construction: a
call that writes one item there is planned as the watched table's are (its old image
asked for, and taken out of the answer again), so its ``SideWrite`` says whether it
changed the item.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loadtest.model.dynamodb.attribute_values import item_digest, numeric_moves
from loadtest.model.dynamodb.updates import UpdateNotUnderstood, apply_update
from loadtest.model.history.log import (
    SideWrite,
    TypedItem,
    UnobservedCall,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.history.observation import Observation
from loadtest.observer.calls import Call, Part

Emit = Callable[[Observation], None]

_RESOURCE = "loadtest_resource"
"""Where a call's table or queue is kept in its request context, for ``missing_line``."""
MISSING_CODES = frozenset(
    {
        "ResourceNotFoundException",
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        "AccessDeniedException",
        "AccessDenied",
    }
)
"""Error codes that say the handler's call named something the run does not provide (a
table or queue it did not create, a permission it did not grant)."""
KEY_MISMATCH = ("key element does not match the schema", "Missing the key ")
"""What DynamoDB's ValidationException says of a key whose attributes are not the table's,
or of a put's item without the table's key: the run made the table, with the key the
scenario declares, so it is logged as the others."""
MISSING_PREFIX = "loadtest: the handler's "
"""How each such call is logged (``loadtest.model.checker.harness`` reads the line)."""


_NAMING = (
    "TableName",
    "QueueUrl",
    "QueueName",
    "TopicArn",
    "TargetArn",
    "EventBusName",
    "Bucket",
    "stateMachineArn",
    "FunctionName",
    "StreamName",
    "StreamARN",
    "DeliveryStreamName",
)
"""The request parameters that name the resource a call is made on, in the order looked at."""


def keep_resource(params: dict[str, Any], context: Any) -> None:
    """Keep the resource a request names (a table, a queue, a stream, ...) in its context,
    for ``missing_line``."""
    if isinstance(context, dict):
        for name in _NAMING:
            resource = params.get(name)
            if resource:
                context[_RESOURCE] = resource
                return


_SIDE = "loadtest_side"
"""Where a call's writes to the consumer's extra tables are kept in its request context."""
_STATEMENT_WRITES = ("INSERT", "UPDATE", "DELETE")


def _named(ref: Any, tables: frozenset[str]) -> str | None:
    """The extra table a ``TableName`` (a name or an ARN) refers to, or None."""
    if not isinstance(ref, str):
        return None
    name = ref.rsplit("/table/", 1)[-1] if ref.startswith("arn:") else ref
    return name if name in tables else None


def _statement_table(statement: Any, tables: frozenset[str]) -> str | None:
    if not isinstance(statement, str) or not statement.lstrip().upper().startswith(
        _STATEMENT_WRITES
    ):
        return None
    return next((t for t in tables if f'"{t}"' in statement or f" {t} " in f" {statement} "), None)


_ONE_ITEM = frozenset({"PutItem", "UpdateItem", "DeleteItem"})


def one_item_table(operation: str, params: dict[str, Any], tables: frozenset[str]) -> str | None:
    """The extra table a write of one item (PutItem, UpdateItem, DeleteItem) names, if any:
    such a call is planned as the watched table's are (``keep_side_call``)."""
    return _named(params.get("TableName"), tables) if operation in _ONE_ITEM else None


def keep_side_call(context: Any, table: str, call: Call) -> None:
    """Keep in ``context`` the planned call of one item to the extra table ``table``."""
    if isinstance(context, dict):
        context[_SIDE] = (table, call)


def keep_side_writes(
    operation: str, params: dict[str, Any], context: Any, tables: frozenset[str]
) -> None:
    """Keep in ``context`` how many items a write call sends to each extra table."""
    if not tables or not isinstance(context, dict):
        return
    counts: dict[str, int] = {}

    def add(table: str | None, n: int = 1) -> None:
        if table is not None:
            counts[table] = counts.get(table, 0) + n

    if operation in ("PutItem", "UpdateItem", "DeleteItem"):
        add(_named(params.get("TableName"), tables))
    elif operation == "BatchWriteItem":
        for ref, requests in (params.get("RequestItems") or {}).items():
            add(_named(ref, tables), len(requests))
    elif operation == "TransactWriteItems":
        for entry in params.get("TransactItems") or []:
            for kind in ("Put", "Update", "Delete"):
                if kind in entry:
                    add(_named(entry[kind].get("TableName"), tables))
    elif operation == "ExecuteStatement":
        add(_statement_table(params.get("Statement"), tables))
    elif operation in ("BatchExecuteStatement", "ExecuteTransaction"):
        for entry in params.get("Statements") or params.get("TransactStatements") or []:
            add(_statement_table(entry.get("Statement"), tables))
    if counts:
        context[_SIDE] = counts


def side_writes(
    operation: str, result: Any, context: Any, request_id: str, record_id: str = ""
) -> list[SideWrite]:
    """The extra tables' writes a call's answer accepted (none when it failed)."""
    kept = context.get(_SIDE) if isinstance(context, dict) else None
    if not kept:
        return []
    parsed = result[1] if isinstance(result, tuple) and len(result) == 2 else None
    if isinstance(kept, tuple):
        table, call = kept
        http = result[0] if isinstance(result, tuple) and len(result) == 2 else None
        if not isinstance(parsed, dict):
            return []
        return _one_item(
            table, call, int(getattr(http, "status_code", 200)), parsed, request_id, record_id
        )
    counts = kept
    if not isinstance(parsed, dict) or "Error" in parsed:
        return []
    unprocessed = parsed.get("UnprocessedItems") or {}
    out = []
    for table, n in counts.items():
        left = sum(
            len(v) for ref, v in unprocessed.items() if ref == table or ref.endswith(f"/{table}")
        )
        if n - left > 0:
            out.append(SideWrite(operation, table, n - left, request_id))
    return out


def _one_item(
    table: str, call: Call, status: int, parsed: dict[str, Any], request_id: str, record_id: str
) -> list[SideWrite]:
    """The side write of a planned call of one item, if accepted; what the observer added
    is taken out of ``parsed``."""
    decided: list[Observation] = []
    record_answer(
        call, status, parsed, 0, 0, table_name=table, request_id=request_id, emit=decided.append
    )
    out = []
    for write in decided:
        # An update the observer cannot apply leaves the item after unknown; it is not
        # reported unobserved, as a call to an extra table judges no outcome.
        if not isinstance(write, WriteRecord) or write.outcome is not WriteOutcome.ACCEPTED:
            continue
        adds = write.adds
        before = item_digest(write.item_before) if write.before_known else ""
        after = item_digest(write.item_after) if write.after_known else ""
        # Equal digests are equal items as DynamoDB compares them (``item_digest``).
        changed = before != after if before and after else (True if adds else None)
        moves = (
            numeric_moves(write.item_before, write.item_after)
            if changed and write.before_known and write.after_known
            else None
        )
        out.append(
            SideWrite(
                write.operation,
                table,
                1,
                request_id,
                key=write.key,
                before=before,
                after=after,
                changed=changed,
                record_id=record_id,
                adds=adds,
                moves=moves or None,
            )
        )
    return out


def missing_line(
    operation: str, result: Any, context: Any, service: str = "dynamodb"
) -> str | None:
    """The log line for a call refused for something the run does not provide, else None.

    A call to a service other than DynamoDB and SQS says which (``in SERVICE``): what it
    did not find is no table or queue."""
    parsed = result[1] if isinstance(result, tuple) and len(result) == 2 else None
    error = parsed.get("Error") if isinstance(parsed, dict) else None
    if not isinstance(error, dict):
        return None
    code = error.get("Code")
    if code not in MISSING_CODES and not (
        code == "ValidationException"
        and any(words in str(error.get("Message", "")) for words in KEY_MISMATCH)
    ):
        return None
    resource = context.get(_RESOURCE) if isinstance(context, dict) else None
    line = f"{MISSING_PREFIX}{operation} call on {str(resource or '')!r} failed with {code}"
    return line if service in ("dynamodb", "sqs") else f"{line} in {service}"


_REJECTIONS = frozenset({"ConditionalCheckFailedException", "DuplicateItemException"})
_PART_REJECTIONS = frozenset({"ConditionalCheckFailed", "DuplicateItem"})


def record_answer(
    call: Call,
    status: int,
    parsed: dict[str, Any],
    started: int,
    ended: int,
    *,
    table_name: str,
    request_id: str,
    emit: Emit,
    record_id: str = "",
) -> None:
    """Emit one write record per part of ``call`` from its answer (``status``, ``parsed``),
    removing from ``parsed`` what the observer added to the request."""
    error = parsed.get("Error", {}) if status >= 300 else {}
    code = str(error.get("Code", "")) if error else ""
    outcomes: list[tuple[WriteOutcome, str | None, TypedItem | None, bool]] = []
    # Per part: (outcome, error code, item before, before known).
    if call.kind in ("single", "partiql"):
        part = call.parts[0]
        if not code:
            before = _old_image(call, parsed) if part.before_from_response else None
            known = part.before_from_response or part.absent_before
            outcomes.append((WriteOutcome.ACCEPTED, None, before, known))
        elif code in _REJECTIONS:
            old = parsed.get("Item")
            if call.added_rvoccf:
                parsed.pop("Item", None)
            outcomes.append((WriteOutcome.REJECTED, code, old, old is not None))
        else:
            outcomes.append((WriteOutcome.ERROR, code, None, False))
        if call.added_rv and not code:
            parsed.pop("Attributes", None)
    elif call.kind == "batch":
        unprocessed = (parsed.get("UnprocessedItems") or {}).get(call.table_ref or table_name) or []
        for part in call.parts:
            if code:
                outcomes.append((WriteOutcome.ERROR, code, None, False))
            elif _is_unprocessed(part, unprocessed):
                outcomes.append((WriteOutcome.ERROR, "Unprocessed", None, False))
            else:
                outcomes.append((WriteOutcome.ACCEPTED, None, None, part.absent_before))
    else:
        positions = call.positions
        reasons = parsed.get("CancellationReasons") or []
        responses = parsed.get("Responses") or []
        cancelled_by_condition = any(
            isinstance(r, dict) and r.get("Code") in _PART_REJECTIONS for r in reasons
        )
        for part, position in zip(call.parts, positions, strict=True):
            if call.kind == "partiql-batch" and not code:
                entry = responses[position] if position < len(responses) else {}
                part_error = entry.get("Error") if isinstance(entry, dict) else None
                if part_error:
                    part_code = str(part_error.get("Code", ""))
                    rejected = part_code in _PART_REJECTIONS
                    old = part_error.get("Item")
                    outcomes.append(
                        (
                            WriteOutcome.REJECTED if rejected else WriteOutcome.ERROR,
                            part_code,
                            old,
                            old is not None,
                        )
                    )
                else:
                    outcomes.append((WriteOutcome.ACCEPTED, None, None, part.absent_before))
            elif not code:
                outcomes.append((WriteOutcome.ACCEPTED, None, None, part.absent_before))
            elif cancelled_by_condition:
                reason = reasons[position] if position < len(reasons) else {}
                old = reason.get("Item") if isinstance(reason, dict) else None
                if part.added_rvoccf and isinstance(reason, dict):
                    reason.pop("Item", None)
                part_code = str(reason.get("Code", "")) if isinstance(reason, dict) else ""
                outcomes.append((WriteOutcome.REJECTED, part_code or code, old, old is not None))
            else:
                outcomes.append((WriteOutcome.ERROR, code, None, False))
    for part, (outcome, code_of_part, before, before_known) in zip(
        call.parts, outcomes, strict=True
    ):
        emit(
            _decision(
                call,
                part,
                outcome,
                code_of_part,
                before,
                before_known,
                parsed,
                started,
                ended,
                request_id=request_id,
                emit=emit,
                record_id=record_id,
            )
        )


def _decision(
    call: Call,
    part: Part,
    outcome: WriteOutcome,
    code: str | None,
    before: TypedItem | None,
    before_known: bool,
    parsed: dict[str, Any],
    started: int,
    ended: int,
    *,
    request_id: str,
    emit: Emit,
    record_id: str,
) -> WriteRecord:
    requested = part.requested
    after: TypedItem | None = None
    after_known = True
    if part.update is not None:
        expression, names, values = part.update
        if before_known:
            try:
                requested = apply_update(before, part.key, expression, names, values)
            except UpdateNotUnderstood as exc:
                after_known = False
                emit(UnobservedCall(part.operation, str(exc), request_id))
        elif part.after_from_response and outcome is WriteOutcome.ACCEPTED:
            requested = dict(parsed.get("Attributes") or {}) or None
        else:
            after_known = False
    elif part.deletes:
        requested = None
    elif requested is None:
        after_known = False  # an update without an expression (AttributeUpdates not understood)
    if outcome is WriteOutcome.ACCEPTED:
        after = requested
    elif outcome is WriteOutcome.REJECTED:
        after = before
        after_known = before_known
    else:
        after_known = False
    return WriteRecord(
        operation=part.operation,
        key=part.key,
        condition=part.condition,
        outcome=outcome,
        item_before=before,
        item_after=after,
        before_known=before_known,
        started_ns=started,
        ended_ns=ended,
        error_code=code,
        call_id=call.call_id,
        requested=requested,
        after_known=after_known,
        noop_when_present=part.noop,
        replaces=part.replaces,
        request_id=request_id,
        idempotency=call.idempotency,
        record_id=record_id,
    )


def _old_image(call: Call, parsed: dict[str, Any]) -> TypedItem | None:
    """The old image in a successful answer, removed when the observer asked for it."""
    if call.kind == "partiql":
        items = parsed.get("Items")
        if call.added_returning:
            parsed["Items"] = []  # what a write statement without RETURNING answers
        return dict(items[0]) if items else None
    attributes = parsed.get("Attributes")
    return dict(attributes) if attributes else None


def _is_unprocessed(part: Part, unprocessed: list[dict[str, Any]]) -> bool:
    for entry in unprocessed:
        if "PutRequest" in entry and entry["PutRequest"].get("Item") == part.requested:
            return True
        if (
            "DeleteRequest" in entry
            and part.deletes
            and entry["DeleteRequest"].get("Key") == part.key
        ):
            return True
    return False

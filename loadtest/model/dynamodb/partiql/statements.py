"""PartiQL DML for DynamoDB, parsed into what the write observer and the backend need.

Owns: ``parse`` (one ExecuteStatement / BatchExecuteStatement / ExecuteTransaction
statement -> ``Dml``: table, full primary key, the INSERTed item, the UPDATE's SET/REMOVE as
an equivalent ``UpdateExpression``, the extra WHERE conditions and the RETURNING clause),
``parse_with_condition`` (the same, plus those extra conditions as a ``ConditionExpression``)
``table_name`` and ``with_returning_all_old``. Pure: no boto3, no I/O - it also runs inside
a Lambda layer. Must not evaluate anything against an item; that is the UpdateExpression
evaluator's job.

This module owns whole statements (which clauses each kind takes, in order) and the API;
``partiql_clauses`` owns SET/REMOVE, WHERE and RETURNING, ``partiql_syntax`` the tokens and
literal values. Every public name stays importable from here.

The dialect is DynamoDB's (docs: "PartiQL - a SQL-compatible query language for Amazon
DynamoDB"), not the whole of PartiQL::

    INSERT INTO t VALUE {'id': 'a', 'quantity': ?}
    UPDATE t SET a = ?, b = b + 1 SET c = list_append(c, [?]) REMOVE d
        WHERE id = ? [AND sk = ?] [AND other conditions] [RETURNING ALL OLD * | ...]
    DELETE FROM t WHERE id = ? [AND ...] [RETURNING ALL OLD *]
    SELECT ... FROM t[."index"] [WHERE ...]

``?`` parameters are typed AttributeValues consumed left to right across the statement.
Not supported (``StatementNotUnderstood``): a key that is not pinned by top-level ``=``
conjuncts (``OR`` at the top of the WHERE, ``IN``, a range), ``EXISTS(...)``, ``IS NULL``,
``SET`` values built from ``set_add``/``set_delete`` anywhere but the whole right-hand side
of their own path, and any statement other than the four above.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from loadtest.model.dynamodb.partiql.clauses import ClauseParser, Condition, Kind, Placeholders
from loadtest.model.dynamodb.partiql.syntax import StatementNotUnderstood, TypedItem

__all__ = [
    "Condition",
    "Dml",
    "StatementNotUnderstood",
    "TypedItem",
    "parse",
    "parse_with_condition",
    "table_name",
    "with_returning_all_old",
]


@dataclass(frozen=True)
class Dml:
    """One PartiQL statement, interpreted."""

    kind: Kind
    table: str
    """The table name, unquoted (for ``SELECT ... FROM t."index"``, ``t``)."""
    key: TypedItem
    """The full primary key: from VALUE for INSERT, the WHERE equalities otherwise; ``{}``
    for a SELECT that is not exactly a key lookup."""
    item: TypedItem | None
    """INSERT: the whole item, typed; else None."""
    update_expression: str | None
    """UPDATE: the SET/REMOVE actions as an equivalent UpdateExpression over ``names`` and
    ``values`` (placeholders ``#n0``, ``:v0``, ...); else None."""
    names: dict[str, str]
    """The UpdateExpression's ExpressionAttributeNames."""
    values: dict[str, Any]
    """The UpdateExpression's ExpressionAttributeValues (typed)."""
    condition: str | None
    """The WHERE conjuncts other than the key equalities, as the statement spells them,
    joined by `` AND ``; None if there are none."""
    returning: str | None
    """The RETURNING clause, normalised (``"ALL OLD *"``); None without one."""


class _Parser(ClauseParser):
    """Whole statements: which clauses each kind has, in order, and the parameters used."""

    # -- statements -----------------------------------------------------------------------
    def statement_kind(self) -> Kind:
        token = self.token
        for kind in ("INSERT", "UPDATE", "DELETE", "SELECT"):
            if token.keyword(kind):
                return kind
        raise self.fail("INSERT, UPDATE, DELETE or SELECT")

    def table_name(self) -> str:
        kind = self.statement_kind()
        self.advance()
        if kind == "INSERT":
            self.expect_keyword("INTO")
        elif kind == "DELETE":
            self.expect_keyword("FROM")
        elif kind == "SELECT":
            depth = 0
            while not (depth == 0 and self.token.keyword("FROM")):
                if self.token.kind == "end":
                    raise self.fail("FROM")
                if self.token.op("(", "["):
                    depth += 1
                elif self.token.op(")", "]"):
                    depth -= 1
                self.advance()
            self.advance()
        return self.name()

    def parse(self, key_names: Sequence[str]) -> tuple[Dml, Condition | None]:
        if not key_names:
            raise StatementNotUnderstood("no key attributes given for the table")
        kind = self.statement_kind()
        table = self.table_name()
        indexed = kind == "SELECT" and self.token.op(".")
        if indexed:  # SELECT ... FROM "table"."index": not a key lookup
            self.advance()
            self.name()
        item: TypedItem | None = None
        key: TypedItem = {}
        update_expression: str | None = None
        placeholders = Placeholders("n", "v")
        text: str | None = None
        condition: Condition | None = None
        returning: str | None = None
        if kind == "INSERT":
            self.expect_keyword("VALUE")
            if not self.token.op("{"):
                raise self.fail("the item as a map {'attribute': value, ...}")
            item = self.map_body()
            missing = [name for name in key_names if name not in item]
            if missing:
                raise StatementNotUnderstood(
                    f"the INSERTed item has no key attribute {missing[0]!r}"
                )
            key = {name: item[name] for name in key_names}
        elif kind == "UPDATE":
            update_expression, placeholders = self.update_actions()
            self.expect_keyword("WHERE")
            key, text, condition = self.where(kind, key_names, ("RETURNING",))
            returning = self.returning(kind)
        elif kind == "DELETE":
            self.expect_keyword("WHERE")
            key, text, condition = self.where(kind, key_names, ("RETURNING",))
            returning = self.returning(kind)
        else:
            if self.token.keyword("WHERE"):
                self.advance()
                key, text, condition = self.where(kind, key_names, ("ORDER",))
                if indexed:
                    key = {}
            if self.token.keyword("ORDER"):
                while self.token.kind != "end":
                    self.advance()
        self.expect_end()
        if self.used != len(self.parameters):
            raise StatementNotUnderstood(
                f"{len(self.parameters)} parameter(s) supplied but the statement uses {self.used}"
            )
        dml = Dml(
            kind=kind,
            table=table,
            key=key,
            item=item,
            update_expression=update_expression,
            names=placeholders.names,
            values=placeholders.values,
            condition=text,
            returning=returning,
        )
        return dml, condition


# -- the API ----------------------------------------------------------------------------------
def parse(statement: str, parameters: Sequence[Any] | None, key_names: Sequence[str]) -> Dml:
    """Interpret one PartiQL statement; ``key_names`` are the table's key attributes (hash, then range)."""
    return _Parser(statement, parameters).parse(key_names)[0]


def parse_with_condition(
    statement: str, parameters: Sequence[Any] | None, key_names: Sequence[str]
) -> tuple[Dml, Condition | None]:
    """``parse``, plus the extra WHERE conditions as a ConditionExpression (None if none)."""
    return _Parser(statement, parameters).parse(key_names)


def table_name(statement: str) -> str:
    """The table a statement names, unquoted, without parsing the rest of it.

    For a caller that must look the key attributes up before calling ``parse``.
    """
    return _Parser(statement, None).table_name()


def with_returning_all_old(statement: str) -> str:
    """The UPDATE/DELETE statement with `RETURNING ALL OLD *` appended (it must have no RETURNING clause)."""
    parser = _Parser(statement, None)
    kind = parser.statement_kind()
    if kind not in ("UPDATE", "DELETE"):
        raise StatementNotUnderstood(f"RETURNING ALL OLD * needs UPDATE or DELETE, not {kind}")
    clause = next((t for t in parser.tokens if t.keyword("RETURNING")), None)
    if clause is not None:
        raise StatementNotUnderstood(
            f"the statement already has a RETURNING clause at offset {clause.start}"
        )
    last = parser.tokens[-2]  # before the end marker (and any trailing semicolon)
    return f"{statement[: last.end]} RETURNING ALL OLD *"

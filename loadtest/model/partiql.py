"""PartiQL DML for DynamoDB, parsed into what the write observer and the backend need.

Owns: ``parse`` (one ExecuteStatement / BatchExecuteStatement / ExecuteTransaction
statement -> ``Dml``: table, full primary key, the INSERTed item, the UPDATE's SET/REMOVE as
an equivalent ``UpdateExpression``, the extra WHERE conditions and the RETURNING clause),
``parse_with_condition`` (the same, plus those extra conditions as a ``ConditionExpression``)
``table_name`` and ``with_returning_all_old``. Pure: no boto3, no I/O - it also runs inside
a Lambda layer. Must not evaluate anything against an item; that is the UpdateExpression
evaluator's job.

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

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

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

TypedItem = dict[str, Any]
"""An item in DynamoDB's typed wire form: ``{"id": {"S": "x"}}``."""

Kind = Literal["INSERT", "UPDATE", "DELETE", "SELECT"]

_TYPE_TAGS = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})
_SET_TAG = {"S": "SS", "N": "NS", "B": "BS"}
_RETURNING = {
    "UPDATE": ("ALL OLD *", "MODIFIED OLD *", "ALL NEW *", "MODIFIED NEW *"),
    "DELETE": ("ALL OLD *",),
}


class StatementNotUnderstood(ValueError):
    """A statement the parser cannot interpret; the message names the part."""


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


@dataclass(frozen=True)
class Condition:
    """A statement's extra WHERE conditions as a ConditionExpression.

    Placeholders are ``#c0``/``:c0``, ..., so they never clash with an UpdateExpression's.
    """

    expression: str
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


# -- tokens -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Token:
    kind: str  # "str" | "qident" | "ident" | "num" | "op" | "end"
    text: str  # the value (unescaped for "str"/"qident"), or the operator
    start: int
    end: int

    def keyword(self, *words: str) -> bool:
        return self.kind == "ident" and self.text.upper() in words

    def op(self, *ops: str) -> bool:
        return self.kind == "op" and self.text in ops


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<str>'(?:[^']|'')*')
  | (?P<qident>"(?:[^"]|"")*")
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><<|>>|<=|>=|<>|!=|[=<>(){}\[\],:.?+\-*;])
    """,
    re.VERBOSE,
)


def _tokenize(statement: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(statement):
        match = _TOKEN_RE.match(statement, position)
        if match is None:
            raise StatementNotUnderstood(
                f"unexpected character {statement[position]!r} at offset {position}"
            )
        kind = match.lastgroup
        assert kind is not None
        text = match.group()
        if kind == "str":
            text = text[1:-1].replace("''", "'")
        elif kind == "qident":
            text = text[1:-1].replace('""', '"')
        if kind != "ws":
            tokens.append(_Token(kind, text, match.start(), match.end()))
        position = match.end()
    if position == 0 and not tokens:
        raise StatementNotUnderstood("the statement is empty")
    if tokens and tokens[-1].op(";"):
        tokens.pop()  # a trailing semicolon ends the statement
    tokens.append(_Token("end", "", len(statement), len(statement)))
    return tokens


# -- the parser -------------------------------------------------------------------------------
class _Placeholders:
    """Names and values replaced by ``#<p>N`` / ``:<q>N`` (names deduplicated)."""

    def __init__(self, name_prefix: str, value_prefix: str) -> None:
        self.name_prefix = name_prefix
        self.value_prefix = value_prefix
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}
        self._by_name: dict[str, str] = {}

    def name(self, attribute: str) -> str:
        placeholder = self._by_name.get(attribute)
        if placeholder is None:
            placeholder = f"#{self.name_prefix}{len(self._by_name)}"
            self._by_name[attribute] = placeholder
            self.names[placeholder] = attribute
        return placeholder

    def value(self, value: Any) -> str:
        placeholder = f":{self.value_prefix}{len(self.values)}"
        self.values[placeholder] = value
        return placeholder


class _Parser:
    def __init__(self, statement: str, parameters: Sequence[Any] | None) -> None:
        self.statement = statement
        self.tokens = _tokenize(statement)
        self.at = 0
        self.parameters = list(parameters or ())
        self.used = 0

    # -- cursor ---------------------------------------------------------------------------
    @property
    def token(self) -> _Token:
        return self.tokens[self.at]

    def peek(self, ahead: int = 1) -> _Token:
        return self.tokens[min(self.at + ahead, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        token = self.token
        if token.kind != "end":
            self.at += 1
        return token

    def describe(self, token: _Token) -> str:
        if token.kind == "end":
            return "the end of the statement"
        return f"{self.statement[token.start : token.end]!r} at offset {token.start}"

    def fail(self, expected: str, token: _Token | None = None) -> StatementNotUnderstood:
        return StatementNotUnderstood(
            f"expected {expected}, found {self.describe(token or self.token)}"
        )

    def expect_keyword(self, word: str) -> _Token:
        if not self.token.keyword(word):
            raise self.fail(word)
        return self.advance()

    def expect_op(self, op: str) -> _Token:
        if not self.token.op(op):
            raise self.fail(repr(op))
        return self.advance()

    def expect_end(self) -> None:
        if self.token.kind != "end":
            raise self.fail("the end of the statement")

    # -- values ---------------------------------------------------------------------------
    def parameter(self) -> Any:
        token = self.advance()
        if self.used >= len(self.parameters):
            raise StatementNotUnderstood(
                f"parameter {self.used + 1} ('?' at offset {token.start}) was not given: "
                f"{len(self.parameters)} parameter(s) supplied"
            )
        value = self.parameters[self.used]
        self.used += 1
        if not (isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TYPE_TAGS):
            raise StatementNotUnderstood(
                f"parameter {self.used} is not a typed AttributeValue: {value!r}"
            )
        return value

    def starts_value(self) -> bool:
        token = self.token
        return (
            token.kind in ("str", "num")
            or token.op("?", "{", "[", "<<")
            or (token.op("-") and self.peek().kind == "num")
            or token.keyword("TRUE", "FALSE", "NULL")
        )

    def value(self) -> Any:
        token = self.token
        if token.kind == "str":
            self.advance()
            return {"S": token.text}
        if token.kind == "num":
            self.advance()
            return {"N": token.text}
        if token.op("-") and self.peek().kind == "num":
            self.advance()
            return {"N": "-" + self.advance().text}
        if token.op("?"):
            return self.parameter()
        if token.keyword("TRUE", "FALSE"):
            self.advance()
            return {"BOOL": token.text.upper() == "TRUE"}
        if token.keyword("NULL"):
            self.advance()
            return {"NULL": True}
        if token.op("{"):
            return {"M": self.map_body()}
        if token.op("["):
            self.advance()
            return {"L": self.sequence("]")}
        if token.op("<<"):
            return self.set_value()
        raise self.fail("a value")

    def map_body(self) -> TypedItem:
        self.expect_op("{")
        members: TypedItem = {}
        while not self.token.op("}"):
            if members:
                self.expect_op(",")
            key = self.token
            if key.kind != "str":
                raise self.fail("a map key in single quotes")
            self.advance()
            if key.text in members:
                raise StatementNotUnderstood(f"map key {key.text!r} appears twice")
            self.expect_op(":")
            members[key.text] = self.value()
        self.advance()
        return members

    def sequence(self, closing: str) -> list[Any]:
        values: list[Any] = []
        while not self.token.op(closing):
            if values:
                self.expect_op(",")
            values.append(self.value())
        self.advance()
        return values

    def set_value(self) -> Any:
        start = self.expect_op("<<")
        members = self.sequence(">>")
        if not members:
            raise StatementNotUnderstood(f"empty set at offset {start.start}")
        tags = {next(iter(member)) for member in members}
        if len(tags) != 1 or next(iter(tags)) not in _SET_TAG:
            raise StatementNotUnderstood(
                f"set at offset {start.start} mixes types or holds non-scalars: {sorted(tags)}"
            )
        tag = next(iter(tags))
        return {_SET_TAG[tag]: [member[tag] for member in members]}

    # -- names and paths ------------------------------------------------------------------
    def starts_name(self) -> bool:
        return self.token.kind == "qident" or (
            self.token.kind == "ident" and not self.peek().op("(")
        )

    def name(self) -> str:
        token = self.token
        if token.kind not in ("ident", "qident"):
            raise self.fail("a name")
        self.advance()
        return token.text

    def path(self, placeholders: _Placeholders) -> str:
        """An attribute path with every name replaced by a placeholder."""
        parts = [placeholders.name(self.name())]
        while True:
            if self.token.op("."):
                self.advance()
                parts.append("." + placeholders.name(self.name()))
            elif self.token.op("[") and self.peek().kind == "num":
                self.advance()
                index = self.advance().text
                if not index.isdigit():
                    raise self.fail("a list index")
                self.expect_op("]")
                parts.append(f"[{index}]")
            else:
                return "".join(parts)

    # -- UPDATE ---------------------------------------------------------------------------
    def operand(self, placeholders: _Placeholders) -> str:
        token = self.token
        if token.kind == "ident" and self.peek().op("("):
            function = token.text.lower()
            if function not in ("list_append", "if_not_exists"):
                raise self.fail("list_append(...) or if_not_exists(...)")
            self.advance()
            self.advance()
            first = self.operand(placeholders)
            self.expect_op(",")
            second = self.operand(placeholders)
            self.expect_op(")")
            return f"{function}({first}, {second})"
        if self.starts_value():
            return placeholders.value(self.value())
        if self.starts_name():
            return self.path(placeholders)
        raise self.fail("a value, an attribute or a function")

    def assignment(self, placeholders: _Placeholders, actions: dict[str, list[str]]) -> None:
        target = self.path(placeholders)
        self.expect_op("=")
        token = self.token
        if token.kind == "ident" and token.text.lower() in ("set_add", "set_delete"):
            # DynamoDB's PartiQL spells ADD / DELETE as SET a = set_add(a, <<...>>).
            self.advance()
            self.expect_op("(")
            source = self.path(placeholders)
            if source != target:
                raise StatementNotUnderstood(
                    f"{token.text}() at offset {token.start} must take the path it assigns"
                )
            self.expect_op(",")
            value = placeholders.value(self.value())
            self.expect_op(")")
            clause = "ADD" if token.text.lower() == "set_add" else "DELETE"
            actions[clause].append(f"{target} {value}")
            return
        expression = self.operand(placeholders)
        if self.token.op("+", "-"):
            operator = self.advance().text
            expression = f"{expression} {operator} {self.operand(placeholders)}"
        actions["SET"].append(f"{target} = {expression}")

    def update_actions(self) -> tuple[str, _Placeholders]:
        placeholders = _Placeholders("n", "v")
        actions: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": [], "DELETE": []}
        if not self.token.keyword("SET", "REMOVE"):
            raise self.fail("SET or REMOVE")
        while self.token.keyword("SET", "REMOVE"):
            clause = self.advance().text.upper()
            while True:
                if clause == "SET":
                    self.assignment(placeholders, actions)
                else:
                    actions["REMOVE"].append(self.path(placeholders))
                if not self.token.op(","):
                    break
                self.advance()
        expression = " ".join(
            f"{clause} {', '.join(items)}" for clause, items in actions.items() if items
        )
        return expression, placeholders

    # -- WHERE ----------------------------------------------------------------------------
    def conjuncts(self, stop: tuple[str, ...], allow_or: bool = False) -> list[tuple[int, int]]:
        """Token ranges of the top-level AND conjuncts, up to a ``stop`` keyword or the end.

        A top-level OR means no conjunct is guaranteed to hold: it raises, or with
        ``allow_or`` the whole clause is one conjunct.
        """
        ranges: list[tuple[int, int]] = []
        depth = 0
        first = start = self.at
        between = saw_or = False
        while True:
            token = self.token
            if token.kind == "end" or (depth == 0 and token.keyword(*stop)):
                break
            if token.op("(", "[", "{", "<<"):
                depth += 1
            elif token.op(")", "]", "}", ">>"):
                if depth == 0:
                    break  # the end of a parenthesised group being unwrapped
                depth -= 1
            elif depth == 0 and token.keyword("BETWEEN"):
                between = True
            elif depth == 0 and token.keyword("OR") and allow_or:
                saw_or = True
            elif depth == 0 and token.keyword("OR"):
                raise StatementNotUnderstood(
                    f"the WHERE clause combines conditions with OR at offset {token.start}; "
                    "the key must be pinned by top-level AND equalities"
                )
            elif depth == 0 and token.keyword("AND"):
                if between:
                    between = False
                else:
                    ranges.append((start, self.at))
                    start = self.at + 1
            self.advance()
        ranges.append((start, self.at))
        if saw_or:
            return [(first, self.at)]
        flat: list[tuple[int, int]] = []
        for begin, end in ranges:
            if begin == end:
                raise self.fail("a condition", self.tokens[begin])
            flat.extend(self.unwrap(begin, end))
        return flat

    def unwrap(self, first: int, end: int) -> list[tuple[int, int]]:
        """A conjunct wrapped whole in parentheses is read as the conjuncts inside."""
        if not (self.tokens[first].op("(") and self.tokens[end - 1].op(")")):
            return [(first, end)]
        depth = 0
        for index in range(first, end):
            if self.tokens[index].op("(", "[", "{", "<<"):
                depth += 1
            elif self.tokens[index].op(")", "]", "}", ">>"):
                depth -= 1
            if depth == 0 and index < end - 1:
                return [(first, end)]  # "(a) = (b)": not one parenthesised group
        saved = self.at
        self.at = first + 1
        try:
            inner = self.conjuncts(())
        except StatementNotUnderstood:
            return [(first, end)]  # an OR inside: one opaque condition
        finally:
            self.at = saved
        return [(a, min(b, end - 1)) for a, b in inner]

    def key_equality(
        self, first: int, end: int, key_names: Sequence[str]
    ) -> tuple[str, Any] | None:
        """``(name, value)`` if the conjunct is ``key = value`` or ``value = key``."""
        tokens = self.tokens
        for name_at, op_at in ((first, first + 1), (end - 1, end - 2)):
            token = tokens[name_at]
            if (
                token.kind in ("ident", "qident")
                and token.text in key_names
                and first <= op_at < end
                and tokens[op_at].op("=")
            ):
                value_range = (first + 2, end) if name_at == first else (first, end - 2)
                saved, saved_used = self.at, self.used
                self.at = value_range[0]
                try:
                    if self.starts_value():
                        value = self.value()
                        if self.at == value_range[1]:
                            return token.text, value
                except StatementNotUnderstood:
                    pass
                self.at, self.used = saved, saved_used
        return None

    def condition(self, first: int, end: int, placeholders: _Placeholders) -> str:
        """Translate one conjunct into ConditionExpression syntax, consuming its parameters."""
        self.at = first
        out: list[str] = []
        while self.at < end:
            token = self.token
            if token.keyword("AND", "OR", "NOT", "BETWEEN"):
                self.advance()
                out.append(token.text.upper())
            elif token.keyword("IN"):
                self.advance()
                if self.token.op("[", "("):
                    closing = "]" if self.advance().text == "[" else ")"
                    members = [placeholders.value(v) for v in self.sequence(closing)]
                    out.append(f"IN ({', '.join(members)})")
                else:
                    raise self.fail("a list after IN")
            elif token.keyword("IS"):
                self.advance()
                negated = self.token.keyword("NOT")
                if negated:
                    self.advance()
                if not self.token.keyword("MISSING") or not out:
                    raise self.fail("IS [NOT] MISSING")
                self.advance()
                function = "attribute_exists" if negated else "attribute_not_exists"
                out[-1] = f"{function}({out[-1]})"
            elif token.kind == "ident" and self.peek().op("("):
                self.advance()
                self.advance()
                out.append(token.text.lower() + "(")
            elif self.starts_value():
                out.append(placeholders.value(self.value()))
            elif self.starts_name():
                out.append(self.path(placeholders))
            elif token.op("!="):
                self.advance()
                out.append("<>")
            elif token.op("=", "<>", "<", "<=", ">", ">=", "(", ")", ","):
                self.advance()
                out.append(token.text)
            else:
                raise self.fail("a condition")
        if self.at != end:
            raise self.fail("the end of the condition", self.tokens[end])
        return re.sub(r"(?<=\() | (?=[),])", "", " ".join(out))

    def where(
        self,
        kind: Kind,
        key_names: Sequence[str],
        stop: tuple[str, ...],
    ) -> tuple[TypedItem, str | None, Condition | None]:
        """(key, condition text, condition expression) of the WHERE clause."""
        ranges = self.conjuncts(stop, allow_or=kind == "SELECT")
        end_at = self.at
        key: TypedItem = {}
        others: list[tuple[int, int]] = []
        placeholders = _Placeholders("c", "c")
        expressions: list[str] = []
        for first, end in ranges:
            equality = self.key_equality(first, end, key_names)
            if equality is not None and equality[0] not in key:
                key[equality[0]] = equality[1]
                continue
            if equality is not None:
                raise StatementNotUnderstood(f"the WHERE clause sets key {equality[0]!r} twice")
            others.append((first, end))
            expressions.append(self.condition(first, end, placeholders))
        self.at = end_at
        missing = [name for name in key_names if name not in key]
        if missing and kind != "SELECT":
            raise StatementNotUnderstood(
                f"the WHERE clause has no equality on key attribute {missing[0]!r}"
            )
        text = (
            " AND ".join(
                self.statement[self.tokens[a].start : self.tokens[b - 1].end] for a, b in others
            )
            or None
        )
        condition = None
        if expressions:
            joined = (
                expressions[0]
                if len(expressions) == 1
                else " AND ".join(f"({e})" for e in expressions)
            )
            condition = Condition(joined, placeholders.names, placeholders.values)
        if kind == "SELECT" and (missing or others):
            key = {}
        return key, text, condition

    def returning(self, kind: str) -> str | None:
        if not self.token.keyword("RETURNING"):
            return None
        token = self.advance()
        words = []
        while self.token.kind != "end":
            words.append(self.advance().text.upper())
        clause = " ".join(words)
        if clause not in _RETURNING.get(kind, ()):
            allowed = " | ".join(_RETURNING.get(kind, ())) or "no RETURNING clause"
            raise StatementNotUnderstood(
                f"RETURNING {clause} at offset {token.start}: {kind} allows {allowed}"
            )
        return clause

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
        placeholders = _Placeholders("n", "v")
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

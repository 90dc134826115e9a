"""PartiQL's token stream and its literal values, for the DML parser.

Owns the lexical level of DynamoDB's PartiQL: tokens (strings with ``''``
escapes, quoted identifiers, numbers, operators, a trailing ``;``), a cursor
over them with the "expected X, found Y at offset N" errors every part of the
parser raises, and the literal values read into typed AttributeValues (strings,
numbers, booleans, NULL, maps, lists, ``<<sets>>``, ``?`` parameters consumed
left to right). It knows no clause or statement: that is
``loadtest.model.dynamodb.partiql.clauses`` and ``loadtest.model.dynamodb.partiql.statements``. Pure; it
runs inside the observer's Lambda layer too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

TypedItem = dict[str, Any]
"""An item in DynamoDB's typed wire form: ``{"id": {"S": "x"}}``."""

TYPE_TAGS = frozenset({"S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL"})
SET_TAG = {"S": "SS", "N": "NS", "B": "BS"}


class StatementNotUnderstood(ValueError):
    """A statement the parser cannot interpret; the message names the part."""


# -- tokens -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Token:
    kind: str  # "str" | "qident" | "ident" | "num" | "op" | "end"
    text: str  # the value (unescaped for "str"/"qident"), or the operator
    start: int
    end: int

    def keyword(self, *words: str) -> bool:
        return self.kind == "ident" and self.text.upper() in words

    def op(self, *ops: str) -> bool:
        return self.kind == "op" and self.text in ops


TOKEN_RE = re.compile(
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


def tokenize(statement: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(statement):
        match = TOKEN_RE.match(statement, position)
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
            tokens.append(Token(kind, text, match.start(), match.end()))
        position = match.end()
    if position == 0 and not tokens:
        raise StatementNotUnderstood("the statement is empty")
    if tokens and tokens[-1].op(";"):
        tokens.pop()  # a trailing semicolon ends the statement
    tokens.append(Token("end", "", len(statement), len(statement)))
    return tokens


class Cursor:
    """A position in a statement's tokens, and the literal values read from there."""

    def __init__(self, statement: str, parameters: Sequence[Any] | None) -> None:
        self.statement = statement
        self.tokens = tokenize(statement)
        self.at = 0
        self.parameters = list(parameters or ())
        self.used = 0

    # -- cursor ---------------------------------------------------------------------------
    @property
    def token(self) -> Token:
        return self.tokens[self.at]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.at + ahead, len(self.tokens) - 1)]

    def advance(self) -> Token:
        token = self.token
        if token.kind != "end":
            self.at += 1
        return token

    def describe(self, token: Token) -> str:
        if token.kind == "end":
            return "the end of the statement"
        return f"{self.statement[token.start : token.end]!r} at offset {token.start}"

    def fail(self, expected: str, token: Token | None = None) -> StatementNotUnderstood:
        return StatementNotUnderstood(
            f"expected {expected}, found {self.describe(token or self.token)}"
        )

    def expect_keyword(self, word: str) -> Token:
        if not self.token.keyword(word):
            raise self.fail(word)
        return self.advance()

    def expect_op(self, op: str) -> Token:
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
        if not (isinstance(value, dict) and len(value) == 1 and next(iter(value)) in TYPE_TAGS):
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
        if len(tags) != 1 or next(iter(tags)) not in SET_TAG:
            raise StatementNotUnderstood(
                f"set at offset {start.start} mixes types or holds non-scalars: {sorted(tags)}"
            )
        tag = next(iter(tags))
        return {SET_TAG[tag]: [member[tag] for member in members]}

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

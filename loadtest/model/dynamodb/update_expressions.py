"""The UpdateExpression grammar: an expression read into actions, or refused.

Owns the syntax of DynamoDB UpdateExpressions (SET, REMOVE, ADD, DELETE;
document paths with ``#name`` placeholders, ``a.b`` and ``a[0]``;
``if_not_exists``, ``list_append``, ``+`` and ``-``) and the rules DynamoDB
checks before looking at any item: function arity, the operand kinds each
clause takes, and target paths that overlap or conflict. The result is a list
of ``Action`` over a small expression tree. It evaluates nothing: applying
actions to an item is ``loadtest.model.dynamodb.updates``. Pure; it runs inside the
observer's Lambda layer too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeAlias

PathPart: TypeAlias = str | int
"""A map key (str) or a list index (int) in a document path."""


class UpdateNotUnderstood(ValueError):
    """An update expression this evaluator cannot apply (the message names the part)."""


class Clause(StrEnum):
    SET = "SET"
    REMOVE = "REMOVE"
    ADD = "ADD"
    DELETE = "DELETE"


# --- expression tree ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Path:
    parts: tuple[PathPart, ...]
    """Resolved: placeholders replaced by the names they stand for."""
    text: str
    """As written in the expression, for messages."""


@dataclass(frozen=True)
class Placeholder:
    name: str
    """``:value`` as written."""


@dataclass(frozen=True)
class Call:
    function: str
    args: tuple[Operand, ...]


@dataclass(frozen=True)
class Arithmetic:
    operator: str
    """``+`` or ``-``."""
    left: Operand
    right: Operand


Operand: TypeAlias = Path | Placeholder | Call
Value: TypeAlias = Operand | Arithmetic


@dataclass(frozen=True)
class Action:
    clause: Clause
    path: Path
    value: Value | None
    """The SET value, the ADD/DELETE placeholder; None for REMOVE."""


# --- tokenizer and parser ----------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<name>#[A-Za-z0-9_]+)|(?P<value>:[A-Za-z0-9_]+)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<index>\[\s*\d+\s*\])|(?P<punct>[.,()=+\-]))"
)
_FUNCTIONS = {"if_not_exists": 2, "list_append": 2}


@dataclass(frozen=True)
class _Token:
    kind: str
    text: str
    at: int


def _tokenize(expression: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(expression):
        if expression[pos:].isspace():
            break
        match = _TOKEN.match(expression, pos)
        if match is None or match.lastgroup is None:
            bad = expression[pos:].strip()[:20]
            raise UpdateNotUnderstood(f"syntax error at {bad!r} in {expression!r}")
        tokens.append(_Token(match.lastgroup, match.group(match.lastgroup), match.start()))
        pos = match.end()
    return tokens


class _Parser:
    def __init__(self, expression: str, names: Mapping[str, str] | None) -> None:
        self.expression = expression
        self.names = names or {}
        self.tokens = _tokenize(expression)
        self.pos = 0

    def _peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _next(self, what: str) -> _Token:
        token = self._peek()
        if token is None:
            raise UpdateNotUnderstood(f"{what} expected at the end of {self.expression!r}")
        self.pos += 1
        return token

    def _expect(self, text: str) -> None:
        token = self._next(repr(text))
        if token.text != text:
            raise UpdateNotUnderstood(
                f"{text!r} expected, got {token.text!r} in {self.expression!r}"
            )

    def _at_punct(self, text: str) -> bool:
        token = self._peek()
        return token is not None and token.kind == "punct" and token.text == text

    def parse(self) -> list[Action]:
        actions: list[Action] = []
        seen: set[Clause] = set()
        if not self.tokens:
            raise UpdateNotUnderstood("the update expression is empty")
        while self._peek() is not None:
            token = self._next("a clause")
            try:
                clause = Clause(token.text.upper()) if token.kind == "ident" else None
            except ValueError:
                clause = None
            if clause is None:
                raise UpdateNotUnderstood(
                    f"SET, REMOVE, ADD or DELETE expected, got {token.text!r} in {self.expression!r}"
                )
            if clause in seen:
                raise UpdateNotUnderstood(
                    f"the {clause} clause appears twice in {self.expression!r}"
                )
            seen.add(clause)
            actions.append(self._action(clause))
            while self._at_punct(","):
                self.pos += 1
                actions.append(self._action(clause))
        return actions

    def _action(self, clause: Clause) -> Action:
        path = self._path()
        if clause is Clause.SET:
            self._expect("=")
            return Action(clause, path, self._value())
        if clause is Clause.REMOVE:
            return Action(clause, path, None)
        token = self._next(f"a value after {clause} {path.text}")
        if token.kind != "value":
            raise UpdateNotUnderstood(
                f"{clause} {path.text} takes a :value, got {token.text!r} in {self.expression!r}"
            )
        return Action(clause, path, Placeholder(token.text))

    def _path(self) -> Path:
        first = self._next("a document path")
        parts: list[PathPart] = [self._name(first)]
        text = first.text
        while True:
            token = self._peek()
            if token is None:
                break
            if token.kind == "index":
                self.pos += 1
                parts.append(int(token.text[1:-1]))
                text += f"[{parts[-1]}]"
            elif token.kind == "punct" and token.text == ".":
                self.pos += 1
                name = self._next("a name after '.'")
                parts.append(self._name(name))
                text += f".{name.text}"
            else:
                break
        return Path(tuple(parts), text)

    def _name(self, token: _Token) -> str:
        if token.kind == "ident":
            return token.text
        if token.kind == "name":
            if token.text not in self.names:
                raise UpdateNotUnderstood(
                    f"the attribute name placeholder {token.text} is not defined in ExpressionAttributeNames"
                )
            return self.names[token.text]
        raise UpdateNotUnderstood(
            f"an attribute name expected, got {token.text!r} in {self.expression!r}"
        )

    def _value(self) -> Value:
        left = self._operand()
        token = self._peek()
        if token is not None and token.kind == "punct" and token.text in "+-":
            self.pos += 1
            return Arithmetic(token.text, left, self._operand())
        return left

    def _operand(self) -> Operand:
        token = self._peek()
        if token is None:
            raise UpdateNotUnderstood(f"an operand expected at the end of {self.expression!r}")
        if token.kind == "value":
            self.pos += 1
            return Placeholder(token.text)
        if (
            token.kind == "ident"
            and self.pos + 1 < len(self.tokens)
            and self.tokens[self.pos + 1].text == "("
        ):
            self.pos += 2
            return self._call(token.text)
        if token.kind in ("ident", "name"):
            return self._path()
        raise UpdateNotUnderstood(f"an operand expected, got {token.text!r} in {self.expression!r}")

    def _call(self, function: str) -> Call:
        # Function names are case-sensitive in DynamoDB.
        if function not in _FUNCTIONS:
            raise UpdateNotUnderstood(f"unknown function {function}() in {self.expression!r}")
        args = [self._operand()]
        while self._at_punct(","):
            self.pos += 1
            args.append(self._operand())
        self._expect(")")
        if len(args) != _FUNCTIONS[function]:
            raise UpdateNotUnderstood(
                f"{function}() takes {_FUNCTIONS[function]} operands, got {len(args)}"
            )
        if function == "if_not_exists" and not isinstance(args[0], Path):
            raise UpdateNotUnderstood(
                "the first operand of if_not_exists() must be a document path"
            )
        return Call(function, tuple(args))


def parse_update_expression(expression: str, names: Mapping[str, str] | None) -> list[Action]:
    if not isinstance(expression, str):
        raise UpdateNotUnderstood(f"the update expression is not a string: {expression!r}")
    actions = _Parser(expression, names).parse()
    _check_paths(actions)
    return actions


def _check_paths(actions: list[Action]) -> None:
    """Target paths may neither overlap (one a prefix of the other) nor conflict (map vs list)."""
    for i, a in enumerate(actions):
        for b in actions[i + 1 :]:
            common = 0
            for x, y in zip(a.path.parts, b.path.parts, strict=False):
                if x != y:
                    break
                common += 1
            shorter = min(len(a.path.parts), len(b.path.parts))
            if common == shorter:
                raise UpdateNotUnderstood(
                    f"two document paths overlap: {a.path.text} and {b.path.text}"
                )
            if isinstance(a.path.parts[common], int) != isinstance(b.path.parts[common], int):
                raise UpdateNotUnderstood(
                    f"two document paths conflict: {a.path.text} and {b.path.text}"
                )

"""The clauses of PartiQL DML: UPDATE's SET/REMOVE, WHERE and RETURNING.

Owns how the parts of a statement become what DynamoDB's own API would say:
SET/REMOVE (and ``set_add``/``set_delete``) as an equivalent UpdateExpression,
the WHERE clause split into the key equalities and the other conjuncts (the
latter as a ConditionExpression, ``Condition``), refusing a key that top-level
ANDs do not pin, and the RETURNING clauses each statement allows. Statements
themselves (which clauses, in what order) are ``loadtest.model.dynamodb.partiql.statements``;
tokens and literals are ``loadtest.model.dynamodb.partiql.syntax``. Pure; it runs inside
the observer's Lambda layer too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from loadtest.model.dynamodb.partiql.syntax import Cursor, StatementNotUnderstood, TypedItem

Kind = Literal["INSERT", "UPDATE", "DELETE", "SELECT"]

RETURNING = {
    "UPDATE": ("ALL OLD *", "MODIFIED OLD *", "ALL NEW *", "MODIFIED NEW *"),
    "DELETE": ("ALL OLD *",),
}


@dataclass(frozen=True)
class Condition:
    """A statement's extra WHERE conditions as a ConditionExpression.

    Placeholders are ``#c0``/``:c0``, ..., so they never clash with an UpdateExpression's.
    """

    expression: str
    names: dict[str, str] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)


class Placeholders:
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


class ClauseParser(Cursor):
    """The clause grammar, on top of the token cursor and its literals."""

    def path(self, placeholders: Placeholders) -> str:
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
    def operand(self, placeholders: Placeholders) -> str:
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

    def assignment(self, placeholders: Placeholders, actions: dict[str, list[str]]) -> None:
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

    def update_actions(self) -> tuple[str, Placeholders]:
        placeholders = Placeholders("n", "v")
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

    def condition(self, first: int, end: int, placeholders: Placeholders) -> str:
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
        placeholders = Placeholders("c", "c")
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
        if clause not in RETURNING.get(kind, ()):
            allowed = " | ".join(RETURNING.get(kind, ())) or "no RETURNING clause"
            raise StatementNotUnderstood(
                f"RETURNING {clause} at offset {token.start}: {kind} allows {allowed}"
            )
        return clause

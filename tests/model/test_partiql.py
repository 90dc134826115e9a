"""loadtest.model.dynamodb.partiql.statements: DynamoDB's PartiQL DML read into keys, items and UpdateExpressions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadtest.model.dynamodb.partiql.statements import (
    Dml,
    StatementNotUnderstood,
    parse,
    parse_with_condition,
    table_name,
    with_returning_all_old,
)

KEY = ["id"]


# -- INSERT -----------------------------------------------------------------------------------
def test_insert_with_every_literal() -> None:
    dml = parse(
        "insert into \"orders-1\" value {'id': 'it''s', 'q': -1.5e3, 'ok': TRUE, 'no': false, "
        "'nil': NULL, 'm': {'l': [1, 'b', []], 'e': {}}, 's': <<'a', 'b'>>, 'n': <<1, 2>>}",
        None,
        KEY,
    )
    assert dml == Dml(
        kind="INSERT",
        table="orders-1",
        key={"id": {"S": "it's"}},
        item={
            "id": {"S": "it's"},
            "q": {"N": "-1.5e3"},
            "ok": {"BOOL": True},
            "no": {"BOOL": False},
            "nil": {"NULL": True},
            "m": {"M": {"l": {"L": [{"N": "1"}, {"S": "b"}, {"L": []}]}, "e": {"M": {}}}},
            "s": {"SS": ["a", "b"]},
            "n": {"NS": ["1", "2"]},
        },
        update_expression=None,
        names={},
        values={},
        condition=None,
        returning=None,
    )


def test_insert_with_parameters_and_a_composite_key() -> None:
    dml = parse(
        "INSERT INTO t VALUE {'pk': ?, 'sk': ?, 'tags': <<?, ?>>};",
        [{"S": "p"}, {"N": "2"}, {"S": "x"}, {"S": "y"}],
        ["pk", "sk"],
    )
    assert dml.table == "t"
    assert dml.key == {"pk": {"S": "p"}, "sk": {"N": "2"}}
    assert dml.item == {**dml.key, "tags": {"SS": ["x", "y"]}}


# -- UPDATE -----------------------------------------------------------------------------------
def test_update_translates_set_and_remove() -> None:
    dml = parse(
        'UPDATE "t" SET a = ?, b = b + 1 SET c = list_append(c, [?]) SET x.y[2] = if_not_exists(x.y[2], 0) '
        "REMOVE d, e.f WHERE id = ? RETURNING ALL OLD *",
        [{"N": "7"}, {"S": "q"}, {"S": "k"}],
        KEY,
    )
    assert dml.kind == "UPDATE"
    assert dml.key == {"id": {"S": "k"}}
    assert dml.update_expression == (
        "SET #n0 = :v0, #n1 = #n1 + :v1, #n2 = list_append(#n2, :v2), "
        "#n3.#n4[2] = if_not_exists(#n3.#n4[2], :v3) REMOVE #n5, #n6.#n7"
    )
    assert dml.names == {
        "#n0": "a",
        "#n1": "b",
        "#n2": "c",
        "#n3": "x",
        "#n4": "y",
        "#n5": "d",
        "#n6": "e",
        "#n7": "f",
    }
    assert dml.values == {
        ":v0": {"N": "7"},
        ":v1": {"N": "1"},
        ":v2": {"L": [{"S": "q"}]},
        ":v3": {"N": "0"},
    }
    assert dml.condition is None
    assert dml.returning == "ALL OLD *"


def test_update_set_add_and_set_delete_become_add_and_delete() -> None:
    dml = parse(
        "UPDATE t SET s = set_add(s, <<'a'>>) SET n = SET_DELETE(n, <<1>>) REMOVE r WHERE id = 'k'",
        None,
        KEY,
    )
    assert dml.update_expression == "REMOVE #n2 ADD #n0 :v0 DELETE #n1 :v1"
    assert dml.values == {":v0": {"SS": ["a"]}, ":v1": {"NS": ["1"]}}


def test_update_conditions_keep_their_text_and_translate() -> None:
    statement = (
        "UPDATE t SET a = ? WHERE ? = id AND attribute_not_exists(x) AND (q > ? AND "
        "q BETWEEN 1 AND 5) AND y IS NOT MISSING AND z IN [1, 2] AND \"w\" != 'a'"
    )
    dml, condition = parse_with_condition(statement, [{"N": "1"}, {"S": "k"}, {"N": "3"}], KEY)
    assert dml.key == {"id": {"S": "k"}}
    assert dml.values == {":v0": {"N": "1"}}
    assert dml.condition == (
        "attribute_not_exists(x) AND q > ? AND q BETWEEN 1 AND 5 AND y IS NOT MISSING "
        "AND z IN [1, 2] AND \"w\" != 'a'"
    )
    assert condition is not None
    assert condition.expression == (
        "(attribute_not_exists(#c0)) AND (#c1 > :c0) AND (#c1 BETWEEN :c1 AND :c2) "
        "AND (attribute_exists(#c2)) AND (#c3 IN (:c3, :c4)) AND (#c4 <> :c5)"
    )
    assert condition.names == {"#c0": "x", "#c1": "q", "#c2": "y", "#c3": "z", "#c4": "w"}
    assert condition.values[":c0"] == {"N": "3"}
    assert parse(statement, [{"N": "1"}, {"S": "k"}, {"N": "3"}], KEY) == dml


@pytest.mark.parametrize(
    "returning", ["ALL OLD *", "MODIFIED OLD *", "ALL NEW *", "MODIFIED NEW *"]
)
def test_update_returning_clauses(returning: str) -> None:
    dml = parse(f"UPDATE t SET a = 1 WHERE id = 'k' returning {returning.lower()}", None, KEY)
    assert dml.returning == returning


# -- DELETE and SELECT ----------------------------------------------------------------------
def test_delete() -> None:
    dml = parse(
        'DELETE FROM "t" WHERE "id" = ? AND sk = 3 RETURNING ALL OLD *', [{"S": "k"}], ["id", "sk"]
    )
    assert (dml.kind, dml.key, dml.condition, dml.returning) == (
        "DELETE",
        {"id": {"S": "k"}, "sk": {"N": "3"}},
        None,
        "ALL OLD *",
    )
    assert dml.update_expression is None and dml.item is None


@pytest.mark.parametrize(
    ("statement", "key"),
    [
        ("SELECT * FROM t WHERE id = 'k'", {"id": {"S": "k"}}),
        ("select a, b.c FROM \"t\" where id = 'k' and b > 1", {}),
        ("SELECT * FROM t", {}),
        ("SELECT * FROM t WHERE id = 'k' OR id = 'j'", {}),
        ("SELECT * FROM t.\"by-x\" WHERE id = 'k'", {}),
    ],
)
def test_select_key_only_for_an_exact_key_lookup(statement: str, key: dict[str, Any]) -> None:
    dml = parse(statement, None, KEY)
    assert (dml.kind, dml.table, dml.key) == ("SELECT", "t", key)


# -- refusals ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("statement", "parameters", "message"),
    [
        ("UPDATE t SET a = 1 WHERE a = 1", None, "no equality on key attribute 'id'"),
        ("UPDATE t SET a = 1 WHERE id = 'a' OR id = 'b'", None, "combines conditions with OR"),
        ("DELETE FROM t WHERE id = 'a' AND id = 'b'", None, "sets key 'id' twice"),
        ("UPSERT INTO t VALUE {'id': 'a'}", None, "expected INSERT, UPDATE, DELETE or SELECT"),
        ("INSERT INTO t VALUE {'x': 1}", None, "no key attribute 'id'"),
        ("INSERT INTO t VALUE {x: 1}", None, "map key in single quotes"),
        ("UPDATE t SET a = ? WHERE id = 'a'", None, "parameter 1"),
        ("DELETE FROM t WHERE id = ?", [{"S": "a"}, {"S": "b"}], "2 parameter(s) supplied"),
        ("DELETE FROM t WHERE id = ?", ["a"], "not a typed AttributeValue"),
        ("DELETE FROM t WHERE id = 'a' RETURNING ALL NEW *", None, "DELETE allows ALL OLD *"),
        ("INSERT INTO t VALUE {'id': 'a', 's': <<'a', 1>>}", None, "mixes types"),
        ("UPDATE t SET a = set_add(b, <<1>>) WHERE id = 'a'", None, "must take the path"),
        ("UPDATE t WHERE id = 'a'", None, "expected SET or REMOVE"),
        ("UPDATE t SET a = 1 WHERE id = 'a' AND x IS NULL", None, "IS [NOT] MISSING"),
        ("DELETE FROM t WHERE id = 'a' # x", None, "unexpected character '#'"),
    ],
)
def test_not_understood(statement: str, parameters: list[Any] | None, message: str) -> None:
    with pytest.raises(StatementNotUnderstood) as exc:
        parse(statement, parameters, KEY)
    assert message in str(exc.value)
    assert isinstance(exc.value, ValueError)


def test_table_name_and_returning_all_old() -> None:
    assert table_name('select * from "a""b" where x = 1') == 'a"b'
    assert table_name("UPDATE orders SET a = 1") == "orders"
    assert with_returning_all_old("DELETE FROM t WHERE id = ? ;") == (
        "DELETE FROM t WHERE id = ? RETURNING ALL OLD *"
    )
    updated = with_returning_all_old("UPDATE t SET a = 'returning' WHERE id = ?")
    assert parse(updated, [{"S": "k"}], KEY).returning == "ALL OLD *"
    with pytest.raises(StatementNotUnderstood, match="already has a RETURNING clause"):
        with_returning_all_old("UPDATE t SET a = 1 WHERE id = 'k' RETURNING ALL NEW *")
    with pytest.raises(StatementNotUnderstood, match="needs UPDATE or DELETE"):
        with_returning_all_old("INSERT INTO t VALUE {'id': 'k'}")


# -- properties -------------------------------------------------------------------------------
NAMES = st.text("abcdefghijklmnopqrstuvwxyz_'\" -", min_size=1, max_size=8).filter(
    lambda name: name != "id"
)
SCALARS = st.one_of(
    st.text(max_size=10).map(lambda s: {"S": s}),
    st.integers(-(10**12), 10**12).map(lambda n: {"N": str(n)}),
    st.booleans().map(lambda b: {"BOOL": b}),
    st.just({"NULL": True}),
    st.lists(st.text(max_size=5), min_size=1, max_size=3, unique=True).map(lambda s: {"SS": s}),
    st.lists(st.integers(0, 99), min_size=1, max_size=3, unique=True).map(
        lambda n: {"NS": [str(x) for x in n]}
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: {"L": items}),
        st.dictionaries(NAMES, inner, max_size=3).map(lambda members: {"M": members}),
    ),
    max_leaves=8,
)
ITEMS = st.builds(
    lambda key, rest: {"id": {"S": key}, **rest},
    st.text(min_size=1, max_size=10),
    st.dictionaries(NAMES, VALUES, max_size=5),
)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _literal(value: dict[str, Any]) -> str:
    ((tag, inner),) = value.items()
    if tag == "S":
        return _quote(inner)
    if tag == "N":
        return str(inner)
    if tag == "BOOL":
        return "true" if inner else "FALSE"
    if tag == "NULL":
        return "null"
    if tag in ("SS", "NS"):
        return "<<" + ", ".join(_quote(x) if tag == "SS" else x for x in inner) + ">>"
    if tag == "L":
        return "[" + ", ".join(_literal(v) for v in inner) + "]"
    return "{" + ", ".join(f"{_quote(k)}: {_literal(v)}" for k, v in inner.items()) + "}"


@given(ITEMS)
def test_insert_round_trip_literals_and_parameters_agree(item: dict[str, Any]) -> None:
    literal = parse(f'INSERT INTO "t" VALUE {_literal({"M": item})}', None, KEY)
    names = list(item)
    placeholders = ", ".join(f"{_quote(name)}: ?" for name in names)
    parameterised = parse(
        f'INSERT INTO "t" VALUE {{{placeholders}}}', [item[name] for name in names], KEY
    )
    assert literal.item == parameterised.item == item
    assert literal.key == parameterised.key == {"id": item["id"]}


@given(st.lists(st.tuples(NAMES, SCALARS), min_size=1, max_size=6, unique_by=lambda p: p[0]))
def test_update_placeholders_cover_exactly_the_assignments(
    assignments: list[tuple[str, dict[str, Any]]],
) -> None:
    sets = ", ".join(f'"{name.replace(chr(34), chr(34) * 2)}" = ?' for name, _ in assignments)
    dml = parse(
        f"UPDATE t SET {sets} WHERE id = ?", [v for _, v in assignments] + [{"S": "k"}], KEY
    )
    assert dml.key == {"id": {"S": "k"}}
    expected = ", ".join(f"#n{i} = :v{i}" for i in range(len(assignments)))
    assert dml.update_expression == f"SET {expected}"
    assert dml.names == {f"#n{i}": name for i, (name, _) in enumerate(assignments)}
    assert dml.values == {f":v{i}": value for i, (_, value) in enumerate(assignments)}

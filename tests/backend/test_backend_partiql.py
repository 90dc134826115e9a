"""PartiQL writes on the embedded backend answer as DynamoDB does.

Each behaviour is checked on the real embedded backend (``backend_url``) and, where that is
cheap, shown wrong on moto as shipped: ``plain_moto`` is an in-process moto whose three
PartiQL entry points are put back to moto's own for the length of one test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from loadtest.backend import patches
from tests.backend import aws_clients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

patches.apply()

ITEM = {"id": {"S": "a"}, "quantity": {"N": "1"}}
DUPLICATE_MESSAGE = "Duplicate primary key exists in table"


def _insert(table: str, quantity: int, key: str = "a") -> str:
    return f"INSERT INTO \"{table}\" VALUE {{'id': '{key}', 'quantity': {quantity}}}"


def _error(exc: pytest.ExceptionInfo[ClientError]) -> tuple[str, str]:
    error = exc.value.response["Error"]
    return error.get("Code", ""), error.get("Message", "")


def _scan(client: DynamoDBClient, table: str) -> list[dict[str, Any]]:
    items = client.scan(TableName=table, ConsistentRead=True)["Items"]
    return sorted(items, key=lambda item: str(item["id"]))


@pytest.fixture
def embedded(backend_url: str) -> Iterator[tuple[DynamoDBClient, str]]:
    """A client and an id-keyed table holding ``ITEM`` on the embedded backend."""
    client = aws_clients.dynamodb(backend_url)
    with aws_clients.table(backend_url) as table:
        client.put_item(TableName=table, Item=ITEM)
        yield client, table


@contextmanager
def _plain_moto() -> Iterator[tuple[DynamoDBClient, str]]:
    originals = {
        name: getattr(DynamoDBBackend, name)
        for name in ("execute_statement", "batch_execute_statement", "execute_transaction")
    }
    with pytest.MonkeyPatch.context() as monkeypatch, mock_aws():
        for name, patched in originals.items():
            monkeypatch.setattr(DynamoDBBackend, name, patched.__wrapped__)
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        client.put_item(TableName="t", Item=ITEM)
        yield client, "t"


@pytest.fixture
def plain_moto() -> Iterator[tuple[DynamoDBClient, str]]:
    """moto as shipped (in process), with an id-keyed table ``t`` holding ``ITEM``."""
    with _plain_moto() as made:
        yield made


# -- INSERT ---------------------------------------------------------------------------------
def test_insert_of_a_stored_key_is_refused(embedded: tuple[DynamoDBClient, str]) -> None:
    client, table = embedded
    with pytest.raises(ClientError) as exc:
        client.execute_statement(Statement=_insert(table, 2))
    assert _error(exc) == ("DuplicateItemException", DUPLICATE_MESSAGE)
    assert _scan(client, table) == [ITEM]


def test_plain_moto_overwrites_on_insert(plain_moto: tuple[DynamoDBClient, str]) -> None:
    client, table = plain_moto
    client.execute_statement(Statement=_insert(table, 2))
    assert _scan(client, table) == [{"id": {"S": "a"}, "quantity": {"N": "2"}}]


def test_parameterised_insert_stores_the_item(embedded: tuple[DynamoDBClient, str]) -> None:
    client, table = embedded
    client.execute_statement(
        Statement=f"INSERT INTO \"{table}\" VALUE {{'id': ?, 'quantity': ?, 'tags': <<'x'>>}}",
        Parameters=[{"S": "b"}, {"N": "3"}],
    )
    assert _scan(client, table) == [
        ITEM,
        {"id": {"S": "b"}, "quantity": {"N": "3"}, "tags": {"SS": ["x"]}},
    ]
    with pytest.raises(ClientError) as exc:
        client.execute_statement(
            Statement=f"INSERT INTO \"{table}\" VALUE {{'id': ?}}", Parameters=[{"S": "b"}]
        )
    assert _error(exc)[0] == "DuplicateItemException"


def test_plain_moto_fails_a_parameterised_insert() -> None:
    # moto's server answers 500; in process the TypeError itself escapes.
    with _plain_moto() as (client, table), pytest.raises(TypeError, match="Unsupported type"):
        client.execute_statement(
            Statement=f"INSERT INTO \"{table}\" VALUE {{'id': ?, 'quantity': ?}}",
            Parameters=[{"S": "b"}, {"N": "3"}],
        )


# -- UPDATE ---------------------------------------------------------------------------------
def test_update_of_a_missing_key_fails_and_creates_nothing(
    embedded: tuple[DynamoDBClient, str],
) -> None:
    client, table = embedded
    with pytest.raises(ClientError) as exc:
        client.execute_statement(
            Statement=f'UPDATE "{table}" SET quantity = ? WHERE id = ?',
            Parameters=[{"N": "5"}, {"S": "missing"}],
        )
    assert _error(exc)[0] == "ConditionalCheckFailedException"
    assert _scan(client, table) == [ITEM]


def test_plain_moto_answers_success_for_a_missing_key(
    plain_moto: tuple[DynamoDBClient, str],
) -> None:
    client, table = plain_moto
    client.execute_statement(
        Statement=f'UPDATE "{table}" SET quantity = ? WHERE id = ?',
        Parameters=[{"N": "5"}, {"S": "missing"}],
    )
    assert _scan(client, table) == [ITEM]


@pytest.mark.parametrize(
    "condition", ["attribute_not_exists(quantity)", "quantity = 99", "quantity IS MISSING"]
)
def test_update_with_a_false_extra_condition_is_rejected(
    embedded: tuple[DynamoDBClient, str], condition: str
) -> None:
    client, table = embedded
    with pytest.raises(ClientError) as exc:
        client.execute_statement(
            Statement=f'UPDATE "{table}" SET quantity = ? WHERE id = ? AND {condition}',
            Parameters=[{"N": "5"}, {"S": "a"}],
        )
    assert _error(exc)[0] == "ConditionalCheckFailedException"
    assert _scan(client, table) == [ITEM]


def test_update_with_a_true_extra_condition_applies(
    embedded: tuple[DynamoDBClient, str],
) -> None:
    client, table = embedded
    client.execute_statement(
        Statement=f'UPDATE "{table}" SET quantity = quantity + ? SET done = true '
        "WHERE id = ? AND quantity < ? AND attribute_not_exists(done)",
        Parameters=[{"N": "2"}, {"S": "a"}, {"N": "5"}],
    )
    assert _scan(client, table) == [{**ITEM, "quantity": {"N": "3"}, "done": {"BOOL": True}}]


def test_plain_moto_ignores_attribute_not_exists(plain_moto: tuple[DynamoDBClient, str]) -> None:
    client, table = plain_moto
    client.execute_statement(
        Statement=f'UPDATE "{table}" SET quantity = ? WHERE id = ? AND attribute_not_exists(quantity)',
        Parameters=[{"N": "5"}, {"S": "a"}],
    )
    assert _scan(client, table) == [{"id": {"S": "a"}, "quantity": {"N": "5"}}]


@pytest.mark.parametrize(
    ("returning", "items"),
    [
        ("ALL OLD *", [{"id": {"S": "a"}, "quantity": {"N": "1"}, "note": {"S": "n"}}]),
        ("MODIFIED OLD *", [{"quantity": {"N": "1"}, "note": {"S": "n"}}]),
        ("ALL NEW *", [{"id": {"S": "a"}, "quantity": {"N": "6"}}]),
        ("MODIFIED NEW *", [{"quantity": {"N": "6"}}]),
    ],
)
def test_update_returning(
    embedded: tuple[DynamoDBClient, str], returning: str, items: list[dict[str, Any]]
) -> None:
    client, table = embedded
    client.put_item(TableName=table, Item={**ITEM, "note": {"S": "n"}})
    answer = client.execute_statement(
        Statement=f'UPDATE "{table}" SET quantity = ? REMOVE note WHERE id = ? RETURNING {returning}',
        Parameters=[{"N": "6"}, {"S": "a"}],
    )
    assert answer["Items"] == items
    assert _scan(client, table) == [{"id": {"S": "a"}, "quantity": {"N": "6"}}]


def test_plain_moto_fails_returning(plain_moto: tuple[DynamoDBClient, str]) -> None:
    client, table = plain_moto
    with pytest.raises(AssertionError):
        client.execute_statement(
            Statement=f'UPDATE "{table}" SET quantity = ? WHERE id = ? RETURNING ALL OLD *',
            Parameters=[{"N": "6"}, {"S": "a"}],
        )


# -- DELETE ---------------------------------------------------------------------------------
def test_delete_returning_all_old(embedded: tuple[DynamoDBClient, str]) -> None:
    client, table = embedded
    answer = client.execute_statement(
        Statement=f'DELETE FROM "{table}" WHERE id = ? RETURNING ALL OLD *',
        Parameters=[{"S": "a"}],
    )
    assert answer["Items"] == [ITEM]
    assert _scan(client, table) == []


def test_delete_of_a_missing_key_succeeds_and_a_false_condition_rejects(
    embedded: tuple[DynamoDBClient, str],
) -> None:
    client, table = embedded
    answer = client.execute_statement(
        Statement=f'DELETE FROM "{table}" WHERE id = ?', Parameters=[{"S": "missing"}]
    )
    assert answer["Items"] == []
    with pytest.raises(ClientError) as exc:
        client.execute_statement(
            Statement=f'DELETE FROM "{table}" WHERE id = ? AND quantity > 1',
            Parameters=[{"S": "a"}],
        )
    assert _error(exc)[0] == "ConditionalCheckFailedException"
    client.execute_statement(Statement=f"DELETE FROM \"{table}\" WHERE id = 'a'")
    assert _scan(client, table) == []


def test_plain_moto_fails_a_parameterised_delete(plain_moto: tuple[DynamoDBClient, str]) -> None:
    client, table = plain_moto
    with pytest.raises(AssertionError):
        client.execute_statement(
            Statement=f'DELETE FROM "{table}" WHERE id = ?', Parameters=[{"S": "a"}]
        )


# -- batches and transactions ------------------------------------------------------------
def test_batch_duplicate_insert_is_an_error_entry(embedded: tuple[DynamoDBClient, str]) -> None:
    client, table = embedded
    answer = client.batch_execute_statement(
        Statements=[{"Statement": _insert(table, 2)}, {"Statement": _insert(table, 4, key="d")}]
    )
    duplicate, inserted = answer["Responses"]
    assert duplicate["Error"] == {"Code": "DuplicateItem", "Message": DUPLICATE_MESSAGE}
    assert "Error" not in inserted
    assert _scan(client, table) == [ITEM, {"id": {"S": "d"}, "quantity": {"N": "4"}}]


def test_plain_moto_batch_overwrites(plain_moto: tuple[DynamoDBClient, str]) -> None:
    client, table = plain_moto
    answer = client.batch_execute_statement(Statements=[{"Statement": _insert(table, 2)}])
    assert "Error" not in answer["Responses"][0]
    assert _scan(client, table) == [{"id": {"S": "a"}, "quantity": {"N": "2"}}]


def test_transaction_with_a_duplicate_insert_writes_nothing(
    embedded: tuple[DynamoDBClient, str],
) -> None:
    client, table = embedded
    with pytest.raises(ClientError) as exc:
        client.execute_transaction(
            TransactStatements=[
                {"Statement": _insert(table, 4, key="e")},
                {"Statement": _insert(table, 2)},
            ]
        )
    assert _error(exc)[0] == "TransactionCanceledException"
    reasons = exc.value.response.get("CancellationReasons")
    assert reasons == [
        {"Code": "None"},
        {"Code": "DuplicateItem", "Message": DUPLICATE_MESSAGE},
    ]
    assert _scan(client, table) == [ITEM]


def test_transaction_applies_all_or_reports_each_reason(
    embedded: tuple[DynamoDBClient, str],
) -> None:
    client, table = embedded
    update_missing = f"UPDATE \"{table}\" SET quantity = 1 WHERE id = 'missing'"
    with pytest.raises(ClientError) as exc:
        client.execute_transaction(
            TransactStatements=[{"Statement": update_missing}, {"Statement": _insert(table, 2)}]
        )
    reasons = exc.value.response.get("CancellationReasons", [])
    assert [reason["Code"] for reason in reasons] == ["ConditionalCheckFailed", "DuplicateItem"]
    client.execute_transaction(
        TransactStatements=[
            {"Statement": f"UPDATE \"{table}\" SET quantity = 9 WHERE id = 'a'"},
            {"Statement": _insert(table, 4, key="e")},
        ]
    )
    assert _scan(client, table) == [
        {"id": {"S": "a"}, "quantity": {"N": "9"}},
        {"id": {"S": "e"}, "quantity": {"N": "4"}},
    ]


def test_plain_moto_transaction_overwrites(plain_moto: tuple[DynamoDBClient, str]) -> None:
    client, table = plain_moto
    client.execute_transaction(
        TransactStatements=[
            {"Statement": _insert(table, 4, key="e")},
            {"Statement": _insert(table, 2)},
        ]
    )
    assert _scan(client, table) == [
        {"id": {"S": "a"}, "quantity": {"N": "2"}},
        {"id": {"S": "e"}, "quantity": {"N": "4"}},
    ]


# -- what stays moto's, and what is refused ------------------------------------------------
def test_select_is_still_answered(embedded: tuple[DynamoDBClient, str]) -> None:
    client, table = embedded
    answer = client.execute_statement(
        Statement=f'SELECT * FROM "{table}" WHERE id = ?', Parameters=[{"S": "a"}]
    )
    assert answer["Items"] == [ITEM]


def test_an_unreadable_write_is_a_validation_error(embedded: tuple[DynamoDBClient, str]) -> None:
    client, table = embedded
    with pytest.raises(ClientError) as exc:
        client.execute_statement(Statement=f'UPDATE "{table}" SET quantity = 1 WHERE quantity = 1')
    code, message = _error(exc)
    assert code == "ValidationException"
    assert "no equality on key attribute 'id'" in message


def test_composite_key(backend_url: str) -> None:
    client = aws_clients.dynamodb(backend_url)
    table = aws_clients.unique("backend-test")
    client.create_table(
        TableName=table,
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "N"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
    try:
        client.execute_statement(Statement=f"INSERT INTO \"{table}\" VALUE {{'pk': 'p', 'sk': 1}}")
        client.execute_statement(Statement=f"INSERT INTO \"{table}\" VALUE {{'pk': 'p', 'sk': 2}}")
        answer = client.execute_statement(
            Statement=f"UPDATE \"{table}\" SET v = 'x' WHERE sk = 2 AND pk = 'p' RETURNING ALL NEW *"
        )
        assert answer["Items"] == [{"pk": {"S": "p"}, "sk": {"N": "2"}, "v": {"S": "x"}}]
        with pytest.raises(ClientError) as exc:
            client.execute_statement(Statement=f"DELETE FROM \"{table}\" WHERE pk = 'p'")
        assert "no equality on key attribute 'sk'" in _error(exc)[1]
    finally:
        client.delete_table(TableName=table)

"""Each moto bug the embedded backend fixes, shown on moto as shipped and fixed on the backend.

The list and where each fix lives is docs/architecture.md ("The embedded backend's fixes
to moto"). Every probe below asks one question over the wire, the same way, of moto's own
server (``EmbeddedBackend(patched=False)``) and of the embedded backend: the answer on
moto as shipped is the bug (the control: if moto fixes it, this test says so), the answer
on the backend is DynamoDB's or SQS's. The races (two pollers given one message, a delete
losing a concurrent send, a conditional put that is not atomic) need a widened window
instead of a question: tests/backend/test_backend_races.py runs moto's code first as the
control there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from botocore.exceptions import ClientError

from loadtest.backend.embedded import EmbeddedBackend
from tests.backend import aws_clients
from tests.backend.test_backend_update_operands import BEFORE, KEY, VALUES

Probe = Callable[[str], str]


def _outcome(call: Callable[[], object]) -> str:
    try:
        call()
    except ClientError as exc:
        return str(exc.response["Error"]["Code"])
    return "ok"


def partiql_insert_of_a_stored_key(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        client.put_item(TableName=table, Item={"id": {"S": "a"}, "v": {"N": "1"}})
        return _outcome(
            lambda: client.execute_statement(
                Statement=f"INSERT INTO \"{table}\" VALUE {{'id': 'a', 'v': 2}}"
            )
        )


def partiql_parameterised_insert(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        return _outcome(
            lambda: client.execute_statement(
                Statement=f"INSERT INTO \"{table}\" VALUE {{'id': ?}}",
                Parameters=[{"S": "p"}],
            )
        )


def partiql_update_of_a_missing_key(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        outcome = _outcome(
            lambda: client.execute_statement(
                Statement=f"UPDATE \"{table}\" SET v = 1 WHERE id = 'missing'"
            )
        )
        return f"{outcome}, {len(client.scan(TableName=table)['Items'])} items"


def partiql_update_with_a_false_condition(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        client.put_item(TableName=table, Item={"id": {"S": "a"}, "v": {"N": "1"}})
        return _outcome(
            lambda: client.execute_statement(
                Statement=f"UPDATE \"{table}\" SET w = 2 WHERE id = 'a' AND attribute_not_exists(v)"
            )
        )


def partiql_batch_insert_of_a_stored_key(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        client.put_item(TableName=table, Item={"id": {"S": "a"}})
        answer = client.batch_execute_statement(
            Statements=[{"Statement": f"INSERT INTO \"{table}\" VALUE {{'id': 'a'}}"}]
        )
        return str(answer["Responses"][0].get("Error", {}).get("Code", "ok"))


def transaction_token_repeated(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        add = [
            {
                "Update": {
                    "TableName": table,
                    "Key": {"id": {"S": "t"}},
                    "UpdateExpression": "ADD amount :n",
                    "ExpressionAttributeValues": {":n": {"N": "5"}},
                }
            }
        ]
        for _ in range(2):
            client.transact_write_items(TransactItems=add, ClientRequestToken="token-1")  # type: ignore[arg-type]
        item = client.get_item(TableName=table, Key={"id": {"S": "t"}})["Item"]
        return f"amount {item['amount']['N']}"


def key_of_the_wrong_type(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        return _outcome(
            lambda: client.get_item(TableName=table, Key={"id": {"M": {"S": {"S": "x"}}}})
        )


def legacy_update_with_an_unknown_action(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        return _outcome(
            lambda: client.update_item(
                TableName=table,
                Key={"id": {"S": "u"}},
                AttributeUpdates={"quantity": {"Value": {"N": "4"}, "Action": "REPLACE"}},  # type: ignore[typeddict-item]
            )
        )


def legacy_conditional_operator_or(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        return _outcome(
            lambda: client.put_item(
                TableName=table,
                Item={"id": {"S": "o"}, "quantity": {"N": "2"}},
                Expected={
                    "id": {"Exists": False},
                    "quantity": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": "3"}]},
                },
                ConditionalOperator="OR",
            )
        )


def update_operand_read_before_the_update(url: str) -> str:
    client = aws_clients.dynamodb(url)
    with aws_clients.table(url) as table:
        client.put_item(TableName=table, Item=BEFORE)
        stored = client.update_item(
            TableName=table,
            Key=KEY,
            UpdateExpression="SET num = sset DELETE sset :x",
            ExpressionAttributeValues={":x": VALUES[":x"]},
            ReturnValues="ALL_NEW",
        )["Attributes"]
        return f"num {sorted(stored['num']['SS'])}"


def fifo_deduplication_after_a_delete(url: str) -> str:
    client = aws_clients.sqs(url)
    queue_url = client.create_queue(
        QueueName=aws_clients.unique("bugs") + ".fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    try:

        def send() -> None:
            client.send_message(
                QueueUrl=queue_url, MessageBody="b", MessageGroupId="g", MessageDeduplicationId="d"
            )

        send()
        got = client.receive_message(QueueUrl=queue_url)["Messages"][0]
        client.delete_message(QueueUrl=queue_url, ReceiptHandle=got["ReceiptHandle"])
        send()
        again = client.receive_message(QueueUrl=queue_url).get("Messages", [])
        return f"{len(again)} delivered again"
    finally:
        client.delete_queue(QueueUrl=queue_url)


BUGS: dict[str, tuple[Probe, str, str]] = {
    # name: (probe, moto as shipped, DynamoDB / SQS)
    "PartiQL INSERT of a stored key overwrites it": (
        partiql_insert_of_a_stored_key,
        "ok",
        "DuplicateItemException",
    ),
    "PartiQL INSERT with a parameter is a server error": (
        partiql_parameterised_insert,
        "500",
        "ok",
    ),
    "PartiQL UPDATE of a missing key is a server error": (
        partiql_update_of_a_missing_key,
        "500, 0 items",
        "ConditionalCheckFailedException, 0 items",
    ),
    "PartiQL UPDATE with an extra condition is a server error": (
        partiql_update_with_a_false_condition,
        "500",
        "ConditionalCheckFailedException",
    ),
    "BatchExecuteStatement INSERT of a stored key overwrites it": (
        partiql_batch_insert_of_a_stored_key,
        "ok",
        "DuplicateItem",
    ),
    "TransactWriteItems applies a repeated ClientRequestToken again": (
        transaction_token_repeated,
        "amount 10",
        "amount 5",
    ),
    "a key of the wrong type is a server error (GetItem, UpdateItem, DeleteItem)": (
        key_of_the_wrong_type,
        "500",
        "ValidationException",
    ),
    "an unknown legacy AttributeUpdates action is a server error": (
        legacy_update_with_an_unknown_action,
        "500",
        "ValidationException",
    ),
    "the legacy ConditionalOperator OR is read as AND": (
        legacy_conditional_operator_or,
        "ConditionalCheckFailedException",
        "ok",
    ),
    "SET a = b DELETE b :x changes the value copied into a": (
        update_operand_read_before_the_update,
        "num ['b']",
        "num ['a', 'b']",
    ),
    "FIFO deduplication forgets a deleted message within the window": (
        fifo_deduplication_after_a_delete,
        "1 delivered again",
        "0 delivered again",
    ),
}


@pytest.fixture(scope="module")
def shipped_url() -> Iterator[str]:
    with EmbeddedBackend(patched=False) as backend:
        yield backend.endpoint_url


@pytest.mark.parametrize("bug", list(BUGS))
def test_moto_as_shipped_has_the_bug_and_the_backend_fixes_it(
    bug: str, shipped_url: str, backend_url: str
) -> None:
    probe, shipped, fixed = BUGS[bug]
    assert probe(shipped_url) == shipped, "moto as shipped answered otherwise: is it fixed there?"
    assert probe(backend_url) == fixed

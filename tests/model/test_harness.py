"""loadtest.model.checker.harness: a handler's failure for what the run did not provide,
recognised by error type and worded with the scenario line that provides it."""

from __future__ import annotations

import pytest

from loadtest.model.checker.harness import gaps_in, not_judged, suggested_value

ENVIRON_TRACEBACK = """\
Traceback (most recent call last):
  File "/app/handler.py", line 9, in record_handler
    table = os.environ["ORDERS_TABLE"]
            ~~~~~~~~~~^^^^^^^^^^^^^^^^
  File "<frozen os>", line 714, in __getitem__
    raise KeyError(key) from None
KeyError: 'ORDERS_TABLE'
"""


def keys(text: str) -> list[str]:
    return [gap.key for gap in gaps_in(text)]


def test_a_marked_environ_key_error_names_the_variable_and_its_line() -> None:
    (gap,) = gaps_in("KeyError: 'QUEUE_URL' [os.environ has no 'QUEUE_URL']")
    assert gap.key == "environ:QUEUE_URL"
    assert gap.sentence == (
        "the handler read os.environ['QUEUE_URL'], which the run does not set: add "
        '`[consumer] environment = { QUEUE_URL = "{queue_url}" }` to the scenario '
        "(or --env QUEUE_URL={queue_url})"
    )


def test_a_missing_sink_variable_is_given_the_sink_placeholder_its_name_suggests() -> None:
    (gap,) = gaps_in("KeyError: 'ORDERS_TOPIC_ARN' [os.environ has no 'ORDERS_TOPIC_ARN']")
    assert gap.sentence == (
        "the handler read os.environ['ORDERS_TOPIC_ARN'], which the run does not set: add "
        '`[consumer] environment = { ORDERS_TOPIC_ARN = "{topic:orders}" }` to the scenario '
        "(or --env ORDERS_TOPIC_ARN={topic:orders})"
    )
    (gap,) = gaps_in("KeyError: 'IDEMPOTENCY_TABLE' [os.environ has no 'IDEMPOTENCY_TABLE']")
    assert gap.sentence == (
        "the handler read os.environ['IDEMPOTENCY_TABLE'], which the run does not set: it "
        "names a table besides the outcome table: add `[[tables]]` with "
        '`env = "IDEMPOTENCY_TABLE"` to the scenario'
    )


def test_an_environ_traceback_kept_inside_another_error_is_read_too() -> None:
    text = f"BatchProcessingError: All records failed processing. 1 ...\n{ENVIRON_TRACEBACK}"
    assert keys(text) == ["environ:ORDERS_TABLE"]


def test_a_plain_key_error_is_the_consumers_own() -> None:
    assert keys("KeyError: 'quantity'") == []
    assert keys("Traceback ...\n    body['id']\nKeyError: 'id'") == []


def test_refused_calls_are_named_by_error_code() -> None:
    tail = (
        "loadtest: the handler's PutItem call on 'Orders' failed with ResourceNotFoundException\n"
        "loadtest: the handler's SendMessage call on 'https://q/out' failed with "
        "AWS.SimpleQueueService.NonExistentQueue\n"
        "loadtest: the handler's GetItem call on 'Secrets' failed with AccessDeniedException\n"
    )
    gaps = gaps_in(tail)
    assert [g.key for g in gaps] == [
        "table:Orders",
        "queue:https://q/out",
        "denied:GetItem:Secrets",
    ]
    assert gaps[0].sentence.startswith(
        "the handler's PutItem found no table 'Orders', which the run did not create: for a "
        'name the handler hard-codes, `[table] name = "Orders"`'
    )
    assert "{queue_url}" in gaps[1].sentence
    assert gaps[2].sentence.startswith("the handler's GetItem on 'Secrets' was refused")


def test_a_resource_of_another_service_is_named_with_its_service_never_as_a_table() -> None:
    tail = (
        "loadtest: the handler's PutRecord call on 'orders' failed with "
        "ResourceNotFoundException in kinesis\n"
        "loadtest: the handler's PutEvents call on 'shop' failed with AccessDeniedException "
        "in events\n"
    )
    gaps = gaps_in(tail)
    assert [g.key for g in gaps] == ["kinesis:orders", "denied:PutEvents:shop"]
    assert gaps[0].sentence.startswith(
        "the handler's kinesis PutRecord found no 'orders' (ResourceNotFoundException), which "
        "the run did not create: a run makes its tables, its queues and the sinks named by "
        "placeholders"
    )
    assert "table" not in gaps[0].sentence.split(":", 1)[0]


def test_errors_met_only_in_text_are_recognised_without_the_observers_line() -> None:
    text = (
        "ClientError: An error occurred (ResourceNotFoundException) when calling the "
        "UpdateItem operation: Requested resource not found"
    )
    assert keys(text) == ["table:?UpdateItem"]
    denied = (
        "ClientError: An error occurred (AccessDeniedException) when calling the PutItem "
        "operation: User is not authorized to perform: dynamodb:PutItem"
    )
    assert keys(denied) == ["denied:PutItem:"]


def test_a_key_the_runs_table_does_not_have_is_the_scenarios_to_declare() -> None:
    # The run made the table, keyed as the scenario says: a handler that reads two table
    # variables the scenario pointed at one table sends the other's key to it.
    text = (
        "ClientError: An error occurred (ValidationException) when calling the UpdateItem "
        "operation: The provided key element does not match the schema"
    )
    [gap] = gaps_in(text)
    assert gap.key == "key:UpdateItem"
    assert "`key` in the table's `[[tables]]` entry" in gap.sentence
    logged = (
        "loadtest: the handler's UpdateItem call on 'run-orders' failed with ValidationException"
    )
    [gap] = gaps_in(f"{text}\n{logged}")
    assert gap.key == "key:run-orders"
    assert "named a key that table 'run-orders' does not have" in gap.sentence
    put = (
        "ClientError: An error occurred (ValidationException) when calling the PutItem "
        "operation: One or more parameter values were invalid: Missing the key id in the item"
    )
    [gap] = gaps_in(put)
    assert gap.key == "key:PutItem"
    assert "or the item misses the table's key" in gap.sentence
    other = (
        "ClientError: An error occurred (ValidationException) when calling the PutItem "
        "operation: One or more parameter values were invalid: An AttributeValue may not "
        "contain an empty string"
    )
    assert gaps_in(other) == []


def test_a_queue_found_by_name_at_import_is_given_the_queue_placeholders() -> None:
    text = (
        "QueueDoesNotExist: An error occurred (AWS.SimpleQueueService.NonExistentQueue) when "
        "calling the GetQueueUrl operation: The specified queue does not exist."
    )
    (gap,) = gaps_in(text)
    assert gap.key == "queue:GetQueueUrl"
    assert gap.sentence.startswith("the handler's GetQueueUrl found no queue, which the run")
    assert "`{queue_name}`" in gap.sentence and "`{queue_name:NAME}`" in gap.sentence


def test_explores_modelled_queue_says_what_the_handler_did_to_it() -> None:
    def line(operation: str) -> str:
        return (
            f"loadtest: the handler's {operation} call on 'modelled://q' failed with "
            "AWS.SimpleQueueService.NonExistentQueue\n"
        )

    (sent,) = gaps_in(line("SendMessage"))
    (changed,) = gaps_in(line("ChangeMessageVisibility"))
    assert sent.sentence.startswith(
        "the handler's SendMessage sent work to the queue that feeds it (a retry later"
    )
    assert changed.sentence.startswith(
        "the handler's ChangeMessageVisibility acted on the queue that feeds it itself"
    )
    assert changed.sentence.endswith("`loadtest run` gives the handler a real queue")


@pytest.mark.parametrize(
    ("text", "what"),
    [
        (
            "ClientError: An error occurred (InvalidParameterValue) when calling the "
            "SendMessage operation: The queue should either have ContentBasedDeduplication "
            "enabled or MessageDeduplicationId provided explicitly",
            "queue",
        ),
        (
            "InvalidParameterException: An error occurred (InvalidParameter) when calling the "
            "Publish operation: Invalid parameter: The topic should either have "
            "ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
            "topic",
        ),
    ],
)
def test_a_fifo_send_without_a_deduplication_id_names_the_declaration(text: str, what: str) -> None:
    (gap,) = gaps_in(text)
    assert gap.key == f"fifo:{what}"
    assert f"no MessageDeduplicationId, and the run's FIFO {what}s" in gap.sentence
    assert "`content_based_deduplication = true`" in gap.sentence


def test_an_unset_table_name_is_the_runs_gap() -> None:
    text = (
        "ParamValidationError: Parameter validation failed:\n"
        "Invalid length for parameter TableName, value: 0, valid min length: 1"
    )
    assert keys(text) == ["unnamed:table"]
    assert keys("ValueError: Required parameter name not set") == ["unnamed:table"]
    assert keys("Invalid type for parameter QueueUrl, value: None, type: ...") == ["unnamed:queue"]


def test_other_failures_are_the_consumers() -> None:
    for text in (
        "ValueError: bad quantity",
        "ClientError: An error occurred (ConditionalCheckFailedException) when calling the "
        "PutItem operation: The conditional request failed",
        "Task timed out after 3 seconds",
    ):
        assert gaps_in(text) == []


def test_variable_names_suggest_the_resource_they_name() -> None:
    assert [
        suggested_value(n)
        for n in ("ORDERS_TABLE", "DYNAMODB_NAME", "JOBS_QUEUE_URL", "DLQ_URL", "QUEUE_ARN")
    ] == ["{table}", "{table}", "{queue_url}", "{dlq_url}", "{queue_arn}"]
    assert [suggested_value(n) for n in ("AWS_REGION_NAME", "API_KEY")] == ["{region}", "VALUE"]


def test_failures_kept_as_not_judged() -> None:
    assert not_judged(["3 lost outcome(s)"]) == [
        "3 lost outcome(s), but the run did not provide what the handler expects: not judged"
    ]


def test_a_sink_the_handler_left_unnamed_is_given_its_placeholder() -> None:
    text = (
        "ParamValidationError: Parameter validation failed:\n"
        "Invalid type for parameter TopicArn, value: None, type: <class 'NoneType'>, "
        "valid types: <class 'str'>"
    )
    (gap,) = gaps_in(text)
    assert (gap.key, gap.sentence) == (
        "unnamed:topic",
        "the handler gave no topic name (None or empty): a variable it reads with "
        "os.environ.get or os.getenv is not set by the run: add "
        '`[consumer] environment = { NAME = "{topic:NAME}" }` with the name it reads',
    )
    bus = (
        "Invalid type for parameter Entries[0].EventBusName, value: None, type: <class 'NoneType'>"
    )
    assert keys(bus) == ["unnamed:bus"]
    # botocore's own words for Bucket="" (measured).
    empty = 'Parameter validation failed:\nInvalid bucket name "": Bucket name must match the regex'
    assert keys(empty) == ["unnamed:bucket"]
    assert keys("Invalid length for parameter stateMachineArn, value: 0") == [
        "unnamed:state machine"
    ]

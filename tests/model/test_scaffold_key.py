"""The table key `loadtest new` reads from a dry run's first write (loadtest.model.advice.scaffold.key),
and how the written scenario carries it (loadtest.model.advice.scaffold.writer)."""

from __future__ import annotations

import tomllib
from typing import Any

from loadtest.model.advice.scaffold.key import KeyChoice, choose_key
from loadtest.model.advice.scaffold.writer import sample_template, scenario_text
from loadtest.model.history.log import WriteOutcome, WriteRecord
from loadtest.model.scenario.loading import parse_scenario

MESSAGE_ID = "0b5e2c1e-4f0a-4d7e-9a57-3c2f1d0e9b11"
UUID = "7d444840-9dc0-11d1-b245-5ffdce74fad2"


def _write(
    operation: str,
    *,
    requested: dict[str, Any] | None = None,
    key: dict[str, Any] | None = None,
    started_ns: int = 1,
) -> WriteRecord:
    return WriteRecord(
        operation=operation,
        key=key or {},
        condition=None,
        outcome=WriteOutcome.ERROR,
        item_before=None,
        item_after=None,
        before_known=False,
        started_ns=started_ns,
        ended_ns=started_ns + 1,
        error_code="ValidationException",
        requested=requested,
    )


def _choose(*writes: WriteRecord) -> KeyChoice | str:
    return choose_key(writes, business_id="order-00001", message_id=MESSAGE_ID)


def test_a_put_keyed_on_the_message_id() -> None:
    item = {"ID": {"S": MESSAGE_ID}, "body": {"M": {"orderId": {"S": "order-00001"}}}}
    choice = _choose(_write("PutItem", requested=item))
    assert isinstance(choice, KeyChoice)
    assert choice.key == (("ID", "S"),)
    assert "ID = the messageId" in choice.why


def test_the_first_candidate_the_handler_wrote_wins_and_the_others_are_named() -> None:
    item = {"id": {"S": UUID}, "product_id": {"S": "order-00001"}, "quantity": {"N": "3"}}
    choice = _choose(_write("PutItem", requested=item))
    assert isinstance(choice, KeyChoice)
    assert choice.key == (("id", "S"),)
    assert "id = a uuid" in choice.why and "(product_id also could be)" in choice.why


def test_a_numeric_business_id_gives_a_number_key() -> None:
    item = {"note": {"S": "x"}, "orderId": {"N": "17"}}
    write = _write("BatchWriteItem.Put", requested=item)
    choice = choose_key([write], business_id="17", message_id=MESSAGE_ID)
    assert isinstance(choice, KeyChoice)
    assert choice.key == (("orderId", "N"),)


def test_without_a_candidate_the_first_attribute_written() -> None:
    item = {"m": {"M": {}}, "pk": {"S": "ORDER#order-00001-x"}, "n": {"N": "1"}}
    choice = _choose(_write("PutItem", requested=item))
    assert isinstance(choice, KeyChoice)
    assert choice.key == (("pk", "S"),)
    assert "pk is the first attribute it wrote" in choice.why


def test_an_update_names_its_key_hash_then_range() -> None:
    key = {"pk": {"S": "ORDER#order-00001"}, "sk": {"N": "1"}}
    choice = _choose(_write("UpdateItem", key=key))
    assert isinstance(choice, KeyChoice)
    assert choice.key == (("pk", "S"), ("sk", "N"))


def test_the_first_write_by_start_time() -> None:
    later = _write("PutItem", requested={"b": {"S": MESSAGE_ID}}, started_ns=9)
    first = _write("PutItem", requested={"a": {"S": MESSAGE_ID}}, started_ns=2)
    choice = _choose(later, first)
    assert isinstance(choice, KeyChoice) and choice.key == (("a", "S"),)


def test_no_write_is_a_reason_not_a_key() -> None:
    assert _choose() == "the handler wrote nothing to its table"
    assert "no string, number or binary" in str(
        _choose(_write("PutItem", requested={"m": {"M": {}}}))
    )


def _scenario(table_key: KeyChoice | str | None, tables: tuple[str, ...] = ()) -> dict[str, Any]:
    sample = sample_template({"orderId": "o-1", "quantity": 2}, "orderId", "sample.json")
    text = scenario_text(
        "app.py:handler", sample, "sample.json", [], tables=tables, table_key=table_key
    )
    raw = tomllib.loads(text)
    parse_scenario(raw, source="new.toml", default_name="new")
    return raw | {"text": text}


def test_a_key_other_than_the_id_is_the_tables_and_no_outcome_key_is_declared() -> None:
    raw = _scenario(KeyChoice((("ID", "S"),), "why"), tables=("Inbox",))
    assert raw["table"] == {"name": "Inbox", "key": {"ID": "S"}}
    assert "outcome" not in raw
    assert "from a dry run (one message, one invocation): why." in raw["text"]


def test_the_id_as_key_keeps_the_outcome_key() -> None:
    raw = _scenario(KeyChoice((("orderId", "S"),), "why"))
    assert raw["table"] == {"key": {"orderId": "S"}}
    assert raw["outcome"] == {"key": {"orderId": "{id}"}}


def test_a_failed_dry_run_keeps_the_guess_and_says_why() -> None:
    raw = _scenario("the handler wrote nothing to the run's table (KeyError: 'x')")
    assert raw["outcome"] == {"key": {"orderId": "{id}"}} and "table" not in raw
    assert "# A dry run could not show the key the handler writes: the handler wrote" in raw["text"]


def test_a_reason_that_spans_lines_stays_a_comment() -> None:
    # A dry run's reason may quote an error of several lines (a backend's log).
    reason = "the dry run could not run: backend exited; end of its log:\nTraceback:\n  x = [1"
    raw = _scenario(reason)
    assert raw["outcome"] == {"key": {"orderId": "{id}"}}
    assert "\n#   x = [1.\n" in raw["text"]

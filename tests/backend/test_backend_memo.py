"""The memoised moto functions answer as moto's own do."""

from __future__ import annotations

import re

import pytest
from moto.core.utils import camelcase_to_underscores, method_names_from_class
from moto.dynamodb.comparisons import create_condition_expression_parser, get_filter_expression
from moto.dynamodb.models.dynamo_type import DynamoType, Item

from loadtest.backend.core import memo


def test_a_condition_is_parsed_once_per_expression_names_and_values() -> None:
    parse = memo.memo_filter_expression(get_filter_expression)
    values = {":v": {"S": "a"}}
    first = parse("#k = :v", {"#k": "id"}, values)
    assert parse("#k = :v", {"#k": "id"}, {":v": {"S": "a"}}) is first
    values[":v"]["S"] = "b"  # the caller's dict changes: the cached tree does not
    item = Item(DynamoType({"S": "a"}), None, {"id": {"S": "a"}})
    assert first.expr(item)
    assert parse("#k = :v", {"#k": "id"}, values) is not first
    assert not parse("#k = :v", {"#k": "id"}, values).expr(item)


def test_a_condition_that_fails_to_parse_fails_every_time() -> None:
    parse = memo.memo_filter_expression(get_filter_expression)
    for _ in range(2):
        with pytest.raises(Exception) as caught:
            parse("#k = :missing", {"#k": "id"}, {})
        with pytest.raises(type(caught.value)):
            get_filter_expression("#k = :missing", {"#k": "id"}, {})


@pytest.mark.parametrize(
    ("expr", "names", "values"),
    [
        ("attribute_not_exists(id)", {}, {}),
        ("#k = :v AND attribute_exists(#n)", {"#k": "id", "#n": "n"}, {":v": {"S": "a"}}),
        (None, {}, {}),
    ],
)
def test_a_response_handler_s_parser_finds_what_moto_s_finds(
    expr: str | None, names: dict[str, str], values: dict[str, dict[str, str]]
) -> None:
    create = memo.memo_condition_parser(create_condition_expression_parser)
    expected = create_condition_expression_parser(expr, names, values)
    expected.parse()
    for _ in range(2):
        parser = create(expr, dict(names), dict(values))
        assert parser.expr_attr_names_found == []  # filled by parse(), as moto's
        parser.parse()
        assert parser.expr_attr_names_found == expected.expr_attr_names_found
        assert parser.expr_attr_values_found == expected.expr_attr_values_found
        parser.expr_attr_names_found += ["#projection"]  # moto's handlers extend it


def test_a_response_handler_s_parser_fails_in_parse_every_time() -> None:
    create = memo.memo_condition_parser(create_condition_expression_parser)
    for _ in range(2):
        parser = create("#k = :missing", {"#k": "id"}, {})  # the handler's try starts later
        with pytest.raises(Exception) as caught:
            parser.parse()
        with pytest.raises(type(caught.value), match=re.escape(str(caught.value))):
            create_condition_expression_parser("#k = :missing", {"#k": "id"}, {}).parse()


def test_method_names_and_action_names_are_moto_s() -> None:
    names = memo.memo_method_names(method_names_from_class)
    assert names(Item) == method_names_from_class(Item)
    assert names(Item) is not names(Item)
    convert = memo.memo_camelcase(camelcase_to_underscores)
    assert convert("DeleteMessageBatch") == "delete_message_batch" == convert("DeleteMessageBatch")

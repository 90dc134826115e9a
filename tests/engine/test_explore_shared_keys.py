"""A schedule's shared keys: a fresh business id found as a whole token, as its pattern finds it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from loadtest.engine.explore_session import _has_token, _token

_CHARS = st.sampled_from(list('ab0Z9_-:#{}" é'))


@given(st.text(_CHARS, max_size=14), st.text(_CHARS, max_size=4))
def test_has_token_agrees_with_the_pattern(text: str, business_id: str) -> None:
    assert _has_token(text, business_id) == (_token(business_id).search(text) is not None)


def test_has_token_takes_whole_tokens_only() -> None:
    assert _has_token('{"id": {"S": "order_s1"}}', "order_s1")
    assert not _has_token('{"id": {"S": "order_s12"}}', "order_s1")
    assert _has_token("ORDER#order_s1#2", "order_s1")
    assert not _has_token("xorder_s1", "order_s1")

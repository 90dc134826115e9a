"""An answer's body and headers come out of the request-id step as moto makes them."""

from __future__ import annotations

from typing import Any

import pytest
from moto.core.responses import BaseResponse
from moto.moto_api._internal import mock_random

from loadtest.backend import patches
from loadtest.backend.core import request_id_body

patches.apply()

BODIES: list[Any] = [
    '{"Messages": [{"Body": "<RequestId> in a JSON string"}]}',
    '{"ConsumedCapacity": {"TableName": "orders"}}',
    "<SendMessageResult><ResponseMetadata><RequestId>old</RequestId></ResponseMetadata>",
    "<a><RequestId>one</RequestId><RequestId>two</RequestId></a>",
    "<RequestId>never closed",
    "<a><RequestId>x\ny</RequestId></a>",
    "",
    b"<RequestId>bytes</RequestId>",
    None,
    {"RequestId": "a dict"},
]


def _enriched(enrich: Any, headers: dict[str, Any], body: Any) -> tuple[dict[str, Any], Any]:
    mock_random.seed(7)  # the same request id from both
    return enrich(dict(headers), body)  # type: ignore[no-any-return]


def test_the_mirrored_moto_source_is_the_installed_one() -> None:
    # A moto release that changes this function turns the replacement off (moto's own
    # runs); this test says so, so the copy can be brought up to date.
    assert request_id_body.mirrors_installed_moto()


@pytest.mark.parametrize("body", BODIES)
@pytest.mark.parametrize("headers", [{}, {"status": 400, "content-type": "application/json"}])
def test_the_answer_is_moto_s(body: Any, headers: dict[str, Any]) -> None:
    moto_enrich = request_id_body.enrich_response.__wrapped__  # type: ignore[attr-defined]
    assert BaseResponse._enrich_response is request_id_body.enrich_response
    assert _enriched(BaseResponse._enrich_response, headers, body) == _enriched(
        moto_enrich, headers, body
    )

"""moto's region lists are worked out once per service, and the session behind them let go."""

from __future__ import annotations

from typing import Any

import pytest
from moto.core.base_backend import AccountSpecificBackend

from loadtest.backend import patches
from loadtest.backend.core.regions import regions_once


def test_each_service_is_worked_out_once_and_the_session_cleared_each_time() -> None:
    asked: list[str] = []
    cleared: list[bool] = []

    def generate(backend: Any, service_name: str) -> list[str]:
        asked.append(service_name)
        return [f"{service_name}-region"]

    regions = regions_once(generate, lambda: cleared.append(True))

    first = regions(object(), "sqs")
    assert regions(object(), "sqs") is first  # another account: the same list, as moto's cache
    assert regions(object(), "dynamodb") == ["dynamodb-region"]
    assert asked == ["sqs", "dynamodb"]
    assert cleared == [True, True]


def test_a_failure_is_not_kept_and_still_clears_the_session() -> None:
    cleared: list[bool] = []
    calls: list[str] = []

    def generate(backend: Any, service_name: str) -> list[str]:
        calls.append(service_name)
        if len(calls) == 1:
            raise OSError("endpoints.json unreadable")
        return ["us-east-1"]

    regions = regions_once(generate, lambda: cleared.append(True))
    with pytest.raises(OSError, match="unreadable"):
        regions(object(), "sqs")
    assert regions(object(), "sqs") == ["us-east-1"]
    assert cleared == [True, True]


def test_the_patched_backends_list_moto_s_regions_and_keep_no_session() -> None:
    patches.apply()
    # moto's function inside its lru_cache
    unpatched = AccountSpecificBackend._generate_regions.__wrapped__
    for service in ("dynamodb", "sqs"):
        backend: AccountSpecificBackend[Any] = AccountSpecificBackend(
            service_name=service,
            account_id="210987654321",
            backend=object,
            use_boto3_regions=True,
            additional_regions=None,
        )
        assert AccountSpecificBackend.get_session.cache_info().currsize == 0
        expected = unpatched(backend, service)  # moto's own, uncached
        AccountSpecificBackend.get_session.cache_clear()
        assert backend.regions == expected
        assert "us-east-1" in expected and "eu-west-3" in expected

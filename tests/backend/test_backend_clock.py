"""The clock SQS reads is moto's clock, to the bit."""

from __future__ import annotations

import datetime
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st
from moto.core import utils as moto_utils

from loadtest.backend.core import clock

_EPOCH = datetime.datetime(1970, 1, 1)


def _moto_unix_time() -> clock.UnixTime:
    installed = moto_utils.unix_time
    return getattr(installed, "__wrapped__", installed)


_YEAR_3000_US = 32_503_680_000 * 1_000_000


@given(st.integers(min_value=0, max_value=_YEAR_3000_US))
def test_a_microsecond_count_gives_moto_s_float(microseconds: int) -> None:
    moment = _EPOCH + datetime.timedelta(microseconds=microseconds)
    assert clock.unix_time_of_microseconds(microseconds) == _moto_unix_time()(moment)


def test_the_clock_reads_what_moto_s_reads_between() -> None:
    moto_unix_time = _moto_unix_time()
    fast = clock.fast_unix_time(moto_unix_time, moto_utils)
    for _ in range(1000):
        before = moto_unix_time()
        now = fast()
        assert before <= now <= moto_unix_time()


def test_a_given_datetime_is_moto_s() -> None:
    moto_unix_time = _moto_unix_time()
    moment = datetime.datetime(2025, 1, 2, 3, 4, 5, 678901)
    assert clock.fast_unix_time(moto_unix_time, moto_utils)(moment) == moto_unix_time(moment)


def test_a_replaced_moto_clock_is_read_as_moto_reads_it() -> None:
    fast = clock.fast_unix_time(_moto_unix_time(), moto_utils)
    moment = datetime.datetime(2025, 1, 2, 3, 4, 5, 678901)
    with mock.patch("moto.core.utils.utcnow", lambda: moment):
        assert fast() == _moto_unix_time()(moment)

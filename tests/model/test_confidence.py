"""loadtest.model.search.confidence: exact intervals and the U test, against scipy as the reference."""

from __future__ import annotations

import importlib
import math
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadtest.model.search.confidence import (
    binomial_cdf,
    clopper_pearson,
    mann_whitney,
    share_sentence,
    u_distribution,
)


@pytest.fixture(scope="module")
def stats() -> ModuleType:
    """scipy's statistics, imported where a test of it runs: under ``nox -s tests`` the
    tests sharing this module-scoped value run in one worker, and scipy.stats's import
    (about 0.75 s of CPU) is not paid by every worker collecting the suite."""
    return importlib.import_module("scipy.stats")


@pytest.mark.parametrize(
    ("k", "n"), [(0, 1), (1, 1), (0, 10), (10, 10), (3, 10), (0, 20), (7, 20), (1, 200), (150, 300)]
)
def test_clopper_pearson_matches_scipy_binomtest(stats: ModuleType, k: int, n: int) -> None:
    reference = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    lower, upper = clopper_pearson(k, n)
    assert lower == pytest.approx(reference.low, abs=1e-9)
    assert upper == pytest.approx(reference.high, abs=1e-9)


def test_clopper_pearson_by_hand_at_the_edges() -> None:
    # k = 0: (1 - p)^n = 0.025; k = n: p^n = 0.025.
    assert clopper_pearson(0, 20)[1] == pytest.approx(1 - 0.025 ** (1 / 20), abs=1e-12)
    assert clopper_pearson(10, 10)[0] == pytest.approx(0.025 ** (1 / 10), abs=1e-12)
    with pytest.raises(ValueError):
        clopper_pearson(3, 2)


def test_share_sentences() -> None:
    assert share_sentence(0, 20, "a duplicate write") == (
        "0 of 20 runs showed a duplicate write: at 95% confidence it shows in fewer than "
        "17% of such runs"
    )
    assert share_sentence(10, 10, "a duplicate write") == (
        "10 of 10 runs showed a duplicate write: at 95% confidence it shows in more than "
        "69% of such runs"
    )
    assert share_sentence(3, 10, "a lost outcome") == (
        "3 of 10 runs showed a lost outcome: at 95% confidence it shows in 6% to 66% of such runs"
    )


def test_binomial_cdf_matches_scipy(stats: ModuleType) -> None:
    for n, p in ((10, 0.3), (200, 0.01), (1500, 0.5)):
        for k in (0, 1, n // 3, n - 1):
            assert binomial_cdf(k, n, p) == pytest.approx(stats.binom.cdf(k, n, p), abs=1e-12)


@pytest.mark.parametrize(("m", "n"), [(1, 1), (2, 3), (4, 4), (5, 8), (10, 10)])
def test_u_distribution_counts_every_ordering(m: int, n: int) -> None:
    counts = u_distribution(m, n)
    assert len(counts) == m * n + 1
    assert sum(counts) == math.comb(m + n, m)
    assert counts == counts[::-1]  # symmetric about m*n/2


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 10_000), min_size=1, max_size=12, unique=True),
    st.lists(st.integers(10_001, 20_000), min_size=0, max_size=12, unique=True),
    st.randoms(use_true_random=False),
)
def test_exact_test_matches_scipy_without_ties(
    stats: ModuleType, low: list[int], high: list[int], rng: object
) -> None:
    values = low + high
    rng.shuffle(values)  # type: ignore[attr-defined]
    half = max(1, len(values) // 2)
    before, after = values[:half], values[half:]
    if not after:
        return
    ours = mann_whitney(before, after)
    reference = stats.mannwhitneyu(after, before, alternative="two-sided", method="exact")
    assert ours.exact
    assert ours.u == reference.statistic
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-12, abs=1e-15)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 5), min_size=2, max_size=15),
    st.lists(st.integers(0, 5), min_size=2, max_size=15),
)
def test_tied_samples_match_scipys_asymptotic_test(
    stats: ModuleType, before: list[int], after: list[int]
) -> None:
    ours = mann_whitney(before, after)
    if ours.exact:
        return  # no ties drawn: the exact test covers it
    reference = stats.mannwhitneyu(after, before, alternative="two-sided", method="asymptotic")
    assert ours.u == reference.statistic
    assert ours.p_value == pytest.approx(reference.pvalue, rel=1e-9, abs=1e-12)


def test_a_clear_shift_between_ten_runs_each() -> None:
    before = [100.0 + i for i in range(10)]
    after = [130.0 + i for i in range(10)]
    result = mann_whitney(before, after)
    assert result.exact
    assert result.p_value == pytest.approx(2 / math.comb(20, 10))
    assert result.shift == 30.0
    assert result.shift_interval is not None
    low, high = result.shift_interval
    assert low <= 30.0 <= high
    assert low > 0


def test_three_runs_each_can_never_reject_at_five_percent() -> None:
    result = mann_whitney([1.0, 2.0, 3.0], [10.0, 11.0, 12.0])
    assert result.p_value == pytest.approx(0.1)
    assert result.smallest_p == pytest.approx(0.1)
    assert result.shift_interval is None

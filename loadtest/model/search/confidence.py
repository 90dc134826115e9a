"""Exact small-sample statistics: Clopper-Pearson intervals and the Mann-Whitney U test.

Owns the arithmetic behind "how sure": the 95% interval of the share of runs
that showed an anomaly (``clopper_pearson``, exact binomial, found by bisection
on the binomial distribution function) and the two-sample test that judges a
regression between repeated runs (``mann_whitney``: the exact null distribution
of U for small samples without ties, the normal approximation with tie and
continuity corrections otherwise) with its effect, the Hodges-Lehmann shift,
and that shift's interval. Pure Python: no numpy, no scipy, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
"""The confidence of every interval loadtest states."""

EXACT_MOST = 50
"""The largest sample (per side) whose U distribution is computed exactly (without ties)."""

_BISECTIONS = 200


def _log_pmf(k: int, n: int, p: float) -> float:
    return (
        math.lgamma(n + 1)
        - math.lgamma(k + 1)
        - math.lgamma(n - k + 1)
        + k * math.log(p)
        + (n - k) * math.log1p(-p)
    )


def binomial_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), summed term by term in log space."""
    if k < 0:
        return 0.0
    if k >= n or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    return min(1.0, math.fsum(math.exp(_log_pmf(i, n, p)) for i in range(k + 1)))


def _solve_decreasing(
    f_minus_target: Callable[[float], float], lo: float = 0.0, hi: float = 1.0
) -> float:
    """The root of a function that decreases from positive to negative on [lo, hi]."""
    for _ in range(_BISECTIONS):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if f_minus_target(mid) > 0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact (Clopper-Pearson) interval of a proportion: ``k`` successes in ``n`` trials.

    The lower bound is the p at which P(X >= k) = alpha/2 (0 when k = 0), the upper the
    p at which P(X <= k) = alpha/2 (1 when k = n): the quantiles of Beta(k, n-k+1) and
    Beta(k+1, n-k), without a Beta function.
    """
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n > 0, got k={k}, n={n}")
    tail = (1 - confidence) / 2
    lower = 0.0
    if k > 0:
        # P(X >= k) = 1 - cdf(k-1) grows with p: solve 1 - cdf(k-1) = tail.
        lower = _solve_decreasing(lambda p: tail - (1 - binomial_cdf(k - 1, n, p)))
    upper = 1.0
    if k < n:
        upper = _solve_decreasing(lambda p: binomial_cdf(k, n, p) - tail)
    return lower, upper


def _percent(share: float, *, up: bool) -> str:
    """A share as a whole percentage, rounded away from the estimate (so the claim holds)."""
    value = share * 100
    whole = math.ceil(value - 1e-9) if up else math.floor(value + 1e-9)
    return f"{whole}%"


def share_sentence(k: int, n: int, what: str, confidence: float = CONFIDENCE) -> str:
    """``"0 of 20 runs showed a duplicate write: at 95% confidence it shows in fewer than
    17% of such runs"``; ``what`` names the anomaly ("a duplicate write")."""
    lower, upper = clopper_pearson(k, n, confidence)
    level = f"{confidence * 100:g}%"
    head = f"{k} of {n} run{'s' if n != 1 else ''} showed {what}: at {level} confidence it shows"
    if k == 0:
        return f"{head} in fewer than {_percent(upper, up=True)} of such runs"
    if k == n:
        return f"{head} in more than {_percent(lower, up=False)} of such runs"
    return f"{head} in {_percent(lower, up=False)} to {_percent(upper, up=True)} of such runs"


# --------------------------------------------------------------------------- Mann-Whitney U


def u_distribution(m: int, n: int) -> list[int]:
    """How many of the C(m+n, m) orderings give each U = 0 .. m*n (no ties).

    The coefficients of the Gaussian binomial [m+n choose m]_q, built as the product of
    (1 - q^(n+i)) / (1 - q^i) for i = 1..m, in exact integers.
    """
    poly = [1]
    for i in range(1, m + 1):
        grown = poly + [0] * (n + i)
        for k in range(len(poly) - 1, -1, -1):  # times (1 - q^(n+i))
            grown[k + n + i] -= poly[k]
        for k in range(i, len(grown)):  # divided by (1 - q^i), exactly
            grown[k] += grown[k - i]
        poly = grown[: i * n + 1]  # the higher terms cancelled: the degree is i*n
    return poly


@dataclass(frozen=True)
class MannWhitney:
    """A two-sided Mann-Whitney U test of ``before`` against ``after``, and the shift."""

    u: float
    """U of ``after``: the pairs (a, b) with a in after, b in before, a > b (ties count 1/2)."""
    p_value: float
    """Two-sided: the chance of a U at least this far from m*n/2 if nothing changed."""
    exact: bool
    """Whether the p-value is from the exact distribution (else the normal approximation)."""
    shift: float
    """Hodges-Lehmann estimate of after - before: the median of every pairwise difference."""
    shift_interval: tuple[float, float] | None
    """The shift's interval at ``CONFIDENCE`` (None: too few runs for one)."""
    smallest_p: float
    """The smallest p-value samples of these sizes can give (no test can do better)."""


def _ranks(values: Sequence[float]) -> tuple[list[float], list[int]]:
    """Mid-ranks (1-based) of ``values``, and the sizes of the tied groups."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    ties = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        ties.append(j - i + 1)
        i = j + 1
    return ranks, ties


def _normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def _normal_quantile(p: float) -> float:
    """z with P(Z <= z) = p, by bisection on erfc."""
    return _solve_decreasing(lambda z: _normal_sf(z) - (1 - p), -40.0, 40.0)


def mann_whitney(
    before: Sequence[float], after: Sequence[float], confidence: float = CONFIDENCE
) -> MannWhitney:
    """Two-sided Mann-Whitney U test, as ``scipy.stats.mannwhitneyu(after, before)`` computes
    it with ``method="exact"`` (no ties, both samples at most ``EXACT_MOST``) or
    ``method="asymptotic"`` (with tie and continuity corrections)."""
    m, n = len(after), len(before)
    if m == 0 or n == 0:
        raise ValueError("both samples need at least one value")
    ranks, ties = _ranks([*after, *before])
    u = sum(ranks[:m]) - m * (m + 1) / 2
    big = max(u, m * n - u)
    tied = any(t > 1 for t in ties)
    distribution = u_distribution(m, n) if max(m, n) <= EXACT_MOST else None
    total = math.comb(m + n, m)
    if distribution is not None and not tied:
        p = 2 * sum(distribution[int(big) :]) / total
        exact = True
    else:
        mean = m * n / 2
        tie_term = sum(t**3 - t for t in ties) / ((m + n) * (m + n - 1))
        sd = math.sqrt(m * n / 12 * ((m + n + 1) - tie_term))
        p = 1.0 if sd == 0 else 2 * _normal_sf((big - mean - 0.5) / sd)
        exact = False
    differences = sorted(a - b for a in after for b in before)
    shift = _median(differences)
    return MannWhitney(
        u=u,
        p_value=min(1.0, p),
        exact=exact,
        shift=shift,
        shift_interval=_shift_interval(differences, m, n, distribution, total, confidence),
        smallest_p=min(1.0, 2 / total),
    )


def _shift_interval(
    differences: list[float],
    m: int,
    n: int,
    distribution: list[int] | None,
    total: int,
    confidence: float,
) -> tuple[float, float] | None:
    """The interval of the shift: order statistics k and m*n+1-k of the pairwise differences,
    k the largest with P(U < k) <= alpha/2 (Lehmann; Bauer 1972)."""
    tail = (1 - confidence) / 2
    if distribution is not None:
        k, below = 0, 0
        while k < len(distribution) and (below + distribution[k]) / total <= tail:
            below += distribution[k]
            k += 1
    else:
        z = _normal_quantile(1 - tail)
        k = math.floor(m * n / 2 - z * math.sqrt(m * n * (m + n + 1) / 12))
    if k < 1:
        return None
    return differences[k - 1], differences[m * n - k]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2


def median(values: Sequence[float]) -> float:
    """The median (the mean of the middle two for an even count)."""
    if not values:
        raise ValueError("median of nothing")
    return _median(values)

"""An exhaustive search split into subtrees (as several processes run it) covers exactly the
schedules one search covers, and ``path`` puts them back in that search's order."""

from __future__ import annotations

from collections import deque

import pytest

from loadtest.model.explore.strategies import Exhaustive
from tests.model.test_explore import _Toy

Trace = list[tuple[int, str]]


def _one_search(keys: list[str]) -> list[tuple[tuple[int, ...], Trace]]:
    toy, search, out = _Toy(keys), Exhaustive(), []
    while (chooser := search.execution()) is not None:
        trace = toy.run(chooser)
        if trace is not None:
            out.append((search.path(), trace))
    assert search.covered
    return out


def _split_search(keys: list[str], every: int) -> tuple[list[tuple[tuple[int, ...], Trace]], int]:
    """Searches that each split a branch off after every ``every``-th execution, run one at
    a time from a queue (the order processes would run them in does not matter)."""
    toy = _Toy(keys)
    queue: deque[Exhaustive] = deque([Exhaustive()])
    out: list[tuple[tuple[int, ...], Trace]] = []
    searches = 0
    while queue:
        search = queue.popleft()
        searches += 1
        ran = 0
        while (chooser := search.execution()) is not None:
            trace = toy.run(chooser)
            if trace is not None:
                out.append((search.path(), trace))
            ran += 1
            if ran % every == 0 and (branch := search.split()) is not None:
                queue.append(Exhaustive.subtree(branch))
        assert search.covered and not search.nondeterministic
    return out, searches


@pytest.mark.parametrize("every", [1, 2, 3])
@pytest.mark.parametrize("keys", [["x", "x"], ["x", "x", "x"], ["x", "y", "x"]])
def test_split_searches_cover_what_one_search_covers_in_its_order(
    keys: list[str], every: int
) -> None:
    one = _one_search(keys)
    split, searches = _split_search(keys, every)
    assert sorted(split, key=lambda each: each[0]) == one
    assert len({path for path, _ in split}) == len(split)  # no schedule run twice
    if len(one) > 2:
        assert searches > 1  # the space was really split


def test_nothing_to_split_once_every_branch_ran_or_was_given() -> None:
    toy, search = _Toy(["x", "x"]), Exhaustive()
    given = 0
    while (chooser := search.execution()) is not None:
        toy.run(chooser)
        while search.split() is not None:
            given += 1
    assert given > 0 and search.split() is None and search.covered

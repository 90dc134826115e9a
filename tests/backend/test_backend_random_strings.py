"""Random strings drawn in one call are moto's kind of string, from moto's generator."""

from __future__ import annotations

import string

from moto.moto_api._internal.moto_random import MotoRandom

from loadtest.backend.core import random_strings


def test_the_same_kind_of_string_from_the_same_seeded_generator() -> None:
    first, second = MotoRandom(), MotoRandom()
    first.seed(7)
    second.seed(7)
    drawn = [random_strings.get_random_string(first, length=52) for _ in range(200)]
    assert drawn == [random_strings.get_random_string(second, length=52) for _ in range(200)]
    assert all(len(s) == 52 and set(s) <= set(string.ascii_letters + string.digits) for s in drawn)
    assert set("".join(drawn)) == set(string.ascii_letters + string.digits)
    letters = random_strings.get_random_string(first, length=500, include_digits=False)
    assert set(letters) == set(string.ascii_letters)
    lower = random_strings.get_random_string(first, length=500, lower_case=True)
    assert set(lower) == set(string.ascii_lowercase + string.digits)
    assert random_strings.get_random_string(first) != random_strings.get_random_string(first)
    assert len(random_strings.get_random_string(first)) == 20


def test_every_letter_equally_likely_and_receipt_handles_of_moto_kind() -> None:
    rng = MotoRandom()
    rng.seed(11)
    drawn = random_strings.draw(rng, string.ascii_lowercase, 26 * 4000)
    counts = [drawn.count(letter) for letter in string.ascii_lowercase]
    # 4,000 expected per letter, standard deviation about 62: a biased mapping
    # (bytes 234-255 folded onto a-v) would put those letters near 4,340.
    assert all(3700 < count < 4300 for count in counts), counts
    handle = random_strings.draw(rng, string.ascii_lowercase, 185)
    assert len(handle) == 185 and set(handle) <= set(string.ascii_lowercase)
    assert random_strings.draw(rng, string.ascii_lowercase, 0) == ""

"""moto's random strings (every response's ``x-amzn-requestid``, every SQS receipt handle),
drawn from random bytes.

Owns the replacement ``loadtest.backend.patches`` installs for
``MotoRandom.get_random_string``, and ``draw``, which ``sqs.patches`` draws receipt
handles with: the same kind of string (the same length and letters, each letter equally
likely, lower-cased when asked) from the same seedable generator, made from one
``randbytes`` call mapped to letters by ``bytes.translate`` instead of one Python-level
draw per letter.

Why: every response carries a fresh 52-letter request id and every message received a
185-letter receipt handle; ``choices`` still runs a Python expression per letter (~13 µs
of CPU per handle, timeit, 130 µs per ``ReceiveMessage`` of 10). A byte is kept only below
the largest multiple of the alphabet's size (234 of 256 for 26 letters, 248 for 62), so
``byte % size`` picks every letter with the same probability; the rare short draw is
topped up. As with moto's own draws replaced before, a seeded generator yields other
strings than moto's for the same seed.

Must not touch anything else ``MotoRandom`` draws. Installs nothing itself.
"""

from __future__ import annotations

import functools
import string
from random import Random
from typing import Any

_WITH_DIGITS = string.ascii_letters + string.digits


@functools.cache
def _mapping(alphabet: str) -> tuple[bytes, bytes, float]:
    """``bytes.translate``'s table and deleted bytes for ``alphabet``, and the share of
    bytes kept."""
    letters = alphabet.encode("ascii")
    kept = 256 - 256 % len(letters)
    table = bytes(letters[byte % len(letters)] for byte in range(256))
    return table, bytes(range(kept, 256)), kept / 256


def draw(rng: Random, alphabet: str, length: int) -> str:
    """``length`` letters of ``alphabet`` (at most 256), each drawn uniformly from ``rng``."""
    table, deleted, kept = _mapping(alphabet)
    drawn = b""
    while len(drawn) < length:
        missing = length - len(drawn)
        drawn += rng.randbytes(int(missing / kept) + 8).translate(table, deleted)
    return drawn[:length].decode("ascii")


def get_random_string(
    self: Any, length: int = 20, include_digits: bool = True, lower_case: bool = False
) -> str:
    """``MotoRandom.get_random_string``, drawn from random bytes."""
    random_str = draw(self, _WITH_DIGITS if include_digits else string.ascii_letters, length)
    return random_str.lower() if lower_case else random_str

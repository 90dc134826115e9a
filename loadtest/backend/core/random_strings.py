"""moto's random strings (every response's ``x-amzn-requestid``), drawn in one call.

Owns the replacement ``loadtest.backend.patches`` installs for
``MotoRandom.get_random_string``: the same kind of string (the same length and letters,
lower-cased when asked) from the same seedable generator, drawn with one ``choices``
call instead of one ``choice`` call per letter.

Why: every response carries a fresh 52-letter request id; drawing it letter by letter was
~2% of the backend's CPU per request. As with receipt handles (``sqs_patches``), a seeded
generator yields other strings than moto's own would for the same seed.

Must not touch anything else ``MotoRandom`` draws. Installs nothing itself.
"""

from __future__ import annotations

import string
from typing import Any


def get_random_string(
    self: Any, length: int = 20, include_digits: bool = True, lower_case: bool = False
) -> str:
    """``MotoRandom.get_random_string``, drawn in one call."""
    pool = string.ascii_letters + string.digits if include_digits else string.ascii_letters
    random_str = "".join(self.choices(pool, k=length))
    return random_str.lower() if lower_case else random_str
